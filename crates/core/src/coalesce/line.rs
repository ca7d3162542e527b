//! `line` and `sector`: one request per distinct line, fetching the whole line, or carrying a
//! mask of the sectors used (each sector a transaction).

use super::{sector_range, Coalesced, Coalescer};
use crate::cache::Request;
use crate::config::choice::{Entry, Form};
use crate::config::Coalescing;

/// `line` in the registry of [`Coalescing`] (see `config::choice`).
pub const LINE: Entry<Coalescing> = Entry {
    name: "line",
    aliases: &[],
    label: "per line",
    description: "one request per distinct line",
    form: Form::Plain(Coalescing::Line),
};

/// `sector` in the registry of [`Coalescing`].
pub const SECTOR: Entry<Coalescing> = Entry {
    name: "sector",
    aliases: &[],
    label: "per line, sectors",
    description: "one request per line with a mask of the sectors used",
    form: Form::Plain(Coalescing::Sector),
};

impl Coalescer {
    /// One request per distinct line of the gathered accesses; with `sector_mode`, one
    /// transaction per sector used, else the whole line in one.
    pub(super) fn lines(&mut self, sector_mode: bool, write: bool, out: &mut Vec<Coalesced>) {
        for i in 0..self.scratch.len() {
            let addr = self.scratch[i].0;
            let end = addr + (self.sizes[i] as u64).max(1);
            let mut a = addr;
            // Usually one iteration: the access lies within one line.
            while a < end {
                let line = a >> self.line_shift;
                let base = line << self.line_shift;
                let e = end.min(base + self.g.line_bytes as u64);
                self.merge_line(out, line, write, a - base, e - a);
                a = e;
            }
        }
        for (i, c) in out.iter_mut().enumerate() {
            c.request.bytes = if self.g.line_bytes <= 128 {
                self.bytes[i].count_ones()
            } else {
                (self.bytes[i] as u32).min(self.g.line_bytes)
            };
            if sector_mode {
                c.transactions = c.request.sectors.count_ones();
            } else {
                c.request.sectors = self.all_sectors;
                c.request.bytes = c.request.bytes.min(self.g.line_bytes);
                c.transactions = 1;
            }
        }
    }

    /// Adds `len` bytes at offset `off` of `line` to the request for that line (searched from
    /// the most recent, which is almost always the one).
    #[inline]
    fn merge_line(&mut self, out: &mut Vec<Coalesced>, line: u64, write: bool, off: u64, len: u64) {
        let sectors = sector_range(
            (off >> self.sector_shift) as u32,
            ((off + len - 1) >> self.sector_shift) as u32,
        );
        let contribution: u128 = if self.g.line_bytes <= 128 {
            let ones = if len >= 128 {
                u128::MAX
            } else {
                (1u128 << len) - 1
            };
            ones << off
        } else {
            len as u128
        };
        if let Some(i) = out.iter().rposition(|o| o.request.line == line) {
            out[i].request.sectors |= sectors;
            if self.g.line_bytes <= 128 {
                self.bytes[i] |= contribution;
            } else {
                self.bytes[i] += contribution;
            }
        } else {
            out.push(Coalesced {
                request: Request {
                    line,
                    sectors,
                    write,
                    bytes: 0,
                },
                transactions: 1,
            });
            self.bytes.push(contribution);
        }
    }
}
