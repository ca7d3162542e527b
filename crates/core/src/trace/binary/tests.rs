use super::*;
use crate::trace::{Access, Columns, KernelBuilder, MemSpace, SinkHooks};
use std::io::Cursor;

fn sample() -> Trace {
    let text = "kernel k grid=2,1,1 block=2,1,1\ninst a pc=0x10\n1,0,0 1,0,0 a 3 atom.add 0x40 4\n0,0,0 0,0,0 bar\n0,0,0 1,0,0 b 0 st 0x80 8 shared\n";
    super::super::text::read(text.as_bytes(), "s").unwrap()
}

/// A per-thread kernel whose CTA 1 takes two chunks and CTA 2 has no rows, an issued-order
/// kernel and a per-warp one.
fn varied() -> Trace {
    let mut t = sample();
    let mut b = KernelBuilder::new(
        "big",
        Dim3::new(4, 1, 1),
        Dim3::new(64, 1, 1),
        Order::PerThread,
    )
    .unwrap();
    let i = b.instruction("ld", Some(0x20));
    b.set_line(i, 7);
    for thread in 0..256u32 {
        let n = match thread / 64 {
            1 => 1100,
            2 => 0,
            _ => 3,
        };
        for d in 0..n {
            b.push(Access {
                thread,
                inst: i,
                dyn_inst: d,
                addr: 0x1000 + 4 * (thread as u64 * 7 + d as u64),
                size: 4,
                kind: AccessKind::Load,
                space: MemSpace::Global,
            })
            .unwrap();
        }
    }
    b.info_mut().attributes.push(("nregs".into(), "32".into()));
    b.info_mut().cta_sm = vec![0, 1, 2, 3];
    t.kernels.push(b.finish());
    let mut b = KernelBuilder::new(
        "issued",
        Dim3::new(2, 1, 1),
        Dim3::new(2, 1, 1),
        Order::Issued,
    )
    .unwrap();
    let i = b.instruction("st", None);
    for (n, thread) in [3u32, 0, 2, 1, 3].into_iter().enumerate() {
        b.push(Access {
            thread,
            inst: i,
            dyn_inst: n as u32,
            addr: 0x80 * n as u64,
            size: 8,
            kind: AccessKind::Store,
            space: MemSpace::Global,
        })
        .unwrap();
    }
    t.kernels.push(b.finish());
    let mut warp = t.kernels[0].clone();
    warp.name = "warp".into();
    warp.order = Order::PerWarp;
    t.kernels.push(warp);
    t
}

fn bytes(t: &Trace) -> Vec<u8> {
    let mut out = Vec::new();
    write(t, &mut out).unwrap();
    out
}

#[test]
fn round_trips() {
    for t in [sample(), varied()] {
        assert_eq!(read(bytes(&t).as_slice(), "x.wsb").unwrap(), t);
    }
}

#[test]
fn every_truncation_is_an_error_with_an_offset() {
    let out = bytes(&sample());
    for cut in 0..out.len() {
        let e = read(&out[..cut], "t.wsb").unwrap_err().to_string();
        assert!(e.starts_with("t.wsb: byte offset"), "cut {cut}: {e}");
    }
}

#[test]
fn every_damaged_byte_after_the_header_is_caught() {
    // Checksums cover every record; tags, counts and the end record are checked by value.
    // The kernels of `varied` but the large one.
    let mut t = varied();
    t.kernels.remove(1);
    t.kernels.pop();
    let out = bytes(&t);
    for at in 16..out.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = out.clone();
            bad[at] ^= bit;
            let e = read(bad.as_slice(), "d.wsb");
            assert!(e.is_err(), "byte {at} bit {bit:#x} went unnoticed");
            let e = e.unwrap_err().to_string();
            assert!(e.starts_with("d.wsb: byte offset"), "byte {at}: {e}");
        }
    }
}

#[test]
fn a_damaged_chunk_is_named_by_its_checksum() {
    let mut out = bytes(&sample());
    // The first row's address: after the header (16), the kernel record, the chunk's tag,
    // CTA and count, and the row's first 12 bytes.
    let chunk = out.iter().position(|&b| b == CHUNK_TAG).unwrap();
    let chunk = (chunk..out.len())
        .find(|&i| out[i] == CHUNK_TAG && out[i + 1..i + 5] == [0, 0, 0, 0])
        .unwrap_or(chunk);
    out[chunk + 9 + 12] ^= 0x40;
    let e = read(out.as_slice(), "c.wsb").unwrap_err().to_string();
    assert!(e.contains("checksum of the chunk"), "{e}");
}

