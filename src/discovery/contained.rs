//! Whether a registering file's top level is *contained*: it provably has no effect beyond
//! its own locals, its own globals (every file has an environment of its own) and its
//! registrations. Only such a file may be skipped on a warm start (its registrations taken
//! from the registration cache, the file run at the first use of one of its functions): a
//! warm start must be observably identical to a cold one, and a file that writes into a
//! shared module, seeds the random generator, logs, touches the store or calls anything
//! else that could act on the world would behave differently when run later, or on first
//! use only.
//!
//! Decided on the `full_moon` tree, conservatively: whatever the rules below do not
//! recognise is an effect ("when in doubt, run it"). At top level (and in top-level blocks,
//! loops and branches) a contained file may only
//! - declare locals and functions, and assign plain names (its own locals or globals);
//! - write fields of *fresh* locals: tables the file made itself (`local M = {}`), never
//!   assigned anything else anywhere in the file;
//! - `local m = require("name")` a module whose own top level is contained, and use `m` at
//!   top level only to name one of its functions in a registration's function field
//!   (`check_fn = m.open`): a deferred file's run at first use sees the module as it was at
//!   the file's place in the load order (`vm::module_view`); any other top-level read could
//!   see a value another file or a handler changed in between;
//! - call `registry.register` / `registry.hook` (function literals allowed in the
//!   arguments: they are not run at load) and a fixed list of library functions that only
//!   compute (`string.format`, `math.floor`, `table.concat`, `pairs` …; `table.insert` and
//!   friends on a fresh local), with arguments that are not function literals;
//! - evaluate expressions built from literals, names, field reads, table constructors,
//!   function literals and operators.
//!
//! `math.random`, `os.*`, `log`, `print`, `store`, `fs`, `env`, `setmetatable`, method calls,
//! calls of the file's own functions and `<close>` variables are effects.

use full_moon::ast::{
    Ast, Block, Call, Expression, Field, FunctionArgs, FunctionCall, LastStmt, LocalAssignment,
    Prefix, Stmt, Suffix, Var,
};
use full_moon::node::Node;
use full_moon::visitors::Visitor;
use std::collections::{HashMap, HashSet};

/// What the analysis found in one file's top level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TopLevel {
    /// The first effect found (`line N: what`), or `None` when the text is contained.
    pub effect: Option<String>,
    /// Modules required at top level (`local m = require("name")`): the file is contained
    /// only if each of them is.
    pub modules: Vec<String>,
    /// Its top level reads a required module's field (`m.field`): fine for a tool file
    /// (its run at first use sees the modules as at its place in the load order), not for a
    /// module (instantiated whenever first required).
    pub reads_modules: bool,
    /// The effects analysis of the whole file (docs/effects.md), made from the same tree.
    pub effects: Option<std::sync::Arc<super::effects::Summary>>,
}

/// Largest file analysed: the tree is walked recursively, and a long operator or call
/// chain (which the nesting guard lets through: Lua handles it) makes a deep tree. A
/// larger file is not analysed and runs at every start.
pub(crate) const MAX_ANALYSED_BYTES: usize = 64 * 1024;

/// Deepest expression walked; deeper is an effect (nothing honest nests that far).
const MAX_EXPRESSION_DEPTH: usize = 200;

/// Analyses a parsed file of `len` bytes.
pub(crate) fn analyse_sized(ast: &Ast, len: usize) -> TopLevel {
    if len > MAX_ANALYSED_BYTES {
        return TopLevel {
            effect: Some(format!(
                "is larger than {} KiB (not analysed)",
                MAX_ANALYSED_BYTES / 1024
            )),
            modules: Vec::new(),
            reads_modules: false,
            effects: None,
        };
    }
    analyse(ast)
}

/// Analyses a parsed file.
fn analyse(ast: &Ast) -> TopLevel {
    let mut names = Declarations::default();
    names.visit_ast(ast);
    if let Some(effect) = names.rebinds_a_trusted_name() {
        return TopLevel {
            effect: Some(effect),
            modules: Vec::new(),
            reads_modules: false,
            effects: None,
        };
    }
    let kinds = names.kinds();
    let mut walk = Walk {
        kinds,
        scopes: vec![HashSet::new()],
        modules: Vec::new(),
        effect: None,
        unordered_from: None,
        reads_modules: false,
        depth: 0,
    };
    walk.block(ast.nodes());
    TopLevel {
        effect: walk.effect,
        modules: walk.modules,
        reads_modules: walk.reads_modules,
        effects: None,
    }
}

