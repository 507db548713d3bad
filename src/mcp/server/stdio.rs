//! stdin and stdout for `toolhost serve`. tokio's stdin and stdout hand every read, write
//! and flush to its blocking pool and back: two thread wake-ups per operation, most of what
//! a small MCP call cost the server in CPU. When they are pipes or sockets (an MCP client's
//! usual setup) they are made non-blocking and polled by the runtime itself: no other
//! thread takes part. Otherwise (a terminal, a regular file) each gets a thread of its own
//! that sits in `read` or in its queue, so a message costs one wake-up each way.
//!
//! The thread queues are bounded (a client that stops reading stalls the writer, not
//! memory). Handing bytes to the writer thread counts as flushed; [`WriterDone::wait`] lets
//! the process write what is queued before it exits.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

/// Bytes read from stdin at most at once.
const CHUNK: usize = 64 * 1024;
/// Chunks queued each way.
const QUEUE: usize = 8;

/// stdin, read by a thread of its own.
pub(crate) struct ThreadReader {
    chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    at: usize,
}

/// stdout, written by a thread of its own.
pub(crate) struct ThreadWriter {
    chunks: PollSender<Vec<u8>>,
}

/// Tells when the writer thread has written everything queued and ended.
pub(crate) struct WriterDone(std::sync::mpsc::Receiver<()>);

/// Client input as the guard reads it.
pub(crate) type Input = Box<dyn AsyncBufRead + Unpin + Send>;
/// Client output as the guard writes it.
pub(crate) type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// The process's stdin and stdout as the guard uses them.
pub(crate) struct Stdio {
    /// The client's lines.
    pub(crate) input: Input,
    /// Where the guard's writer task writes.
    pub(crate) output: Output,
    /// The same output, non-blocking, for a line written at once by the thread that sends
    /// it (see `lines`); only when stdout is polled.
    pub(crate) direct: Option<OwnedFd>,
    /// The writer thread's end, when stdout has one.
    pub(crate) written: Option<WriterDone>,
}

/// stdin and stdout: polled directly when both are pipes or sockets, else on threads.
/// Must be called inside the runtime.
pub(crate) fn open() -> std::io::Result<Stdio> {
    // Both or neither: making one non-blocking and then falling back to a thread would leave
    // that thread a descriptor whose reads fail with EAGAIN.
    if pollable(libc::STDIN_FILENO)
        && pollable(libc::STDOUT_FILENO)
        && let (Some(input), Some(output)) =
            (polled(libc::STDIN_FILENO), polled(libc::STDOUT_FILENO))
    {
        // Shares the polled descriptor's open file (and so its non-blocking mode).
        let direct = output.fd.get_ref().try_clone().ok();
        return Ok(Stdio {
            input: Box::new(tokio::io::BufReader::with_capacity(CHUNK, input)),
            output: Box::new(output),
            direct,
            written: None,
        });
    }
    let (input, output, done) = start()?;
    Ok(Stdio {
        input: Box::new(input),
        output: Box::new(output),
        direct: None,
        written: Some(done),
    })
}

/// A pipe or socket of the process, polled by the runtime.
pub(crate) struct PolledFd {
    fd: AsyncFd<OwnedFd>,
    /// A read shorter than asked for means nothing is left to read: a byte-stream pipe or a
    /// stream socket (a packet-mode pipe or a datagram socket reads one message at a time).
    short_read_drains: bool,
}

/// Whether `fd` is a pipe or a socket (epoll cannot poll regular files, and a terminal's
/// flags are the user's).
fn pollable(fd: i32) -> bool {
    matches!(file_kind(fd), Some(libc::S_IFIFO | libc::S_IFSOCK))
}

/// The file type bits (`S_IFMT`) of the open descriptor `fd`, if it can be read.
fn file_kind(fd: i32) -> Option<libc::mode_t> {
    // SAFETY: fstat only writes the stat buffer it is given.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut stat) } == 0).then_some(stat.st_mode & libc::S_IFMT)
}

/// `fd` (pollable) duplicated, made non-blocking and registered with the runtime.
fn polled(fd: i32) -> Option<PolledFd> {
    // SAFETY: dup of an open descriptor; the new descriptor is owned by the OwnedFd alone.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return None;
    }
    let copy = unsafe { OwnedFd::from_raw_fd(copy) };
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own.
    let flags = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_GETFL) };
    if flags < 0
        || unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return None;
    }
    let short_read_drains = drains_on_short_read(copy.as_raw_fd(), flags);
    // SAFETY: the AsyncFd owns the descriptor, so it stays open while registered. Called
    // inside the runtime (a reactor is present), as `open` requires.
    unsafe { AsyncFd::register(copy) }.ok().map(|fd| PolledFd {
        fd,
        short_read_drains,
    })
}

