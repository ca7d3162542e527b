//! Reading a version 4 or 5 file on from a place in it without its index: a compressed `.wsb`
//! cannot seek, so a copy of a run (a zoom in the app) is read on by walking the file from its
//! start over the records before the place. The walk decodes nothing it need not: the kernels
//! before the copy's are stepped over record by record, and so are the chunks of the copy's
//! kernel before the place, except those of the CTAs resident in the copy, whose rows it
//! gives back first ([`SinkHooks::resident`](crate::trace::SinkHooks::resident)). Decompressing is far faster than simulating.

use super::chunked::{begin_kernel, read_chunk_body, read_chunk_head, skip_chunk_body, Reading};
use super::index::{read_on, TakeCta};
use super::{read_file_header, Reader, CHUNK_TAG, ISSUED_CHUNK, KERNEL_TAG};
use crate::trace::sink::{CtaSink, KernelSink};
use crate::trace::{Columns, Kernel, Place, TraceError};
use std::io::Read;

/// Streams the version 4 or 5 file `r`, read from its start (named `file`; at most `max_bytes`
/// decompressed), on from `place` in kernel `kernel` to `out`, a copy of a session that stood
/// there and holds the CTAs `wanted` (in increasing order) without their rows: their rows
/// first, then what [`super::Index::stream_from`] gives from the same place. A file that no
/// longer holds what the run read there is an error saying that it changed.
pub fn stream_from_start<R: Read>(
    r: R,
    file: &str,
    max_bytes: u64,
    (kernel, place): (u32, Place),
    wanted: &[u32],
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut rd = Reader::new(r, file, max_bytes);
    let version = read_file_header(&mut rd)?;
    if version < super::CHUNKED {
        return Err(rd.err(
            8,
            format!("a version {version} file cannot be read on from a place in it"),
        ));
    }
    let mut reading = step_to_kernel(&mut rd, kernel)?;
    let (mut raw, mut cta_rows) = (Vec::new(), Columns::default());
    let mut given = Vec::with_capacity(wanted.len());
    let mut resident = AsResident(out);
    loop {
        let at = rd.offset;
        let tag = rd.u8("a kernel ('K'), chunk ('C') or index ('X') record")?;
        let head = (tag == CHUNK_TAG)
            .then(|| read_chunk_head(&mut rd, at))
            .transpose()?;
        // A chunk before the place: a resident CTA's is decoded, any other stepped over.
        if let Some(head) = head.filter(|h| {
            let cta = (h.cta != ISSUED_CHUNK).then_some(h.cta);
            !place.reached(cta, reading.chunks())
        }) {
            if wanted.binary_search(&head.cta).is_ok() {
                // The CTA gathered before goes to `out` once this one starts.
                let before = reading.current_cta();
                let out = &mut resident;
                read_chunk_body(&mut rd, head, &mut reading, &mut raw, &mut cta_rows, out)?;
                given.extend(before.filter(|&c| c != head.cta));
            } else {
                given.extend(reading.give_resident(&mut cta_rows, &mut *resident.0)?);
                skip_chunk_body(&mut rd, head, Some(&mut reading))?;
            }
            continue;
        }
        // The place: the resident CTAs' rows are all given, and the file is read on.
        given.extend(reading.give_resident(&mut cta_rows, &mut *resident.0)?);
        if given != wanted {
            return Err(rd.err(
                at,
                format!(
                    "the run held CTAs {wanted:?} of kernel {kernel} there, the file has \
                     rows for {given:?}: it changed since the run read it"
                ),
            ));
        }
        let out = resident.0;
        let Some(head) = head else {
            // The place is past the kernel's last chunk.
            return read_on(
                &mut rd,
                Some(reading),
                Some((at, tag)),
                &mut raw,
                &mut cta_rows,
                out,
            );
        };
        read_chunk_body(&mut rd, head, &mut reading, &mut raw, &mut cta_rows, out)?;
        return read_on(&mut rd, Some(reading), None, &mut raw, &mut cta_rows, out);
    }
}

/// Steps over the records before kernel `kernel`'s and reads its record (its beginning was
/// given when the run first read it).
fn step_to_kernel<R: Read>(rd: &mut Reader<'_, R>, kernel: u32) -> Result<Reading, TraceError> {
    let mut seen = 0u32;
    loop {
        let at = rd.offset;
        match rd.u8("a kernel ('K') or chunk ('C') record")? {
            KERNEL_TAG => {
                let reading = begin_kernel(rd, at, &mut TakeCta(Columns::default()))?;
                if seen == kernel {
                    return Ok(reading);
                }
                seen += 1;
            }
            CHUNK_TAG if seen > 0 => {
                let head = read_chunk_head(rd, at)?;
                skip_chunk_body(rd, head, None)?;
            }
            CHUNK_TAG => return Err(rd.err(at, "a chunk record before any kernel record")),
            _ => {
                return Err(rd.err(
                    at,
                    format!(
                        "the file has {seen} kernels where the run read kernel {kernel}: it \
                         changed since the run read it"
                    ),
                ))
            }
        }
    }
}

/// Passes the CTAs given to it on as resident CTAs' rows.
struct AsResident<'a>(&'a mut dyn CtaSink);

impl KernelSink for AsResident<'_> {
    fn kernel(&mut self, _: Kernel) -> Result<(), TraceError> {
        Ok(())
    }
}

impl CtaSink for AsResident<'_> {
    fn begin_kernel(&mut self, _: &Kernel) -> Result<(), TraceError> {
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.0.resident(cta, rows)
    }
    fn issued(&mut self, _: &Columns) -> Result<(), TraceError> {
        Ok(())
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        Ok(())
    }
}
