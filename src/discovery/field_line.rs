//! The line of a registration field, so a load error points at `who = { type = "strng" }`
//! on line 6 rather than at the `registry.register{` on line 1. Found on the `full_moon`
//! AST of the file (parsed again only when an error needs it): the table constructor of the
//! registration call that spans the error's line, then the field path through nested table
//! constructors (`schema.parameters.properties.who.type`, `requires_env[2]`).

use full_moon::LuaVersion;
use full_moon::ast::{
    Block, Call, Expression, Field, FunctionArgs, FunctionCall, Stmt, Suffix, TableConstructor,
};
use full_moon::node::Node;

/// The line of `field` in the registration table of the call around `call_line`, or `None`
/// when the call or the field cannot be found (a table built elsewhere, a computed key).
pub(crate) fn field_line(source: &str, call_line: u32, field: &str) -> Option<u32> {
    // full_moon recurses without a depth limit: parse on a thread with a large stack (the
    // file already passed the nesting pre-scan when it was discovered).
    let source = crate::lua::strip_bom_str(source).to_string();
    let field = field.to_string();
    std::thread::Builder::new()
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            let ast = full_moon::parse_fallible(&source, LuaVersion::lua54())
                .into_result()
                .ok()?;
            let table = registration_table(ast.nodes(), call_line as usize)?;
            line_in(table, &field).and_then(|line| u32::try_from(line).ok())
        })
        .ok()?
        .join()
        .ok()
        .flatten()
}

/// The table argument of a call statement whose lines include `line`, searched through
/// every block.
fn registration_table(block: &Block, line: usize) -> Option<&TableConstructor> {
    block.stmts().find_map(|stmt| match stmt {
        Stmt::FunctionCall(call) if spans(call, line) => table_argument(call),
        Stmt::Do(body) => registration_table(body.block(), line),
        Stmt::NumericFor(body) => registration_table(body.block(), line),
        Stmt::GenericFor(body) => registration_table(body.block(), line),
        Stmt::If(body) => registration_table(body.block(), line),
        Stmt::While(body) => registration_table(body.block(), line),
        _ => None,
    })
}

fn spans(node: &impl Node, line: usize) -> bool {
    let start = node.start_position().map(|p| p.line());
    let end = node.end_position().map(|p| p.line());
    matches!((start, end), (Some(start), Some(end)) if start <= line && line <= end)
}

fn table_argument(call: &FunctionCall) -> Option<&TableConstructor> {
    call.suffixes().find_map(|suffix| match suffix {
        Suffix::Call(Call::AnonymousCall(args)) => match args.as_ref() {
            FunctionArgs::TableConstructor(table) => Some(table.as_ref()),
            _ => None,
        },
        _ => None,
    })
}

/// Follows `path` (`a.b[2].c`) through nested constructors; the line of the deepest field
/// found.
fn line_in(table: &TableConstructor, path: &str) -> Option<usize> {
    let mut current = table;
    let mut line = None;
    for segment in path.split('.') {
        let (name, index) = match segment.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (segment, None),
        };
        let Some(field) = keyed(current, name) else {
            break;
        };
        line = field.start_position().map(|p| p.line()).or(line);
        let value = match field {
            Field::NameKey { value, .. } | Field::ExpressionKey { value, .. } => value,
            _ => break,
        };
        let Expression::TableConstructor(inner) = value.as_ref() else {
            break;
        };
        current = inner;
        if let Some(index) = index {
            let Some(item) = current
                .fields()
                .iter()
                .filter(|f| matches!(f, Field::NoKey(_)))
                .nth(index.saturating_sub(1))
            else {
                break;
            };
            line = item.start_position().map(|p| p.line()).or(line);
            break;
        }
    }
    line
}

/// The field `name = …` or `["name"] = …` of a constructor.
fn keyed<'a>(table: &'a TableConstructor, name: &str) -> Option<&'a Field> {
    table.fields().iter().find(|field| match field {
        Field::NameKey { key, .. } => key.token().to_string() == name,
        Field::ExpressionKey { key, .. } => {
            let text = key.to_string();
            let text = text.trim();
            text.trim_matches(|c| c == '"' || c == '\'') == name
                && (text.starts_with('"') || text.starts_with('\''))
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::field_line;

    const SOURCE: &str = "-- greet\nregistry.register{\n  name = \"greet\",\n  toolset = \"demo\",\n  schema = {\n    parameters = { type = \"object\", properties = {\n      who = { type = \"strng\" },\n    } },\n  },\n  requires_env = { \"A\", \"B\" },\n}\n";

    #[test]
    fn nested_fields_are_found_by_path() {
        assert_eq!(
            field_line(SOURCE, 2, "schema.parameters.properties.who.type"),
            Some(7)
        );
        assert_eq!(field_line(SOURCE, 2, "toolset"), Some(4));
        assert_eq!(field_line(SOURCE, 11, "requires_env[2]"), Some(10));
        assert_eq!(field_line(SOURCE, 2, "nothing.here"), None);
    }
}
