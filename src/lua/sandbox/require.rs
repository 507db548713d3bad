//! `require` inside the sandbox: dotted module names resolved only inside the file's
//! package directory and the tool directories' `lib/` folders. Absolute paths, `..` and
//! symlinks leading out of those folders are refused. Loaded modules are cached per VM and
//! per *trust domain* (like `package.loaded`): the built-in tool directories share one
//! instance of a module, each plugin gets instances of its own that run with the plugin's
//! capabilities. So a plugin can neither reach a function that runs with a built-in's
//! grants nor change what a built-in tool's module does.

use super::depth;
use crate::lua::error_text::lua_error_message;
use crate::lua::register::{Binding, binding};
use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, Table, Value as LuaValue};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A folder `require` may load from: as configured (for messages) and canonical (for the
/// containment check).
#[derive(Debug, Clone)]
pub(crate) struct SearchDir {
    /// The directory as shown in messages.
    pub shown: PathBuf,
    /// The canonical directory.
    pub canonical: PathBuf,
}

impl SearchDir {
    /// A search dir, or `None` when the directory does not exist.
    pub(crate) fn new(dir: &Path) -> Option<Self> {
        let canonical = dir.canonicalize().ok()?;
        Some(Self {
            shown: dir.to_path_buf(),
            canonical,
        })
    }

    /// The same directory, named `shown` in messages.
    pub(crate) fn shown_as(mut self, shown: impl Into<PathBuf>) -> Self {
        self.shown = shown.into();
        self
    }
}

/// Everything a `require` function needs to load a module into a fresh environment.
pub(crate) struct RequireContext {
    /// Where modules may come from, in search order.
    pub dirs: Arc<[SearchDir]>,
    /// The bootstrap's environment factory.
    pub make_env: Function,
    /// The trust domain (`builtin`, `plugin:<id>`): modules are instantiated per domain.
    pub domain: Arc<str>,
    /// The domain's capability set (`nil`: everything).
    pub capabilities: LuaValue,
    /// How to grant a missing capability.
    pub hint: Option<String>,
}

enum Module {
    Loading,
    Loaded(LuaValue),
}

/// Largest module file read (as for tool files).
const MAX_MODULE_BYTES: u64 = 16 * 1024 * 1024;

/// Per-VM module cache, keyed by trust domain and canonical path; with each table
/// module's fields as its chunk returned them (see `vm::module_view`).
#[derive(Default)]
pub(crate) struct ModuleCache(
    HashMap<(Arc<str>, PathBuf), Module>,
    HashMap<(Arc<str>, PathBuf), TableState>,
);

/// A table's fields (raw) and metatable at one moment.
#[derive(Clone)]
pub(crate) struct TableState {
    pub(crate) fields: Vec<(LuaValue, LuaValue)>,
    pub(crate) metatable: Option<Table>,
}

impl TableState {
    /// `table` as it is now.
    pub(crate) fn of(table: &Table) -> mlua::Result<Self> {
        let mut fields = Vec::new();
        for pair in table.pairs::<LuaValue, LuaValue>() {
            fields.push(pair?);
        }
        Ok(Self {
            fields,
            metatable: table.metatable(),
        })
    }

    /// Whether `table` holds exactly this state now.
    pub(crate) fn holds(&self, table: &Table) -> mlua::Result<bool> {
        if table.metatable() != self.metatable {
            return Ok(false);
        }
        let mut count = 0usize;
        for pair in table.pairs::<LuaValue, LuaValue>() {
            let _ = pair?;
            count += 1;
        }
        if count != self.fields.len() {
            return Ok(false);
        }
        for (key, value) in &self.fields {
            if table.raw_get::<LuaValue>(key.clone())? != *value {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Makes `table` hold exactly this state again.
    pub(crate) fn apply(&self, table: &Table) -> mlua::Result<()> {
        let now = Self::of(table)?;
        for (key, _) in now.fields {
            table.raw_set(key, LuaValue::Nil)?;
        }
        for (key, value) in &self.fields {
            table.raw_set(key.clone(), value.clone())?;
        }
        table.set_metatable(self.metatable.clone())
    }
}

/// Every table module instantiated in `domain` on this VM, with its state as its chunk
/// returned it.
pub(crate) fn table_modules(lua: &Lua, domain: &str) -> Vec<(Table, Option<TableState>)> {
    let Some(cache) = lua.app_data_ref::<ModuleCache>() else {
        return Vec::new();
    };
    cache
        .0
        .iter()
        .filter(|((d, _), _)| &**d == domain)
        .filter_map(|(key, module)| match module {
            Module::Loaded(LuaValue::Table(table)) => {
                Some((table.clone(), cache.1.get(key).cloned()))
            }
            _ => None,
        })
        .collect()
}

fn valid_module_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Why `require(name)` has no file to load; its `Display` is the message the tool sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unresolved {
    /// The name is not a dotted module name (a path, `..`, an empty part).
    #[error(
        "module '{name}' is not a dotted name like 'util' or 'pkg.helpers'; modules load \
         only from lib/ or the tool's package directory"
    )]
    BadName {
        /// The name as required.
        name: String,
    },
    /// The module's file is a symlink leading out of its search folder.
    #[error("module '{name}' resolves outside {} (symlink)", dir.display())]
    Outside {
        /// The name as required.
        name: String,
        /// The search folder, as shown.
        dir: PathBuf,
    },
    /// There is no folder to search at all.
    #[error(
        "module '{name}' not found: require loads Lua modules from lib/ beside the tool \
         files, and there is no lib/ here (the sandbox has no C modules or network libraries)"
    )]
    NoFolders {
        /// The name as required.
        name: String,
    },
    /// No search folder holds the module.
    #[error(
        "module '{name}' not found; tried: {} (require loads Lua modules from lib/ beside the \
         tool files; the sandbox has no C modules or network libraries)",
        tried.join(", ")
    )]
    NotFound {
        /// The name as required.
        name: String,
        /// The files looked for, as shown.
        tried: Vec<String>,
    },
}

