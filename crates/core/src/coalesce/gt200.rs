//! `gt200`: compute capability 1.2/1.3 rules (Dasgupta 2011 §2.3.1, CUDA guide G.3.2.2): per
//! half-warp, the segment of the lowest active thread (32 B for 1-byte words, 64 B for 2-byte,
//! else 128 B) serves every thread inside it, reduced to 64 or 32 B when only one half is
//! used; one transaction (and one request) per segment.

use super::{Coalesced, Coalescer};
use crate::config::choice::{Entry, Form};
use crate::config::Coalescing;
use crate::trace::Columns;

/// This model in the registry of [`Coalescing`] (see `config::choice`).
pub const ENTRY: Entry<Coalescing> = Entry {
    name: "gt200",
    aliases: &[],
    label: "GT200 segments",
    description: "compute capability 1.2/1.3: per half-warp 32/64/128-byte segments",
    form: Form::Plain(Coalescing::Gt200),
};

impl Coalescer {
    pub(super) fn gt200(&mut self, cols: &Columns, write: bool, out: &mut Vec<Coalesced>) {
        let half = (self.g.warp_size / 2).max(1);
        let tpb = self.g.threads_per_cta.max(1);
        // Group by half-warp, keeping thread order (rows are in thread order).
        let mut start = 0;
        while start < self.scratch.len() {
            let hw = |r: u32| (cols.thread[r as usize] % tpb) / half;
            let h = hw(self.scratch[start].1);
            let mut end = start;
            while end < self.scratch.len() && hw(self.scratch[end].1) == h {
                end += 1;
            }
            let mut pending: Vec<(u64, u32)> = self.scratch[start..end].to_vec();
            while let Some(&(addr, r)) = pending.first() {
                let word = cols.size[r as usize] as u64;
                let mut seg = match word {
                    1 => 32u64,
                    2 => 64,
                    _ => 128,
                };
                let mut base = addr & !(seg - 1);
                let (mut lo, mut hi) = (u64::MAX, 0u64);
                pending.retain(|&(a, rr)| {
                    if a >= base && a < base + seg {
                        lo = lo.min(a);
                        hi = hi.max(a + cols.size[rr as usize] as u64);
                        false
                    } else {
                        true
                    }
                });
                let hi = hi.min(base + seg);
                while seg > 32 {
                    let h = seg / 2;
                    if hi <= base + h {
                        seg = h;
                    } else if lo >= base + h {
                        base += h;
                        seg = h;
                    } else {
                        break;
                    }
                }
                let mut first = true;
                self.split(base, seg, write, |mut c| {
                    c.transactions = if first { 1 } else { 0 };
                    first = false;
                    out.push(c)
                });
            }
            start = end;
        }
    }
}
