//! Every tuning threshold of the communication analysis, in one place.
//!
//! None of these changes a result: each picks between a fast path and its simple twin, or
//! sizes a buffer. The tests check the fast paths against the per-byte reference on both
//! sides of each threshold (`comm/tests`), so a value can be changed freely and measured.
//!
//! The benchmarks that chose them are `cargo bench --bench core -- comm`: `hotspot` (a
//! regular stencil, 14 M accesses, 8 launches) and `bfs-levels` (irregular, 12 M accesses).
//! Each entry says what moving it does on the two, from the sweep in `docs/communication.md`
//! ("Tuning", one threshold at a time, each value built and run interleaved), and what it
//! guards where the two benchmarks do not reach.

/// How often the passes report progress (and may be cancelled), in accesses: the columns
/// are walked in chunks of this many zipped slices, with no test per access. Smaller costs a
/// call per chunk for nothing a person can see; larger makes cancelling slower. 2^12 and 2^20
/// were within noise of this on both benchmarks.
pub(super) const PROGRESS_EVERY: usize = 1 << 16;

/// A counting sort by a `u32` key is taken when the keys span at most
/// `COUNTING_SPAN_PER_ITEM * items + COUNTING_SPAN_SLACK` values; beyond, a comparison sort
/// (writer numbers and CTA ids are dense, so only huge sparse grids fall back; neither
/// benchmark does). The table of starts is then at most a few times the items it sorts.
pub(super) const COUNTING_SPAN_PER_ITEM: usize = 4;
pub(super) const COUNTING_SPAN_SLACK: usize = 1024;

/// The most blocks of the table that finds a writer number's launch ([`super::transfers`]):
/// blocks are as long as the smallest launch unless that would need more. The table took the
/// drain of `bfs-levels` (many small launches) 3.8% fewer instructions than a binary search;
/// 2^8 blocks was within noise on both benchmarks. 64 Ki blocks of 8 bytes stay within the L2
/// cache.
pub(super) const LAUNCH_BLOCKS: u32 = 1 << 16;

/// How many of the current reader's latest pieces a new piece may extend. 1 costs `hotspot`
/// 20% (a piece no longer finds its writer's latest piece among other writers'); 8 costs 6%
/// and 9% (more comparisons per read, no more joins).
pub(super) const RECENT_PIECES: usize = 4;

/// Pieces the current reader's list may hold beyond twice its length after its last
/// compaction before it is compacted again: a reader that reads many ranges is compacted
/// while its list is in the processor's cache, and memory stays within twice the distinct
/// ranges. 64 was within noise on both benchmarks.
pub(super) const PIECE_SLACK: usize = 1024;

/// Pieces the finished runs of a launch may hold beyond twice their length after the last
/// consolidation before they are consolidated again. Only traces that interleave their
/// CTAs access by access come back to a reader; the test
/// `readers_interleaved_access_by_access_keep_memory_bounded` holds them to this bound.
pub(super) const RUN_SLACK: usize = 1 << 16;

/// Slots of the probation list of the stride counts (a power of two): strides seen once
/// while the table is full wait here instead of churning the table, so random strides
/// cost a slot each instead of a table insertion and, every so many, an eviction. 256 was
/// within noise on both benchmarks (their strides are few).
pub(super) const PROBATION: usize = 4096;

/// Bytes of a page of the last-writer map are `1 << PAGE_BITS` (at most 16: segments hold
/// 16-bit offsets). 64-byte pages take `hotspot` 13% faster but `bfs-levels` 31% slower
/// (scattered bytes spread over more pages); 1 KiB pages take `hotspot` 13% slower (longer
/// segment lists). A contiguous write costs one segment per page.
pub(super) const PAGE_BITS: u32 = 8;

/// Segments above which a page of the last-writer map is kept dense (one writer per byte,
/// 1 KiB, at most four times the list it replaces). `bfs-levels`, whose frontier updates
/// scatter single bytes, is 38% slower at 128 (dense pages first took its main pass from
/// 0.78 s to 0.58 s); 8 was within noise; `hotspot` writes contiguous tiles and never reaches
/// it.
pub(super) const DENSE_AT: usize = 32;