fn resolve(ctx: &RequireContext, name: &str) -> Result<(PathBuf, String), Unresolved> {
    resolve_module(&ctx.dirs, name)
}

/// The file `require(name)` loads from `dirs` (canonical path, path as shown), or why none.
pub(crate) fn resolve_module(
    dirs: &[SearchDir],
    name: &str,
) -> Result<(PathBuf, String), Unresolved> {
    let name_of = || name.to_string();
    if !valid_module_name(name) {
        return Err(Unresolved::BadName { name: name_of() });
    }
    let relative = name.replace('.', "/");
    let mut tried = Vec::new();
    for dir in dirs {
        for candidate in [format!("{relative}.lua"), format!("{relative}/init.lua")] {
            let path = dir.canonical.join(&candidate);
            tried.push(dir.shown.join(&candidate).display().to_string());
            let Some(real) = real_path(&path, &candidate) else {
                continue;
            };
            if !real.starts_with(&dir.canonical) {
                return Err(Unresolved::Outside {
                    name: name_of(),
                    dir: dir.shown.clone(),
                });
            }
            if real.is_file() {
                return Ok((real, dir.shown.join(&candidate).display().to_string()));
            }
        }
    }
    if tried.is_empty() {
        return Err(Unresolved::NoFolders { name: name_of() });
    }
    Err(Unresolved::NotFound {
        name: name_of(),
        tried,
    })
}

/// The symlink-resolved `path` (`dir.canonical` joined with `relative`), or `None` when it
/// does not exist. A one-component name that is not a symlink is already resolved (its
/// directory is canonical): one `lstat` instead of resolving every component, which
/// matters because every file of a tool directory typically requires the same helper.
fn real_path(path: &Path, relative: &str) -> Option<PathBuf> {
    if !relative.contains('/')
        && let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.file_type().is_symlink()
    {
        return Some(path.to_path_buf());
    }
    path.canonicalize().ok()
}

/// Creates the `require` function for one environment.
pub(crate) fn make_require(lua: &Lua, ctx: Arc<RequireContext>) -> mlua::Result<Function> {
    lua.create_function(move |lua, name: String| {
        crate::lua::register::note_required(lua);
        let (path, shown) = resolve(&ctx, &name).map_err(mlua::Error::runtime)?;
        let key = (ctx.domain.clone(), path);
        {
            let cache = lua.app_data_ref::<ModuleCache>();
            match cache.as_ref().and_then(|c| c.0.get(&key)) {
                Some(Module::Loaded(value)) => return Ok(value.clone()),
                Some(Module::Loading) => {
                    return Err(mlua::Error::runtime(format!(
                        "module '{name}' requires itself (a require loop)"
                    )));
                }
                None => {}
            }
        }
        set_module(lua, &key, Module::Loading);
        let loaded = load_module(lua, &ctx, &name, &key.1, &shown);
        match loaded {
            Ok(value) => {
                set_module(lua, &key, Module::Loaded(value.clone()));
                Ok(value)
            }
            Err(error) => {
                if let Some(mut cache) = lua.app_data_mut::<ModuleCache>() {
                    cache.0.remove(&key);
                }
                Err(mlua::Error::runtime(format!(
                    "error loading module '{name}': {}",
                    lua_error_message(&error)
                )))
            }
        }
    })
}

