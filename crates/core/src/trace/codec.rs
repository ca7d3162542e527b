//! zstd and xz behind one door, so the core builds where their C libraries cannot: the
//! desktop and the CLI use the C libraries (feature `native-codecs`, the default); the web
//! build, for which no C compiler targets wasm32, uses pure-Rust codecs (feature
//! `rust-codecs`: ruzstd and lzma-rust2). With neither, a compressed file is an error that
//! says so. gzip is pure Rust (flate2) everywhere and is not here.
//!
//! Both builds read every file the other writes: `.wsb` chunks are zstd frames either way
//! (written at zstd's level 3 by the C library, at its fastest level by ruzstd).

use std::io::BufRead;

use super::source::Stream;

/// zstd's bound on the size of `n` bytes compressed (`ZSTD_COMPRESSBOUND`).
pub(crate) fn zstd_bound(n: usize) -> usize {
    const SMALL: usize = 128 << 10;
    n + (n >> 8) + if n < SMALL { (SMALL - n) >> 11 } else { 0 }
}

/// The error of a build without any codec for `what`.
#[cfg(not(any(feature = "native-codecs", feature = "rust-codecs")))]
fn not_built(what: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "this build of Warpscope reads no {what} (built without the features native-codecs and rust-codecs)"
    ))
}

/// A streaming zstd decoder of `raw`, reading every frame (a `zstd -T` file has several).
pub(crate) fn zstd_reader(raw: Box<dyn BufRead + Send>) -> std::io::Result<Stream> {
    #[cfg(feature = "native-codecs")]
    return Ok(Box::new(zstd::stream::read::Decoder::with_buffer(raw)?));
    #[cfg(all(feature = "rust-codecs", not(feature = "native-codecs")))]
    return Ok(Box::new(rust::Frames::new(raw)));
    #[cfg(not(any(feature = "native-codecs", feature = "rust-codecs")))]
    return {
        drop(raw);
        Err(not_built("zstd"))
    };
}

/// A streaming xz decoder of `raw`, reading every stream (concatenated `.xz` files).
pub(crate) fn xz_reader(raw: Box<dyn BufRead + Send>) -> std::io::Result<Stream> {
    #[cfg(feature = "native-codecs")]
    return Ok(Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(
        raw,
    )));
    #[cfg(all(feature = "rust-codecs", not(feature = "native-codecs")))]
    return Ok(Box::new(lzma_rust2::XzReader::new(raw, true)));
    #[cfg(not(any(feature = "native-codecs", feature = "rust-codecs")))]
    return {
        drop(raw);
        Err(not_built("xz"))
    };
}

/// Compresses blocks into zstd frames, keeping its state from one block to the next.
pub(crate) struct Compressor {
    #[cfg(feature = "native-codecs")]
    z: zstd::bulk::Compressor<'static>,
}

/// zstd's level for the C library: its default. Faster levels unpack the corpus's hostile
/// `din` mixes a tenth faster at a third more bytes, and make tiny CTAs' files larger.
#[cfg(feature = "native-codecs")]
const LEVEL: i32 = 3;

impl Compressor {
    pub(crate) fn new() -> std::io::Result<Self> {
        Ok(Compressor {
            #[cfg(feature = "native-codecs")]
            z: zstd::bulk::Compressor::new(LEVEL)?,
        })
    }

    /// Appends `data`, compressed into one frame, to `out`.
    pub(crate) fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        #[cfg(feature = "native-codecs")]
        {
            let start = out.len();
            out.resize(start + zstd_bound(data.len()), 0);
            let n = self.z.compress_to_buffer(data, &mut out[start..])?;
            out.truncate(start + n);
            Ok(())
        }
        #[cfg(all(feature = "rust-codecs", not(feature = "native-codecs")))]
        {
            let level = ruzstd::encoding::CompressionLevel::Fastest;
            ruzstd::encoding::compress(data, out, level);
            Ok(())
        }
        #[cfg(not(any(feature = "native-codecs", feature = "rust-codecs")))]
        {
            let _ = (data, out);
            Err(not_built("zstd"))
        }
    }
}

/// Decompresses zstd frames, keeping its state from one to the next.
#[derive(Default)]
pub(crate) struct Decompressor {
    #[cfg(feature = "native-codecs")]
    z: Option<zstd::bulk::Decompressor<'static>>,
    #[cfg(all(feature = "rust-codecs", not(feature = "native-codecs")))]
    z: ruzstd::decoding::FrameDecoder,
}

impl Decompressor {
    /// Decompresses the frames `frame` into `out`'s spare capacity (it never grows `out`; a
    /// frame that holds more is an error). Says what went wrong, for a message.
    pub(crate) fn decompress(&mut self, frame: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        #[cfg(feature = "native-codecs")]
        {
            let z = match &mut self.z {
                Some(z) => z,
                None => self
                    .z
                    .insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
            };
            z.decompress_to_buffer(frame, out)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        #[cfg(all(feature = "rust-codecs", not(feature = "native-codecs")))]
        {
            self.z
                .decode_all_to_vec(frame, out)
                .map_err(|e| e.to_string())
        }
        #[cfg(not(any(feature = "native-codecs", feature = "rust-codecs")))]
        {
            let _ = (frame, out);
            Err(not_built("zstd").to_string())
        }
    }
}

#[cfg(all(feature = "rust-codecs", not(feature = "native-codecs")))]
mod rust {
    use std::io::{BufRead, Read};

    use ruzstd::decoding::{FrameDecoder, StreamingDecoder};

    type Source = Box<dyn BufRead + Send>;

