//! cuda-memtrace binary traces (the tracer of Rieber 2017), in both layouts:
//!
//! - **thesis** (Rieber 2017 §5.1.2): a first byte giving the record size (24) and a LF, a kernel
//!   name line, then 24-byte records; an all-zero record ends the kernel and the next kernel's
//!   name line (or the end of the file) follows.
//! - **later**: 10 magic bytes, `0x19` or `0x1a` then `CUDATRACE`; `0x00` + u16 length + name
//!   starts a kernel; `0xFF` + record is one access; `0xFE` + record + u16 count is a run of
//!   `count` accesses at consecutive addresses of that size.
//!
//! A record is three little-endian u64: `desc = smid << 32 | type << 28 | size` (type 0 load,
//! 1 store, 2 atomic), `addr`, `cta = x << 32 | y << 16 | z`.
//!
//! The tracer records no thread ids, so each CTA is modelled as one warp of 32 threads: a warp
//! instruction is a maximal sequence of consecutive records of the same CTA, SM, type and size,
//! at most 32 accesses, spread over lanes 0 to 31 (the tracer writes one warp's records
//! together). The grid is the smallest that holds every recorded CTA. Kernels are
//! [`Order::Issued`] and keep each CTA's SM, so each SM's L1 sees the CTAs that ran on it.

use std::io::BufRead;

use rustc_hash::FxHashMap;

use super::model::{Access, AccessKind, AtomicOp, Dim3, KernelBuilder, MemSpace, Order};
use super::{KernelSink, Location, TraceError};

const LANES: u32 = 32;
const RECORD: usize = 24;

/// True when `head` starts like a cuda-memtrace file of either layout.
pub fn looks_like(head: &[u8]) -> bool {
    (head.len() >= 10 && matches!(head[0], 0x19 | 0x1a) && &head[1..10] == b"CUDATRACE")
        || (head.len() >= 2 && head[0] == RECORD as u8 && head[1] == b'\n')
}

struct Reader<'a, R> {
    r: R,
    at: u64,
    file: &'a str,
}

impl<R: BufRead> Reader<'_, R> {
    fn err(&self, at: u64, m: impl Into<String>) -> TraceError {
        TraceError::parse(self.file, Location::Byte(at), m)
    }
    /// Exactly `buf.len()` bytes; `Ok(false)` at a clean end of input before the first byte.
    fn fill(&mut self, buf: &mut [u8], what: &str, eof_ok: bool) -> Result<bool, TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) if got == 0 && eof_ok => return Ok(false),
                Ok(0) => {
                    return Err(self.err(
                        self.at + got as u64,
                        format!("file ends early: expected {what}"),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TraceError::io(self.file, e)),
            }
        }
        self.at += buf.len() as u64;
        Ok(true)
    }
    fn line(&mut self, what: &str) -> Result<Option<String>, TraceError> {
        let mut v = Vec::new();
        let start = self.at;
        let n = self
            .r
            .read_until(b'\n', &mut v)
            .map_err(|e| TraceError::io(self.file, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.at += n as u64;
        if v.pop() != Some(b'\n') {
            return Err(self.err(
                self.at,
                format!("file ends early: expected a LF after {what}"),
            ));
        }
        String::from_utf8(v)
            .map(Some)
            .map_err(|_| self.err(start, format!("{what} is not valid UTF-8")))
    }
}

/// One decoded record.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Record {
    sm: u32,
    kind: AccessKind,
    size: u16,
    addr: u64,
    cta: Dim3,
}

fn decode(rec: &[u8; RECORD]) -> Result<Record, String> {
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[i * 8..i * 8 + 8]);
        u64::from_le_bytes(b)
    };
    let (desc, addr, cta) = (word(0), word(1), word(2));
    let kind = match (desc >> 28) & 0xf {
        0 => AccessKind::Load,
        1 => AccessKind::Store,
        2 => AccessKind::Atomic(AtomicOp::Add),
        t => {
            return Err(format!(
                "record type {t}: expected 0 (load), 1 (store) or 2 (atomic)"
            ))
        }
    };
    let size = desc & 0x0fff_ffff;
    if size == 0 || size > u16::MAX as u64 {
        return Err(format!("record size {size}: expected 1 to 65535 bytes"));
    }
    Ok(Record {
        sm: (desc >> 32) as u32,
        kind,
        size: size as u16,
        addr,
        cta: Dim3::new(
            (cta >> 32) as u32,
            ((cta >> 16) & 0xffff) as u32,
            (cta & 0xffff) as u32,
        ),
    })
}

