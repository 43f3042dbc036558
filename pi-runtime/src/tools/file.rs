//! Opening the files the tools touch without ever blocking on one that is not a regular file.
//!
//! `open(2)` of a FIFO for reading or writing blocks until the other end is opened, and
//! reading `/dev/zero` never ends, so a tool that opened such a file would hang until the run
//! is aborted (and the blocking-pool thread it ran on would stay stuck even then). Every
//! open here adds `O_NONBLOCK`, which regular files ignore, and the caller checks what it
//! opened with [`special_kind`] before reading or writing a byte.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

use nix::errno::Errno;
use nix::fcntl::{FallocateFlags, fallocate};

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpecialKind {
    Directory,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl SpecialKind {
    /// The kind as a message names it: `it is <this>, not a regular file`.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            SpecialKind::Directory => "a directory",
            SpecialKind::Fifo => "a named pipe (FIFO)",
            SpecialKind::Socket => "a socket",
            SpecialKind::CharDevice => "a character device",
            SpecialKind::BlockDevice => "a block device",
        }
    }
}

/// `None` for a regular file, else what it is.
pub(crate) fn special_kind(meta: &Metadata) -> Option<SpecialKind> {
    let kind = meta.file_type();
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some(SpecialKind::Directory)
    } else if kind.is_fifo() {
        Some(SpecialKind::Fifo)
    } else if kind.is_socket() {
        Some(SpecialKind::Socket)
    } else if kind.is_block_device() {
        Some(SpecialKind::BlockDevice)
    } else {
        // What is left after following symlinks is a character device.
        Some(SpecialKind::CharDevice)
    }
}

/// Options that open without waiting for the other end of a FIFO.
pub(crate) fn nonblocking(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    options.custom_flags(nix::libc::O_NONBLOCK)
}

/// [`nonblocking`] for tokio's options.
pub(crate) fn nonblocking_async(
    options: &mut tokio::fs::OpenOptions,
) -> &mut tokio::fs::OpenOptions {
    options.custom_flags(nix::libc::O_NONBLOCK)
}

/// An OS error as Node words it, which pi's tools show verbatim: `EACCES: permission
/// denied, open '/abs/path'`. An error without an OS code is its own text and the path.
pub(crate) fn node_message(error: &std::io::Error, call: &str, path: &std::path::Path) -> String {
    let path = path.display();
    let Some(errno) = error.raw_os_error().map(nix::errno::Errno::from_raw) else {
        return format!("{error}, {call} '{path}'");
    };
    // libuv's wording where it differs from the C library's.
    let text = match errno {
        nix::errno::Errno::EISDIR => "illegal operation on a directory".to_owned(),
        other => {
            let desc = other.desc();
            let mut chars = desc.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_lowercase().chain(chars).collect()
            })
        }
    };
    format!("{errno:?}: {text}, {call} '{path}'")
}

/// What the file at `path` is, when it exists and is not a regular file (symlinks followed).
pub(crate) async fn special_at(path: &std::path::Path) -> Option<SpecialKind> {
    tokio::fs::metadata(path)
        .await
        .ok()
        .as_ref()
        .and_then(special_kind)
}

/// Allocate `len` bytes from `offset`, so the write after cannot run out of space halfway.
/// File systems without `fallocate` are written to anyway.
///
/// Without `FALLOC_FL_KEEP_SIZE`, on purpose: only a call that grows the file checks the
/// file-size limit (`RLIMIT_FSIZE`), and that limit must fail here too, not halfway through.
pub(crate) fn reserve(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let to_off = |n: u64| i64::try_from(n).map_err(|_| io::Error::from(Errno::EFBIG));
    match fallocate(file, FallocateFlags::empty(), to_off(offset)?, to_off(len)?) {
        Ok(()) | Err(Errno::EOPNOTSUPP | Errno::ENOSYS | Errno::EINVAL) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}