/// What every declaration of a name in the file makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Always `local NAME = { ... }`, never assigned again: a table of the file's own.
    Fresh,
    /// Always `local NAME = require("...")`, never assigned again.
    Module,
    /// Anything else.
    Other,
}

/// Every declaration and plain assignment of every name, anywhere in the file (function
/// bodies included: a function called later could rebind a local).
#[derive(Default)]
struct Declarations {
    seen: HashMap<String, Kind>,
    assigned: HashSet<String>,
    /// The file names `_ENV` somewhere: every global it reads may then be anything.
    names_env: bool,
}

impl Declarations {
    fn declare(&mut self, name: String, kind: Kind) {
        self.seen
            .entry(name)
            .and_modify(|k| {
                if *k != kind {
                    *k = Kind::Other;
                }
            })
            .or_insert(kind);
    }

    /// Why the names the analysis trusts (the library functions it lets a top level call,
    /// `registry`, `require`, the globals table) may not be what they seem: the file binds
    /// one of them itself, anywhere, or names `_ENV`.
    fn rebinds_a_trusted_name(&self) -> Option<String> {
        if self.names_env {
            return Some("names _ENV (its globals may be anything)".to_string());
        }
        TRUSTED_NAMES
            .iter()
            .find(|name| self.seen.contains_key(**name) || self.assigned.contains(**name))
            .map(|name| format!("binds `{name}` itself, a name the analysis trusts"))
    }

    fn kinds(self) -> HashMap<String, Kind> {
        let assigned = self.assigned;
        self.seen
            .into_iter()
            .map(|(name, kind)| {
                let kind = if assigned.contains(&name) {
                    Kind::Other
                } else {
                    kind
                };
                (name, kind)
            })
            .collect()
    }
}

impl Visitor for Declarations {
    fn visit_identifier(&mut self, token: &full_moon::tokenizer::Token) {
        if token.to_string() == "_ENV" {
            self.names_env = true;
        }
    }

    fn visit_local_assignment(&mut self, node: &LocalAssignment) {
        let exprs: Vec<&Expression> = node.expressions().iter().collect();
        for (i, name) in node.names().iter().enumerate() {
            let kind = match exprs.get(i) {
                Some(Expression::TableConstructor(_)) if exprs.len() == node.names().len() => {
                    Kind::Fresh
                }
                Some(Expression::FunctionCall(call))
                    if exprs.len() == 1 && node.names().len() == 1 && required(call).is_some() =>
                {
                    Kind::Module
                }
                _ => Kind::Other,
            };
            self.declare(name.token().to_string(), kind);
        }
    }

    fn visit_local_function(&mut self, node: &full_moon::ast::LocalFunction) {
        self.declare(node.name().token().to_string(), Kind::Other);
    }

    fn visit_function_body(&mut self, node: &full_moon::ast::FunctionBody) {
        for param in node.parameters() {
            if let full_moon::ast::Parameter::Name(name) = param {
                self.declare(name.token().to_string(), Kind::Other);
            }
        }
    }

    fn visit_numeric_for(&mut self, node: &full_moon::ast::NumericFor) {
        self.declare(node.index_variable().token().to_string(), Kind::Other);
    }

    fn visit_generic_for(&mut self, node: &full_moon::ast::GenericFor) {
        for name in node.names() {
            self.declare(name.token().to_string(), Kind::Other);
        }
    }

    fn visit_assignment(&mut self, node: &full_moon::ast::Assignment) {
        for var in node.variables() {
            if let Var::Name(name) = var {
                self.assigned.insert(name.token().to_string());
            }
        }
    }

    fn visit_function_declaration(&mut self, node: &full_moon::ast::FunctionDeclaration) {
        let name = node.name();
        if name.names().len() == 1
            && name.method_name().is_none()
            && let Some(first) = name.names().iter().next()
        {
            self.assigned.insert(first.token().to_string());
        }
    }
}

