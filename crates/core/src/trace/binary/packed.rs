//! The rows of a version 5 chunk, packed: a chunk's rows are turned into six columns of
//! small numbers (each thread the difference from the row before, each dynamic instance and
//! address the difference from the last one of the same instruction), each column stored in
//! the fewest whole bytes its values need above their minimum, byte plane by byte plane, and
//! the whole compressed by zstd. A regular kernel's rows shrink to far less than a byte each
//! (matmul `n=128`: 23 bytes a row in version 4), and unpacking is a few passes over flat
//! arrays.
//!
//! Payload of a chunk of `n` rows (after zstd decompression), little-endian:
//! ```text
//! thread:       u32 first thread  column of zigzag(thread - thread of the row before)
//! instruction:  column of instruction ids
//! slots:        u16 m  m x (u16 slot, u32 first instance, u64 first address of the slot)
//! instance:     column of zigzag(instance - last instance of the row's slot)
//! address:      column of zigzag(address - last address of the row's slot)
//! size, flags:  a column each
//! column:       u8 width w (0 to 8)  u64 base  w planes of n bytes (plane j: byte j of
//!               every value - base)
//! ```
//! A row's slot is its instruction, or [`SHARED`] for instructions from there on; the first
//! row of a slot is stored against the slot's first instance and address (so as 0). An
//! instance is the count of a thread's executions of an instruction, so against the slot's
//! last one it is mostly +1 (a thread's rows) or 0 (a warp's lanes). Differences are
//! wrapping and start again at each chunk, so a chunk unpacks alone.

use crate::trace::codec;
use crate::trace::Columns;

/// The slot of the instructions from this id on, which share one last instance and address.
const SHARED: usize = 1 << 12;
const SLOTS: usize = SHARED + 1;
/// Bytes of a column's head: width and base.
const HEAD: usize = 9;
/// The most bytes of each column's values (thread, instruction, instance, address, size,
/// flags), and of the fields before them.
const WIDTHS: [usize; 6] = [4, 4, 4, 8, 2, 1];
const FIELDS: usize = 4 + 2 + SLOTS * SLOT_BYTES;
/// Bytes of a slot's entry: slot, first instance, first address.
const SLOT_BYTES: usize = 2 + 4 + 8;

/// The most bytes the unpacked payload of `n` rows can take.
pub(super) fn max_unpacked(n: usize) -> usize {
    FIELDS + WIDTHS.iter().map(|w| HEAD + n * w).sum::<usize>()
}

fn zigzag32(d: u32) -> u32 {
    (d << 1) ^ ((d as i32 >> 31) as u32)
}
fn unzigzag32(z: u32) -> u32 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}
fn zigzag64(d: u64) -> u64 {
    (d << 1) ^ ((d as i64 >> 63) as u64)
}
fn unzigzag64(z: u64) -> u64 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}
fn slot(inst: u32) -> usize {
    (inst as usize).min(SHARED)
}

/// Rows `range` of `c` as the unpacked payload, appended to `out`; `v` is room for a
/// column's values.
fn pack_columns(c: &Columns, rows: std::ops::Range<usize>, v: &mut Vec<u64>, out: &mut Vec<u8>) {
    put_deltas(out, &c.thread[rows.clone()], v);
    v.clear();
    v.extend(c.inst[rows.clone()].iter().map(|&i| i as u64));
    put_column(out, v);
    // Each slot's first instance and address, in the order the slots first come.
    let mut last: Vec<Option<(u32, u64)>> = vec![None; SLOTS];
    let mut firsts = Vec::new();
    for i in rows.clone() {
        let s = slot(c.inst[i]);
        if last[s].is_none() {
            last[s] = Some((c.dyn_inst[i], c.addr[i]));
            firsts.push((s as u16, c.dyn_inst[i], c.addr[i]));
        }
    }
    out.extend_from_slice(&(firsts.len() as u16).to_le_bytes());
    for (s, d, a) in &firsts {
        out.extend_from_slice(&s.to_le_bytes());
        out.extend_from_slice(&d.to_le_bytes());
        out.extend_from_slice(&a.to_le_bytes());
    }
    let mut dyns = last.clone();
    v.clear();
    v.extend(rows.clone().map(|i| {
        let l = &mut dyns[slot(c.inst[i])];
        let (d, a) = l.unwrap_or_default();
        *l = Some((c.dyn_inst[i], a));
        zigzag32(c.dyn_inst[i].wrapping_sub(d)) as u64
    }));
    put_column(out, v);
    v.clear();
    v.extend(rows.clone().map(|i| {
        let l = &mut last[slot(c.inst[i])];
        let (d, a) = l.unwrap_or_default();
        *l = Some((d, c.addr[i]));
        zigzag64(c.addr[i].wrapping_sub(a))
    }));
    put_column(out, v);
    v.clear();
    v.extend(c.size[rows.clone()].iter().map(|&s| s as u64));
    put_column(out, v);
    v.clear();
    v.extend(c.flags[rows].iter().map(|&f| f as u64));
    put_column(out, v);
}