    /// ruzstd's streaming decoder reads one frame; this reads them one after another,
    /// stepping over skippable frames, until the input ends.
    pub(super) struct Frames {
        state: State,
    }

    enum State {
        /// Between frames (and at the start).
        Between(Source, FrameDecoder),
        In(StreamingDecoder<Source, FrameDecoder>),
        /// Taken out while changing state, or after an error.
        Gone,
    }

    impl Frames {
        pub(super) fn new(source: Source) -> Self {
            Frames {
                state: State::Between(source, FrameDecoder::new()),
            }
        }
    }

    fn bad(e: impl std::fmt::Display) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("zstd: {e}"))
    }

    impl Read for Frames {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            loop {
                match std::mem::replace(&mut self.state, State::Gone) {
                    State::Gone => return Err(bad("the stream failed before")),
                    State::In(mut d) => {
                        let n = d.read(buf)?;
                        if n > 0 || buf.is_empty() {
                            self.state = State::In(d);
                            return Ok(n);
                        }
                        let (source, decoder) = d.into_parts();
                        self.state = State::Between(source, decoder);
                    }
                    State::Between(mut source, decoder) => {
                        if source.fill_buf()?.is_empty() {
                            self.state = State::Between(source, decoder);
                            return Ok(0);
                        }
                        if let Some(length) = skippable(&mut source)? {
                            let skipped = std::io::copy(
                                &mut (&mut source).take(length),
                                &mut std::io::sink(),
                            )?;
                            if skipped != length {
                                return Err(bad("the input ends inside a skippable frame"));
                            }
                            self.state = State::Between(source, decoder);
                            continue;
                        }
                        self.state = State::In(
                            StreamingDecoder::new_with_decoder(source, decoder).map_err(bad)?,
                        );
                    }
                }
            }
        }
    }

    /// A skippable frame's length, its 8-byte header read, when `source` starts with one.
    fn skippable(source: &mut Source) -> std::io::Result<Option<u64>> {
        let mut head = [0u8; 4];
        let buffered = source.fill_buf()?;
        if buffered.len() < 4 {
            // A frame's magic number split across reads: rare enough to read it bytewise.
            let mut v = Vec::new();
            (&mut *source).take(4).read_to_end(&mut v)?;
            let magic = v.iter().rev().fold(0u32, |m, &b| (m << 8) | u32::from(b));
            return if v.len() == 4 && magic & 0xFFFF_FFF0 == 0x184D_2A50 {
                source.read_exact(&mut head)?;
                Ok(Some(u64::from(u32::from_le_bytes(head))))
            } else {
                Err(bad(
                    "the input does not start a zstd frame where one should start",
                ))
            };
        }
        head.copy_from_slice(&buffered[..4]);
        if u32::from_le_bytes(head) & 0xFFFF_FFF0 != 0x184D_2A50 {
            return Ok(None);
        }
        source.consume(4);
        source.read_exact(&mut head)?;
        Ok(Some(u64::from(u32::from_le_bytes(head))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_bound_is_zstds() {
        for n in [
            0,
            1,
            255,
            256,
            1000,
            (128 << 10) - 1,
            128 << 10,
            1 << 20,
            12_345_678,
        ] {
            assert_eq!(zstd_bound(n), zstd::zstd_safe::compress_bound(n), "{n}");
        }
    }

    fn decoded(r: std::io::Result<Stream>) -> std::io::Result<Vec<u8>> {
        let mut v = Vec::new();
        r?.read_to_end(&mut v)?;
        Ok(v)
    }

    #[test]
    fn several_zstd_frames_and_xz_streams_are_read_whole() {
        let a: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let b = b"0 1 2 3\n".repeat(5000);
        let mut z = zstd::encode_all(&a[..], 3).unwrap();
        // A skippable frame between the two (pzstd writes them).
        z.extend([0x50, 0x2a, 0x4d, 0x18, 5, 0, 0, 0, 9, 9, 9, 9, 9]);
        z.extend(zstd::encode_all(&b[..], 19).unwrap());
        let mut x = Vec::new();
        for part in [&a[..], &b[..]] {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            std::io::Write::write_all(&mut e, part).unwrap();
            x.extend(e.finish().unwrap());
        }
        let whole = [&a[..], &b[..]].concat();
        assert_eq!(
            decoded(zstd_reader(Box::new(std::io::Cursor::new(z.clone())))).unwrap(),
            whole
        );
        assert_eq!(
            decoded(xz_reader(Box::new(std::io::Cursor::new(x.clone())))).unwrap(),
            whole
        );
        // Cut short: an error, not a short read taken for the whole.
        assert!(decoded(zstd_reader(Box::new(std::io::Cursor::new(
            z[..z.len() - 7].to_vec()
        ))))
        .is_err());
        assert!(decoded(xz_reader(Box::new(std::io::Cursor::new(
            x[..x.len() - 7].to_vec()
        ))))
        .is_err());
    }

    #[test]
    fn a_compressed_block_comes_back_and_a_too_small_buffer_is_an_error() {
        let data: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 13) as u8).collect();
        let mut frame = Vec::new();
        Compressor::new()
            .unwrap()
            .compress(&data, &mut frame)
            .unwrap();
        // The other build's frames too.
        let other = zstd::encode_all(&data[..], 1).unwrap();
        let mut d = Decompressor::default();
        for f in [&frame, &other] {
            let mut out = Vec::with_capacity(data.len());
            d.decompress(f, &mut out).unwrap();
            assert_eq!(out, data);
            let mut small = Vec::with_capacity(data.len() / 2);
            assert!(d.decompress(f, &mut small).is_err());
        }
    }
}
