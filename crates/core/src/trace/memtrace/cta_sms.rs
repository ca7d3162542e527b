//! The SM of each CTA a kernel's first read meets, held in a table over the box of the CTA
//! indices met so far. The first read of a cuda-memtrace kernel (`stream.rs`) learns its grid
//! and which SM ran each CTA before its rows are handed on. A map from each CTA to its SM, with
//! the CTAs' list, took about 70 bytes a CTA (70 MB for a kernel of 10^6 CTAs, the first
//! read's whole peak); the table takes 4 bytes a cell, and its box at most doubles along an
//! axis when it grows. CTAs met so far apart that the box would be mostly empty (more than 8
//! cells a CTA, past 65,536 cells) go to a map instead, so a sparse file cannot make the
//! table huge.

use rustc_hash::FxHashMap;

use super::{grid_holding, Record, LANES};
use crate::trace::model::Dim3;

/// Cells the table may have past 8 per CTA met.
const SMALL_TABLE: u64 = 1 << 16;

/// Each met CTA's SM.
#[derive(Default)]
pub(super) struct CtaSms {
    /// The table's extent (cells along each axis).
    dims: Dim3,
    /// Per cell (x fastest): the SM of its CTA plus one, 0 for a CTA not met.
    sm: Vec<u32>,
    /// Where the CTAs met are too sparse for the table: the SM of each.
    sparse: Option<FxHashMap<Dim3, u32>>,
    /// The largest index met along each axis.
    max: Option<Dim3>,
    /// CTAs met.
    met: u64,
    /// The last record's CTA and SM: a warp's records come together.
    last: Option<(Dim3, u32)>,
}

impl CtaSms {
    /// Notes `r`'s CTA on `r`'s SM; a CTA seen on two SMs is an error.
    pub fn note(&mut self, r: &Record) -> Result<(), String> {
        if self.last == Some((r.cta, r.sm)) {
            return Ok(());
        }
        let before = self.sm_of(r.cta);
        match before {
            Some(sm) if sm != r.sm => {
                return Err(format!(
                    "CTA {} was recorded on SM {} and on SM {}",
                    r.cta, sm, r.sm
                ))
            }
            Some(_) => {}
            None => {
                if self.met >= (u32::MAX / LANES - 1) as u64 {
                    return Err("too many CTAs".into());
                }
                self.met += 1;
                self.put(r.cta, r.sm);
                let m = self.max.unwrap_or(r.cta);
                self.max = Some(Dim3::new(
                    m.x.max(r.cta.x),
                    m.y.max(r.cta.y),
                    m.z.max(r.cta.z),
                ));
            }
        }
        self.last = Some((r.cta, r.sm));
        Ok(())
    }

    fn sm_of(&self, cta: Dim3) -> Option<u32> {
        match &self.sparse {
            Some(map) => map.get(&cta).copied(),
            None if self.dims.contains(cta) => {
                let v = self.sm[self.dims.linear(cta) as usize];
                v.checked_sub(1)
            }
            None => None,
        }
    }

    fn put(&mut self, cta: Dim3, sm: u32) {
        if let Some(map) = self.sparse.as_mut() {
            map.insert(cta, sm);
            return;
        }
        if !self.dims.contains(cta) {
            let grow = |have: u32, need: u32| {
                if need < have {
                    have
                } else {
                    need.saturating_add(1).max(have.saturating_mul(2))
                }
            };
            let dims = Dim3::new(
                grow(self.dims.x, cta.x),
                grow(self.dims.y, cta.y),
                grow(self.dims.z, cta.z),
            );
            if dims.count() > (8 * self.met).max(SMALL_TABLE) {
                self.make_sparse();
                self.put(cta, sm);
                return;
            }
            self.relayout(dims);
        }
        let i = self.dims.linear(cta) as usize;
        self.sm[i] = sm + 1;
    }

    /// Moves the cells to a table of extent `dims` (which holds the current one).
    fn relayout(&mut self, dims: Dim3) {
        let mut sm = vec![0u32; dims.count() as usize];
        let old = self.dims;
        for z in 0..old.z {
            for y in 0..old.y {
                let from = old.linear(Dim3::new(0, y, z)) as usize;
                let to = dims.linear(Dim3::new(0, y, z)) as usize;
                sm[to..to + old.x as usize].copy_from_slice(&self.sm[from..from + old.x as usize]);
            }
        }
        self.sm = sm;
        self.dims = dims;
    }

    fn make_sparse(&mut self) {
        let mut map = FxHashMap::default();
        for (i, &v) in self.sm.iter().enumerate() {
            if v > 0 {
                map.insert(self.dims.from_linear(i as u64), v - 1);
            }
        }
        self.sm = Vec::new();
        self.sparse = Some(map);
    }