/// Appends a column of differences: the first value, then each one's from the one before.
fn put_deltas(out: &mut Vec<u8>, col: &[u32], v: &mut Vec<u64>) {
    let mut prev = col.first().copied().unwrap_or(0);
    out.extend_from_slice(&prev.to_le_bytes());
    v.clear();
    v.extend(col.iter().map(|&x| {
        let z = zigzag32(x.wrapping_sub(prev));
        prev = x;
        z as u64
    }));
    put_column(out, v);
}

/// Appends one column: its width, base, and byte planes.
fn put_column(out: &mut Vec<u8>, values: &[u64]) {
    let min = values.iter().copied().min().unwrap_or(0);
    let max = values.iter().copied().max().unwrap_or(0);
    let width = 8 - (max - min).leading_zeros() as usize / 8;
    out.push(width as u8);
    out.extend_from_slice(&min.to_le_bytes());
    for plane in 0..width {
        out.extend(values.iter().map(|&v| ((v - min) >> (8 * plane)) as u8));
    }
}

/// Packs chunks of rows: the columns, then zstd (`codec`: level 3 in the desktop build).
pub(super) struct Packer {
    z: codec::Compressor,
    columns: Vec<u8>,
    values: Vec<u64>,
}

impl Packer {
    pub(super) fn new() -> std::io::Result<Self> {
        Ok(Packer {
            z: codec::Compressor::new()?,
            columns: Vec::new(),
            values: Vec::new(),
        })
    }

    /// Appends rows `range` of `c`, packed, to `out`.
    pub(super) fn pack(
        &mut self,
        c: &Columns,
        range: std::ops::Range<usize>,
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        self.columns.clear();
        pack_columns(c, range, &mut self.values, &mut self.columns);
        self.z.compress(&self.columns, out)
    }
}

/// Unpacks chunks of rows, keeping its buffers from one chunk to the next.
pub(super) struct Unpacker {
    z: codec::Decompressor,
    columns: Vec<u8>,
    last: Box<Last>,
}

/// Each slot's last instance and address (only the slots a chunk lists are read).
struct Last {
    instance: [u32; SLOTS],
    address: [u64; SLOTS],
}

impl Default for Unpacker {
    fn default() -> Self {
        Unpacker {
            z: codec::Decompressor::default(),
            columns: Vec::new(),
            last: Box::new(Last {
                instance: [0; SLOTS],
                address: [0; SLOTS],
            }),
        }
    }
}

impl Unpacker {
    /// Appends the `n` rows packed in `frame` to `cols`, or says what was wrong; on an error
    /// `cols` may hold part of the rows (the caller truncates).
    pub(super) fn unpack(
        &mut self,
        frame: &[u8],
        n: usize,
        cols: &mut Columns,
    ) -> Result<Threads, String> {
        self.columns.clear();
        self.columns.reserve(max_unpacked(n));
        self.z
            .decompress(frame, &mut self.columns)
            .map_err(|e| format!("zstd cannot decompress them ({e})"))?;
        unpack_columns(&self.columns, n, &mut self.last, cols)
    }
}

/// One column of a payload: its width, base and planes.
struct Column<'a> {
    base: u64,
    planes: &'a [u8],
    n: usize,
}

/// The integer types of the columns.
trait Word: Copy {
    fn from_u64(v: u64) -> Self;
    /// `self` plus byte `b` shifted left by `shift` bits (less than the type's width).
    fn add_byte(self, b: u8, shift: u32) -> Self;
}

macro_rules! word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn add_byte(self, b: u8, shift: u32) -> Self {
                self.wrapping_add((b as $t) << shift)
            }
        }
    )*};
}
word!(u8, u16, u32, u64);

impl Column<'_> {
    /// Appends the column's values to `out`: the base, then each byte plane added in a pass
    /// of its own over flat arrays.
    fn append_to<T: Word>(&self, out: &mut Vec<T>) {
        let start = out.len();
        out.resize(start + self.n, T::from_u64(self.base));
        let dst = &mut out[start..];
        if self.n == 0 {
            return;
        }
        for (j, plane) in self.planes.chunks_exact(self.n).enumerate() {
            let shift = 8 * j as u32;
            for (o, &b) in dst.iter_mut().zip(plane) {
                *o = o.add_byte(b, shift);
            }
        }
    }
}