#[test]
fn a_row_count_larger_than_the_file_is_refused_before_anything_is_sized() {
    let t = varied();
    let out = bytes(&t);
    let mut rd = Reader::new(out.as_slice(), "h.wsb", out.len() as u64);
    read_file_header(&mut rd).unwrap();
    // Kernel 0's record: tag, name (4 + 1), grid, block, order, then the row count.
    let rows_at = 16 + 1 + 5 + 25;
    let mut bad = out.clone();
    bad[rows_at..rows_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let mut sink = Recorder::default();
    let e = stream_sized(bad.as_slice(), "h.wsb", bad.len() as u64, &mut sink)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than the file can hold"), "{e}");
    assert!(sink.events.is_empty());
}

/// What a CTA receiver is told (the rows each kernel says it has apart).
#[derive(Default)]
struct Recorder {
    events: Vec<String>,
    said: Vec<u64>,
}

impl KernelSink for Recorder {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.events.push(format!("kernel {} {}", k.name, k.len()));
        Ok(())
    }
}

impl CtaSink for Recorder {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        assert!(header.is_empty());
        self.events.push(format!("begin {}", header.name));
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.events.push(format!("cta {cta} {}", rows.len()));
        Ok(())
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        self.events.push(format!("issued {}", rows.len()));
        Ok(())
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.events.push("end".into());
        Ok(())
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        Some(self)
    }
}

impl SinkHooks for Recorder {
    fn expect_rows(&mut self, rows: u64) {
        self.said.push(rows);
    }
    fn resident(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.events.push(format!("resident {cta} {}", rows.len()));
        Ok(())
    }
}

#[test]
fn grouped_kernels_stream_cta_by_cta_and_issued_ones_chunk_by_chunk() {
    let t = varied();
    let mut sink = Recorder::default();
    stream(bytes(&t).as_slice(), "s.wsb", &mut sink).unwrap();
    let mut want = Vec::new();
    for k in &t.kernels {
        want.push(format!("begin {}", k.name));
        if k.order == Order::Issued {
            let mut left = k.len();
            while left > 0 {
                let n = left.min(1 << 16);
                want.push(format!("issued {n}"));
                left -= n;
            }
            want.push("end".into());
            continue;
        }
        for c in 0..k.num_ctas() {
            let r = k.cta_rows(c);
            if !r.is_empty() {
                want.push(format!("cta {c} {}", r.len()));
            }
        }
        want.push("end".into());
    }
    assert_eq!(sink.events, want);
    assert!(
        sink.events.contains(&"cta 1 70400".to_string()),
        "CTA 1 spans two chunks"
    );
}

/// A version 3 file, as earlier builds wrote it.
fn version_3(t: &Trace) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(MAGIC);
    w.extend_from_slice(&3u32.to_le_bytes());
    w.extend_from_slice(&0u32.to_le_bytes());
    for k in &t.kernels {
        w.push(KERNEL_TAG);
        put_str(&mut w, &k.name);
        for d in [k.grid, k.block] {
            for v in [d.x, d.y, d.z] {
                w.extend_from_slice(&v.to_le_bytes());
            }
        }
        w.push(order_code(k.order));
        let mut rest = Vec::new();
        put_instructions_and_info(&mut rest, k);
        let info_at = rest.len() - {
            let mut info = Vec::new();
            put_info(&mut info, &k.info);
            info.len()
        };
        w.extend_from_slice(&rest[..info_at]);
        w.extend_from_slice(&(k.len() as u64).to_le_bytes());
        encode_rows(k.columns(), 0..k.len(), &mut w);
        w.extend_from_slice(&rest[info_at..]);
    }
    w.push(END_TAG);
    w.extend_from_slice(&(t.kernels.len() as u32).to_le_bytes());
    w
}

#[test]
fn version_3_files_are_still_read() {
    let t = varied();
    let v3 = version_3(&t);
    assert_eq!(read(v3.as_slice(), "old.wsb").unwrap(), t);
    for cut in (0..v3.len()).step_by(97) {
        let e = read(&v3[..cut], "old.wsb").unwrap_err().to_string();
        assert!(e.starts_with("old.wsb: byte offset"), "cut {cut}: {e}");
    }
    let mut bad = v3.clone();
    let n = bad.len();
    bad[n - 4] = 9;
    assert!(read(bad.as_slice(), "f")
        .unwrap_err()
        .to_string()
        .contains("end record"));
}

