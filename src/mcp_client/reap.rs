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
    // Several hosts may end at once: the flag is set by the first and put back by the last
    // (saving and restoring it per call would interleave and could leave it set for good).
    {
        let mut adopting = ADOPTING.lock();
        if adopting.count == 0 {
            let mut was: libc::c_int = 0;
            // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer, which
            // lives on this stack frame; PR_SET_CHILD_SUBREAPER only sets a flag of this
            // process.
            unsafe {
                libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int);
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            }
            adopting.was = was;
        }
        adopting.count += 1;
    }
    // Put back on every way out, an unwinding `end` included.
    let _restore = Restore;
    end()
}

/// Ends one `adopting_orphans`; the last one puts the flag back.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let mut adopting = ADOPTING.lock();
        adopting.count = adopting.count.saturating_sub(1);
        if adopting.count == 0 {
            // SAFETY: PR_SET_CHILD_SUBREAPER only sets a flag of this process.
            unsafe {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, adopting.was);
            }
        }
    }
}

/// How many `adopting_orphans` run now, and the flag as it was before the first.
struct Adopting {
    count: usize,
    was: libc::c_int,
}

static ADOPTING: parking_lot::Mutex<Adopting> =
    parking_lot::Mutex::new(Adopting { count: 0, was: 0 });

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier, mpsc};

    fn subreaper() -> libc::c_int {
        let mut flag: libc::c_int = -1;
        // SAFETY: writes one int through a pointer to this frame.
        unsafe {
            libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut flag as *mut libc::c_int);
        }
        flag
    }

    #[test]
    fn overlapping_ends_put_the_subreaper_flag_back_as_it_was() {
        let before = subreaper();
        let both_in = Arc::new(Barrier::new(2));
        let (first_out, first_left) = mpsc::channel::<()>();
        let first = {
            let both_in = both_in.clone();
            std::thread::spawn(move || {
                adopting_orphans(|| {
                    both_in.wait();
                });
                let _ = first_out.send(());
            })
        };
        let second = std::thread::spawn(move || {
            adopting_orphans(|| {
                both_in.wait();
                // The first one leaves while this one is still inside.
                let _ = first_left.recv();
                assert_eq!(subreaper(), 1, "still adopting while one end runs");
            });
        });
        first.join().expect("first");
        second.join().expect("second");
        assert_eq!(subreaper(), before);
    }
}