    /// The smallest grid that holds every CTA met, checked against `rows` as every reader
    /// checks a kernel's shape, and the SM of each CTA of it by linear id (SM 0 for CTAs that
    /// never appear, so that the table is total).
    pub fn grid(&self, name: &str, rows: usize) -> Result<(Dim3, Vec<u32>), String> {
        let grid = grid_holding(name, self.max.unwrap_or(Dim3::new(0, 0, 0)), rows)?;
        let mut cta_sm = vec![0; grid.count() as usize];
        match &self.sparse {
            _ if self.met == 0 => {}
            Some(map) => {
                for (&cta, &sm) in map {
                    cta_sm[grid.linear(cta) as usize] = sm;
                }
            }
            None => {
                for z in 0..grid.z {
                    for y in 0..grid.y {
                        let from = self.dims.linear(Dim3::new(0, y, z)) as usize;
                        let to = grid.linear(Dim3::new(0, y, z)) as usize;
                        let cells = &self.sm[from..from + grid.x as usize];
                        for (out, &v) in cta_sm[to..to + grid.x as usize].iter_mut().zip(cells) {
                            *out = v.saturating_sub(1);
                        }
                    }
                }
            }
        }
        Ok((grid, cta_sm))
    }

    /// The bytes held, for tests of memory.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.sm.capacity() * 4
            + self.sparse.as_ref().map_or(0, |m| {
                m.capacity() * (std::mem::size_of::<(Dim3, u32)>() + 1)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Ctas, Record};
    use super::CtaSms;
    use crate::trace::model::{AccessKind, Dim3};
    use proptest::prelude::*;

    fn record(x: u32, y: u32, z: u32, sm: u32) -> Record {
        Record {
            sm,
            kind: AccessKind::Load,
            size: 4,
            addr: 0,
            cta: Dim3::new(x, y, z),
        }
    }

    /// CTA indices: mostly a small dense box, sometimes far out along an axis.
    fn index(dense: u32, far: u32) -> impl Strategy<Value = u32> {
        prop_oneof![8 => 0..dense, 1 => 0..far]
    }

    proptest! {
        /// The table says what the map of every CTA (the whole read's) says: the same errors
        /// for a CTA on two SMs, the same grid and the same SM of every CTA of it, or the
        /// same error for a grid too sparse or too large.
        #[test]
        fn the_table_agrees_with_a_map_of_every_cta(
            cells in proptest::collection::vec(
                (index(40, 300_000), index(6, 60_000), index(3, 60_000), 0u32..3),
                1..300,
            ),
            rows in prop_oneof![Just(0usize), Just(1usize << 22)],
        ) {
            let (mut table, mut map) = (CtaSms::default(), Ctas::default());
            for &(x, y, z, sm) in &cells {
                // A CTA keeps its SM unless the case means to move it.
                let sm = if sm == 2 { x % 2 } else { (x + y + z) % 2 };
                let r = record(x, y, z, sm);
                let (a, b) = (table.note(&r), map.id(&r).map(|_| ()));
                prop_assert_eq!(&a, &b);
                if a.is_err() {
                    return Ok(());
                }
            }
            let rows = rows.max(cells.len());
            prop_assert_eq!(table.grid("k", rows), map.grid("k", rows));
        }
    }

    #[test]
    fn a_million_ctas_take_about_four_bytes_each() {
        let mut t = CtaSms::default();
        for c in 0..1_000_000u32 {
            t.note(&record(c % 65_536, c / 65_536, 0, c % 80)).unwrap();
        }
        assert!(t.sparse.is_none());
        assert!(t.heap_bytes() <= 8 << 20, "{} bytes", t.heap_bytes());
        let (grid, sms) = t.grid("k", 1 << 25).unwrap();
        assert_eq!(grid, Dim3::new(65_536, 16, 1));
        assert!((0..1_000_000).all(|c| sms[c] == c as u32 % 80));
    }

    #[test]
    fn ctas_far_apart_go_to_a_map_and_the_table_stays_small() {
        let mut t = CtaSms::default();
        for c in 0..1000u32 {
            t.note(&record(c * 1000, c % 7, 0, 1)).unwrap();
        }
        assert!(t.sparse.is_some());
        assert!(t.heap_bytes() < 64 << 10, "{} bytes", t.heap_bytes());
        let e = t.note(&record(5000, 5, 0, 2)).unwrap_err();
        assert_eq!(e, "CTA 5000,5,0 was recorded on SM 1 and on SM 2");
    }
}
