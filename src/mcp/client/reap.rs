//! Making sure a killed server child is really gone before the host goes on (or exits).
//!
//! `SIGKILL` is asynchronous: right after `killpg` the child still runs for a moment, and
//! once dead it stays a zombie until someone reaps it. A `toolhost call` that exited right
//! after killing its server left that server behind for a while (reparented to init,
//! still running or a zombie) — seen from outside, the child outlived the command. So the
//! host waits: until the child is reaped (by us here, or by tokio's own reaper) and no
//! process of its group is left, within a generous bound.

use std::time::{Duration, Instant};

/// How long the other members of a killed group (a server's own helpers, not our children,
/// so not ours to reap) are waited for at most.
const GROUP_WAIT: Duration = Duration::from_millis(500);

/// Pause between two looks: `waitpid` cannot wait with a deadline.
const POLL: Duration = Duration::from_millis(1);

/// Waits until the killed child `pid` (also its process group's id) is reaped and its group
/// is empty, or `deadline` passes.
pub(super) fn reap(pid: i32, deadline: Instant) {
    if pid <= 1 {
        return;
    }
    loop {
        // SAFETY: waitpid with WNOHANG on one pid only reaps that child of ours (and reads
        // no memory: the status pointer is null).
        let reaped = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        let gone = reaped == pid
            || (reaped == -1
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD));
        if gone {
            break;
        }
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(POLL);
    }
    let group_deadline = deadline.min(Instant::now() + GROUP_WAIT);
    // SAFETY: signal 0 only checks whether any process of the group exists.
    while unsafe { libc::killpg(pid, 0) } == 0 && Instant::now() < group_deadline {
        std::thread::sleep(POLL);
    }
}
