//! The client's output of one guarded session (stdio): every line the session sends — the
//! guard's own answers, rmcp's, a call's notifications — goes through [`Lines`].
//!
//! A line goes out at once, written by the task that sends it, when nothing is queued
//! before it and the output is a pipe or socket (non-blocking, so the write never waits):
//! no hand-over to the writer task. Otherwise — something
//! queued or being written, a full pipe, an output that is not a descriptor — it is queued
//! for the writer task ([`Outgoing::write_to`]), which writes in order what is queued. The
//! queue is bounded: a client that stops reading stalls its senders, not the server's
//! memory.

use parking_lot::Mutex;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The most the writer task hands its output in one write (see `Outgoing::write_to`).
const PIECE: usize = 64 * 1024;

/// Where a session's lines go; cheap to clone.
#[derive(Clone)]
pub(crate) struct Lines {
    queue: mpsc::Sender<Vec<u8>>,
    shared: Arc<Shared>,
}

/// The writer task's end of [`Lines`].
pub(crate) struct Outgoing {
    queue: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
}

struct Shared {
    /// Lines handed to the queue and not yet written by the writer task. A line is written
    /// directly only while this is 0 (under its lock), so it never overtakes one.
    queued: Mutex<usize>,
    /// The output, non-blocking, for lines written directly (`None`: always queue).
    direct: Option<OwnedFd>,
    /// Bytes the writer task has written.
    written: AtomicU64,
    /// The writer task is in a write (it has bytes the output has not taken yet).
    writing: AtomicBool,
}

/// How far the writer task has got, to tell a client that stopped reading (see
/// [`Progress::stalled`]). Holds no sender: the writer still ends when every [`Lines`]
/// is gone.
pub(crate) struct Progress(Arc<Shared>);

/// The session's output has closed (the writer task stopped: the client left).
#[derive(Debug)]
pub(crate) struct Closed;

/// Output for `capacity` queued lines; `direct` is a non-blocking descriptor of the same
/// output for lines written at once (see the module's docs).
pub(crate) fn channel(capacity: usize, direct: Option<OwnedFd>) -> (Lines, Outgoing) {
    let (sender, receiver) = mpsc::channel(capacity);
    let shared = Arc::new(Shared {
        queued: Mutex::new(0),
        direct,
        written: AtomicU64::new(0),
        writing: AtomicBool::new(false),
    });
    (
        Lines {
            queue: sender,
            shared: shared.clone(),
        },
        Outgoing {
            queue: receiver,
            shared,
        },
    )
}

impl Lines {
    /// The writer task's progress.
    pub(crate) fn progress(&self) -> Progress {
        Progress(self.shared.clone())
    }

    /// Sends one message `line` (without its newline) to the client, after every line sent
    /// before it.
    pub(crate) async fn send(&self, line: String) -> Result<(), Closed> {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        {
            let mut queued = self.shared.queued.lock();
            if *queued == 0
                && !self.queue.is_closed()
                && let Some(fd) = &self.shared.direct
            {
                let written = write_now(fd, &bytes);
                if written == bytes.len() {
                    return Ok(());
                }
                // The rest of a line the output did not take whole is queued before the lock
                // goes, so no other line can come between its two parts. Nothing is queued
                // (`queued` is 0), so the queue has room unless it is closed.
                let rest = bytes.split_off(written);
                return match self.queue.try_send(rest) {
                    Ok(()) => {
                        *queued += 1;
                        Ok(())
                    }
                    Err(_) => Err(Closed),
                };
            }
            // Waits for the writer task, after what is already queued.
            *queued += 1;
        }
        // Counted as queued until it is; a send dropped while it waits for room (its call
        // cancelled, a notification forwarder cut off) takes its count back.
        let counted = Counted(&self.shared);
        let sent = self.queue.send(bytes).await.map_err(|_| Closed);
        if sent.is_ok() {
            std::mem::forget(counted);
        }
        sent
    }
}

/// One line counted in [`Shared::queued`] that is not in the queue (yet): uncounts it when
/// dropped.
struct Counted<'a>(&'a Shared);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        *self.0.queued.lock() -= 1;
    }
}

