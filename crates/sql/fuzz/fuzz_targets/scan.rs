//! Fuzzes `weir_sql::scan` with arbitrary query bytes: it must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = weir_sql::scan(data);
});
