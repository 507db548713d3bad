//! The directories tool code may touch (`[sandbox] fs_roots`, or the working directory),
//! opened once as capabilities, and a client's roots narrowing them. A base module: the
//! registry (a call's roots), the Lua `fs` API and the MCP server's roots all use it.

mod narrow;
mod private;
mod roots;

pub(crate) use narrow::ClientRoots;
pub(crate) use private::keep_private;
pub(crate) use roots::{
    FsRoots, Resolved, describe, open_regular_read, open_regular_read_in, open_regular_write,
};
