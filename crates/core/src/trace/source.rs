//! Opening trace files: compression (gzip, zstd, xz) found from magic bytes, checked against
//! the file's extension, undone while streaming, so a multi-gigabyte `.xz` trace is never held
//! in memory whole.
//!
//! The decoder is handed to the caller's `wrap` function before parsing starts: the CLI and the
//! app use it to run decompression on a thread of their own (the library starts no threads).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::TraceError;

/// A readable stream, as the shells pass it back from `wrap`.
pub type Stream = Box<dyn Read + Send>;

/// How a file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Gzip,
    Zstd,
    Xz,
}

impl Compression {
    /// From the first bytes of a file.
    pub fn from_magic(head: &[u8]) -> Self {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else {
            Compression::None
        }
    }
    /// From a file name's last extension.
    pub fn from_extension(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz" | "gzip") => Compression::Gzip,
            Some("zst" | "zstd") => Compression::Zstd,
            Some("xz") => Compression::Xz,
            _ => Compression::None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }
}

/// The path without a compression extension (`kernel-1.traceg.xz` -> `kernel-1.traceg`).
pub fn strip_compression(path: &Path) -> std::path::PathBuf {
    match Compression::from_extension(path) {
        Compression::None => path.to_path_buf(),
        _ => path.with_extension(""),
    }
}

/// An opened file: its decompressed bytes and what was undone.
pub struct Opened {
    pub reader: Box<dyn BufRead + Send>,
    pub compression: Compression,
    /// Size of the file on disk (compressed bytes).
    pub file_bytes: u64,
}

/// Opens the uncompressed file `path` at byte `offset` (a place a reader found before);
/// `watch` as for [`open`].
pub fn open_at(
    path: &Path,
    offset: u64,
    watch: &dyn Fn(Stream) -> Stream,
) -> Result<Box<dyn BufRead + Send>, TraceError> {
    use std::io::Seek;
    let name = path.display().to_string();
    let mut file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e))?;
    file.seek(std::io::SeekFrom::Start(offset))
        .map_err(|e| TraceError::io(&name, e))?;
    Ok(Box::new(BufReader::with_capacity(
        1 << 20,
        watch(Box::new(file)),
    )))
}

/// The decompressed bytes of the file `path` (named `file` in errors) from byte `offset` on,
/// where a reader of it stood before: an uncompressed file is read from there; a compressed
/// one is decompressed from its start and the bytes before `offset` skipped (far faster than
/// simulating them again). A file now shorter than `offset` changed since: an error.
/// `watch` as for [`open`].
pub fn reopen_at(
    path: &Path,
    file: &str,
    offset: u64,
    watch: &dyn Fn(Stream) -> Stream,
) -> Result<Box<dyn BufRead + Send>, TraceError> {
    use std::io::Read;
    let changed = |len: u64, what: &str| {
        TraceError::parse(
            file,
            super::Location::Byte(len),
            format!("the file ends before byte {offset}{what}, where the run stood: it changed"),
        )
    };
    if open(path, &|s| s, &|s| s)?.compression == Compression::None {
        let len = std::fs::metadata(path)
            .map_err(|e| TraceError::io(file, e))?
            .len();
        if len < offset {
            return Err(changed(len, ""));
        }
        return open_at(path, offset, watch);
    }
    let mut r = open(path, &|s| s, watch)?.reader;
    let skipped = std::io::copy(&mut (&mut r).take(offset), &mut std::io::sink())
        .map_err(|e| TraceError::io(file, e))?;
    if skipped != offset {
        return Err(changed(skipped, " (decompressed)"));
    }
    Ok(r)
}

/// Opens `path`, undoing compression. `wrap` sees the decompressed stream before buffering
/// (the shells move decompression to a thread there; pass `|s| s` to read inline); `watch`
/// sees the file's own bytes (the app counts them for a progress bar and stops a cancelled
/// load by failing a read).
pub fn open(
    path: &Path,
    wrap: &dyn Fn(Stream) -> Stream,
    watch: &dyn Fn(Stream) -> Stream,
) -> Result<Opened, TraceError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e))?;
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    open_stream(&name, path, Box::new(file), file_bytes, wrap, watch)
}