/// Writes as much of `bytes` to the non-blocking `fd` as it takes now; how much that was.
/// A full pipe or a failed write takes nothing more (the writer task writes the rest, or
/// meets the same failure and ends the session's output).
fn write_now(fd: &OwnedFd, bytes: &[u8]) -> usize {
    let mut written = 0;
    while written < bytes.len() {
        match write_once(fd.as_fd(), &bytes[written..]) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    written
}

/// One `write(2)` of `bytes` to `fd`: how many bytes it took. A non-blocking `fd` that has
/// no room fails with `WouldBlock`; an interrupted write fails with `Interrupted`.
pub(crate) fn write_once(fd: BorrowedFd<'_>, bytes: &[u8]) -> std::io::Result<usize> {
    // SAFETY: writes from `bytes`, which is valid for its length, to an open descriptor.
    let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

impl Outgoing {
    /// Writes the queued lines to `output` until every [`Lines`] is gone or the output
    /// fails. Each line and whatever else is already queued go out in one write.
    pub(crate) async fn write_to<W: AsyncWrite + Unpin>(mut self, mut output: W) {
        let mut batch = Vec::new();
        while let Some(line) = self.queue.recv().await {
            batch.clear();
            batch.extend_from_slice(&line);
            let mut lines = 1;
            while let Ok(more) = self.queue.try_recv() {
                batch.extend_from_slice(&more);
                lines += 1;
            }
            self.shared.writing.store(true, Ordering::SeqCst);
            let written = async {
                // Write by write, each counted and at most `PIECE` long: a client reading
                // slowly still shows progress (`Progress::stalled`), also through an output
                // that takes bytes into a buffer of its own and writes them on a thread
                // (tokio's stdout, `stdio::ThreadWriter`), where a write counts when handed
                // over, not when the client reads it.
                let mut at = 0;
                while at < batch.len() {
                    let piece = &batch[at..batch.len().min(at + PIECE)];
                    let n = output.write(piece).await?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                    at += n;
                    self.shared.written.fetch_add(n as u64, Ordering::SeqCst);
                }
                output.flush().await
            };
            let failed = written.await.is_err();
            self.shared.writing.store(false, Ordering::SeqCst);
            if failed {
                break;
            }
            // Written: lines sent from now on may go out directly again.
            *self.shared.queued.lock() -= lines;
        }
        // Closed: no sender writes directly any more (see `send`).
        self.queue.close();
    }
}

impl Progress {
    /// Resolves once the writer task has been in a write for `limit` without the output
    /// taking a byte (looked at every quarter of `limit`: it resolves within 1.5 × `limit`
    /// of the stall's start); a writer with nothing to write is never stalled.
    pub(crate) async fn stalled(&self, limit: std::time::Duration) {
        const LOOKS: u32 = 4;
        let step = limit / LOOKS;
        let mut last = self.0.written.load(Ordering::SeqCst);
        // Looks in a row that found the writer in a write and nothing written since the
        // look before. The first of a run may come just after a write began; with
        // `LOOKS` more, the writer has been in that write for all of `limit`.
        let mut stuck = 0;
        loop {
            tokio::time::sleep(step).await;
            let now = self.0.written.load(Ordering::SeqCst);
            if now == last && self.0.writing.load(Ordering::SeqCst) {
                stuck += 1;
                if stuck > LOOKS {
                    return;
                }
            } else {
                stuck = 0;
            }
            last = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::io::Read;
    use std::os::fd::FromRawFd;
    use std::task::Poll;

    /// A pipe: its read end, and its non-blocking write end.
    fn pipe() -> (std::fs::File, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into `fds`, owned below; only the write end
        // is made non-blocking (the test reads the other end with blocking reads).
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let read = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let write = unsafe { OwnedFd::from_raw_fd(fds[1]) };
        let flags = unsafe { libc::fcntl(fds[1], libc::F_GETFL) };
        assert_eq!(
            unsafe { libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK) },
            0
        );
        (read, write)
    }

    /// The writer task's output: the pipe's write end, polled by the runtime.
    fn polled(write: OwnedFd) -> tokio::net::unix::pipe::Sender {
        tokio::net::unix::pipe::Sender::from_owned_fd(write).expect("a pipe")
    }

    /// A pipe whose buffer is one page (4 KiB): its read end, its non-blocking write end.
    fn small_pipe() -> (std::fs::File, OwnedFd) {
        let (read, write) = pipe();
        // SAFETY: shrinks the pipe's buffer on a descriptor we own.
        let size = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
        assert!(size > 0);
        (read, write)
    }

    #[tokio::test]
    async fn a_writer_whose_client_reads_nothing_is_stalled() {
        let (_unread, write) = small_pipe();
        let (lines, outgoing) = channel(4, None);
        let progress = lines.progress();
        let writer = tokio::spawn(outgoing.write_to(polled(write)));
        lines.send("x".repeat(64 * 1024)).await.expect("queued");
        // Liveness bound only: the stall is told within 1.5 × 200 ms.
        let told = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            progress.stalled(std::time::Duration::from_millis(200)),
        )
        .await;
        assert!(told.is_ok(), "a writer on a full, unread pipe is stalled");
        writer.abort();
    }

    #[tokio::test]
    async fn a_writer_with_nothing_to_write_is_never_stalled() {
        let (_read, write) = small_pipe();
        let (lines, outgoing) = channel(4, None);
        let progress = lines.progress();
        let _writer = tokio::spawn(outgoing.write_to(polled(write)));
        let told = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            progress.stalled(std::time::Duration::from_millis(100)),
        )
        .await;
        assert!(told.is_err(), "an idle writer was called stalled");
        drop(lines);
    }

    #[tokio::test]
    async fn a_writer_whose_client_reads_slowly_is_not_stalled() {
        let (mut read, write) = small_pipe();
        // 4 KiB every 10 ms: a 256 KiB answer takes about 0.6 s to go out, against a
        // limit of 1 s without a byte taken.
        let reading = std::thread::spawn(move || {
            let mut total = 0;
            let mut chunk = [0; 4096];
            loop {
                match read.read(&mut chunk) {
                    Ok(0) | Err(_) => return total,
                    Ok(n) => total += n,
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        });
        let (lines, outgoing) = channel(4, None);
        let progress = lines.progress();
        lines.send("x".repeat(256 * 1024)).await.expect("queued");
        drop(lines);
        let stalled = progress.stalled(std::time::Duration::from_secs(1));
        tokio::select! {
            () = outgoing.write_to(polled(write)) => {}
            () = stalled => panic!("a client reading steadily was called stalled"),
        }
        assert_eq!(reading.join().expect("reader"), 256 * 1024 + 1);
    }

    #[tokio::test]
    async fn a_line_with_nothing_queued_is_written_at_once() {
        let (mut read, write) = pipe();
        let (lines, _outgoing) = channel(4, Some(write));
        lines.send("{\"a\":1}".into()).await.expect("sent");
        let mut text = [0; 8];
        read.read_exact(&mut text)
            .expect("written without the writer task");
        assert_eq!(&text, b"{\"a\":1}\n");
    }

    #[tokio::test]
    async fn a_line_sent_while_one_is_queued_goes_out_after_it() {
        let (mut read, write) = pipe();
        let (lines, outgoing) = channel(4, Some(write.try_clone().expect("dup")));
        // A line queued and not yet written by the writer task.
        *lines.shared.queued.lock() = 1;
        lines.queue.send(b"first\n".to_vec()).await.expect("queued");
        lines.send("second".into()).await.expect("sent");
        drop(lines);
        outgoing.write_to(polled(write)).await;
        let mut text = String::new();
        read.read_to_string(&mut text).expect("read");
        assert_eq!(text, "first\nsecond\n");
    }

    #[tokio::test]
    async fn the_rest_of_a_line_a_full_pipe_did_not_take_is_queued() {
        let (mut read, write) = pipe();
        // SAFETY: shrinks the pipe's buffer (to one page) on a descriptor we own.
        let size = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
        assert!(size > 0);
        let (lines, outgoing) = channel(4, Some(write.try_clone().expect("dup")));
        let long = "x".repeat(size as usize * 3);
        lines.send(long.clone()).await.expect("sent");
        assert_eq!(*lines.shared.queued.lock(), 1, "the rest is queued");
        lines.send("next".into()).await.expect("sent");
        drop(lines);
        let reading = std::thread::spawn(move || {
            let mut text = String::new();
            read.read_to_string(&mut text).expect("read");
            text
        });
        outgoing.write_to(polled(write)).await;
        assert_eq!(reading.join().expect("reader"), format!("{long}\nnext\n"));
    }

    #[tokio::test]
    async fn a_send_dropped_while_it_waits_for_room_is_no_longer_counted() {
        let (_read, write) = pipe();
        let (lines, _outgoing) = channel(1, Some(write));
        // The queue is full with a line the writer task has not written.
        *lines.shared.queued.lock() = 1;
        lines.queue.send(b"first\n".to_vec()).await.expect("queued");
        let mut waiting = Box::pin(lines.send("second".into()));
        let pending =
            std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx).is_pending()));
        assert!(pending.await, "waits for room");
        assert_eq!(*lines.shared.queued.lock(), 2);
        drop(waiting);
        // Once "first" is written, lines go out at once again.
        assert_eq!(*lines.shared.queued.lock(), 1);
    }
}
