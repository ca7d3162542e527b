//! `bits:B0,B1,...`: set index bit `i` is byte-address bit `Bi`.

use crate::config::choice::{Entry, Form};
use crate::config::SetIndex;

/// This function in the registry of [`SetIndex`] (see `config::choice`).
pub const ENTRY: Entry<SetIndex> = Entry {
    name: "bits",
    aliases: &[],
    label: "address bits",
    description: "the set index is made of the address bits you list",
    form: Form::Param {
        syntax: "B0,B1,...",
        parse: parse_bits,
        is: |s| matches!(s, SetIndex::Bits(_)),
        params: |s| match s {
            SetIndex::Bits(bits) => bits
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(","),
            _ => String::new(),
        },
        default: || SetIndex::Bits(vec![7]),
    },
};

/// `B0,B1,...`: the address bits of the set index, low to high.
fn parse_bits(list: &str) -> Result<SetIndex, String> {
    list.split(',')
        .map(|b| b.trim().parse::<u8>().ok().filter(|&b| b < 64))
        .collect::<Option<Vec<u8>>>()
        .map(SetIndex::Bits)
        .ok_or_else(|| "expected address bit numbers 0-63".to_string())
}

/// The set of `line` (a line address, lines of `1 << line_shift` bytes).
#[inline]
pub(super) fn set(line_shift: u32, bits: &[u8], line: u64) -> u32 {
    let a = line << line_shift;
    bits.iter()
        .enumerate()
        .fold(0u32, |s, (i, &b)| s | ((((a >> b) & 1) as u32) << i))
}
