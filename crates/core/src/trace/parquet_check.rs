//! Checks a Parquet file's footer and every page header against the file before polars decodes
//! it. polars trusts the counts in page headers when it sizes its buffers: a corrupt header
//! that says a page holds -5 values made it reserve 2^61 bytes, and a failed allocation aborts
//! the process instead of returning an error (found by the `tables` fuzz target). Reading the
//! headers costs one seek per page and holds nothing but one footer in memory.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

use polars_parquet_format::thrift::protocol::TCompactInputProtocol;
use polars_parquet_format::{FileMetaData, PageHeader, PageType};

/// The most values one page may claim. Common writers cut pages at 1 MiB or 20 000 rows, so a
/// page that claims more than this is taken as corrupt, which bounds what decoding one page
/// allocates.
pub(crate) const MAX_PAGE_VALUES: i64 = 1 << 24;

/// The most bytes one page may decompress to.
pub(crate) const MAX_PAGE_BYTES: i64 = 1 << 30;

/// The most bytes a thrift structure (footer or page header) may allocate while it is decoded.
const MAX_THRIFT_BYTES: usize = 1 << 28;

/// What was wrong, and the byte offset of the structure that says so.
pub(crate) struct Bad {
    pub offset: u64,
    pub what: String,
}

fn bad(offset: u64, what: impl Into<String>) -> Bad {
    Bad {
        offset,
        what: what.into(),
    }
}

