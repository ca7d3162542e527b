//! Coalescing: the accesses of one warp instruction become cache requests (and memory
//! transactions), by one of five models:
//! - `none`: every access is a request (split at line boundaries);
//! - `line`: one request per distinct line, fetching the whole line;
//! - `sector`: one request per distinct line with a mask of the sectors used; each sector is
//!   a transaction;
//! - `gt200`: compute capability 1.2/1.3 rules (Dasgupta 2011 §2.3.1, CUDA guide G.3.2.2): per
//!   half-warp, the segment of the lowest active thread (32 B for 1-byte words, 64 B for
//!   2-byte, else 128 B) serves every thread inside it, reduced to 64 or 32 B when only one
//!   half is used; one transaction (and one request) per segment;
//! - `bits:LO-HI` (Hadidi 2015 §4): accesses that differ only in address bits LO..=HI form one
//!   request, represented by the lowest address of the group.
//!
//! One file per model (`line.rs` holds `line` and `sector`), each with its entry in the
//! registry of [`Coalescing`]; the dispatch is the `match` in [`Coalescer::coalesce`].

use crate::cache::Request;
mod bits;
mod gt200;
mod line;
mod none;

use crate::config::choice::{Choice, Entry};
use crate::config::Coalescing;
use crate::trace::{AccessKind, Columns};

impl Choice for Coalescing {
    const WHAT: &'static str = "coalescing";
    const ENTRIES: &'static [Entry<Coalescing>] = &[
        none::ENTRY,
        line::LINE,
        line::SECTOR,
        gt200::ENTRY,
        bits::ENTRY,
    ];
}

/// Geometry the coalescer needs.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub line_bytes: u32,
    pub sector_bytes: u32,
    pub warp_size: u32,
    pub threads_per_cta: u32,
}

/// A request with the memory transactions it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalesced {
    pub request: Request,
    pub transactions: u32,
}

/// Reusable coalescer (keeps its scratch buffers between calls).
#[derive(Clone, Debug)]
pub struct Coalescer {
    mode: Coalescing,
    g: Geometry,
    line_shift: u32,
    sector_shift: u32,
    all_sectors: u32,
    /// Per pending line: byte mask (lines up to 128 B) or byte sum.
    bytes: Vec<u128>,
    scratch: Vec<(u64, u32)>,
    /// Sizes of `scratch`'s accesses, loaded in the same pass as their addresses so that the
    /// (scattered) loads overlap.
    sizes: Vec<u16>,
}

impl Coalescer {
    pub fn new(mode: Coalescing, g: Geometry) -> Self {
        let per_line = g.line_bytes / g.sector_bytes.max(1);
        Coalescer {
            mode,
            g,
            line_shift: g.line_bytes.trailing_zeros(),
            sector_shift: g.sector_bytes.trailing_zeros(),
            all_sectors: if per_line >= 32 {
                u32::MAX
            } else {
                (1u32 << per_line) - 1
            },
            bytes: Vec::new(),
            scratch: Vec::new(),
            sizes: Vec::new(),
        }
    }

    /// Coalesces the accesses `rows` of one warp instruction into `out` (cleared first).
    /// Accesses to spaces that bypass the L1 (shared, constant, texture) and barriers are
    /// skipped; returns the number of accesses that reached the L1.
    pub fn coalesce(&mut self, cols: &Columns, rows: &[u32], out: &mut Vec<Coalesced>) -> u32 {
        out.clear();
        self.bytes.clear();
        let mut used = 0;
        let mut write = false;
        self.scratch.clear();
        self.sizes.clear();
        for &r in rows {
            let r = r as usize;
            let flags = cols.flags[r];
            let (kind, space) = crate::trace::model_flags(flags);
            if kind == AccessKind::Barrier || !space.reaches_l1() {
                continue;
            }
            used += 1;
            write = kind.is_write();
            self.scratch.push((cols.addr[r], r as u32));
            self.sizes.push(cols.size[r]);
        }
        if self.scratch.is_empty() {
            return 0;
        }
        match self.mode {
            Coalescing::None => self.none(cols, write, out),
            Coalescing::Line => self.lines(false, write, out),
            Coalescing::Sector => self.lines(true, write, out),
            Coalescing::Gt200 => self.gt200(cols, write, out),
            Coalescing::Bits { lo, hi } => self.bits(lo, hi, cols, write, out),
        }
        used
    }

    /// The bytes of its line request `i` of the last [`Coalescer::coalesce`] touches (bit b =
    /// byte b), where this coalescer keeps them: line and sector coalescing of lines of at
    /// most 128 bytes.
    pub fn byte_mask(&self, i: usize) -> Option<u128> {
        match self.mode {
            Coalescing::Line | Coalescing::Sector if self.g.line_bytes <= 128 => {
                self.bytes.get(i).copied()
            }
            _ => None,
        }
    }

