//! `bits:LO-HI` (Hadidi 2015 §4): accesses that differ only in address bits LO..=HI form one
//! request, represented by the lowest address of the group.

use super::{Coalesced, Coalescer};
use crate::config::choice::{Entry, Form};
use crate::config::Coalescing;
use crate::trace::Columns;

/// This model in the registry of [`Coalescing`] (see `config::choice`).
pub const ENTRY: Entry<Coalescing> = Entry {
    name: "bits",
    aliases: &[],
    label: "address bits",
    description: "accesses merge when they differ only in bits LO..=HI",
    form: Form::Param {
        syntax: "LO-HI",
        parse: parse_bit_range,
        is: |c| matches!(c, Coalescing::Bits { .. }),
        params: |c| match c {
            Coalescing::Bits { lo, hi } => format!("{lo}-{hi}"),
            _ => String::new(),
        },
        default: || Coalescing::Bits { lo: 0, hi: 6 },
    },
};

/// `LO-HI`: the address bits in which accesses of one request may differ.
fn parse_bit_range(range: &str) -> Result<Coalescing, String> {
    range
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse::<u8>().ok()?, b.parse::<u8>().ok()?)))
        .filter(|(lo, hi)| lo <= hi && *hi < 64)
        .map(|(lo, hi)| Coalescing::Bits { lo, hi })
        .ok_or_else(|| "expected LO-HI with 0 <= LO <= HI < 64".to_string())
}

impl Coalescer {
    /// The gathered accesses grouped by their address outside bits `lo..=hi`.
    pub(super) fn bits(
        &mut self,
        lo: u8,
        hi: u8,
        cols: &Columns,
        write: bool,
        out: &mut Vec<Coalesced>,
    ) {
        let width = hi as u32 - lo as u32 + 1;
        let range_mask: u64 = if width >= 64 {
            u64::MAX
        } else {
            ((1u64 << width) - 1) << lo
        };
        self.scratch.sort_by_key(|&(a, _)| (a & !range_mask, a));
        let mut i = 0;
        while i < self.scratch.len() {
            let key = self.scratch[i].0 & !range_mask;
            let (rep, r) = self.scratch[i];
            while i < self.scratch.len() && self.scratch[i].0 & !range_mask == key {
                i += 1;
            }
            self.split(rep, cols.size[r as usize] as u64, write, |c| out.push(c));
        }
    }
}
