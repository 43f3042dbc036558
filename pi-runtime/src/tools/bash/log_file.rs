//! One command's log file: its whole raw output up to a cap, and past the cap only its head
//! and its tail, with a line between them saying how much was left out.
//!
//! A command can write gigabytes (`yes` writes about 130 MB a second), and the retention of
//! [`logs`](super::logs) never prunes the newest log, so without this cap one command could
//! fill the disk. The head is the first half of the cap, kept in the log as it is written.
//! The tail is the last half, kept in two unnamed temporary files that take turns: the
//! current one fills to half the cap, then it becomes the previous one and the old previous
//! one is emptied for reuse. At [`LogFile::finish`] the last half cap of the two is appended
//! to the log after the omission line. Disk use is at most one and a half times the cap
//! while the command runs, and the cap once it has ended; memory is one copy buffer.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes copied at a time between the log and the tail files.
const COPY_CHUNK: usize = 64 * 1024;

/// The log of one command.
#[derive(Debug)]
pub(crate) struct LogFile {
    file: File,
    path: PathBuf,
    /// Bytes of the head, and of the tail, kept past the cap.
    half: u64,
    /// Raw bytes of output so far.
    written: u64,
    /// The tail files, once the output outgrew the cap.
    tail: Option<Tail>,
    /// Set by [`LogFile::finish`] when the middle of the output was left out.
    cut: Option<Cut>,
}

/// What a capped log kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    pub(crate) head: u64,
    pub(crate) omitted: u64,
    pub(crate) tail: u64,
}

#[derive(Debug)]
struct Tail {
    current: File,
    current_len: u64,
    /// Holds exactly `half` bytes, the ones before `current`'s.
    previous: File,
}

impl LogFile {
    /// A log in `file` (at `path`) that keeps at most `max_bytes` of output, rounded down to
    /// an even number (and at least 2).
    pub(crate) fn new(file: File, path: PathBuf, max_bytes: u64) -> LogFile {
        LogFile {
            file,
            path,
            half: (max_bytes / 2).max(1),
            written: 0,
            tail: None,
            cut: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What was left out, once the log is finished; `None` when it holds the whole output.
    pub(crate) fn cut(&self) -> Option<Cut> {
        self.cut
    }

    pub(crate) fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        if self.tail.is_none() {
            let room = (2 * self.half).saturating_sub(self.written);
            let now = data.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            self.file.write_all(&data[..now])?;
            self.written += now as u64;
            data = &data[now..];
            if data.is_empty() {
                return Ok(());
            }
            self.start_tail()?;
        }
        let half = self.half;
        let Some(tail) = self.tail.as_mut() else {
            return Ok(());
        };
        self.written += data.len() as u64;
        while !data.is_empty() {
            if tail.current_len == half {
                std::mem::swap(&mut tail.current, &mut tail.previous);
                tail.current.set_len(0)?;
                tail.current.rewind()?;
                tail.current_len = 0;
            }
            let room = usize::try_from(half - tail.current_len).unwrap_or(usize::MAX);
            let now = data.len().min(room);
            tail.current.write_all(&data[..now])?;
            tail.current_len += now as u64;
            data = &data[now..];
        }
        Ok(())
    }

    /// The log is full: what follows its head becomes the first previous tail file.
    fn start_tail(&mut self) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut previous = tempfile::tempfile_in(dir)?;
        self.file.seek(SeekFrom::Start(self.half))?;
        copy(&mut self.file, &mut previous, self.half)?;
        self.file.set_len(self.half)?;
        self.file.seek(SeekFrom::End(0))?;
        self.tail = Some(Tail {
            current: tempfile::tempfile_in(dir)?,
            current_len: 0,
            previous,
        });
        Ok(())
    }

    /// No more output: a capped log gets its omission line and its tail.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        if let Some(mut tail) = self.tail.take() {
            let omitted = self.written - 2 * self.half;
            self.file
                .write_all(omission_line(omitted, self.half).as_bytes())?;
            tail.previous.seek(SeekFrom::Start(tail.current_len))?;
            copy(
                &mut tail.previous,
                &mut self.file,
                self.half - tail.current_len,
            )?;
            tail.current.rewind()?;
            copy(&mut tail.current, &mut self.file, tail.current_len)?;
            self.cut = Some(Cut {
                head: self.half,
                omitted,
                tail: self.half,
            });
        }
        self.file.flush()
    }

    /// `len` raw bytes of the output from `offset`. Of a capped log, only ranges within its
    /// head or within its tail can be read.
    pub(crate) fn read(&mut self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let at = match self.cut {
            Some(cut) if offset >= cut.head => {
                let file_len = self.file.metadata()?.len();
                file_len.saturating_sub(self.written.saturating_sub(offset))
            }
            _ => offset,
        };
        self.file.seek(SeekFrom::Start(at))?;
        let mut bytes = Vec::new();
        Read::by_ref(&mut self.file)
            .take(len)
            .read_to_end(&mut bytes)?;
        // Later appends go to the end again.
        self.file.seek(SeekFrom::End(0))?;
        Ok(bytes)
    }
}

/// The line a capped log holds where its middle was.
fn omission_line(omitted: u64, kept: u64) -> String {
    format!(
        "\n\n[... {omitted} bytes omitted: this log keeps the first and the last {kept} bytes of the output ...]\n\n"
    )
}

fn copy(from: &mut File, to: &mut File, len: u64) -> io::Result<()> {
    let mut buf = vec![0_u8; COPY_CHUNK];
    let mut left = len;
    while left > 0 {
        let want = usize::try_from(left).map_or(COPY_CHUNK, |left| left.min(COPY_CHUNK));
        from.read_exact(&mut buf[..want])?;
        to.write_all(&buf[..want])?;
        left -= want as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(max: u64) -> (tempfile::TempDir, LogFile) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pi-bash-test.log");
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        (dir, LogFile::new(file, path, max))
    }

    #[test]
    fn output_under_the_cap_is_whole() {
        let (_dir, mut log) = log(10);
        log.write(b"0123").unwrap();
        log.write(b"456789").unwrap();
        log.finish().unwrap();
        assert_eq!(log.cut(), None);
        assert_eq!(std::fs::read(log.path()).unwrap(), b"0123456789");
        assert_eq!(log.read(3, 4).unwrap(), b"3456");
    }

    #[test]
    fn output_over_the_cap_keeps_its_head_and_tail() {
        let output: Vec<u8> = (0..1000_u32).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in [1, 3, 7, 10, 64, 1000] {
            let (_dir, mut log) = log(20);
            for chunk in output.chunks(piece) {
                log.write(chunk).unwrap();
            }
            log.finish().unwrap();
            let cut = log.cut().unwrap();
            assert_eq!((cut.head, cut.omitted, cut.tail), (10, 980, 10));
            let mut expected = output[..10].to_vec();
            expected.extend_from_slice(omission_line(980, 10).as_bytes());
            expected.extend_from_slice(&output[990..]);
            assert_eq!(std::fs::read(log.path()).unwrap(), expected, "{piece}");
            assert_eq!(log.read(2, 5).unwrap(), &output[2..7]);
            assert_eq!(log.read(995, 5).unwrap(), &output[995..]);
        }
    }
}