/// Whether a short read of `fd` (open with `flags`) means it held no more: a FIFO not in
/// packet mode (`O_DIRECT`), or a `SOCK_STREAM` socket.
fn drains_on_short_read(fd: i32, flags: i32) -> bool {
    match file_kind(fd) {
        Some(libc::S_IFIFO) => flags & libc::O_DIRECT == 0,
        Some(libc::S_IFSOCK) => {
            let mut kind: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: getsockopt only writes `kind` and `len`, sized here.
            let read = unsafe {
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_TYPE,
                    (&mut kind as *mut libc::c_int).cast(),
                    &mut len,
                )
            };
            read == 0 && kind == libc::SOCK_STREAM
        }
        _ => false,
    }
}

impl AsyncRead for PolledFd {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let room = unfilled.len();
            let read = ready.try_io(|fd| {
                // SAFETY: reads into the initialised, unfilled part of `buf`.
                let n = unsafe {
                    libc::read(fd.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len())
                };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match read {
                Ok(Ok(n)) => {
                    // A byte-stream pipe or socket reads short only when it held less than
                    // asked for: it is empty now. Forgetting its readiness saves the read
                    // that would only say so (EAGAIN), one system call per message; data
                    // that comes later is a new edge for the reactor (the readiness it then
                    // records has a newer tick, which this clear leaves alone).
                    if self.short_read_drains && n > 0 && n < room {
                        ready.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for PolledFd {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        loop {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            let written = ready.try_io(|fd| super::lines::write_once(fd.get_ref().as_fd(), buf));
            match written {
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Unbuffered: every write went to the pipe.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Starts the two threads.
fn start() -> std::io::Result<(ThreadReader, ThreadWriter, WriterDone)> {
    let (chunk_sender, chunks) = mpsc::channel(QUEUE);
    std::thread::Builder::new()
        .name("toolhost-stdin".into())
        .spawn(move || read_stdin(chunk_sender))?;
    let (out_sender, mut out) = mpsc::channel::<Vec<u8>>(QUEUE);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("toolhost-stdout".into())
        .spawn(move || {
            let mut stdout = std::io::stdout().lock();
            while let Some(bytes) = out.blocking_recv() {
                if stdout
                    .write_all(&bytes)
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
            let _ = done.send(());
        })?;
    let reader = ThreadReader {
        chunks,
        chunk: Vec::new(),
        at: 0,
    };
    let writer = ThreadWriter {
        chunks: PollSender::new(out_sender),
    };
    Ok((reader, writer, WriterDone(finished)))
}

/// Reads stdin until end of file, an error, or nobody listening any more.
fn read_stdin(chunks: mpsc::Sender<std::io::Result<Vec<u8>>>) {
    let mut stdin = std::io::stdin().lock();
    loop {
        let mut chunk = vec![0; CHUNK];
        let read = match stdin.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                chunk.truncate(n);
                Ok(chunk)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = read.is_err();
        if chunks.blocking_send(read).is_err() || failed {
            return;
        }
    }
}

impl WriterDone {
    /// Waits at most `limit` for the writer thread to write what is queued (after the
    /// writer was dropped); a client that stopped reading is not waited for longer.
    pub(crate) fn wait(self, limit: Duration) {
        let _ = self.0.recv_timeout(limit);
    }
}

impl AsyncBufRead for ThreadReader {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.at >= this.chunk.len() {
            match ready!(this.chunks.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    this.chunk = chunk;
                    this.at = 0;
                }
                Some(Err(e)) => return Poll::Ready(Err(e)),
                // End of input.
                None => return Poll::Ready(Ok(&[])),
            }
        }
        Poll::Ready(Ok(&this.chunk[this.at..]))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        let this = self.get_mut();
        this.at = (this.at + amount).min(this.chunk.len());
    }
}

impl AsyncRead for ThreadReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let available = ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = available.len().min(buf.remaining());
        buf.put_slice(&available[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

fn writer_gone() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.chunks.poll_reserve(cx)).map_err(|_| writer_gone())?;
        this.chunks
            .send_item(buf.to_vec())
            .map_err(|_| writer_gone())?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The writer thread writes and flushes each chunk as soon as it gets it.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().chunks.close();
        Poll::Ready(Ok(()))
    }
}
