//! One pass over a file's `full_moon` tree, collecting effect sites (docs/effects.md).
//!
//! Every site goes to the parts of the file it is inside: the whole file always; the
//! top-level name being defined (`local function f`, `local t = {...}`, `function M.f`,
//! `x = ...`); the handler of a `registry.register{ name = "LIT", handler = ... }`. Names
//! are not scoped: a part that uses a name reaches everything bound to it at the top level,
//! which can only add effects, never hide one. Anything the pass cannot follow (a bare
//! host module, a computed field or module name, `load`, `_ENV`, `_G`, ...) is an `unknown`
//! site. One visit per node: linear in the file's size.

use super::summary::{Reach, Site, Summary};
use crate::lua::api::effect::{EFFECT_MODULES, effect_of};
use full_moon::ast::{
    Assignment, Ast, Call, Expression, Field, FunctionArgs, FunctionBody, FunctionCall,
    FunctionDeclaration, Index, LocalAssignment, LocalFunction, Parameter, Prefix, Suffix,
    TableConstructor, Var, VarExpression,
};
use full_moon::tokenizer::{TokenReference, TokenType};
use full_moon::visitors::Visitor;
use std::collections::{HashMap, HashSet};

/// Globals that reach any value by a computed path or run code the analysis never sees.
const DYNAMIC: &[&str] = &[
    "_ENV",
    "_G",
    "load",
    "loadstring",
    "dofile",
    "loadfile",
    "setfenv",
    "getfenv",
    "debug",
    "require",
];

/// The `handlers` key of a registration whose tool name is unclear (no tool is named
/// the empty string): its presence makes every tool of the file count the whole file.
pub(crate) const UNCLEAR: &str = "";

/// Analyses a parsed file.
pub(crate) fn summarise(ast: &Ast) -> Summary {
    let mut scan = Scan {
        nodes: vec![Reach::default()],
        targets: vec![vec![0]],
        ..Scan::default()
    };
    scan.visit_ast(ast);
    let take = |nodes: &mut Vec<Reach>, map: HashMap<String, usize>| {
        map.into_iter()
            .map(|(name, node)| (name, std::mem::take(&mut nodes[node])))
            .collect()
    };
    let mut nodes = std::mem::take(&mut scan.nodes);
    Summary {
        bindings: take(&mut nodes, std::mem::take(&mut scan.top)),
        inner: take(&mut nodes, std::mem::take(&mut scan.inner)),
        handlers: take(&mut nodes, std::mem::take(&mut scan.handlers)),
        whole: std::mem::take(&mut nodes[0]),
    }
}

#[derive(Default)]
struct Scan {
    nodes: Vec<Reach>,
    /// The parts the code being visited belongs to (innermost last).
    targets: Vec<Vec<usize>>,
    /// How many function bodies deep the visit is (0: the top level).
    depth: usize,
    top: HashMap<String, usize>,
    inner: HashMap<String, usize>,
    handlers: HashMap<String, usize>,
    /// Registration tables seen in a `registry.register` call (by address, while the tree
    /// lives), with their handler's part.
    registrations: HashMap<usize, usize>,
    /// Per table constructor being visited: the handler part when it is a registration's.
    tables: Vec<Option<usize>>,
    /// The names of every function parameter after the first (any of them may be a
    /// handler's context, `ctx`): indexing one with a computed key, or using it as a value
    /// (aliased, passed on), may reach `ctx.call` unseen. Not scoped, like the other names.
    contexts: HashSet<String>,
    /// A function that may receive a context in `...` was seen: a later `...` is one.
    varargs: bool,
}

impl Scan {
    fn node(map: &mut HashMap<String, usize>, nodes: &mut Vec<Reach>, name: &str) -> usize {
        *map.entry(name.to_string()).or_insert_with(|| {
            nodes.push(Reach::default());
            nodes.len() - 1
        })
    }

