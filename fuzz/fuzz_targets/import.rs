//! Every importer on arbitrary bytes: the first byte picks the format, the rest is the file.
//! Reading may fail, but must not panic, hang or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warpscope::trace::{read_bytes, Format};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = Format::FROM_BYTES[pick as usize % Format::FROM_BYTES.len()];
    if let Ok(t) = read_bytes(format, rest) {
        // What was read must be usable: every row's thread lies in its kernel's grid.
        for k in &t.kernels {
            let threads = k.num_threads();
            assert!(k.columns().thread.iter().all(|&x| (x as u64) < threads));
        }
    }
});