/// A version 4 file (plain 23-byte rows in its chunks), as earlier builds wrote it.
fn version_4(t: &Trace) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(MAGIC);
    w.extend_from_slice(&4u32.to_le_bytes());
    w.extend_from_slice(&0u32.to_le_bytes());
    let record = |w: &mut Vec<u8>, tag: u8, body: &[u8]| {
        w.push(tag);
        w.extend_from_slice(body);
        w.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    };
    let mut index = (t.kernels.len() as u32).to_le_bytes().to_vec();
    for k in &t.kernels {
        let at = w.len() as u64;
        record(
            &mut w,
            KERNEL_TAG,
            &Writer::<Vec<u8>>::record(k, k.len() as u64).0,
        );
        let ranges: Vec<(u32, std::ops::Range<usize>)> = if k.order == Order::Issued {
            vec![(ISSUED_CHUNK, 0..k.len())]
        } else {
            (0..k.num_ctas()).map(|c| (c, k.cta_rows(c))).collect()
        };
        let mut entries = Vec::new();
        for (cta, rows) in ranges {
            for start in rows.clone().step_by(chunked::CHUNK_ROWS) {
                let end = rows.end.min(start + chunked::CHUNK_ROWS);
                let n = (end - start) as u32;
                let mut body = cta.to_le_bytes().to_vec();
                body.extend_from_slice(&n.to_le_bytes());
                encode_rows(k.columns(), start..end, &mut body);
                entries.extend_from_slice(&chunked::chunk_entry(cta, n, w.len() as u64));
                record(&mut w, CHUNK_TAG, &body);
            }
        }
        index.extend_from_slice(&at.to_le_bytes());
        index.extend_from_slice(&(k.len() as u64).to_le_bytes());
        index.extend_from_slice(&((entries.len() / 16) as u32).to_le_bytes());
        index.extend_from_slice(&entries);
    }
    let index_at = w.len() as u64;
    record(&mut w, INDEX_TAG, &index);
    w.push(END_TAG);
    w.extend_from_slice(&(t.kernels.len() as u32).to_le_bytes());
    w.extend_from_slice(&index_at.to_le_bytes());
    w
}

#[test]
fn version_4_files_are_still_read_whole_streamed_and_through_their_index() {
    let t = varied();
    let v4 = version_4(&t);
    assert_eq!(version_of(v4.as_slice(), "v4.wsb").unwrap(), 4);
    assert_eq!(read(v4.as_slice(), "v4.wsb").unwrap(), t);
    let (mut old, mut new) = (Recorder::default(), Recorder::default());
    stream(v4.as_slice(), "v4.wsb", &mut old).unwrap();
    stream(bytes(&t).as_slice(), "v5.wsb", &mut new).unwrap();
    assert_eq!(old.events, new.events);
    let mut file = Cursor::new(v4.clone());
    let index = Index::read(&mut file, "v4.wsb").unwrap();
    for (k, kernel) in t.kernels.iter().enumerate() {
        assert_eq!(&index.kernel(&mut file, k).unwrap(), kernel, "kernel {k}");
    }
    assert_eq!(
        index.cta(&mut file, 1, 1).unwrap().len(),
        t.kernels[1].cta_rows(1).len()
    );
    for cut in (0..v4.len()).step_by(97) {
        let e = read(&v4[..cut], "v4.wsb").unwrap_err().to_string();
        assert!(e.starts_with("v4.wsb: byte offset"), "cut {cut}: {e}");
    }
    // Version 5 packs these rows into far fewer bytes.
    assert!(
        bytes(&t).len() * 4 < v4.len(),
        "{} against {}",
        bytes(&t).len(),
        v4.len()
    );
}

#[test]
fn a_packed_row_out_of_place_is_named_by_its_record_and_chunk() {
    // The writer packs what it is given; the reader checks it.
    let k = &sample().kernels[0];
    let mut w = Writer::new(Cursor::new(Vec::new())).unwrap();
    w.begin_kernel(&k.header()).unwrap();
    let mut rows = Columns::default();
    rows.extend_from(k.columns(), 0..k.len());
    w.cta(0, &rows).unwrap();
    w.end_kernel().unwrap();
    let out = w.finish().unwrap().into_inner();
    let chunk = Index::read(&mut Cursor::new(out.clone()), "p.wsb")
        .unwrap()
        .kernels[0]
        .chunks[0];
    let e = read(out.as_slice(), "p.wsb").unwrap_err().to_string();
    let thread = rows.thread.iter().position(|&t| t >= 2).unwrap();
    assert_eq!(
        e,
        format!(
            "p.wsb: byte offset {}: record {thread}: thread {} is not in the chunk's CTA 0",
            chunk.offset, rows.thread[thread]
        )
    );
}