    /// Enters a part binding `names` (top level: bindings; inside a function: `inner`,
    /// unless `local`: a function's own locals bind nothing outside it).
    fn enter_binding<'a>(&mut self, names: impl Iterator<Item = &'a str>, local: bool) {
        if local && self.depth > 0 {
            return self.enter_same();
        }
        let mut targets = self.targets.last().cloned().unwrap_or_default();
        for name in names {
            let map = match self.depth {
                0 => &mut self.top,
                _ => &mut self.inner,
            };
            let node = Self::node(map, &mut self.nodes, name);
            if !targets.contains(&node) {
                targets.push(node);
            }
        }
        self.targets.push(targets);
    }

    fn enter_same(&mut self) {
        let targets = self.targets.last().cloned().unwrap_or_default();
        self.targets.push(targets);
    }

    fn leave(&mut self) {
        // The outermost entry (the whole file) is never left.
        if self.targets.len() > 1 {
            self.targets.pop();
        }
    }

    fn each(&mut self, mut f: impl FnMut(&mut Reach)) {
        if let Some(targets) = self.targets.last() {
            for &node in targets {
                f(&mut self.nodes[node]);
            }
        }
    }

    fn site(&mut self, effect: &str, call: String, token: &TokenReference) {
        let site = Site {
            effect: effect.to_string(),
            call,
            line: line_of(token),
        };
        self.each(|reach| {
            reach.sites.insert(site.clone());
        });
    }

    fn name(&mut self, name: &str) {
        self.each(|reach| {
            if !reach.names.contains(name) {
                reach.names.insert(name.to_string());
            }
        });
    }

    fn module(&mut self, module: String, token: &TokenReference) {
        let line = line_of(token);
        self.each(|reach| {
            reach.modules.entry(module.clone()).or_insert(line);
        });
    }

    /// A name used without a suffix (a value: passed, aliased, assigned to).
    fn bare(&mut self, token: &TokenReference) {
        let name = token.token().to_string();
        self.name(&name);
        if self.contexts.contains(&name) {
            self.site(
                "call:*",
                format!("{name} (a context passed on or aliased)"),
                token,
            );
        }
        if EFFECT_MODULES.contains(&name.as_str()) {
            let call = format!("{name} (the module table itself)");
            self.site("unknown", call, token);
        } else if DYNAMIC.contains(&name.as_str()) {
            self.site("unknown", name, token);
        }
    }

    /// `NAME<suffixes>`: a host function, `require`, `ctx.call`, a dynamic global, or a
    /// use of one of the file's names.
    fn chain<'a>(&mut self, prefix: &Prefix, mut suffixes: impl Iterator<Item = &'a Suffix>) {
        let Prefix::Name(token) = prefix else {
            return;
        };
        let name = token.token().to_string();
        self.name(&name);
        let first = suffixes.next();
        if EFFECT_MODULES.contains(&name.as_str()) {
            let field = match first {
                Some(Suffix::Index(Index::Dot { name: field, .. })) => {
                    Some(field.token().to_string())
                }
                Some(Suffix::Index(Index::Brackets { expression, .. })) => literal(expression),
                Some(Suffix::Call(Call::MethodCall(method))) => {
                    Some(method.name().token().to_string())
                }
                _ => None,
            };
            match field {
                Some(field) => {
                    if let Some(effect) = effect_of(&name, &field) {
                        self.site(effect, format!("{name}.{field}"), token);
                    }
                }
                None => self.site("unknown", format!("{name}[...]"), token),
            }
            return;
        }
        if name == "require" {
            match first.and_then(first_argument) {
                Some(module) => self.module(module, token),
                None => self.site("unknown", "require(computed name)".into(), token),
            }
            return;
        }
        if DYNAMIC.contains(&name.as_str()) {
            self.site("unknown", name, token);
            return;
        }
        // `ctx["call"]`, `ctx[k]`, `ctx:call(...)` on a possible context.
        if self.contexts.contains(&name) {
            match first {
                Some(Suffix::Index(Index::Brackets { expression, .. })) => {
                    match literal(expression) {
                        Some(field) if field == "call" => {}
                        Some(_) => return,
                        None => {
                            self.site("call:*", format!("{name}[...]"), token);
                            return;
                        }
                    }
                }
                Some(Suffix::Call(Call::MethodCall(method)))
                    if method.name().token().to_string() == "call" =>
                {
                    self.site("call:*", format!("{name}:call"), token);
                    return;
                }
                _ => {}
            }
        }
        // `ctx.call(...)`, whatever the context parameter is called.
        let is_call = match first {
            Some(Suffix::Index(Index::Dot { name: field, .. })) => {
                field.token().to_string() == "call"
            }
            Some(Suffix::Index(Index::Brackets { expression, .. })) => {
                literal(expression).as_deref() == Some("call")
            }
            _ => false,
        };
        if is_call {
            let target = suffixes.next().and_then(first_argument);
            let effect = match &target {
                Some(target) => format!("call:{target}"),
                None => "call:*".to_string(),
            };
            self.site(&effect, format!("{name}.call"), token);
        }
    }
}

/// The first argument of a call suffix when it is a plain string literal.
fn first_argument(suffix: &Suffix) -> Option<String> {
    let Suffix::Call(Call::AnonymousCall(args)) = suffix else {
        return None;
    };
    match args.as_ref() {
        FunctionArgs::String(token) => string_literal(token),
        FunctionArgs::Parentheses { arguments, .. } => arguments.iter().next().and_then(literal),
        _ => None,
    }
}

