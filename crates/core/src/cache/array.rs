//! The tag array of a set-associative cache with sectored lines, valid and dirty bits.
//!
//! Follows Dinero IV's reference semantics: a request misses when its line is absent or any
//! requested sector is invalid; a write that misses a line is only placed in the cache with
//! write-allocate; a hit (also a write hit without allocation) updates the replacement state.

use super::replacement::Policy;
use super::way_index::WayIndex;
use crate::config::Replacement;

/// Wide sets (fully associative shadows) find lines through a hash index ([`WayIndex`])
/// instead of a scan. The index holds at most one entry per way, so it stays small and
/// resident in the CPU cache.
const SCAN_WAYS: usize = 16;

/// What one access did to the array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrayOutcome {
    /// The line and every requested sector were present.
    pub hit: bool,
    /// The line was present (some sectors may have been invalid).
    pub line_hit: bool,
    /// Sectors of an evicted dirty line that must be written back (bit i = sector i; 0 if
    /// none).
    pub writeback_sectors: u32,
    /// Requested sectors that were not present (all of them when the line missed; bit i =
    /// sector i).
    pub missing_sectors: u32,
    /// The line given up to make room for this one (its replacement policy's victim).
    pub evicted: Option<u64>,
}

/// What a write under lazy fetch-on-read ([`CacheArray::access_lazy`]) covers of its sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The sectors it covers only in part (bit i = sector i).
    Partial(u32),
    /// The bytes of the line it writes (bit b = byte b; lines of at most 128 bytes) and the
    /// sector size: a sector becomes readable once every byte of it has been written since
    /// its line came in, over as many writes as it takes (GPGPU-Sim's byte mask).
    Bytes { mask: u128, sector_bytes: u32 },
}

/// The sectors of `sectors` whose bytes `bytes` (bit b = byte b of the line) all hold.
#[inline]
fn whole_sectors(bytes: u128, sectors: u32, sector_bytes: u32) -> u32 {
    let sb = sector_bytes.clamp(1, 128);
    let ones = if sb >= 128 {
        u128::MAX
    } else {
        (1u128 << sb) - 1
    };
    let (mut whole, mut m) = (0, sectors);
    while m != 0 {
        let s = m.trailing_zeros();
        m &= m - 1;
        let shift = s * sb;
        if shift < 128 && (bytes >> shift) & ones == ones {
            whole |= 1 << s;
        }
    }
    whole
}

/// One way of a set as it is now, for the step-through view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WayState {
    /// The line it holds (`None`: empty).
    pub line: Option<u64>,
    /// Valid sectors (bit i = sector i).
    pub valid: u32,
    /// Dirty sectors.
    pub dirty: u32,
    /// What the replacement policy keeps of it ([`crate::cache::replacement::Policy::state`]).
    pub policy: u64,
}

#[derive(Clone, Debug)]
pub struct CacheArray {
    sets: usize,
    ways: usize,
    /// line + 1 per slot; 0 = invalid.
    tags: Vec<u64>,
    valid: Vec<u32>,
    dirty: Vec<u32>,
    /// Valid ways per set: ways `0..fill` hold lines (nothing is ever invalidated).
    fill: Vec<u32>,
    policy: Policy,
    /// line -> slot for wide sets.
    index: Option<WayIndex>,
    /// Sectors written in part and never read since (lazy fetch-on-read,
    /// [`CacheArray::access_lazy`]): valid for writes, fetched when read. Empty until used.
    unreadable: Vec<u32>,
    /// The bytes written since each slot's line came in ([`Written::Bytes`]). Empty until
    /// used.
    written: Vec<u128>,
}

impl CacheArray {
    pub fn new(sets: usize, ways: usize, replacement: Replacement, seed: u64) -> Self {
        CacheArray {
            sets,
            ways,
            tags: vec![0; sets * ways],
            valid: vec![0; sets * ways],
            dirty: vec![0; sets * ways],
            fill: vec![0; sets],
            policy: Policy::new(replacement, sets, ways, seed),
            index: (ways > SCAN_WAYS).then(|| WayIndex::new(sets * ways)),
            unreadable: Vec::new(),
            written: Vec::new(),
        }
    }

    pub fn sets(&self) -> usize {
        self.sets
    }

    /// The ways of `set` as they are now (an empty list for a set that does not exist).
    pub fn set_state(&self, set: usize) -> Vec<WayState> {
        if set >= self.sets {
            return Vec::new();
        }
        let fill = self.fill[set] as usize;
        (0..self.ways)
            .map(|way| {
                let slot = set * self.ways + way;
                if way < fill {
                    WayState {
                        line: Some(self.tags[slot] - 1),
                        valid: self.valid[slot],
                        dirty: self.dirty[slot],
                        policy: self.policy.state(set, way),
                    }
                } else {
                    WayState {
                        line: None,
                        valid: 0,
                        dirty: 0,
                        policy: 0,
                    }
                }
            })
            .collect()
    }

