//! The top-level registration rule (docs/discovery.md), decided on the `full_moon` AST.
//!
//! A file registers iff a call *statement* `registry.register(...)`, `registry.register{...}`,
//! `registry.register "..."`, `registry.hook(...)`, `registry.resource{...}` or
//! `registry.prompt{...}` stands at top level, directly in a
//! top-level `do ... end`, or directly in the body of a top-level numeric/generic `for`.

use super::contained::{self, TopLevel};
use crate::error::LoadError;
use full_moon::LuaVersion;
use full_moon::ast::{Block, Call, FunctionCall, Index, Prefix, Stmt, Suffix};

/// What the parser says about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ParseVerdict {
    /// A top-level registration call is present; what the rest of its top level does.
    Registers(TopLevel),
    /// Parsed fine; no top-level registration.
    NoTopLevelRegister,
    /// Did not parse; the message names `file:line`.
    ParseError(LoadError),
}

/// Parses `src` (Lua 5.4) and applies the rule. Call on a thread with a large stack.
pub(super) fn check(display: &str, src: &str) -> ParseVerdict {
    match full_moon::parse_fallible(src, LuaVersion::lua54()).into_result() {
        Ok(ast) => {
            if block_registers(ast.nodes(), true) {
                let mut top_level = contained::analyse_sized(&ast, src.len());
                top_level.effects = super::effects::summarise_bounded(&ast, src.len());
                ParseVerdict::Registers(top_level)
            } else {
                ParseVerdict::NoTopLevelRegister
            }
        }
        Err(errors) => {
            let error = errors
                .first()
                .map(|e| {
                    let line = u32::try_from(e.range().0.line()).ok();
                    LoadError::new(display, line, e.error_message())
                })
                .unwrap_or_else(|| LoadError::new(display, None, "parse error"));
            ParseVerdict::ParseError(error)
        }
    }
}

fn block_registers(block: &Block, top: bool) -> bool {
    block.stmts().any(|stmt| match stmt {
        Stmt::FunctionCall(call) => is_registration(call),
        Stmt::Do(body) if top => block_registers(body.block(), false),
        Stmt::NumericFor(body) if top => block_registers(body.block(), false),
        Stmt::GenericFor(body) if top => block_registers(body.block(), false),
        _ => false,
    })
}

fn is_registration(call: &FunctionCall) -> bool {
    let Prefix::Name(receiver) = call.prefix() else {
        return false;
    };
    if receiver.token().to_string() != "registry" {
        return false;
    }
    let suffixes: Vec<&Suffix> = call.suffixes().collect();
    match suffixes.as_slice() {
        [
            Suffix::Index(Index::Dot { name, .. }),
            Suffix::Call(Call::AnonymousCall(_)),
        ] => {
            let verb = name.token().to_string();
            matches!(verb.as_str(), "register" | "hook" | "resource" | "prompt")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(src: &str) -> ParseVerdict {
        match check("t.lua", src) {
            ParseVerdict::Registers(_) => ParseVerdict::Registers(TopLevel::default()),
            other => other,
        }
    }

    #[test]
    fn counts_only_top_level_call_statements() {
        use ParseVerdict::*;
        let registers = || Registers(TopLevel::default());
        assert_eq!(verdict("registry.register{}"), registers());
        assert_eq!(verdict("registry.register('a', 'b', {}, f)"), registers());
        assert_eq!(verdict("registry.register 'x'"), registers());
        assert_eq!(verdict("registry.hook('pre_tool_call', f)"), registers());
        assert_eq!(verdict("registry.resource{}"), registers());
        assert_eq!(verdict("registry.prompt{}"), registers());
        assert_eq!(verdict("do registry.register{} end"), registers());
        assert_eq!(
            verdict("for i = 1, 2 do registry.register{} end"),
            registers()
        );
        assert_eq!(
            verdict("for _, t in ipairs(ts) do registry.register(t) end"),
            registers()
        );
        assert_eq!(
            verdict("local x <const> = 1 // 2 registry.register{}"),
            registers()
        );

        assert_eq!(
            verdict("local function f() registry.register{} end"),
            NoTopLevelRegister
        );
        assert_eq!(
            verdict("if x then registry.register{} end"),
            NoTopLevelRegister
        );
        assert_eq!(
            verdict("while x do registry.register{} end"),
            NoTopLevelRegister
        );
        assert_eq!(
            verdict("repeat registry.register{} until x"),
            NoTopLevelRegister
        );
        assert_eq!(verdict("local t = registry.register{}"), NoTopLevelRegister);
        assert_eq!(verdict("registry:register{}"), NoTopLevelRegister);
        assert_eq!(verdict("registry['register']{}"), NoTopLevelRegister);
        assert_eq!(verdict("other.register{}"), NoTopLevelRegister);
        assert_eq!(
            verdict("do do registry.register{} end end"),
            NoTopLevelRegister
        );
        assert_eq!(
            verdict("for i=1,2 do do registry.register{} end end"),
            NoTopLevelRegister
        );
        assert_eq!(verdict("return registry.register{}"), NoTopLevelRegister);
        assert_eq!(verdict("registry.register.x{}"), NoTopLevelRegister);
    }

    #[test]
    fn parse_errors_name_file_and_line() {
        match verdict("local x = 1\nlocal = \n") {
            ParseVerdict::ParseError(error) => {
                assert_eq!(
                    (error.file.as_str(), error.line),
                    ("t.lua", Some(2)),
                    "{error}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
