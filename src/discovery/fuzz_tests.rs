//! Fuzzing the discovery check (prefilter, UTF-8, nesting guard, `full_moon` top-level
//! rule) with generated Lua-like input: it always returns a verdict, never panics, never
//! overflows a stack. `scripts/fuzz.sh` runs many more cases.

use super::{Reason, classify};
use crate::lua::depth::MAX_NESTING;
use proptest::prelude::*;

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

/// Fragments that each open one nesting level (a block, a bracket or a unary operator) and
/// leave it open, so repeating one more than [`MAX_NESTING`] times must be refused.
fn opener() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "do ",
        "for i = 1, 2 do ",
        "while x do ",
        "if x then ",
        "repeat ",
        "function f() ",
        "x = function() ",
        "(",
        "{",
        "t[",
        "not ",
        "- ",
        "#",
        "~",
        "'a' .. ",
        "2 ^ ",
    ])
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
    fn deep_repetition_is_refused_not_crashed(
        open in opener(),
        depth in (MAX_NESTING + 2)..3000,
    ) {
        let text = format!("registry.register{{}}\n{}", open.repeat(depth));
        let (reason, error) = classify("deep.lua", text.as_bytes());
        prop_assert_eq!(reason, Reason::ParseError);
        let error = error.unwrap_or_default();
        prop_assert!(
            error.starts_with("deep.lua:2: nesting too deep (limit 200)"),
            "{:?} × {}: {}", open, depth, error
        );
    }

    #[test]
    fn any_repetition_gets_a_consistent_verdict(open in fragment(), depth in 150usize..3000) {
        let text = format!("registry.register{{}}\n{}", open.repeat(depth));
        let (reason, error) = classify("deep.lua", text.as_bytes());
        // The words are there, so the prefilter passes it; an error comes with (and only
        // with) a parse-error verdict.
        prop_assert_ne!(reason, Reason::Prefilter);
        prop_assert_eq!(error.is_some(), reason == Reason::ParseError);
    }

    #[test]
    fn arbitrary_bytes_get_a_verdict(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let mut with_words = b"registry register ".to_vec();
        with_words.extend(bytes);
        let _ = classify("bytes.lua", &with_words);
    }
}

/// Every shape either parser descends into recursively, at depths up to 1,000,000: the
/// nesting ones are refused with `nesting too deep`, the rest get an ordinary verdict. None
/// may overflow a stack (that would abort this test process).
#[test]
fn every_recursive_shape_up_to_a_million_deep_gets_a_verdict() {
    const HEAD: &str = "registry.register{ name = 'x' }\nx = ";
    let nesting: &[(&str, &str, &str)] = &[
        ("not ", "y", ""),
        ("- ", "y", ""),
        ("#", "t", ""),
        ("~", "y", ""),
        ("'a' .. ", "'a'", ""),
        ("2 ^ ", "2", ""),
        ("a .. -", "a", ""),
        ("(", "1", ")"),
        ("{", "1", "}"),
        ("t[", "1", "]"),
        ("function() return ", "1", " end"),
    ];
    for depth in [1_000, 10_000, 100_000, 1_000_000] {
        for (open, middle, close) in nesting {
            let source = format!(
                "{HEAD}{}{middle}{}",
                open.repeat(depth),
                close.repeat(depth)
            );
            let (reason, error) = classify("deep.lua", source.as_bytes());
            assert_eq!(reason, Reason::ParseError, "{open:?} × {depth}");
            let error = error.unwrap_or_default();
            assert!(
                error.starts_with("deep.lua:2: nesting too deep (limit 200)"),
                "{open:?} × {depth}: {error}"
            );
        }
    }
    let flat: &[&str] = &[" + 1", "()", ".b", ":m()", " == a", "[1]"];
    for depth in [1_000, 100_000, 1_000_000] {
        for tail in flat {
            let source = format!("{HEAD}a{}", tail.repeat(depth));
            let (reason, _) = classify("flat.lua", source.as_bytes());
            assert_eq!(reason, Reason::Registers, "{tail:?} × {depth}");
        }
        if depth <= 5_000 {
            continue; // within the and/or limit: an ordinary expression
        }
        let logical = format!("{HEAD}a{}", " and a".repeat(depth));
        let (reason, error) = classify("logic.lua", logical.as_bytes());
        assert_eq!(reason, Reason::ParseError);
        assert!(
            error
                .unwrap_or_default()
                .contains("too many chained and/or"),
            "and × {depth}"
        );
    }
}