/// Builds one kernel from records, grouping them into warp instructions.
struct KernelState {
    name: String,
    b: KernelBuilder,
    ctas: FxHashMap<Dim3, u32>,
    cta_list: Vec<Dim3>,
    cta_sm: Vec<u32>,
    insts: FxHashMap<(u8, u16), u32>,
    /// The current warp instruction: its key, dynamic instance and lanes used.
    group: Option<(u32, u32, AccessKind, u16)>,
    lane: u32,
    next_dyn: u32,
}

impl KernelState {
    fn new(name: String) -> Result<Self, String> {
        // Provisional grid: CTAs get dense ids as they appear; `finish` sets the real grid.
        let b = KernelBuilder::new(
            name.clone(),
            Dim3::x(u32::MAX / LANES - 1),
            Dim3::x(LANES),
            Order::Issued,
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            name,
            b,
            ctas: FxHashMap::default(),
            cta_list: Vec::new(),
            cta_sm: Vec::new(),
            insts: FxHashMap::default(),
            group: None,
            lane: 0,
            next_dyn: 0,
        })
    }

    fn push(&mut self, r: Record) -> Result<(), String> {
        let cta = match self.ctas.get(&r.cta) {
            Some(&c) => c,
            None => {
                let c = self.cta_list.len() as u32;
                if c >= u32::MAX / LANES - 1 {
                    return Err("too many CTAs".into());
                }
                self.ctas.insert(r.cta, c);
                self.cta_list.push(r.cta);
                self.cta_sm.push(r.sm);
                c
            }
        };
        if self.cta_sm[cta as usize] != r.sm {
            return Err(format!(
                "CTA {} was recorded on SM {} and on SM {}",
                r.cta, self.cta_sm[cta as usize], r.sm
            ));
        }
        let code = r.kind.code();
        let inst = match self.insts.get(&(code, r.size)) {
            Some(&i) => i,
            None => {
                let name = format!("{}.{}", r.kind.token(), r.size);
                let i = self.b.instruction(&name, None);
                self.insts.insert((code, r.size), i);
                i
            }
        };
        let same =
            matches!(self.group, Some((c, _, k, s)) if c == cta && k == r.kind && s == r.size);
        if !same || self.lane == LANES {
            self.group = Some((cta, self.next_dyn, r.kind, r.size));
            self.next_dyn = self.next_dyn.wrapping_add(1);
            self.lane = 0;
        }
        let dyn_inst = self.group.map_or(0, |g| g.1);
        self.b
            .push(Access {
                thread: cta * LANES + self.lane,
                inst,
                dyn_inst,
                addr: r.addr,
                size: r.size,
                kind: r.kind,
                space: MemSpace::Global,
            })
            .map_err(|e| e.to_string())?;
        self.lane += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<super::Kernel, String> {
        let mut max = Dim3::new(0, 0, 0);
        for c in &self.cta_list {
            max = Dim3::new(max.x.max(c.x), max.y.max(c.y), max.z.max(c.z));
        }
        let grid = Dim3::holding(max).unwrap_or(Dim3::new(u32::MAX, u32::MAX, u32::MAX));
        if grid.count().saturating_mul(LANES as u64) > u32::MAX as u64 {
            return Err(format!(
                "kernel {}: the CTA indices span a grid {grid} too large to model",
                self.name
            ));
        }
        super::check_density(grid, Dim3::x(LANES), self.b.len(), Order::Issued)
            .map_err(|e| e.to_string())?;
        let mut map = Vec::with_capacity(self.cta_list.len() * LANES as usize);
        let mut cta_sm = vec![u32::MAX; grid.count() as usize];
        for (c, &idx) in self.cta_list.iter().enumerate() {
            let lin = grid.linear(idx) as u32;
            cta_sm[lin as usize] = self.cta_sm[c];
            map.extend((0..LANES).map(|l| lin * LANES + l));
        }
        // CTAs that never appear run nowhere; give them SM 0 so the table is total.
        for s in cta_sm.iter_mut().filter(|s| **s == u32::MAX) {
            *s = 0;
        }
        self.b
            .reshape(grid, Dim3::x(LANES), &map)
            .map_err(|e| e.to_string())?;
        self.b.info_mut().cta_sm = cta_sm;
        self.b.finish_checked().map_err(|e| e.to_string())
    }
}