/// The module name of `require("name")` (one string literal argument).
fn required(call: &FunctionCall) -> Option<String> {
    let Prefix::Name(callee) = call.prefix() else {
        return None;
    };
    if callee.token().to_string() != "require" {
        return None;
    }
    let suffixes: Vec<&Suffix> = call.suffixes().collect();
    let [Suffix::Call(Call::AnonymousCall(args))] = suffixes.as_slice() else {
        return None;
    };
    let literal = match args.as_ref() {
        FunctionArgs::String(token) => token,
        FunctionArgs::Parentheses { arguments, .. } => {
            let mut iter = arguments.iter();
            match (iter.next(), iter.next()) {
                (Some(Expression::String(token)), None) => token,
                _ => return None,
            }
        }
        _ => return None,
    };
    string_value(&literal.token().to_string())
}

/// The value of a simple quoted string literal (no escapes), else `None`.
fn string_value(text: &str) -> Option<String> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .or_else(|| text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))?;
    (!inner.contains('\\')).then(|| inner.to_string())
}

/// Global names whose meaning the analysis relies on: a file that binds any of them (as a
/// local, a parameter, a loop variable, a function or a global) is not analysed further.
const TRUSTED_NAMES: &[&str] = &[
    "registry", "require", "string", "math", "table", "utf8", "json", "assert", "type", "tonumber",
    "select", "rawequal", "rawlen", "rawget", "rawset", "next", "pairs", "ipairs", "_G",
];

/// Library functions that only compute from their arguments (none takes a function it
/// would call, once function literals are refused as arguments; see `call`).
const PURE_CALLS: &[&str] = &[
    "assert",
    "type",
    "tonumber",
    "select",
    "rawequal",
    "rawlen",
    "rawget",
    "string.byte",
    "string.char",
    "string.find",
    "string.gmatch",
    "string.len",
    "string.lower",
    "string.match",
    "string.rep",
    "string.reverse",
    "string.sub",
    "string.upper",
    "math.abs",
    "math.ceil",
    "math.floor",
    "math.fmod",
    "math.max",
    "math.min",
    "math.modf",
    "math.sqrt",
    "math.exp",
    "math.log",
    "math.sin",
    "math.cos",
    "math.tan",
    "math.asin",
    "math.acos",
    "math.atan",
    "math.tointeger",
    "math.type",
    "math.ult",
    "table.concat",
    "table.unpack",
    "table.pack",
    "utf8.char",
    "utf8.codepoint",
    "utf8.len",
    "utf8.offset",
    "json.encode",
    "json.decode",
];

/// Registration fields that hold a function: they may name a required module's function.
const FUNCTION_FIELDS: &[&str] = &["check_fn", "handler", "dynamic_schema_overrides"];

/// Library functions that change their first argument, allowed on a fresh local.
const MUTATING_CALLS: &[&str] = &["table.insert", "table.remove", "rawset"];

/// The top-level walk.
struct Walk {
    kinds: HashMap<String, Kind>,
    /// Names declared in each enclosing top-level block.
    scopes: Vec<HashSet<String>>,
    modules: Vec<String>,
    effect: Option<String>,
    reads_modules: bool,
    /// How deep `expr` is now.
    depth: usize,
    /// Inside a `pairs` loop: the first scope of its body. Its order differs between Lua
    /// states, so nothing declared outside the body may change there.
    unordered_from: Option<usize>,
}

impl Walk {
    fn effect(&mut self, node: &impl Node, what: &str) {
        if self.effect.is_none() {
            let line = node.start_position().map(|p| p.line()).unwrap_or(0);
            self.effect = Some(format!("line {line}: {what}"));
        }
    }

    /// The name's kind when it is a local in scope; `None` for a global.
    fn local_kind(&self, name: &str) -> Option<Kind> {
        self.scopes
            .iter()
            .any(|scope| scope.contains(name))
            .then(|| self.kinds.get(name).copied().unwrap_or(Kind::Other))
    }

