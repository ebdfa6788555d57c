//! Any bytes, as a WARC stream (plain, gzip or lz4 by their magic): the reader and the HTTP
//! layer must never panic, and must always terminate.
#![no_main]
use libfuzzer_sys::fuzz_target;

use dupflow::source::{http, Decoder, Framer};

fuzz_target!(|data: &[u8]| {
    let Ok(decoder) = Decoder::new(Box::new(std::io::Cursor::new(data.to_vec()))) else { return };
    let mut framer = Framer::new(decoder, 1 << 20);
    while let Some(item) = framer.next_record() {
        if let Ok(record) = item {
            let _ = http::interpret(&record, 1 << 16);
        }
    }
});