/// Reads the fields of a payload in order.
struct Fields<'a> {
    bytes: &'a [u8],
    n: usize,
}

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let Some((head, rest)) = self.bytes.split_first_chunk::<N>() else {
            return Err(format!("they end inside {what}"));
        };
        self.bytes = rest;
        Ok(*head)
    }
    fn column(&mut self, max_width: usize) -> Result<Column<'a>, String> {
        let [width, b @ ..] = self.take::<HEAD>("a column's head")?;
        let width = width as usize;
        if width > max_width {
            return Err(format!(
                "a column of values of at most {max_width} bytes says they take {width}"
            ));
        }
        let Some((planes, rest)) = self.bytes.split_at_checked(width * self.n) else {
            return Err("they end inside a column".to_string());
        };
        self.bytes = rest;
        Ok(Column {
            base: u64::from_le_bytes(b),
            planes,
            n: self.n,
        })
    }
}

/// Appends the `n` rows of the unpacked payload `bytes` to `cols` (barrier rows get
/// instruction 0, as the writer stores them) and says what it saw of their threads, or says
/// what was wrong; `last` is room for the
/// slots' last addresses. On an error `cols` may hold part of the rows (the caller
/// truncates).
fn unpack_columns(
    bytes: &[u8],
    n: usize,
    last: &mut Last,
    cols: &mut Columns,
) -> Result<Threads, String> {
    let mut f = Fields { bytes, n };
    let start = cols.addr.len();
    // The threads, their differences undone, noting whether they never went down (no
    // difference below 0 and none wrapping past u32::MAX).
    let first = u32::from_le_bytes(f.take("the first thread")?);
    f.column(4)?.append_to(&mut cols.thread);
    let (mut prev, mut down, mut rise) = (first, 0u32, 0u64);
    for t in &mut cols.thread[start..] {
        down |= *t & 1;
        rise += (*t >> 1) as u64;
        prev = prev.wrapping_add(unzigzag32(*t));
        *t = prev;
    }
    let threads = Threads {
        first,
        last: prev,
        rising: down == 0 && first as u64 + rise <= u32::MAX as u64,
    };
    f.column(4)?.append_to(&mut cols.inst);
    let slots = u16::from_le_bytes(f.take("the slot count")?) as usize;
    for _ in 0..slots {
        let [s0, s1, d0, d1, d2, d3, a @ ..] = f.take::<SLOT_BYTES>("a slot's first row")?;
        let s = u16::from_le_bytes([s0, s1]) as usize;
        if s >= SLOTS {
            return Err(format!("slot {s} is past the last slot, {SHARED}"));
        }
        last.instance[s] = u32::from_le_bytes([d0, d1, d2, d3]);
        last.address[s] = u64::from_le_bytes(a);
    }
    f.column(4)?.append_to(&mut cols.dyn_inst);
    f.column(8)?.append_to(&mut cols.addr);
    let by_slot = cols.dyn_inst[start..]
        .iter_mut()
        .zip(&mut cols.addr[start..])
        .zip(&cols.inst[start..]);
    for ((d, a), &i) in by_slot {
        let s = slot(i);
        *d = last.instance[s].wrapping_add(unzigzag32(*d));
        last.instance[s] = *d;
        *a = last.address[s].wrapping_add(unzigzag64(*a));
        last.address[s] = *a;
    }
    f.column(2)?.append_to(&mut cols.size);
    f.column(1)?.append_to(&mut cols.flags);
    if !f.bytes.is_empty() {
        return Err(format!("{} bytes follow their last column", f.bytes.len()));
    }
    let barrier = crate::trace::AccessKind::Barrier.code();
    for (i, &fl) in cols.inst[start..].iter_mut().zip(&cols.flags[start..]) {
        if fl & 0x1f == barrier {
            *i = 0;
        }
    }
    Ok(threads)
}

/// What unpacking learnt of a chunk's threads on the way.
#[derive(Clone, Copy, Debug)]
pub(super) struct Threads {
    pub(super) first: u32,
    pub(super) last: u32,
    /// Whether each thread is at least the one before, as far as a pass can tell: never
    /// true when one is not; false for a rise of 2^31 or more (the caller then checks row
    /// by row).
    pub(super) rising: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn columns(rows: &[(u32, u32, u32, u64, u16, u8)]) -> Columns {
        let mut c = Columns::default();
        for &(t, i, d, a, s, f) in rows {
            c.thread.push(t);
            c.inst.push(i);
            c.dyn_inst.push(d);
            c.addr.push(a);
            c.size.push(s);
            c.flags.push(f);
        }
        c
    }