#[test]
fn a_regular_kernel_takes_less_than_a_byte_a_row() {
    let params = [("n".to_string(), "64".to_string())];
    let t = crate::gen::generate("matmul", &params).unwrap();
    let out = bytes(&t);
    assert!(
        out.len() < t.total_accesses() / 8,
        "{} bytes, {} rows",
        out.len(),
        t.total_accesses()
    );
    assert_eq!(read(out.as_slice(), "m.wsb").unwrap(), t);
}

/// Writes issued-order kernel `k` in pieces of `piece` rows.
fn write_issued<W: std::io::Write + std::io::Seek>(w: &mut Writer<W>, k: &Kernel, piece: usize) {
    w.begin_kernel(&k.header()).unwrap();
    let mut rows = Columns::default();
    for start in (0..k.len()).step_by(piece) {
        rows.clear();
        rows.extend_from(k.columns(), start..(start + piece).min(k.len()));
        w.issued(&rows).unwrap();
    }
    w.end_kernel().unwrap();
}

#[test]
fn a_kernel_written_cta_by_cta_is_the_same_file_as_written_whole() {
    let t = varied();
    let mut w = Writer::new(Cursor::new(Vec::new())).unwrap();
    for k in &t.kernels {
        if k.order == Order::Issued {
            write_issued(&mut w, k, 2);
            continue;
        }
        w.begin_kernel(&k.header()).unwrap();
        let mut rows = Columns::default();
        for c in 0..k.num_ctas() {
            let r = k.cta_rows(c);
            if !r.is_empty() {
                rows.clear();
                rows.extend_from(k.columns(), r);
                w.cta(c, &rows).unwrap();
            }
        }
        w.end_kernel().unwrap();
    }
    let by_cta = w.finish().unwrap().into_inner();
    assert_eq!(by_cta, bytes(&t));
}

/// An issued-order kernel of 150,000 rows: three chunks.
fn long_issued() -> Trace {
    let mut b = KernelBuilder::new("long", Dim3::x(3), Dim3::x(64), Order::Issued).unwrap();
    let i = b.instruction("ld", None);
    for n in 0..150_000u32 {
        b.push(Access {
            thread: (n * 7) % 192,
            inst: i,
            dyn_inst: n / 32,
            addr: 0x1000 + 4 * n as u64,
            size: 4,
            kind: AccessKind::Load,
            space: MemSpace::Global,
        })
        .unwrap();
    }
    Trace {
        kernels: vec![b.finish()],
    }
}

#[test]
fn an_issued_kernel_streams_chunk_by_chunk_in_any_pieces() {
    let t = long_issued();
    let whole = bytes(&t);
    // Written in pieces of any size, the file is the one written whole.
    for piece in [1000, 65_536, 70_001, 200_000] {
        let mut w = Writer::new(Cursor::new(Vec::new())).unwrap();
        write_issued(&mut w, &t.kernels[0], piece);
        assert_eq!(w.finish().unwrap().into_inner(), whole, "pieces of {piece}");
    }
    // Read, it comes a chunk at a time and assembles to the kernel.
    let mut sink = Recorder::default();
    stream(whole.as_slice(), "l.wsb", &mut sink).unwrap();
    assert_eq!(
        sink.events,
        [
            "begin long",
            "issued 65536",
            "issued 65536",
            "issued 18928",
            "end"
        ]
    );
    assert_eq!(read(whole.as_slice(), "l.wsb").unwrap(), t);
    // A CTA cannot come in an issued-order kernel.
    let mut w = Writer::new(Cursor::new(Vec::new())).unwrap();
    w.begin_kernel(&t.kernels[0].header()).unwrap();
    assert!(w.cta(0, t.kernels[0].columns()).is_err());
}

