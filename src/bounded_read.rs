//! Reading a file the host depends on at start-up (the verdict cache, the configuration, a
//! tool file) without letting it hang or exhaust memory: only a regular file is read
//! (opened non-blocking, so a FIFO cannot block `open`), and at most `cap` bytes of it.

use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
/// overflow: opening does not block, and at most `cap` + 1 bytes are read.
pub(crate) fn read_regular_of_len(path: &Path, len: u64, cap: u64) -> std::io::Result<Vec<u8>> {
    read_capped(open_nonblocking(path)?, len, cap)
}

/// [`read_regular_of_len`] for the file `name` in the open directory `dir`.
pub(crate) fn read_regular_of_len_in(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
    len: u64,
    cap: u64,
) -> std::io::Result<Vec<u8>> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    read_capped(std::fs::File::from(fd), len, cap)
}

/// `path` opened for reading without blocking (a FIFO cannot block `open`).
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// At most `cap` bytes of `file`, expected to hold `len`: an error past `cap`.
fn read_capped(mut file: std::fs::File, len: u64, cap: u64) -> std::io::Result<Vec<u8>> {
    // Sized from the metadata (one byte more to see the end): no doubling series.
    let expected = len.min(cap) as usize;
    let mut bytes = vec![0; expected + 1];
    let first = loop {
        match file.read(&mut bytes) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    bytes.truncate(first);
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
        assert_eq!(read_regular_of_len(&path, 8, 100).unwrap(), b"return 1");
    }

    #[test]
    fn a_file_that_grew_since_its_metadata_reads_whole() {
        let (_dir, path) = file_with(b"return 12345");
        assert_eq!(read_regular_of_len(&path, 3, 100).unwrap(), b"return 12345");
    }

    #[test]
    fn a_file_that_shrank_since_its_metadata_reads_whole() {
        let (_dir, path) = file_with(b"x");
        assert_eq!(read_regular_of_len(&path, 500, 100).unwrap(), b"x");
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
