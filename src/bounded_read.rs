//! Reading a file the host depends on at start-up (the verdict cache, the configuration, a
//! tool file) without letting it hang or exhaust memory: only a regular file is read
//! (opened non-blocking, so a FIFO cannot block `open`), and at most `cap` bytes of it.

use std::cell::RefCell;
use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

/// The whole file, if it is a regular file of at most `cap` bytes.
pub(crate) fn read_regular(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    read_capped(file, meta.len(), cap)
}

/// The whole file at `path`, whose metadata (read just before, following links) showed a
/// regular file of `len` bytes, if it has at most `cap` bytes. Discovery reads every tool
/// file at every start: this is [`read_regular`] without the second metadata read and,
/// when the file still has `len` bytes, without the read that finds the end (two of the
/// five system calls per file). Whatever the path became since, it cannot hang or
/// overflow: opening does not block, and at most `cap` + 1 bytes are read. Shared, as
/// discovery keeps a registering file's source (see [`read_shared`]).
pub(crate) fn read_regular_of_len(path: &Path, len: u64, cap: u64) -> std::io::Result<Arc<[u8]>> {
    read_shared(open_nonblocking(path)?, len, cap)
}

/// [`read_regular_of_len`] for the file `name` in the open directory `dir`.
pub(crate) fn read_regular_of_len_in(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
    len: u64,
    cap: u64,
) -> std::io::Result<Arc<[u8]>> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    read_shared(std::fs::File::from(fd), len, cap)
}

/// `path` opened for reading without blocking (a FIFO cannot block `open`).
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// The largest read buffer a thread keeps for its next [`read_shared`]: tool files are a
/// few KiB; a rare large one is not held on to.
const KEPT_SCRATCH_BYTES: usize = 64 * 1024;

thread_local! {
    /// Each thread's buffer for [`read_shared`]'s first read.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// [`read_capped`] into one shared allocation of the file's exact size. The first read
/// goes into the thread's kept buffer (sized one byte past the expected length, to see
/// the end) and is copied once into the `Arc`: reading into a `Vec` of its own and then
/// converting allocated every file twice and freed a few-KiB block per file, which the
/// allocator then sorted through on the allocations after it (a warm start reads every
/// tool file).
fn read_shared(mut file: std::fs::File, len: u64, cap: u64) -> std::io::Result<Arc<[u8]>> {
    let expected = len.min(cap) as usize;
    SCRATCH.with_borrow_mut(|scratch| {
        if scratch.len() <= expected {
            scratch.resize(expected + 1, 0);
        }
        let read = read_once(&mut file, &mut scratch[..=expected]);
        let whole = match read {
            Ok(first) if first == expected => Ok(Arc::from(&scratch[..first])),
            // Not the length the metadata gave: the general path, from what came so far.
            Ok(first) => read_rest(file, scratch[..first].to_vec(), expected, cap).map(Arc::from),
            Err(e) => Err(e),
        };
        if scratch.capacity() > KEPT_SCRATCH_BYTES {
            *scratch = Vec::new();
        }
        whole
    })
}

/// One `read` into `buffer`, retried when interrupted.
fn read_once(file: &mut std::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match file.read(buffer) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// At most `cap` bytes of `file`, expected to hold `len`: an error past `cap`.
fn read_capped(mut file: std::fs::File, len: u64, cap: u64) -> std::io::Result<Vec<u8>> {
    // Sized from the metadata (one byte more to see the end): no doubling series.
    let expected = len.min(cap) as usize;
    let mut bytes = vec![0; expected + 1];
    let first = read_once(&mut file, &mut bytes)?;
    bytes.truncate(first);
    read_rest(file, bytes, expected, cap)
}

/// The file whose first read gave `bytes`: done when that was the `expected` length, else
/// read on to the end (at most `cap` bytes, an error past it).
fn read_rest(
    file: std::fs::File,
    mut bytes: Vec<u8>,
    expected: usize,
    cap: u64,
) -> std::io::Result<Vec<u8>> {
    let first = bytes.len();
    // Exactly the size the metadata gave, in one read: the whole file as of its stamp.
    // Anything else reads on to the end, if it is still a regular file: one replaced by a
    // FIFO since its metadata was read would read as empty, and be remembered so under the
    // old file's stamp.
    if first != expected {
        if !file.metadata()?.is_file() {
            return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
        }
        file.take(cap + 1 - first as u64).read_to_end(&mut bytes)?;
    }
    if bytes.len() as u64 > cap {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {} MiB", cap / (1024 * 1024)),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.lua");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn a_file_of_the_expected_length_reads_whole() {
        let (_dir, path) = file_with(b"return 1");
        assert_eq!(&*read_regular_of_len(&path, 8, 100).unwrap(), b"return 1");
    }

    #[test]
    fn a_file_that_grew_since_its_metadata_reads_whole() {
        let (_dir, path) = file_with(b"return 12345");
        assert_eq!(
            &*read_regular_of_len(&path, 3, 100).unwrap(),
            b"return 12345"
        );
    }

    #[test]
    fn a_file_that_shrank_since_its_metadata_reads_whole() {
        let (_dir, path) = file_with(b"x");
        assert_eq!(&*read_regular_of_len(&path, 500, 100).unwrap(), b"x");
    }

    #[test]
    fn a_shorter_file_after_a_longer_one_reads_only_its_own_bytes() {
        // Both read on this thread, through the same kept buffer.
        let (_long_dir, long) = file_with(&[b'a'; 100]);
        let (_short_dir, short) = file_with(b"bb");
        assert_eq!(
            &*read_regular_of_len(&long, 100, 1000).unwrap(),
            &[b'a'; 100]
        );
        assert_eq!(&*read_regular_of_len(&short, 2, 1000).unwrap(), b"bb");
        // Told a longer length than the file has, the stale tail is still not read.
        assert_eq!(&*read_regular_of_len(&short, 50, 1000).unwrap(), b"bb");
    }

    #[test]
    fn an_empty_file_reads_empty() {
        let (_dir, path) = file_with(b"");
        assert!(read_regular_of_len(&path, 0, 100).unwrap().is_empty());
    }

    #[test]
    fn a_file_larger_than_the_kept_buffer_reads_whole_and_is_not_kept() {
        let big = vec![b'c'; KEPT_SCRATCH_BYTES + 1];
        let (_dir, path) = file_with(&big);
        let len = big.len() as u64;
        assert_eq!(
            &*read_regular_of_len(&path, len, 1 << 20).unwrap(),
            &big[..]
        );
        assert_eq!(SCRATCH.with_borrow(Vec::capacity), 0);
    }

    #[test]
    fn a_file_grown_past_the_cap_is_refused() {
        let (_dir, path) = file_with(&[b'a'; 64]);
        let error = read_regular_of_len(&path, 4, 10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidData);
    }

    #[test]
    fn a_fifo_in_place_of_the_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo.lua");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        // No writer: a non-blocking read finds nothing at once; not a file, so an error
        // (never an empty file, which would be remembered under the old file's stamp).
        let error = read_regular_of_len(&path, 10, 100).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }
}