#[test]
fn the_index_reads_one_kernel_a_cta_or_a_window() {
    let t = varied();
    let mut file = Cursor::new(bytes(&t));
    let index = Index::read(&mut file, "i.wsb").unwrap();
    assert_eq!(index.kernels.len(), t.kernels.len());
    for (k, kernel) in t.kernels.iter().enumerate() {
        assert_eq!(index.kernels[k].rows, kernel.len() as u64);
        assert_eq!(&index.kernel(&mut file, k).unwrap(), kernel, "kernel {k}");
        // Windows that cut chunks and CTAs, against the rows they should hold.
        let n = kernel.len() as u64;
        for w in [0..1, 2..5, n / 3..n / 2 + 70_000, n - 1..n, 5..5] {
            let w = w.start.min(n)..w.end.min(n);
            let got = index.window(&mut file, k, w.clone()).unwrap();
            assert_eq!(got.len() as u64, w.end - w.start, "kernel {k} window {w:?}");
            let want: Vec<_> = kernel
                .accesses()
                .skip(w.start as usize)
                .take(got.len())
                .collect();
            let got_rows: Vec<_> = got.accesses().collect();
            assert_eq!(got_rows, want, "kernel {k} window {w:?}");
        }
    }
    let big = &t.kernels[1];
    let r = index.cta_rows(1, 1);
    assert_eq!(r.start as usize..r.end as usize, big.cta_rows(1));
    let one = index.window(&mut file, 1, r).unwrap();
    assert_eq!(one.cta_rows(1).len(), big.cta_rows(1).len());
    assert!(one.cta_rows(0).is_empty() && one.cta_rows(3).is_empty());
    assert!(index.kernel(&mut file, 9).is_err());
    let e = Index::read(&mut Cursor::new(version_3(&t)), "old.wsb").unwrap_err();
    assert!(e.to_string().contains("has no index"), "{e}");
}

#[test]
fn a_damaged_index_is_refused() {
    let out = bytes(&varied());
    let n = out.len();
    for at in [n - 13 - 6, n - 13 - 20, n - 8, n - 12] {
        let mut bad = out.clone();
        bad[at] ^= 0x10;
        assert!(
            Index::read(&mut Cursor::new(bad), "x.wsb").is_err(),
            "byte {at}"
        );
    }
}

/// Reading on from a CTA through the index gives what a whole read gives from there: the
/// kernel's later CTAs, its end and every later kernel; a CTA's rows through the index are
/// those a whole read gives.
#[test]
fn the_index_reads_on_from_any_cta() {
    let t = varied();
    let mut file = Cursor::new(bytes(&t));
    let index = Index::read(&mut file, "i.wsb").unwrap();
    let mut whole = Recorder::default();
    stream(file.get_ref().as_slice(), "i.wsb", &mut whole).unwrap();
    let begins: Vec<usize> = (0..whole.events.len())
        .filter(|&i| whole.events[i].starts_with("begin"))
        .collect();
    for (k, kernel) in t.kernels.iter().enumerate() {
        if kernel.order == Order::Issued {
            // From any chunk of issued rows: the events after that many.
            for chunk in 0..index.kernels[k].chunks.len() + 1 {
                let mut got = Recorder::default();
                index
                    .stream_from(file.clone(), k, chunk, &|s| s, &mut got)
                    .unwrap();
                assert_eq!(
                    got.events,
                    whole.events[begins[k] + 1 + chunk..],
                    "chunk {chunk}"
                );
            }
            continue;
        }
        for next in 0..kernel.num_ctas() + 2 {
            let mut got = Recorder::default();
            let chunk = index.first_chunk_of(k, next);
            index
                .stream_from(file.clone(), k, chunk, &|s| s, &mut got)
                .unwrap();
            // Skip the kernel's beginning and its CTAs before `next`.
            let mut from = begins[k] + 1;
            while let Some(c) = whole.events[from].strip_prefix("cta ") {
                let cta: u32 = c.split(' ').next().unwrap().parse().unwrap();
                if cta >= next {
                    break;
                }
                from += 1;
            }
            assert_eq!(
                got.events,
                whole.events[from..],
                "kernel {k} from CTA {next}"
            );
        }
        for c in 0..kernel.num_ctas() {
            let mut want = Columns::default();
            want.extend_from(kernel.columns(), kernel.cta_rows(c));
            assert_eq!(
                index.cta(&mut file, k, c).unwrap(),
                want,
                "kernel {k} CTA {c}"
            );
        }
    }
    let past = index.first_chunk_of(1, 99);
    assert_eq!(index.resume_offset(1, past), Some(index.kernels[2].offset));
    assert_eq!(index.resume_offset(3, index.first_chunk_of(3, 99)), None);
    // Not from the middle of a CTA: CTA 1 of kernel 1 takes two chunks.
    let second = index.first_chunk_of(1, 1) + 1;
    let e = index
        .stream_from(file.clone(), 1, second, &|s| s, &mut Recorder::default())
        .unwrap_err();
    assert!(e.to_string().contains("not the first of its CTA 1"), "{e}");
}

