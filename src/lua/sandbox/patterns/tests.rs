//! Differential tests: the replacement pattern functions against stock Lua 5.4's string
//! library (right here in mlua), on generated subjects, patterns and replacements. Results
//! and error messages must be identical.

use super::install;
use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};
use proptest::prelude::*;

/// A comparable rendering of one call's outcome.
#[derive(Debug, PartialEq)]
enum Outcome {
    Values(Vec<String>),
    Error(String),
}

fn render(value: &LuaValue) -> String {
    match value {
        LuaValue::Nil => "nil".into(),
        LuaValue::Boolean(b) => b.to_string(),
        LuaValue::Integer(i) => format!("i{i}"),
        LuaValue::Number(n) => format!("n{n}"),
        LuaValue::String(s) => format!("s{:?}", s.as_bytes()),
        other => other.type_name().to_string(),
    }
}

/// The error's message without mlua's traceback; stock Lua names an argument's function
/// by its global name when called from Rust (`'string.find'`), as `'find'` from Lua code.
fn message(error: &mlua::Error) -> String {
    let text = match error {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => message(cause),
        other => other.to_string(),
    };
    let text = text
        .split("\nstack traceback:")
        .next()
        .unwrap_or("")
        .to_string();
    text.replace("to 'string.", "to '")
}

fn outcome(result: mlua::Result<MultiValue>) -> Outcome {
    match result {
        Ok(values) => Outcome::Values(values.iter().map(render).collect()),
        Err(e) => Outcome::Error(message(&e)),
    }
}

/// Two states: stock string functions, and the replacements (called directly).
struct Pair {
    stock: Lua,
    ours: Lua,
}

impl Pair {
    fn new() -> Self {
        let stock = Lua::new();
        let ours = Lua::new();
        let table = install(&ours).expect("install");
        ours.globals().set("P", table).expect("set");
        for lua in [&stock, &ours] {
            lua.load(
                r#"repl_fn = function(...) return select('#', ...) .. ":" .. table.concat({...}, ",") end
                   repl_table = { a = "A", b = false, ["()"] = "paren", [1] = "one" }"#,
            )
            .exec()
            .expect("helpers");
        }
        Self { stock, ours }
    }

    fn function(&self, stock: bool, name: &str) -> Function {
        if stock {
            let string: Table = self.stock.globals().get("string").expect("string");
            string.get(name).expect("function")
        } else {
            let ours: Table = self.ours.globals().get("P").expect("P");
            ours.get(name).expect("function")
        }
    }

    fn lua(&self, stock: bool) -> &Lua {
        if stock { &self.stock } else { &self.ours }
    }

    /// Calls `name` in both states with arguments built per state by `args`.
    fn both(&self, name: &str, args: impl Fn(&Lua) -> MultiValue) -> (Outcome, Outcome) {
        let run = |stock: bool| {
            let lua = self.lua(stock);
            let function = self.function(stock, name);
            if name == "gmatch" {
                let iterator = function.call::<Function>(args(lua));
                return match iterator {
                    Err(e) => Outcome::Error(message(&e)),
                    Ok(iterator) => {
                        let mut all = Vec::new();
                        for _ in 0..50 {
                            match iterator.call::<MultiValue>(()) {
                                Ok(values) if values.is_empty() || values[0].is_nil() => break,
                                Ok(values) => all
                                    .push(values.iter().map(render).collect::<Vec<_>>().join("|")),
                                Err(e) => return Outcome::Error(message(&e)),
                            }
                        }
                        Outcome::Values(all)
                    }
                };
            }
            outcome(function.call::<MultiValue>(args(lua)))
        };
        (run(true), run(false))
    }
}

fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a", "b", "x", ".", "%a", "%d", "%s", "%w", "%A", "%p", "[ab]", "[^a]", "[a-c]", "[%a_]",
        "[]", "[^]", "*", "+", "-", "?", "(", ")", "()", "%1", "%2", "%0", "%b()", "%bab", "%b",
        "%f[%w]", "%f[a]", "%f", "^", "$", "%", "[", "]", "%%", "%.", "%z", "(a*)", "(.-)", "[%]]",
        "[a-]", "%g",
    ])
}

fn pattern() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..7).prop_map(|tokens| tokens.concat())
}

fn subject() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "b", "x", "(", ")", "[", "]", "%", " ", "1", "_", "\n", "ab",
        ]),
        0..10,
    )
    .prop_map(|parts| parts.concat())
}

fn replacement() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["%0", "%1", "%2", "<", ">", "%%", "x", "%", "%a"]),
        0..4,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    #[test]
    fn find_and_match_agree_with_stock_lua(
        s in subject(), p in pattern(), init in prop::option::of(-6i64..12), plain in any::<bool>()
    ) {
        let pair = Pair::new();
        for name in ["find", "match"] {
            let (stock, ours) = pair.both(name, |lua| {
                let mut args = vec![
                    LuaValue::String(lua.create_string(&s).unwrap()),
                    LuaValue::String(lua.create_string(&p).unwrap()),
                ];
                args.push(init.map_or(LuaValue::Nil, LuaValue::Integer));
                if plain { args.push(LuaValue::Boolean(true)); }
                MultiValue::from_vec(args)
            });
            prop_assert_eq!(stock, ours, "{}({:?}, {:?}, {:?}, {})", name, s, p, init, plain);
        }
    }

    #[test]
    fn gmatch_agrees_with_stock_lua(s in subject(), p in pattern(), init in prop::option::of(-6i64..12)) {
        let pair = Pair::new();
        let (stock, ours) = pair.both("gmatch", |lua| {
            MultiValue::from_vec(vec![
                LuaValue::String(lua.create_string(&s).unwrap()),
                LuaValue::String(lua.create_string(&p).unwrap()),
                init.map_or(LuaValue::Nil, LuaValue::Integer),
            ])
        });
        prop_assert_eq!(stock, ours, "gmatch({:?}, {:?}, {:?})", s, p, init);
    }

    #[test]
    fn gsub_agrees_with_stock_lua(
        s in subject(), p in pattern(), r in replacement(), kind in 0u8..4, max in prop::option::of(0i64..4)
    ) {
        let pair = Pair::new();
        let (stock, ours) = pair.both("gsub", |lua| {
            let repl = match kind {
                0 => LuaValue::String(lua.create_string(&r).unwrap()),
                1 => lua.globals().get("repl_fn").unwrap(),
                2 => lua.globals().get("repl_table").unwrap(),
                _ => LuaValue::Integer(7),
            };
            MultiValue::from_vec(vec![
                LuaValue::String(lua.create_string(&s).unwrap()),
                LuaValue::String(lua.create_string(&p).unwrap()),
                repl,
                max.map_or(LuaValue::Nil, LuaValue::Integer),
            ])
        });
        prop_assert_eq!(stock, ours, "gsub({:?}, {:?}, {:?} kind {}, {:?})", s, p, r, kind, max);
    }
}

#[test]
fn argument_errors_agree_with_stock_lua() {
    let pair = Pair::new();
    for name in ["find", "match", "gmatch", "gsub"] {
        for args in [
            vec![],
            vec![LuaValue::Boolean(true)],
            vec![LuaValue::Integer(12), LuaValue::Integer(1)],
            vec![
                LuaValue::Integer(12),
                LuaValue::Integer(1),
                LuaValue::Number(1.5),
            ],
        ] {
            let (stock, ours) = pair.both(name, |_| MultiValue::from_vec(args.clone()));
            assert_eq!(stock, ours, "{name}({args:?})");
        }
    }
}