/// Reads a cuda-memtrace file of either layout.
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    let mut rd = Reader { r, at: 0, file };
    let mut first = [0u8; 1];
    rd.fill(&mut first, "the first byte", false)?;
    match first[0] {
        0x19 | 0x1a => read_later(&mut rd, out),
        n if n as usize == RECORD => read_thesis(&mut rd, out),
        b => Err(rd.err(
            0,
            format!("expected the cuda-memtrace magic (0x19/0x1a + CUDATRACE) or record size 24, found byte {b:#04x}"),
        )),
    }
}

fn read_later<R: BufRead>(
    rd: &mut Reader<'_, R>,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let mut magic = [0u8; 9];
    rd.fill(&mut magic, "the CUDATRACE magic", false)?;
    if &magic != b"CUDATRACE" {
        return Err(rd.err(1, "expected `CUDATRACE` after the version byte"));
    }
    let mut current: Option<KernelState> = None;
    let mut rec = [0u8; RECORD];
    loop {
        let at = rd.at;
        let mut tag = [0u8; 1];
        if !rd.fill(&mut tag, "a record tag", true)? {
            break;
        }
        match tag[0] {
            0x00 => {
                let mut len = [0u8; 2];
                rd.fill(&mut len, "the kernel name length", false)?;
                let mut name = vec![0u8; u16::from_le_bytes(len) as usize];
                rd.fill(&mut name, "the kernel name", false)?;
                let name = String::from_utf8(name).map_err(|_| rd.err(at + 3, "kernel name is not valid UTF-8"))?;
                if let Some(k) = current.take() {
                    out.kernel(k.finish().map_err(|m| rd.err(at, m))?)?;
                }
                current = Some(KernelState::new(name).map_err(|m| rd.err(at, m))?);
            }
            t @ (0xFF | 0xFE) => {
                rd.fill(&mut rec, "a 24-byte record", false)?;
                let count = if t == 0xFE {
                    let mut c = [0u8; 2];
                    rd.fill(&mut c, "the run length", false)?;
                    u16::from_le_bytes(c) as u64
                } else {
                    1
                };
                let k = current
                    .as_mut()
                    .ok_or_else(|| rd.err(at, "a record before any kernel (expected 0x00 + name first)"))?;
                let r = decode(&rec).map_err(|m| rd.err(at + 1, m))?;
                for i in 0..count {
                    let addr = r.addr.wrapping_add(i * r.size as u64);
                    k.push(Record { addr, ..r }).map_err(|m| rd.err(at, m))?;
                }
            }
            b => {
                return Err(rd.err(
                    at,
                    format!("expected a record tag 0x00 (kernel), 0xFF (access) or 0xFE (run), found {b:#04x}"),
                ))
            }
        }
    }
    if let Some(k) = current.take() {
        out.kernel(k.finish().map_err(|m| rd.err(rd.at, m))?)?;
    }
    Ok(())
}

fn read_thesis<R: BufRead>(
    rd: &mut Reader<'_, R>,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let mut lf = [0u8; 1];
    rd.fill(&mut lf, "a LF after the record size", false)?;
    if lf[0] != b'\n' {
        return Err(rd.err(1, "expected a LF after the record size byte"));
    }
    let mut rec = [0u8; RECORD];
    while let Some(name) = rd.line("the kernel name line")? {
        let start = rd.at;
        let mut k = KernelState::new(name).map_err(|m| rd.err(start, m))?;
        loop {
            let at = rd.at;
            rd.fill(
                &mut rec,
                "a 24-byte record or the all-zero end-of-kernel record",
                false,
            )?;
            if rec.iter().all(|&b| b == 0) {
                break;
            }
            let r = decode(&rec).map_err(|m| rd.err(at, m))?;
            k.push(r).map_err(|m| rd.err(at, m))?;
        }
        out.kernel(k.finish().map_err(|m| rd.err(rd.at, m))?)?;
    }
    Ok(())
}