    fn declare(&mut self, name: String) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name);
        }
    }

    fn scoped(&mut self, names: Vec<String>, block: &Block) {
        self.scopes.push(names.into_iter().collect());
        self.block(block);
        self.scopes.pop();
    }

    fn block(&mut self, block: &Block) {
        for stmt in block.stmts() {
            if self.effect.is_some() {
                return;
            }
            self.stmt(stmt);
        }
        match block.last_stmt() {
            Some(LastStmt::Return(ret)) => {
                for expr in ret.returns() {
                    self.expr(expr);
                }
            }
            Some(LastStmt::Break(_)) | None => {}
            Some(other) => self.effect(other, "an unknown statement"),
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::LocalAssignment(local) => {
                let declared: Vec<String> = local
                    .names()
                    .iter()
                    .map(|n| n.token().to_string())
                    .collect();
                if local
                    .attributes()
                    .any(|a| a.is_some_and(|a| a.name().token().to_string() == "close"))
                {
                    self.effect(local, "a <close> variable");
                    return;
                }
                let exprs: Vec<&Expression> = local.expressions().iter().collect();
                for expr in exprs.iter().copied() {
                    if let Expression::FunctionCall(call) = expr
                        && let Some(module) = required(call)
                        && declared.len() == 1
                        && self.kinds.get(&declared[0]) == Some(&Kind::Module)
                    {
                        self.modules.push(module);
                        continue;
                    }
                    self.expr(expr);
                }
                for name in declared {
                    self.declare(name);
                }
            }
            Stmt::LocalFunction(function) => self.declare(function.name().token().to_string()),
            Stmt::FunctionDeclaration(declaration) => {
                let name = declaration.name();
                let mut names = name.names().iter();
                let Some(first) = names.next() else {
                    return;
                };
                let fields = names.count() + usize::from(name.method_name().is_some());
                let fresh = self.local_kind(&first.token().to_string()) == Some(Kind::Fresh)
                    && self.ordered_here(&first.token().to_string());
                // `function t.f()` stores into the file's own table; `function t.s.f()`
                // into whatever `t.s` holds.
                if fields > 1 || (fields == 1 && !fresh) {
                    self.effect(
                        declaration,
                        "a function stored in a table the file did not make",
                    );
                }
            }
            Stmt::Assignment(assignment) => {
                for var in assignment.variables() {
                    self.target(var);
                }
                for expr in assignment.expressions() {
                    self.expr(expr);
                }
            }
            Stmt::FunctionCall(call) => self.call(call, /*registration allowed*/ true),
            Stmt::Do(body) => self.scoped(Vec::new(), body.block()),
            Stmt::NumericFor(body) => {
                self.expr(body.start());
                self.expr(body.end());
                if let Some(step) = body.step() {
                    self.expr(step);
                }
                self.scoped(
                    vec![body.index_variable().token().to_string()],
                    body.block(),
                );
            }
            Stmt::GenericFor(body) => {
                // The iterator is called: only the library's own iterators, called here.
                let exprs: Vec<&Expression> = body.expressions().iter().collect();
                let iterator = match exprs.as_slice() {
                    [Expression::FunctionCall(call)] => self.iterator_call(call),
                    _ => None,
                };
                let Some(unordered) = iterator else {
                    self.effect(
                        body,
                        "a `for` over an iterator other than pairs, ipairs or string.gmatch",
                    );
                    return;
                };
                if let [Expression::FunctionCall(call)] = exprs.as_slice() {
                    self.iterator_arguments(call);
                }
                let names = body.names().iter().map(|n| n.token().to_string()).collect();
                let outer = self.unordered_from;
                if unordered && outer.is_none() {
                    self.unordered_from = Some(self.scopes.len());
                }
                self.scoped(names, body.block());
                self.unordered_from = outer;
            }
            Stmt::If(branch) => {
                self.expr(branch.condition());
                self.scoped(Vec::new(), branch.block());
                for elseif in branch.else_if().into_iter().flatten() {
                    self.expr(elseif.condition());
                    self.scoped(Vec::new(), elseif.block());
                }
                if let Some(block) = branch.else_block() {
                    self.scoped(Vec::new(), block);
                }
            }
            Stmt::While(body) => {
                self.expr(body.condition());
                self.scoped(Vec::new(), body.block());
            }
            Stmt::Repeat(body) => {
                // `until` sees the body's locals.
                self.scopes.push(HashSet::new());
                self.block(body.block());
                self.expr(body.until());
                self.scopes.pop();
            }
            Stmt::Goto(_) | Stmt::Label(_) => {}
            other => self.effect(other, "a statement the analysis does not know"),
        }
    }

    /// An assignment target: a plain name (the file's own local or global), or a field of
    /// a fresh local.
    /// `Some(unordered)` when `call` is `pairs(…)`, `ipairs(…)` or `string.gmatch(…)`
    /// (`unordered`: its order differs between Lua states).
    fn iterator_call(&self, call: &FunctionCall) -> Option<bool> {
        let Prefix::Name(base) = call.prefix() else {
            return None;
        };
        let base = base.token().to_string();
        let suffixes: Vec<&Suffix> = call.suffixes().collect();
        let path = match suffixes.as_slice() {
            [Suffix::Call(Call::AnonymousCall(_))] => base,
            [
                Suffix::Index(full_moon::ast::Index::Dot { name, .. }),
                Suffix::Call(Call::AnonymousCall(_)),
            ] => format!("{base}.{}", name.token()),
            _ => return None,
        };
        match path.as_str() {
            "pairs" => Some(true),
            "ipairs" | "string.gmatch" => Some(false),
            _ => None,
        }
    }

    /// The arguments of an iterator call: pure, and no function the iterator would call.
    fn iterator_arguments(&mut self, call: &FunctionCall) {
        for suffix in call.suffixes() {
            let Suffix::Call(Call::AnonymousCall(args)) = suffix else {
                continue;
            };
            match args.as_ref() {
                FunctionArgs::Parentheses { arguments, .. } => {
                    for argument in arguments.iter() {
                        if matches!(argument, Expression::Function(_)) {
                            self.effect(argument, "passes a function to an iterator");
                            return;
                        }
                        self.expr(argument);
                    }
                }
                FunctionArgs::TableConstructor(table) => self.table(table),
                FunctionArgs::String(_) => {}
                other => self.effect(other, "unknown call arguments"),
            }
        }
    }

    /// Whether `name` was declared inside the innermost `pairs` loop (always true outside
    /// one).
    fn ordered_here(&self, name: &str) -> bool {
        match self.unordered_from {
            None => true,
            Some(from) => self.scopes[from..].iter().any(|scope| scope.contains(name)),
        }
    }

    fn target(&mut self, var: &Var) {
        match var {
            Var::Name(name) => {
                if !self.ordered_here(&name.token().to_string()) {
                    self.effect(
                        var,
                        "assigns in a pairs loop (its order differs between Lua states)",
                    );
                }
            }
            Var::Expression(expression) => {
                let fresh = matches!(expression.prefix(), Prefix::Name(name)
                    if self.local_kind(&name.token().to_string()) == Some(Kind::Fresh)
                        && self.ordered_here(&name.token().to_string()));
                // One step only: `t.x = v` writes the file's own table, `t.s.x = v` writes
                // whatever `t.s` holds (maybe a library table).
                let suffixes: Vec<&Suffix> = expression.suffixes().collect();
                let one_index = matches!(suffixes.as_slice(), [Suffix::Index(_)]);
                if !fresh || !one_index {
                    self.effect(var, "writes a field of a table the file did not make");
                    return;
                }
                self.suffixes(expression.suffixes());
            }
            other => self.effect(other, "an unknown assignment target"),
        }
    }

    fn expr(&mut self, expr: &Expression) {
        if self.effect.is_some() {
            return;
        }
        if self.depth >= MAX_EXPRESSION_DEPTH {
            self.effect(expr, "an expression nested too deeply to analyse");
            return;
        }
        self.depth += 1;
        self.expr_inner(expr);
        self.depth -= 1;
    }

    fn expr_inner(&mut self, expr: &Expression) {
        match expr {
            Expression::Number(_) | Expression::String(_) | Expression::Symbol(_) => {}
            Expression::Function(_) => {}
            Expression::TableConstructor(table) => self.table(table),
            Expression::Parentheses { expression, .. } => self.expr(expression),
            Expression::UnaryOperator { expression, .. } => self.expr(expression),
            Expression::BinaryOperator { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            Expression::FunctionCall(call) => self.call(call, /*registration allowed*/ false),
            Expression::Var(Var::Name(name)) => self.read(name),
            Expression::Var(Var::Expression(expression)) => {
                match expression.prefix() {
                    Prefix::Name(name) => self.read(name),
                    Prefix::Expression(inner) => self.expr(inner),
                    other => self.effect(other, "an unknown expression"),
                }
                self.suffixes(expression.suffixes());
            }
            other => self.effect(other, "an unknown expression"),
        }
    }

    /// The table of a `registry.register{…}`: its function fields may name a required
    /// module's function (`check_fn = probes.open`). A deferred file's run at first use sees
    /// the module as it was at the file's place in the load order (`vm::module_view`), and a
    /// function field holds the function itself (a table there, whose contents could change,
    /// is no registration).
    fn registration_table(&mut self, table: &full_moon::ast::TableConstructor) {
        for field in table.fields() {
            if let Field::NameKey { key, value, .. } = field
                && FUNCTION_FIELDS.contains(&key.token().to_string().as_str())
                && self.is_module_field(value)
            {
                self.reads_modules = true;
                continue;
            }
            self.field(field);
        }
    }

    /// `m.field` where `m` is a required module.
    fn is_module_field(&self, value: &Expression) -> bool {
        let Expression::Var(Var::Expression(expression)) = value else {
            return false;
        };
        let suffixes: Vec<&Suffix> = expression.suffixes().collect();
        matches!(expression.prefix(), Prefix::Name(name)
            if self.local_kind(&name.token().to_string()) == Some(Kind::Module))
            && matches!(
                suffixes.as_slice(),
                [Suffix::Index(full_moon::ast::Index::Dot { .. })]
            )
    }

    fn table(&mut self, table: &full_moon::ast::TableConstructor) {
        for field in table.fields() {
            self.field(field);
        }
    }

    /// One field of a table constructor: its key and value are expressions.
    fn field(&mut self, field: &Field) {
        match field {
            Field::ExpressionKey { key, value, .. } => {
                self.expr(key);
                self.expr(value);
            }
            Field::NameKey { value, .. } => self.expr(value),
            Field::NoKey(value) => self.expr(value),
            other => self.effect(other, "an unknown table field"),
        }
    }

    /// A name read at top level: a module's value may only be used in function bodies.
    fn read(&mut self, name: &full_moon::tokenizer::TokenReference) {
        if self.local_kind(&name.token().to_string()) == Some(Kind::Module) {
            self.effect(name, "reads a required module at top level");
        }
    }

    /// Index suffixes (a call among them is an effect: calls are checked by `call`).
    fn suffixes<'a>(&mut self, suffixes: impl Iterator<Item = &'a Suffix>) {
        for suffix in suffixes {
            match suffix {
                Suffix::Index(full_moon::ast::Index::Brackets { expression, .. }) => {
                    self.expr(expression)
                }
                Suffix::Index(full_moon::ast::Index::Dot { .. }) => {}
                other => self.effect(other, "a call the analysis does not know"),
            }
        }
    }

    fn call(&mut self, call: &FunctionCall, registration_allowed: bool) {
        let suffixes: Vec<&Suffix> = call.suffixes().collect();
        let Prefix::Name(base) = call.prefix() else {
            self.effect(call, "a call of a computed function");
            return;
        };
        let base = base.token().to_string();
        // The callee's dotted path, then exactly one call.
        let mut path = base.clone();
        let mut rest = suffixes.as_slice();
        while let [
            Suffix::Index(full_moon::ast::Index::Dot { name, .. }),
            tail @ ..,
        ] = rest
        {
            path.push('.');
            path.push_str(&name.token().to_string());
            rest = tail;
        }
        let [Suffix::Call(Call::AnonymousCall(args))] = rest else {
            self.effect(
                call,
                &format!("calls `{path}` in a way the analysis does not know"),
            );
            return;
        };
        if self.local_kind(&base).is_some() {
            self.effect(
                call,
                &format!("calls `{path}`, a function of the file's own"),
            );
            return;
        }
        let registration = path == "registry.register" || path == "registry.hook";
        let arguments: Vec<&Expression> = match args.as_ref() {
            FunctionArgs::Parentheses { arguments, .. } => arguments.iter().collect(),
            FunctionArgs::String(_) => Vec::new(),
            FunctionArgs::TableConstructor(table) if registration && registration_allowed => {
                self.registration_table(table);
                return;
            }
            FunctionArgs::TableConstructor(table) => {
                self.table(table);
                Vec::new()
            }
            other => {
                self.effect(other, "unknown call arguments");
                return;
            }
        };
        if registration && registration_allowed {
            for argument in arguments {
                match argument {
                    Expression::TableConstructor(table) => self.registration_table(table),
                    other => self.expr(other),
                }
            }
            return;
        }
        let mutating = MUTATING_CALLS.contains(&path.as_str());
        if !PURE_CALLS.contains(&path.as_str()) && !mutating {
            self.effect(call, &format!("calls `{path}`"));
            return;
        }
        if mutating {
            let fresh = matches!(arguments.first(), Some(Expression::Var(Var::Name(name)))
                if self.local_kind(&name.token().to_string()) == Some(Kind::Fresh)
                    && self.ordered_here(&name.token().to_string()));
            if !fresh {
                self.effect(call, &format!("`{path}` on a table the file did not make"));
                return;
            }
        }
        for argument in arguments {
            if matches!(argument, Expression::Function(_)) {
                self.effect(argument, &format!("passes a function to `{path}`"));
                return;
            }
            self.expr(argument);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(src: &str) -> Option<String> {
        let ast = full_moon::parse_fallible(src, full_moon::LuaVersion::lua54())
            .into_result()
            .expect("parses");
        analyse(&ast).effect
    }

    fn contained(src: &str) -> bool {
        effect(src).is_none()
    }

    #[test]
    fn plain_registrations_and_locals_are_contained() {
        assert!(contained(
            "local M = {}\nfunction M.f() return 1 end\nlocal n = math.floor(2.5)\n\
             registry.register{ name = 'a', handler = function() return M.f() end }"
        ));
        assert!(contained(
            "for _, name in ipairs({'a', 'b'}) do registry.register{ name = name } end"
        ));
        assert!(contained(
            "local TOOLS = { a = 'x', b = 'y' }\n\
             for name, text in pairs(TOOLS) do\n\
               local list = {}\n\
               table.insert(list, text)\n\
               registry.register{ name = name, enum = list }\n\
             end"
        ));
        assert!(contained("x = 1\nfunction g() end\nregistry.register{}"));
        assert!(contained(
            "local t = {}\ntable.insert(t, 1)\nt.x = string.rep('ab', 2)\nreturn t"
        ));
    }

    #[test]
    fn a_module_used_only_in_functions_is_recorded() {
        let ast = full_moon::parse_fallible(
            "local s = require('shared')\nregistry.register{ handler = function() return s.x end }",
            full_moon::LuaVersion::lua54(),
        )
        .into_result()
        .expect("parses");
        let top = analyse(&ast);
        assert_eq!(top.effect, None);
        assert_eq!(top.modules, vec!["shared".to_string()]);
    }

    #[test]
    fn writes_outside_the_file_are_effects() {
        for src in [
            "require('shared').greeting = 'hi'",
            "local s = require('shared')\ns.greeting = 'hi'",
            "local s = require('shared')\nlocal g = s.greeting.text",
            "local s = require('shared')\nlocal g = s.greeting",
            "local s = require('shared')\nregistry.register{ schema = s.schema }",
            "local s = require('shared')\nlocal g = s",
            "local s = require('shared')\nfunction s.f() end",
            "local t = {}\nt = require('shared')\nt.x = 1",
            "_G.x = 1",
            "_ENV.x = 1",
            "string.x = 1",
            "math.randomseed(7)",
            "local r = math.random()",
            "local now = os.time()",
            "log.info('loading')",
            "print('loading')",
            "store.set('k', 1)",
            "local v = env.get('X')",
            "setmetatable({}, {})",
            "local x <close> = nil",
            "local function f() end\nf()",
            "local s = ('x'):rep(3)",
            "local s = string.gsub('a', 'a', function() end)",
            "table.insert(require('shared'), 1)",
            "local t = {}\nlocal function f(t) end\nt.x = 1",
            "do local t = {} end\nt.x = 1",
            "registry.register(require('maker')('a'))",
            "function tostring() end\nlocal x = tostring(1)",
            "string = { format = function() end }",
            "function require() return {} end\nlocal m = require('shared')",
            "local _ENV = { pairs = pairs }",
            "for _, _ENV in ipairs({{}}) do end",
            "for _ in function() end do end",
            "local function s() end\nfor _ in s do end",
            "local r = registry\nregistry = { register = function(t) r.register(t) end }",
            "local d = 'x' .. tostring({})",
            "local d = string.format('%p', {})",
            "local kinds = {}\nfor k in pairs({ a = 1, b = 2 }) do table.insert(kinds, k) end",
            "local first\nfor k in pairs({ a = 1, b = 2 }) do first = first or k end",
            "for k, v in next, {} do end",
            "local t = { s = string }\nt.s.upper = function() end",
            "local t = { s = string }\nfunction t.s.f() end",
            "local t = { r = registry }\nt.r.register = nil",
        ] {
            assert!(effect(src).is_some(), "{src}");
        }
    }

    #[test]
    fn the_effect_names_its_line() {
        assert_eq!(
            effect("local a = 1\nmath.randomseed(1)").as_deref(),
            Some("line 2: calls `math.randomseed`")
        );
    }
}