/// A file walked from its start to a place (a compressed file has no index to seek by)
/// gives the rows of the CTAs a copy there holds without them, then reads on as the index
/// does from the same place; a file that no longer holds what the run read is an error
/// saying that it changed.
#[test]
fn walking_from_the_start_reads_on_as_the_index_does() {
    let t = varied();
    let data = bytes(&t);
    let index = Index::read(&mut Cursor::new(data.clone()), "w.wsb").unwrap();
    let walk = |at: (u32, Place), wanted: &[u32], out: &mut Recorder| {
        stream_from_start(data.as_slice(), "w.wsb", data.len() as u64, at, wanted, out)
    };
    let mut residents = 0;
    for (k, kernel) in t.kernels.iter().enumerate() {
        let places: Vec<(Place, usize)> = if kernel.order == Order::Issued {
            (0..=index.kernels[k].chunks.len())
                .map(|c| (Place::FromChunk(c as u32), c))
                .collect()
        } else {
            (0..kernel.num_ctas() + 2)
                .map(|n| (Place::FromCta(n), index.first_chunk_of(k, n)))
                .collect()
        };
        for (place, chunk) in places {
            // A copy there may hold any CTAs before the place: every other one with rows.
            let wanted: Vec<u32> = match place {
                Place::FromCta(next) => (0..next.min(kernel.num_ctas()))
                    .filter(|&c| c % 2 == 1 && !kernel.cta_rows(c).is_empty())
                    .collect(),
                Place::FromChunk(_) => Vec::new(),
            };
            let mut want = Recorder::default();
            for &c in &wanted {
                let rows = kernel.cta_rows(c).len();
                want.events.push(format!("resident {c} {rows}"));
            }
            residents += wanted.len();
            index
                .stream_from(Cursor::new(data.clone()), k, chunk, &|s| s, &mut want)
                .unwrap();
            let mut got = Recorder::default();
            walk((k as u32, place), &wanted, &mut got).unwrap();
            assert_eq!(got.events, want.events, "kernel {k} from {place:?}");
        }
    }
    assert!(residents > 4, "{residents}");
    let changed = |e: TraceError| {
        let e = e.to_string();
        assert!(e.contains("w.wsb") && e.contains("changed"), "{e}");
    };
    // A kernel the file does not have.
    changed(walk((9, Place::FromCta(0)), &[], &mut Recorder::default()).unwrap_err());
    // A resident CTA the file has no rows for before the place.
    let e = walk((1, Place::FromCta(1)), &[0, 1], &mut Recorder::default()).unwrap_err();
    changed(e);
    // A version 3 file has no chunks to walk over.
    let old = version_3(&t);
    let e = stream_from_start(
        old.as_slice(),
        "w.wsb",
        old.len() as u64,
        (0, Place::FromCta(0)),
        &[],
        &mut Recorder::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("version 3"), "{e}");
}

/// Reading on from a CTA checks the chunks it reads: a damaged one is an error at its offset.
#[test]
fn reading_on_from_a_cta_catches_a_damaged_chunk() {
    let mut out = bytes(&varied());
    let index = Index::read(&mut Cursor::new(out.clone()), "d.wsb").unwrap();
    // Kernel 1's CTA 3 (after CTA 1's two chunks).
    let c = *index.kernels[1].chunks.iter().find(|c| c.cta == 3).unwrap();
    out[c.offset as usize + 20] ^= 0x40;
    let e = index
        .stream_from(
            Cursor::new(out.clone()),
            1,
            index.first_chunk_of(1, 2),
            &|s| s,
            &mut Recorder::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("d.wsb") && e.contains("checksum"), "{e}");
    // From a later kernel on, the damage is not read.
    index
        .stream_from(Cursor::new(out), 3, 0, &|s| s, &mut Recorder::default())
        .unwrap();
}

#[test]
fn each_kernel_says_how_many_rows_it_has_before_them() {
    let t = varied();
    let mut sink = Recorder::default();
    stream(bytes(&t).as_slice(), "s.wsb", &mut sink).unwrap();
    let want: Vec<u64> = t.kernels.iter().map(|k| k.len() as u64).collect();
    assert_eq!(sink.said, want);
    // Loaded whole (room made from the hint), the kernels are the same.
    let back = read(bytes(&t).as_slice(), "s.wsb").unwrap();
    assert_eq!(back.kernels, t.kernels);
}