/// Writes the later layout (for tests and fuzz seeds): one `0xFF` record per access.
#[cfg(test)]
pub(crate) fn encode_later(kernels: &[(&str, Vec<[u64; 3]>)]) -> Vec<u8> {
    let mut out = vec![0x1a];
    out.extend_from_slice(b"CUDATRACE");
    for (name, recs) in kernels {
        out.push(0);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        for r in recs {
            out.push(0xFF);
            for w in r {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    const SAMPLE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/real-traces/cuda-memtrace_matrixMul_first75bytes.trc"
    );

    #[test]
    fn reads_the_published_header_and_run_record() {
        let Ok(bytes) = std::fs::read(SAMPLE) else {
            return;
        };
        assert!(looks_like(&bytes));
        let mut t = Trace::default();
        read_into(bytes.as_slice(), "m.trc", &mut t).unwrap();
        let k = &t.kernels[0];
        assert_eq!(k.name, "_Z13matrixMulCUDAILi32EEvPfS0_S0_ii");
        assert_eq!(k.len(), 32);
        assert_eq!(k.grid, Dim3::new(3, 1, 1));
        assert_eq!(k.info.cta_sm[2], 2);
        let a: Vec<_> = k.accesses().collect();
        assert_eq!(a[0].addr, 0x7f3996e08c00);
        assert_eq!(a[31].addr, 0x7f3996e08c00 + 31 * 4);
        // CTA (2,0,0), lanes 0..31, one warp instruction.
        assert_eq!((a[0].thread, a[31].thread), (64, 95));
        assert!(a
            .iter()
            .all(|x| x.dyn_inst == 0 && x.size == 4 && x.kind == AccessKind::Load));
    }

    #[test]
    fn thesis_layout_and_grouping() {
        let rec = |sm: u64, ty: u64, size: u64, addr: u64, x: u64, y: u64| {
            let mut v = Vec::new();
            for w in [sm << 32 | ty << 28 | size, addr, x << 32 | y << 16] {
                v.extend_from_slice(&w.to_le_bytes());
            }
            v
        };
        let mut f = vec![24, b'\n'];
        f.extend_from_slice(b"k1\n");
        f.extend(rec(1, 0, 4, 0x100, 0, 1));
        f.extend(rec(1, 0, 4, 0x104, 0, 1));
        f.extend(rec(1, 1, 4, 0x200, 0, 1)); // a store: a new warp instruction
        f.extend(rec(3, 2, 8, 0x300, 1, 0));
        f.extend([0u8; 24]);
        f.extend_from_slice(b"k2\n");
        f.extend(rec(0, 0, 4, 0x0, 0, 0));
        f.extend([0u8; 24]);
        let mut t = Trace::default();
        read_into(f.as_slice(), "t.trc", &mut t).unwrap();
        assert_eq!(t.kernels.len(), 2);
        let k = &t.kernels[0];
        assert_eq!(k.grid, Dim3::new(2, 2, 1));
        let d: Vec<_> = k
            .accesses()
            .map(|a| (a.thread, a.dyn_inst, a.kind))
            .collect();
        assert_eq!(d[0], (2 * 32, 0, AccessKind::Load));
        assert_eq!(d[1], (2 * 32 + 1, 0, AccessKind::Load));
        assert_eq!(d[2], (2 * 32, 1, AccessKind::Store));
        assert_eq!(d[3], (32, 2, AccessKind::Atomic(AtomicOp::Add)));
        assert_eq!(k.info.cta_sm, vec![0, 3, 1, 0]);
        // Without the end record the kernel is truncated.
        let cut = &f[..f.len() - 24];
        let e = read_into(cut, "t.trc", &mut Trace::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("byte offset") && e.contains("end-of-kernel"),
            "{e}"
        );
    }

    #[test]
    fn bad_records_are_rejected_with_offsets() {
        let good = encode_later(&[("k", vec![[4, 0x10, 0]])]);
        let mut t = Trace::default();
        read_into(good.as_slice(), "g", &mut t).unwrap();
        assert_eq!(t.kernels[0].len(), 1);
        let bad = encode_later(&[("k", vec![[3 << 28 | 4, 0x10, 0]])]);
        let e = read_into(bad.as_slice(), "b", &mut Trace::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("record type 3"), "{e}");
        let moved = encode_later(&[("k", vec![[4, 0x10, 0], [1 << 32 | 4, 0x10, 0]])]);
        let e = read_into(moved.as_slice(), "m", &mut Trace::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("SM 0 and on SM 1"), "{e}");
        for cut in 1..good.len() {
            if cut == 10 || cut == 14 {
                continue; // record boundaries: a shorter file that is still whole
            }
            assert!(
                read_into(&good[..cut], "c", &mut Trace::default()).is_err(),
                "cut {cut}"
            );
        }
    }
}