fn set_module(lua: &Lua, key: &(Arc<str>, PathBuf), module: Module) {
    let instantiated = match &module {
        Module::Loaded(LuaValue::Table(table)) => TableState::of(table).ok(),
        _ => None,
    };
    if let Some(mut cache) = lua.app_data_mut::<ModuleCache>() {
        cache.0.insert(key.clone(), module);
        if let Some(state) = instantiated {
            cache.1.insert(key.clone(), state);
        }
    }
}

fn load_module(
    lua: &Lua,
    ctx: &Arc<RequireContext>,
    name: &str,
    path: &Path,
    shown: &str,
) -> mlua::Result<LuaValue> {
    let source = crate::bounded_read::read_regular(path, MAX_MODULE_BYTES)
        .map_err(|e| mlua::Error::runtime(format!("cannot read {shown}: {e}")))?;
    // The same guard as for tool files: Lua's parser compiles long and/or chains in
    // quadratic time, outside any deadline.
    if let Some(refusal) = depth::prescan(&source, depth::MAX_NESTING) {
        return Err(mlua::Error::runtime(depth::refusal_message(shown, refusal)));
    }
    let require = make_require(lua, ctx.clone())?;
    let registry = binding(lua, Binding::Module(name.to_string()))?;
    // No identity: a module's `env.get` reads only `[sandbox] env` (a tool passes what it
    // read to its helpers).
    let env: Table = ctx.make_env.call((
        ctx.capabilities.clone(),
        require,
        registry,
        ctx.hint.as_deref(),
        LuaValue::Nil,
        &*ctx.domain,
    ))?;
    let value: LuaValue = lua
        .load(crate::lua::bom::strip_bom(&source))
        .set_name(format!("@{shown}"))
        .set_mode(ChunkMode::Text)
        .set_environment(env)
        .call(name)?;
    Ok(match value {
        LuaValue::Nil => LuaValue::Boolean(true),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::{SearchDir, resolve_module, valid_module_name};

    #[test]
    fn module_names_are_dotted_identifiers() {
        assert!(valid_module_name("util"));
        assert!(valid_module_name("pkg.helpers_2"));
        assert!(!valid_module_name("../x"));
        assert!(!valid_module_name("/etc/passwd"));
        assert!(!valid_module_name("a..b"));
        assert!(!valid_module_name(""));
    }

    /// What `require` raises, byte for byte (tools and tests read it).
    #[test]
    fn unresolved_modules_read_as_tool_authors_expect() {
        let message = |dirs: &[SearchDir], name: &str| {
            resolve_module(dirs, name).err().map(|e| e.to_string())
        };
        assert_eq!(
            message(&[], "../x").as_deref(),
            Some(
                "module '../x' is not a dotted name like 'util' or 'pkg.helpers'; modules \
                 load only from lib/ or the tool's package directory"
            )
        );
        assert_eq!(
            message(&[], "util").as_deref(),
            Some(
                "module 'util' not found: require loads Lua modules from lib/ beside the tool \
                 files, and there is no lib/ here (the sandbox has no C modules or network \
                 libraries)"
            )
        );
        let lib = tempfile::tempdir().expect("temp dir");
        let dirs = [SearchDir {
            shown: "tools/lib".into(),
            canonical: lib.path().canonicalize().expect("canonical"),
        }];
        assert_eq!(
            message(&dirs, "pkg.util").as_deref(),
            Some(
                "module 'pkg.util' not found; tried: tools/lib/pkg/util.lua, \
                 tools/lib/pkg/util/init.lua (require loads Lua modules from lib/ beside the \
                 tool files; the sandbox has no C modules or network libraries)"
            )
        );
    }
}