    /// What [`WayState::policy`] means for this array's policy.
    pub fn policy_state_meaning(&self) -> &'static str {
        self.policy.state_meaning()
    }

    /// Writes back every dirty line (Dinero IV's copy-back of the whole cache at the end of a
    /// run): returns the lines and sectors written and leaves every line clean.
    pub fn flush(&mut self) -> (u64, u64) {
        self.flush_each(|_, _| {})
    }

    /// [`CacheArray::flush`], telling `f` each dirty line and its dirty sectors.
    pub fn flush_each(&mut self, mut f: impl FnMut(u64, u32)) -> (u64, u64) {
        let (mut lines, mut sectors) = (0, 0);
        for set in 0..self.sets {
            let base = set * self.ways;
            for slot in base..base + self.fill[set] as usize {
                let d = self.valid[slot] & self.dirty[slot];
                if d != 0 {
                    lines += 1;
                    sectors += d.count_ones() as u64;
                    f(self.tags[slot] - 1, d);
                }
                self.dirty[slot] = 0;
            }
        }
        (lines, sectors)
    }

    /// The dirty sectors' count, without cleaning them.
    pub fn dirty_sectors(&self) -> u64 {
        (0..self.sets)
            .flat_map(|set| {
                let base = set * self.ways;
                base..base + self.fill[set] as usize
            })
            .map(|slot| (self.valid[slot] & self.dirty[slot]).count_ones() as u64)
            .sum()
    }

    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        if let Some(index) = &self.index {
            return index.get(line).map(|slot| slot as usize - set * self.ways);
        }
        let base = set * self.ways;
        let n = self.fill[set] as usize;
        let tag = line + 1;
        self.tags[base..base + n].iter().position(|&t| t == tag)
    }

    /// One access under lazy fetch-on-read, GPGPU-Sim's write allocation `L` (its L2's, and
    /// the H100's L1 stores): a write allocates its sectors without fetching anything, and
    /// dirties them if `dirty` (write-back); of those, the ones it does not cover whole
    /// (`written`) stay unreadable until a read fetches them. A read misses on a sector that
    /// is absent or unreadable, and fetches it (`missing_sectors`).
    #[inline]
    pub fn access_lazy(
        &mut self,
        set: usize,
        line: u64,
        sectors: u32,
        write: bool,
        written: Written,
        dirty: bool,
    ) -> ArrayOutcome {
        if self.unreadable.is_empty() {
            self.unreadable = vec![0; self.sets * self.ways];
        }
        let base = set * self.ways;
        let found = self.find(set, line);
        let slot = match found {
            Some(way) => base + way,
            // Allocate as a read would: the replacement policy's victim makes room.
            None => {
                let out = self.access(set, line, 0, true, false);
                let way = self.find(set, line).unwrap_or(0);
                let slot = base + way;
                self.unreadable[slot] = 0;
                if let Some(w) = self.written.get_mut(slot) {
                    *w = 0;
                }
                return self.fill_lazy(slot, sectors, (write, written, dirty), out);
            }
        };
        self.policy.touch(set, found.unwrap_or(0));
        let out = ArrayOutcome {
            line_hit: true,
            ..ArrayOutcome::default()
        };
        self.fill_lazy(slot, sectors, (write, written, dirty), out)
    }

    /// The sector bits of a lazy access to the line in `slot` (present now, maybe empty).
    #[inline]
    fn fill_lazy(
        &mut self,
        slot: usize,
        sectors: u32,
        (write, written, dirty): (bool, Written, bool),
        mut out: ArrayOutcome,
    ) -> ArrayOutcome {
        let valid = self.valid[slot];
        let unreadable = self.unreadable[slot];
        if write {
            let partial = match written {
                Written::Partial(p) => p,
                Written::Bytes { mask, sector_bytes } => {
                    if self.written.is_empty() {
                        self.written = vec![0; self.sets * self.ways];
                    }
                    let bytes = self.written[slot] | mask;
                    self.written[slot] = bytes;
                    sectors & !whole_sectors(bytes, sectors, sector_bytes)
                }
            };
            out.missing_sectors = sectors & !valid;
            // A sector written whole becomes readable; one written in part stays as it was
            // if it was readable, else unreadable.
            self.unreadable[slot] =
                (unreadable & !(sectors & !partial)) | (partial & sectors & !valid);
            if dirty {
                self.dirty[slot] |= sectors;
            }
        } else {
            out.missing_sectors = sectors & (!valid | unreadable);
            self.unreadable[slot] = unreadable & !sectors;
        }
        self.valid[slot] = valid | sectors;
        out.hit = out.missing_sectors == 0;
        out
    }

    /// One access. `allocate` says whether a missing line is brought in (false only for a
    /// write without write-allocate); `dirty` marks the written sectors dirty (write-back).
    #[inline]
    pub fn access(
        &mut self,
        set: usize,
        line: u64,
        sectors: u32,
        allocate: bool,
        dirty: bool,
    ) -> ArrayOutcome {
        let base = set * self.ways;
        let mut out = ArrayOutcome {
            missing_sectors: sectors,
            ..ArrayOutcome::default()
        };
        match self.find(set, line) {
            Some(way) => {
                let slot = base + way;
                out.line_hit = true;
                out.missing_sectors = sectors & !self.valid[slot];
                out.hit = out.missing_sectors == 0;
                self.policy.touch(set, way);
                self.valid[slot] |= sectors;
                if dirty {
                    self.dirty[slot] |= sectors;
                }
            }
            None if allocate => {
                let n = self.fill[set] as usize;
                let way = if n < self.ways {
                    self.fill[set] += 1;
                    n
                } else {
                    let v = self.policy.victim(set);
                    let slot = base + v;
                    let d = self.valid[slot] & self.dirty[slot];
                    out.writeback_sectors = d;
                    out.evicted = Some(self.tags[slot] - 1);
                    if let Some(index) = &mut self.index {
                        index.remove(self.tags[slot] - 1);
                    }
                    v
                };
                let slot = base + way;
                self.tags[slot] = line + 1;
                self.valid[slot] = sectors;
                self.dirty[slot] = if dirty { sectors } else { 0 };
                if let Some(index) = &mut self.index {
                    index.insert(line, slot as u32);
                }
                self.policy.insert(set, way);
            }
            None => {}
        }
        out
    }
}
