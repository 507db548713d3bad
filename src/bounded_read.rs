//! Reading a file the host depends on at start-up (the verdict cache, the configuration, a
//! tool file) without letting it hang or exhaust memory: only a regular file is read
//! (opened non-blocking, so a FIFO cannot block `open`), and at most `cap` bytes of it.

use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The whole file, if it is a regular file of at most `cap` bytes.
pub(crate) fn read_regular(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    // Sized from the metadata (one byte more to see the end): two reads instead of a
    // doubling series.
    let mut bytes = Vec::with_capacity(meta.len().min(cap) as usize + 1);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {} MiB", cap / (1024 * 1024)),
        ));
    }
    Ok(bytes)
}