/// A plain string literal's text; `None` for anything else, escapes included (the
/// analysis compares the text with host function names, and `"wri\x74e"` is `write`).
fn literal(expression: &Expression) -> Option<String> {
    match expression {
        Expression::String(token) => string_literal(token),
        _ => None,
    }
}

fn string_literal(token: &TokenReference) -> Option<String> {
    match token.token().token_type() {
        TokenType::StringLiteral { literal, .. } if !literal.contains('\\') => {
            Some(literal.to_string())
        }
        _ => None,
    }
}

fn line_of(token: &TokenReference) -> u32 {
    u32::try_from(token.token().start_position().line()).unwrap_or(u32::MAX)
}

/// The name an assignment target is rooted at (`x`, `x.y[z]` → `x`).
fn root_of(var: &Var) -> Option<String> {
    match var {
        Var::Name(token) => Some(token.token().to_string()),
        Var::Expression(expression) => match expression.prefix() {
            Prefix::Name(token) => Some(token.token().to_string()),
            _ => None,
        },
        _ => None,
    }
}

impl Visitor for Scan {
    fn visit_function_body(&mut self, body: &FunctionBody) {
        self.depth += 1;
        for (position, parameter) in body.parameters().iter().enumerate() {
            match parameter {
                Parameter::Name(token) if position > 0 => {
                    self.contexts.insert(token.token().to_string());
                }
                // `function(...)` / `function(args, ...)`: the context may travel in `...`.
                Parameter::Ellipsis(_) if position < 2 => self.varargs = true,
                _ => {}
            }
        }
    }

    fn visit_function_body_end(&mut self, _: &FunctionBody) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn visit_local_function(&mut self, function: &LocalFunction) {
        let name = function.name().token().to_string();
        if name == "_ENV" {
            self.site("unknown", "local _ENV".into(), function.name());
        }
        self.enter_binding(std::iter::once(name.as_str()), true);
    }

    fn visit_local_function_end(&mut self, _: &LocalFunction) {
        self.leave();
    }

    fn visit_function_declaration(&mut self, declaration: &FunctionDeclaration) {
        let root = declaration
            .name()
            .names()
            .iter()
            .next()
            .map(|token| token.token().to_string());
        match root {
            Some(root) => {
                // `function fs.write() end` replaces a host function: a use of the module.
                if (EFFECT_MODULES.contains(&root.as_str()) || DYNAMIC.contains(&root.as_str()))
                    && let Some(token) = declaration.name().names().iter().next()
                {
                    self.site("unknown", format!("function {root}..."), token);
                }
                self.enter_binding(std::iter::once(root.as_str()), false);
            }
            None => self.enter_same(),
        }
    }

    fn visit_function_declaration_end(&mut self, _: &FunctionDeclaration) {
        self.leave();
    }

    fn visit_local_assignment(&mut self, assignment: &LocalAssignment) {
        let names: Vec<String> = assignment
            .names()
            .iter()
            .map(|token| token.token().to_string())
            .collect();
        if let Some(token) = assignment
            .names()
            .iter()
            .find(|token| token.token().to_string() == "_ENV")
        {
            self.site("unknown", "local _ENV".into(), token);
        }
        self.enter_binding(names.iter().map(String::as_str), true);
    }

    fn visit_local_assignment_end(&mut self, _: &LocalAssignment) {
        self.leave();
    }

    fn visit_assignment(&mut self, assignment: &Assignment) {
        let roots: Vec<String> = assignment.variables().iter().filter_map(root_of).collect();
        self.enter_binding(roots.iter().map(String::as_str), false);
    }

    fn visit_assignment_end(&mut self, _: &Assignment) {
        self.leave();
    }

    fn visit_function_call(&mut self, call: &FunctionCall) {
        self.chain(call.prefix(), call.suffixes());
        // `registry.register{ name = "LIT", ... }`: its handler gets a part of its own.
        if let Prefix::Name(receiver) = call.prefix()
            && receiver.token().to_string() == "registry"
        {
            let suffixes: Vec<&Suffix> = call.suffixes().collect();
            if let [
                Suffix::Index(Index::Dot { name: verb, .. }),
                Suffix::Call(Call::AnonymousCall(args)),
            ] = suffixes.as_slice()
                && verb.token().to_string() == "register"
                && let FunctionArgs::TableConstructor(table) = args.as_ref()
                && let Some(named) = tool_name(table)
            {
                let tool = match named {
                    Named::Tool(tool) => tool,
                    // Every tool of the file counts the whole file then.
                    Named::Unclear => UNCLEAR.to_string(),
                };
                let node = Self::node(&mut self.handlers, &mut self.nodes, &tool);
                self.registrations
                    .insert(&**table as *const TableConstructor as usize, node);
            }
        }
    }

