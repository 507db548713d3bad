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
    loop {
        // The group's other members that became ours (see [`adopting_orphans`]): reaped here,
        // or they would stay zombies under an init that does not reap.
        // SAFETY: as above, for any child of ours in the process group `pid`.
        let reaped = unsafe { libc::waitpid(-pid, std::ptr::null_mut(), libc::WNOHANG) };
        // SAFETY: signal 0 only checks whether any process of the group exists.
        let members_left = reaped > 0 || unsafe { libc::killpg(pid, 0) } == 0;
        if !members_left || Instant::now() >= group_deadline {
            return;
        }
        if reaped <= 0 {
            std::thread::sleep(POLL);
        }
    }
}

/// Makes this process the reaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`)
/// while `end` runs: a server's own helpers, orphaned when their parent is killed, become
/// ours to reap instead of init's (which, in a container, may never reap them — they stayed
/// zombies). Only for that moment, and the flag is put back as it was: a long-running
/// host would collect every orphan's zombie.
pub(super) fn adopting_orphans<T>(end: impl FnOnce() -> T) -> T {
    let mut was: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer, which lives on
    // this stack frame; PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
    let ended = end();
    // SAFETY: as above.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, was);
    }
    ended
}
