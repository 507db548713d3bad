//! Fuzzing the discovery check (prefilter, UTF-8, nesting guard, `full_moon` top-level
//! rule) with generated Lua-like input: it always returns a verdict, never panics, never
//! overflows a stack. `scripts/fuzz.sh` runs many more cases.

use proptest::prelude::*;
use toolhost::discovery::{Reason, classify};

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("registry.register{ name = 'x' }".to_string()),
        Just("registry.hook('pre_tool_call', f)".to_string()),
        Just("registry:register{}".to_string()),
        Just("do ".to_string()),
        Just(" end ".to_string()),
        Just("for i = 1, 2 do ".to_string()),
        Just("if x then ".to_string()),
        Just("function f() ".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[[".to_string()),
        Just("]]".to_string()),
        Just("--[==[ ".to_string()),
        Just("-- ".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\n".to_string()),
        Just("local x <const> = 1 // 2 ".to_string()),
        Just("not ".to_string()),
        Just("- ".to_string()),
        "[ -~]{0,8}",
        prop::collection::vec(any::<u8>(), 0..6)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

fn source() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..60).prop_map(|parts| parts.concat())
}

fn cases() -> u32 {
    std::env::var("TOOLHOST_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_input_gets_a_verdict(text in source()) {
        let (reason, error) = classify("fuzz.lua", text.as_bytes());
        prop_assert_eq!(error.is_some(), reason == Reason::ParseError);
    }

    #[test]
    fn deep_repetition_is_refused_not_crashed(open in fragment(), depth in 150usize..3000) {
        let text = format!("registry.register{{}}\n{}", open.repeat(depth));
        let _ = classify("deep.lua", text.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_get_a_verdict(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let mut with_words = b"registry register ".to_vec();
        with_words.extend(bytes);
        let _ = classify("bytes.lua", &with_words);
    }
}
