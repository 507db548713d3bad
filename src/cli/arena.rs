//! The allocator's arenas of a one-shot command.

/// Makes every thread of this process allocate from glibc's main arena. Call it before any
/// other thread starts.
///
/// Why: glibc gives each thread that allocates an arena of its own, and the pages a thread
/// touched in it stay resident. A one-shot command runs a few threads for a moment (the
/// thread preparing the first VM, the VM's own): their arenas were 1.7 MiB of a warm
/// 1,000-tool `call`'s 17 MiB peak RSS. Sharing one arena costs nothing there; `serve`
/// and `watch` keep glibc's default, since their VM threads allocate concurrently for as
/// long as they run.
pub(super) fn share_one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets an allocator parameter (M_ARENA_MAX, 1 is valid); no
    // other thread exists yet to allocate concurrently.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