    /// The bytes of its line one request of [`Coalescer::split`] of `[addr, addr+size)`
    /// touches (bit b = byte b), for lines of at most 128 bytes.
    pub fn split_mask(&self, addr: u64, size: u64, line: u64) -> Option<u128> {
        if self.g.line_bytes > 128 {
            return None;
        }
        let base = line << self.line_shift;
        let lo = addr.max(base);
        let hi = (addr + size.max(1)).min(base + self.g.line_bytes as u64);
        let width = hi.saturating_sub(lo);
        let ones = if width >= 128 {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        Some(ones << (lo - base))
    }

    /// The line of byte `addr`.
    #[inline]
    pub(crate) fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// Splits `[addr, addr+size)` at line boundaries into one request per line.
    #[inline]
    pub(crate) fn split(&self, addr: u64, size: u64, write: bool, mut emit: impl FnMut(Coalesced)) {
        let end = addr + size.max(1);
        let mut a = addr;
        while a < end {
            let line = a >> self.line_shift;
            let line_end = (line + 1) << self.line_shift;
            let e = end.min(line_end);
            let off = a - (line << self.line_shift);
            let first = (off >> self.sector_shift) as u32;
            let last = ((off + (e - a) - 1) >> self.sector_shift) as u32;
            let sectors = sector_range(first, last);
            emit(Coalesced {
                request: Request {
                    line,
                    sectors,
                    write,
                    bytes: (e - a) as u32,
                },
                transactions: 1,
            });
            a = e;
        }
    }
}

#[inline]
pub(super) fn sector_range(first: u32, last: u32) -> u32 {
    let hi = if last >= 31 {
        u32::MAX
    } else {
        (1u32 << (last + 1)) - 1
    };
    hi & !((1u32 << first) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Access, Dim3, KernelBuilder, MemSpace, Order};

    fn cols(accesses: &[(u32, u64, u16)]) -> Columns {
        let mut b = KernelBuilder::new("k", Dim3::x(1), Dim3::x(64), Order::PerThread).unwrap();
        let i = b.instruction("i", None);
        for &(t, addr, size) in accesses {
            b.push(Access {
                thread: t,
                inst: i,
                dyn_inst: 0,
                addr,
                size,
                kind: AccessKind::Load,
                space: MemSpace::Global,
            })
            .unwrap();
        }
        b.finish().columns().clone()
    }
    fn geom(line: u32, sector: u32) -> Geometry {
        Geometry {
            line_bytes: line,
            sector_bytes: sector,
            warp_size: 32,
            threads_per_cta: 64,
        }
    }
    fn run(mode: Coalescing, g: Geometry, acc: &[(u32, u64, u16)]) -> Vec<Coalesced> {
        let c = cols(acc);
        let rows: Vec<u32> = (0..acc.len() as u32).collect();
        let mut out = Vec::new();
        Coalescer::new(mode, g).coalesce(&c, &rows, &mut out);
        out
    }

    #[test]
    fn line_and_sector() {
        let acc: Vec<_> = (0..32).map(|t| (t, 0x1000 + 4 * t as u64, 4)).collect();
        let l = run(Coalescing::Line, geom(128, 32), &acc);
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].request.sectors, l[0].request.bytes, l[0].transactions),
            (0xf, 128, 1)
        );
        let s = run(Coalescing::Sector, geom(128, 32), &acc[..9]);
        assert_eq!(
            (s[0].request.sectors, s[0].request.bytes, s[0].transactions),
            (0b11, 36, 2)
        );
        let n = run(Coalescing::None, geom(128, 32), &acc);
        assert_eq!(n.len(), 32);
    }

    #[test]
    fn accesses_crossing_a_line_touch_both_lines() {
        let n = run(Coalescing::None, geom(128, 128), &[(0, 126, 4)]);
        assert_eq!(
            n.iter()
                .map(|c| (c.request.line, c.request.bytes))
                .collect::<Vec<_>>(),
            vec![(0, 2), (1, 2)]
        );
    }

    #[test]
    fn gt200_segments() {
        // 16 threads reading consecutive 4-byte words aligned to 64: one 64-byte transaction.
        let acc: Vec<_> = (0..16).map(|t| (t, 64 + 4 * t as u64, 4)).collect();
        let g = run(Coalescing::Gt200, geom(128, 128), &acc);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].request.bytes, 64);
        // A full warp: two half-warps, two transactions of 64 B each.
        let acc: Vec<_> = (0..32).map(|t| (t, 4 * t as u64, 4)).collect();
        assert_eq!(run(Coalescing::Gt200, geom(128, 128), &acc).len(), 2);
        // Stride of 128 B: every thread its own 32-byte transaction.
        let acc: Vec<_> = (0..16).map(|t| (t, 128 * t as u64, 4)).collect();
        let g = run(Coalescing::Gt200, geom(128, 128), &acc);
        assert_eq!(g.len(), 16);
        assert!(g.iter().all(|c| c.request.bytes == 32));
    }

    #[test]
    fn bit_range() {
        // Differ only in bits 12..=19: one request at the lowest address.
        let acc = [(0, 0x1000, 4), (1, 0x5000, 4), (2, 0x100004, 4)];
        let b = run(Coalescing::Bits { lo: 12, hi: 19 }, geom(32, 32), &acc);
        assert_eq!(
            b.iter().map(|c| c.request.line).collect::<Vec<_>>(),
            vec![0x1000 / 32, 0x100004 / 32]
        );
        // The low-bit scheme equals line coalescing.
        let acc: Vec<_> = (0..32).map(|t| (t, 4 * t as u64, 4)).collect();
        assert_eq!(
            run(Coalescing::Bits { lo: 0, hi: 4 }, geom(32, 32), &acc).len(),
            4
        );
    }
}
