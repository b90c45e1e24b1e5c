#![no_main]
//! Every input format in one libFuzzer target; `FORMAT` names it (a target of
//! `cargo xtask fuzz`): `FORMAT=deck cargo +nightly fuzz run formats corpus/deck`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let format = std::env::var("FORMAT").expect("FORMAT names the format (deck, frd, ...)");
    xtask::fuzz::libfuzzer_one(&format, data);
});