    proptest! {
        /// Any rows (barrier rows with instruction 0, as readers give them) come back as they
        /// went in, from any range of the columns.
        #[test]
        fn rows_unpack_as_packed(
            rows in proptest::collection::vec(
                (any::<u32>(), prop_oneof![0u32..8, 4090u32..4100, any::<u32>()],
                 any::<u32>(), prop_oneof![0u64..4096, any::<u64>()], any::<u16>(),
                 prop_oneof![Just(0u8), Just(1u8), any::<u8>()]),
                1..300),
            skip in 0usize..3,
        ) {
            let barrier = crate::trace::AccessKind::Barrier.code();
            let rows: Vec<_> = rows
                .into_iter()
                .map(|(t, i, d, a, s, f)| (t, if f & 0x1f == barrier { 0 } else { i }, d, a, s, f))
                .collect();
            let c = columns(&rows);
            let range = skip.min(rows.len() - 1)..rows.len();
            let mut bytes = Vec::new();
            pack_columns(&c, range.clone(), &mut Vec::new(), &mut bytes);
            prop_assert!(bytes.len() <= max_unpacked(range.len()));
            let mut frame = vec![7u8];
            Packer::new().unwrap().pack(&c, range.clone(), &mut frame).unwrap();
            prop_assert_eq!(frame[0], 7);
            let mut back = columns(&[(9, 9, 9, 9, 9, 9)]);
            let threads = Unpacker::default()
                .unpack(&frame[1..], range.len(), &mut back)
                .map_err(TestCaseError::fail)?;
            let t = &c.thread[range.clone()];
            prop_assert_eq!((threads.first, threads.last), (t[0], t[t.len() - 1]));
            // Rising is never claimed wrongly; it may be missed only for steps of 2^31 or more.
            let sorted = t.windows(2).all(|w| w[0] <= w[1]);
            let small = t.windows(2).all(|w| w[0].abs_diff(w[1]) < 1 << 31);
            prop_assert!(!threads.rising || sorted);
            prop_assert!(threads.rising || !sorted || !small);
            prop_assert_eq!(back, columns(&[&[(9, 9, 9, 9, 9, 9)][..], &rows[range]].concat()));
        }
    }

    #[test]
    fn a_regular_stream_takes_far_less_than_a_byte_a_row() {
        // 4 instructions, each walking its own array by 4 bytes, thread by thread.
        let rows: Vec<_> = (0..4096u32)
            .map(|r| {
                let (t, i) = (r / 16, r % 4);
                let k = r % 16 / 4;
                (
                    t,
                    i,
                    k,
                    0x1000_0000 * (i as u64 + 1) + 4 * (t as u64 * 4 + k as u64),
                    4,
                    0,
                )
            })
            .collect();
        let mut bytes = Vec::new();
        pack_columns(&columns(&rows), 0..rows.len(), &mut Vec::new(), &mut bytes);
        // A byte a column but for size and flags (constant), before zstd.
        assert!(bytes.len() <= 4 * rows.len() + 200, "{} bytes", bytes.len());
        let mut frame = Vec::new();
        Packer::new()
            .unwrap()
            .pack(&columns(&rows), 0..rows.len(), &mut frame)
            .unwrap();
        // zstd's level 3 (the C library) packs it in a twentieth of a byte a row; ruzstd's
        // fastest level (the web build) in a sixteenth.
        let per_byte = if cfg!(feature = "native-codecs") {
            20
        } else {
            16
        };
        assert!(
            frame.len() * per_byte <= rows.len(),
            "{} bytes",
            frame.len()
        );
    }

    #[test]
    fn damaged_payloads_are_errors_not_panics() {
        let rows: Vec<_> = (0..100u32)
            .map(|r| (r, r % 3, 0, 8 * r as u64, 4, 0))
            .collect();
        let mut bytes = Vec::new();
        pack_columns(&columns(&rows), 0..rows.len(), &mut Vec::new(), &mut bytes);
        let mut last = Unpacker::default().last;
        let mut unpack = |b: &[u8]| unpack_columns(b, 100, &mut last, &mut Columns::default());
        for cut in 0..bytes.len() {
            assert!(unpack(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(unpack(&long).is_err());
        let mut wide = bytes;
        wide[4] = 9;
        let e = unpack(&wide).unwrap_err();
        assert!(e.contains("at most 4 bytes"), "{e}");
        // A frame that is not zstd, or unpacks to more than the rows can take.
        let mut u = Unpacker::default();
        assert!(u.unpack(b"not zstd", 100, &mut Columns::default()).is_err());
        let big = zstd::bulk::compress(&vec![0u8; max_unpacked(100) + 1], 3).unwrap();
        let e = u.unpack(&big, 100, &mut Columns::default()).unwrap_err();
        assert!(e.contains("zstd"), "{e}");
    }
}