/// [`open`] for a file's bytes that come from elsewhere than a path (the web build's file
/// picker): `raw` holds the file named `name` (errors) at `path` (its extension is checked
/// against the magic bytes), `file_bytes` long.
pub fn open_stream(
    name: &str,
    path: &Path,
    raw: Stream,
    file_bytes: u64,
    wrap: &dyn Fn(Stream) -> Stream,
    watch: &dyn Fn(Stream) -> Stream,
) -> Result<Opened, TraceError> {
    let mut raw = BufReader::with_capacity(1 << 16, watch(raw));
    let head = raw.fill_buf().map_err(|e| TraceError::io(name, e))?;
    let by_magic = Compression::from_magic(head);
    let by_ext = Compression::from_extension(path);
    if by_ext != Compression::None && by_magic != by_ext {
        return Err(TraceError::parse(
            name,
            super::Location::Byte(0),
            format!(
                "the extension says {} but the file does not start with {} magic bytes",
                by_ext.name(),
                by_ext.name()
            ),
        ));
    }
    let stream: Stream = match by_magic {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Zstd => {
            super::codec::zstd_reader(Box::new(raw)).map_err(|e| TraceError::io(name, e))?
        }
        Compression::Xz => {
            super::codec::xz_reader(Box::new(raw)).map_err(|e| TraceError::io(name, e))?
        }
    };
    let stream = if by_magic == Compression::None {
        stream
    } else {
        wrap(stream)
    };
    Ok(Opened {
        reader: Box::new(BufReader::with_capacity(1 << 20, stream)),
        compression: by_magic,
        file_bytes,
    })
}

/// Reads up to `n` bytes from the front of `r` without consuming them for later readers:
/// returns the bytes and a reader that yields them again, then the rest.
pub fn peek(
    mut r: Box<dyn BufRead + Send>,
    n: usize,
) -> std::io::Result<(Vec<u8>, Box<dyn BufRead + Send>)> {
    let mut head = Vec::with_capacity(n);
    (&mut r).take(n as u64).read_to_end(&mut head)?;
    let again = std::io::Cursor::new(head.clone()).chain(r);
    Ok((head, Box::new(BufReader::with_capacity(1 << 20, again))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(path: &Path) -> Result<(Vec<u8>, Compression), TraceError> {
        let mut o = open(path, &|s| s, &|s| s)?;
        let mut v = Vec::new();
        o.reader
            .read_to_end(&mut v)
            .map_err(|e| TraceError::io("x", e))?;
        Ok((v, o.compression))
    }

    #[test]
    fn every_compression_round_trips_and_extensions_are_checked() {
        let dir = std::env::temp_dir().join(format!("ws-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&data).unwrap();
            e.finish().unwrap()
        };
        let zst = zstd::encode_all(data.as_slice(), 1).unwrap();
        let xz = {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(&data).unwrap();
            e.finish().unwrap()
        };
        for (file, bytes, c) in [
            ("a.gz", &gz, Compression::Gzip),
            ("a.zst", &zst, Compression::Zstd),
            ("a.xz", &xz, Compression::Xz),
            ("a.bin", &data, Compression::None),
            // Magic bytes win when the extension says nothing.
            ("b.trace", &xz, Compression::Xz),
        ] {
            let p = dir.join(file);
            std::fs::write(&p, bytes).unwrap();
            let (got, comp) = read_all(&p).unwrap();
            assert_eq!(comp, c, "{file}");
            assert!(got == data, "{file}");
        }
        // A `.gz` name on zstd data is an error naming the file.
        let p = dir.join("wrong.gz");
        std::fs::write(&p, &zst).unwrap();
        let e = read_all(&p).err().unwrap().to_string();
        assert!(e.contains("wrong.gz") && e.contains("gzip"), "{e}");
        // A truncated compressed stream is an error, not a short trace.
        let p = dir.join("cut.xz");
        std::fs::write(&p, &xz[..xz.len() / 2]).unwrap();
        assert!(read_all(&p).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn strips_one_compression_extension() {
        assert_eq!(
            strip_compression(Path::new("d/kernel-1.traceg.xz")),
            Path::new("d/kernel-1.traceg")
        );
        assert_eq!(strip_compression(Path::new("a.wst")), Path::new("a.wst"));
    }
}
