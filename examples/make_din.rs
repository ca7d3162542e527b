//! Writes a Dinero IV `din` trace of N references to stdout, for checking that `sim` streams
//! a trace of any length in bounded memory (10^9 references make an 11 GB file):
//!
//!     cargo run --release --example make_din -- 1000000000 > /tmp/big.din
//!     /usr/bin/time -v target/release/warpscope sim --trace /tmp/big.din --json > /dev/null
//!
//! The mix is `tools/measure-e2e`'s: a third each of a sequential stream over 8 MiB, reads of
//! a 256 KiB working set at random and writes to it.

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let n: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: make_din REFERENCES > FILE.din");
            std::process::exit(2);
        }
    };
    let mut rng = warpscope::rng::Rng::new(26);
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut seq = 0u64;
    for i in 0..n {
        match i % 3 {
            0 => {
                writeln!(out, "0 {:x}", 0x1000_0000 + seq % (8 << 20))?;
                seq += 8;
            }
            1 => writeln!(out, "0 {:x}", 0x2000_0000 + rng.below(256 << 10) / 8 * 8)?,
            _ => writeln!(out, "1 {:x}", 0x2000_0000 + rng.below(256 << 10) / 8 * 8)?,
        }
    }
    out.flush()
}
