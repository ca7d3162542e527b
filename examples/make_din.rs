//! Writes a Dinero IV `din` trace of N references to stdout, reproducibly, in one of the
//! benchmark corpus's mixes (`warpscope::gen::DinMix`: friendly, hostile, random);
//! `tools/make-corpus` writes the corpus with it.
//!
//!     cargo run --release --example make_din -- 1000000000 > /tmp/big.din
//!     cargo run --release --example make_din -- --mix hostile 20000000 > /tmp/hostile.din

use std::io::{BufWriter, Write};
use warpscope::gen::DinMix;

fn usage() -> ! {
    eprintln!("usage: make_din [--mix friendly|hostile|random] REFERENCES > FILE.din");
    std::process::exit(2);
}

fn main() -> std::io::Result<()> {
    let mut mix = DinMix::Friendly;
    let mut n = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mix" => {
                mix = args
                    .next()
                    .and_then(|m| DinMix::from_name(&m))
                    .unwrap_or_else(|| usage())
            }
            _ => n = Some(a.parse::<u64>().unwrap_or_else(|_| usage())),
        }
    }
    let Some(n) = n else { usage() };
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    mix.write(n, &mut out)?;
    out.flush()
}
