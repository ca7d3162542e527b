//! Decompression on its own thread: the decoder fills 1 MiB buffers ahead of the parser, so
//! parsing and decompression use two cores. Dropping the reader stops the thread (its next send
//! fails).

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver};

use warpscope::trace::source::Stream;

const BUF: usize = 1 << 20;
/// Buffers in flight: bounds the memory used to 4 MiB.
const AHEAD: usize = 4;

struct ChannelReader {
    rx: Receiver<io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(buf)) => {
                    self.cur = buf;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                // The thread ended after its last buffer.
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Moves `s` to a decompression thread; reads inline if no thread can be started.
pub fn wrap(s: Stream) -> Stream {
    let (tx, rx) = sync_channel(AHEAD);
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(s)));
    let theirs = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("decompress".into())
        .spawn(move || {
            let Some(mut s) = theirs.lock().ok().and_then(|mut g| g.take()) else {
                return;
            };
            loop {
                let mut buf = vec![0u8; BUF];
                let mut got = 0;
                let result = loop {
                    match s.read(&mut buf[got..]) {
                        Ok(0) => break Ok(()),
                        Ok(n) => {
                            got += n;
                            if got == BUF {
                                break Ok(());
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => break Err(e),
                    }
                };
                buf.truncate(got);
                let end = got < BUF;
                if got > 0 && tx.send(Ok(buf)).is_err() {
                    return;
                }
                if let Err(e) = result {
                    let _ = tx.send(Err(e));
                    return;
                }
                if end {
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => Box::new(ChannelReader {
            rx,
            cur: Vec::new(),
            pos: 0,
            done: false,
        }),
        Err(_) => match slot.lock().ok().and_then(|mut g| g.take()) {
            Some(s) => s,
            None => Box::new(io::empty()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "cut"));
            }
            let n = out.len().min(self.0);
            out[..n].fill(7);
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn passes_bytes_through_and_then_the_error() {
        let data: Vec<u8> = (0..3 * BUF + 5).map(|i| (i % 253) as u8).collect();
        let mut r = wrap(Box::new(io::Cursor::new(data.clone())));
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert!(got == data);
        let mut r = wrap(Box::new(Failing(BUF + 3)));
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(got.len(), BUF + 3);
    }
}
