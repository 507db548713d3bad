//! A pseudo-terminal for a child's stdin, so a command that asks only on a terminal asks
//! (the answer is typed into the terminal before the child starts; the line discipline
//! keeps it until the child reads).

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};

/// A terminal whose input already holds `typed`: `(master, slave)`; give the slave to the
/// child as stdin and keep the master open until it exits.
pub fn terminal_with_input(typed: &str) -> (std::fs::File, OwnedFd) {
    let mut master: libc::c_int = -1;
    let mut slave: libc::c_int = -1;
    // SAFETY: both out-pointers are valid for writes; name, termios and winsize may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two open descriptors that nothing else owns.
    let (mut master, slave) = unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    };
    master
        .write_all(typed.as_bytes())
        .expect("type into the terminal");
    (master, slave)
}
