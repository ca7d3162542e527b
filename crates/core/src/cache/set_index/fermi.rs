//! `fermi-hash`: Fermi's XOR set hash (Nugteren et al. 2014, §5.1, fig. 6).

use crate::config::choice::{Entry, Form};
use crate::config::SetIndex;

/// This function in the registry of [`SetIndex`] (see `config::choice`).
pub const ENTRY: Entry<SetIndex> = Entry {
    name: "fermi-hash",
    aliases: &["fermi"],
    label: "fermi-hash",
    description: "Fermi's XOR hash (128-byte lines, 32 or 64 sets)",
    form: Form::Plain(SetIndex::FermiHash),
};

/// Fermi's L1 set hash (Nugteren et al. 2014, §5.1, fig. 6) on a line address: line bits
/// 0-4 XOR bits 6, 7, 8, 10, 12 (pairwise in that order), plus 32 x bit 5, modulo the sets.
/// With 128-byte lines these are byte-address bits 7-11, 13, 14, 15, 17, 19 and 12, the
/// published hash of the 32-set (16 KB) and 64-set (48 KB) caches; for other line sizes and
/// set counts it is the same function of the line address, as the released model applies it.
#[inline]
pub fn fermi_line_set(line: u64, sets: u64) -> u32 {
    let low = line & 0x1f;
    let bit = |b: u32| (line >> b) & 1;
    let high = bit(6) | bit(7) << 1 | bit(8) << 2 | bit(10) << 3 | bit(12) << 4;
    (((low ^ high) + (bit(5) << 5)) % sets) as u32
}

/// [`fermi_line_set`] of a byte address in a cache of 128-byte lines with 32 or 64 sets.
#[inline]
pub fn fermi_set(addr: u64, sets64: bool) -> u32 {
    fermi_line_set(addr >> 7, if sets64 { 64 } else { 32 })
}