    fn visit_var_expression(&mut self, expression: &VarExpression) {
        self.chain(expression.prefix(), expression.suffixes());
    }

    fn visit_expression(&mut self, expression: &Expression) {
        if self.varargs
            && let Expression::Symbol(token) = expression
            && token.token().to_string() == "..."
        {
            self.site("call:*", "... (may carry a context)".into(), token);
        }
    }

    fn visit_var(&mut self, var: &Var) {
        if let Var::Name(token) = var {
            self.bare(token);
        }
    }

    fn visit_table_constructor(&mut self, table: &TableConstructor) {
        let address = table as *const TableConstructor as usize;
        let handler = self.registrations.get(&address).copied();
        self.tables.push(handler);
    }

    fn visit_table_constructor_end(&mut self, _: &TableConstructor) {
        self.tables.pop();
    }

    fn visit_field(&mut self, _: &Field) {
        // Every field of a registration table counts as the handler's: `handler`, also
        // written `["handler"]`, and `prepare`, which runs in the call too. (The others hold
        // data or probes; counting them can only add effects.)
        let handler = match self.tables.last() {
            Some(Some(node)) => Some(*node),
            _ => None,
        };
        match handler {
            Some(node) => {
                let mut targets = self.targets.last().cloned().unwrap_or_default();
                targets.push(node);
                self.targets.push(targets);
            }
            None => self.enter_same(),
        }
    }

    fn visit_field_end(&mut self, _: &Field) {
        self.leave();
    }
}

/// What a registration table names.
enum Named {
    /// One `name = "LIT"` and only named keys: the tool is LIT.
    Tool(String),
    /// The name is not a literal, or the table may name the tool some other way than its
    /// first `name =` key: Lua keeps the last of several, and a computed key
    /// (`["name"] = ...`, `[k] = ...`) or a positional element may be one.
    Unclear,
}

/// A registration table's name (`None`: no `name =` key at all).
fn tool_name(table: &TableConstructor) -> Option<Named> {
    let mut name = None;
    let mut names = 0;
    for field in table.fields() {
        match field {
            Field::NameKey { key, value, .. } if key.token().to_string() == "name" => {
                names += 1;
                name = literal(value);
            }
            Field::NameKey { .. } => {}
            _ => return Some(Named::Unclear),
        }
    }
    match (names, name) {
        (0, _) => None,
        (1, Some(name)) => Some(Named::Tool(name)),
        _ => Some(Named::Unclear),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(src: &str) -> Summary {
        let ast = full_moon::parse_fallible(src, full_moon::LuaVersion::lua54())
            .into_result()
            .expect("parses");
        summarise(&ast)
    }

    fn effects(reach: &Reach) -> Vec<(&str, u32)> {
        reach
            .sites
            .iter()
            .map(|site| (site.effect.as_str(), site.line))
            .collect()
    }

    #[test]
    fn each_handler_gets_its_own_sites() {
        let s = summary(
            "registry.register{ name = 'a', handler = function() local r = fs.read('x') return r end }\n\
             registry.register{ name = 'b', handler = function() local r = 1\n fs.write('x', 'y') end }\n",
        );
        assert_eq!(effects(&s.handlers["a"]), [("fs.read", 1)]);
        assert_eq!(effects(&s.handlers["b"]), [("fs.write", 3)]);
        // A handler's own locals bind nothing the other one reaches.
        assert!(!s.bindings.contains_key("r"));
    }

    #[test]
    fn literal_and_computed_call_targets_differ() {
        let s =
            summary("local function f(n, ctx) ctx.call('lit') ctx.call(n) ctx.call 'other' end");
        let found: Vec<&str> = s
            .whole
            .sites
            .iter()
            .map(|site| site.effect.as_str())
            .collect();
        assert_eq!(found, ["call:*", "call:lit", "call:other"]);
    }

    #[test]
    fn top_level_names_carry_what_is_bound_to_them() {
        let s =
            summary("local M = {}\nfunction M.save() store.set('k', 1) end\nlocal w = fs.write\n");
        assert_eq!(effects(&s.bindings["M"]), [("store.write", 2)]);
        assert_eq!(effects(&s.bindings["w"]), [("fs.write", 3)]);
    }

    #[test]
    fn literal_requires_are_modules_and_computed_ones_unknown() {
        let s = summary("local a = require('pkg.a')\nlocal b = require(name)\n");
        assert_eq!(s.whole.modules.get("pkg.a"), Some(&1));
        assert_eq!(effects(&s.whole), [("unknown", 2)]);
    }
}