/// Counts the bytes a thrift decoder consumes, so the page after a header can be found.
struct Counting<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Checks the whole file; `Ok` means every count polars will size a buffer by is in range.
pub(crate) fn check(f: File) -> Result<(), Bad> {
    let io = |at: u64| move |e: std::io::Error| bad(at, format!("cannot read: {e}"));
    let len = f.metadata().map_err(io(0))?.len();
    if len < 12 {
        return Err(bad(
            0,
            format!("{len} bytes is too short for a Parquet file"),
        ));
    }
    let mut r = BufReader::new(f);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(io(0))?;
    if &magic != b"PAR1" {
        return Err(bad(0, "expected the magic bytes PAR1"));
    }
    let tail_at = len - 8;
    r.seek(SeekFrom::Start(tail_at)).map_err(io(tail_at))?;
    let mut tail = [0u8; 8];
    r.read_exact(&mut tail).map_err(io(tail_at))?;
    if &tail[4..] != b"PAR1" {
        return Err(bad(len - 4, "expected the closing magic bytes PAR1"));
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if footer_len + 12 > len {
        return Err(bad(
            tail_at,
            format!("the footer length {footer_len} is larger than the file"),
        ));
    }
    let footer_at = tail_at - footer_len;
    r.seek(SeekFrom::Start(footer_at)).map_err(io(footer_at))?;
    let mut prot = TCompactInputProtocol::new((&mut r).take(footer_len), MAX_THRIFT_BYTES);
    let meta = FileMetaData::read_from_in_protocol(&mut prot)
        .map_err(|e| bad(footer_at, format!("malformed file metadata: {e}")))?;

    let mut rows = 0i64;
    for (g, group) in meta.row_groups.iter().enumerate() {
        if group.num_rows < 0 {
            return Err(bad(
                footer_at,
                format!("row group {g} has {} rows", group.num_rows),
            ));
        }
        rows = rows.saturating_add(group.num_rows);
        for (c, chunk) in group.columns.iter().enumerate() {
            let at = |what: String| bad(footer_at, format!("row group {g}, column {c}: {what}"));
            let Some(cm) = &chunk.meta_data else {
                return Err(at("no column metadata".into()));
            };
            let start = cm.dictionary_page_offset.unwrap_or(cm.data_page_offset);
            let size = cm.total_compressed_size;
            let end = start.checked_add(size);
            if start < 4 || size < 0 || end.is_none_or(|e| e as u64 > footer_at) {
                return Err(at(format!(
                    "its bytes {start}..+{size} are not inside the data part of the file"
                )));
            }
            if cm.num_values < group.num_rows {
                return Err(at(format!(
                    "{} values for {} rows",
                    cm.num_values, group.num_rows
                )));
            }
            check_pages(&mut r, start as u64, size as u64, cm.num_values)
                .map_err(|b| bad(b.offset, format!("row group {g}, column {c}: {}", b.what)))?;
        }
    }
    if rows != meta.num_rows {
        return Err(bad(
            footer_at,
            format!(
                "the file claims {} rows but its row groups hold {rows}",
                meta.num_rows
            ),
        ));
    }
    Ok(())
}

/// Walks the page headers of one column chunk (`size` bytes from `start`) until they account
/// for its `values`.
fn check_pages<R: Read + Seek>(r: &mut R, start: u64, size: u64, values: i64) -> Result<(), Bad> {
    let end = start + size;
    let mut pos = start;
    let mut seen = 0i64;
    while seen < values {
        if pos >= end {
            return Err(bad(
                pos,
                format!("its pages end after {seen} of {values} values"),
            ));
        }
        r.seek(SeekFrom::Start(pos))
            .map_err(|e| bad(pos, format!("cannot read: {e}")))?;
        let mut counting = Counting {
            inner: (&mut *r).take(end - pos),
            read: 0,
        };
        let header = PageHeader::read_from_in_protocol(&mut TCompactInputProtocol::new(
            &mut counting,
            MAX_THRIFT_BYTES,
        ))
        .map_err(|e| bad(pos, format!("malformed page header: {e}")))?;
        let page = |what: String| bad(pos, format!("page header: {what}"));
        let compressed = i64::from(header.compressed_page_size);
        let uncompressed = i64::from(header.uncompressed_page_size);
        if compressed < 0 || !(0..=MAX_PAGE_BYTES).contains(&uncompressed) {
            return Err(page(format!(
                "page sizes {compressed} compressed, {uncompressed} uncompressed"
            )));
        }
        let next = pos + counting.read + compressed as u64;
        if next > end {
            return Err(page(format!(
                "a {compressed}-byte page runs past the column's end"
            )));
        }
        let in_range = |n: i32| (0..=MAX_PAGE_VALUES.min(values - seen)).contains(&i64::from(n));
        match header.type_ {
            PageType::DATA_PAGE => {
                let h = header
                    .data_page_header
                    .ok_or_else(|| page("a data page without its header".into()))?;
                if !in_range(h.num_values) {
                    return Err(page(format!("{} values", h.num_values)));
                }
                seen += i64::from(h.num_values);
            }
            PageType::DATA_PAGE_V2 => {
                let h = header
                    .data_page_header_v2
                    .ok_or_else(|| page("a data page without its header".into()))?;
                let levels = i64::from(h.definition_levels_byte_length)
                    + i64::from(h.repetition_levels_byte_length);
                if !in_range(h.num_values)
                    || !(0..=h.num_values).contains(&h.num_nulls)
                    || !(0..=h.num_values).contains(&h.num_rows)
                    || h.definition_levels_byte_length < 0
                    || h.repetition_levels_byte_length < 0
                    || levels > compressed.min(uncompressed)
                {
                    return Err(page(format!(
                        "{} values, {} nulls, {} rows, {levels} bytes of levels",
                        h.num_values, h.num_nulls, h.num_rows
                    )));
                }
                seen += i64::from(h.num_values);
            }
            PageType::DICTIONARY_PAGE => {
                let h = header
                    .dictionary_page_header
                    .ok_or_else(|| page("a dictionary page without its header".into()))?;
                if !(0..=MAX_PAGE_VALUES).contains(&i64::from(h.num_values)) {
                    return Err(page(format!("a dictionary of {} values", h.num_values)));
                }
            }
            // Index pages and types this reader does not know carry no values.
            _ => {}
        }
        pos = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `tables` fuzz seed: a valid Parquet file written by polars (after its pick byte).
    fn seed() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/seeds-tables/table.parquet"
        );
        std::fs::read(path).unwrap()[1..].to_vec()
    }

    fn check_bytes(bytes: &[u8]) -> Result<(), String> {
        let path = std::env::temp_dir().join(format!(
            "warpscope-pqcheck-{}-{:x}",
            std::process::id(),
            bytes
                .iter()
                .fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(b.into()))
        ));
        std::fs::write(&path, bytes).unwrap();
        let r = check(File::open(&path).unwrap()).map_err(|b| format!("@{}: {}", b.offset, b.what));
        std::fs::remove_file(&path).ok();
        r
    }

    /// Byte `at` of the seed must be `was`; returns the seed with it set to `now`.
    fn patched(at: usize, was: u8, now: u8) -> Vec<u8> {
        let mut b = seed();
        assert_eq!(b[at], was, "the seed changed: find the header byte again");
        b[at] = now;
        b
    }

    #[test]
    fn a_valid_file_passes() {
        check_bytes(&seed()).unwrap();
    }

    #[test]
    fn negative_value_counts_are_refused_where_they_are() {
        // The first column's dictionary page header starts at byte 4: its num_values is the
        // zigzag varint at byte 12 (0x04 = 2); 0x01 is -1.
        let e = check_bytes(&patched(12, 0x04, 0x01)).unwrap_err();
        assert_eq!(
            e,
            "@4: row group 0, column 0: page header: a dictionary of -1 values"
        );
        // Its data page header starts at byte 30, num_values at byte 38 (0x08 = 4); 0x09 is -5,
        // the count that made polars reserve 2^61 bytes.
        let e = check_bytes(&patched(38, 0x08, 0x09)).unwrap_err();
        assert_eq!(e, "@30: row group 0, column 0: page header: -5 values");
        // More values than the column chunk holds.
        let e = check_bytes(&patched(38, 0x08, 0x0a)).unwrap_err();
        assert_eq!(e, "@30: row group 0, column 0: page header: 5 values");
    }

    #[test]
    fn pages_that_overrun_their_column_are_refused() {
        // The data page's compressed size (byte 34: 0x12 = 9) made 2^20.
        let mut b = seed();
        assert_eq!(&b[30..36], &[0x15, 0x00, 0x15, 0x12, 0x15, 0x12]);
        b[35] = 0x13; // -10
        let e = check_bytes(&b).unwrap_err();
        assert!(
            e.starts_with("@30: row group 0, column 0: page header: page sizes -10"),
            "{e}"
        );
        let e = check_bytes(&patched(35, 0x12, 0x7e)).unwrap_err();
        assert!(
            e.contains("a 63-byte page runs past the column's end"),
            "{e}"
        );
    }

    #[test]
    fn truncated_and_foreign_files_are_refused() {
        let b = seed();
        let e = check_bytes(&b[..b.len() - 1]).unwrap_err();
        assert!(e.contains("closing magic"), "{e}");
        let e = check_bytes(b"kernel,address\nk,1\n").unwrap_err();
        assert!(e.contains("PAR1"), "{e}");
        // Cutting out the middle leaves a footer that points past the data.
        let mut cut = b[..40].to_vec();
        let footer_len =
            u32::from_le_bytes(b[b.len() - 8..b.len() - 4].try_into().unwrap()) as usize;
        cut.extend_from_slice(&b[b.len() - 8 - footer_len..]);
        let e = check_bytes(&cut).unwrap_err();
        assert!(e.contains("not inside the data part"), "{e}");
    }
}
