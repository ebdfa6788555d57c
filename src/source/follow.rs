//! Following inputs that grow: a WARC file being written, a directory where a crawler rotates
//! files, stdin. Readers here never report the end of a growing input while more can come: at
//! the current end they call `wait` (which closes epochs, reads deletions, and says whether to
//! stop) and look again, so the framer only ever sees complete records or the real end.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};

/// What a reader waiting at the end of its input should do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Look again for more data.
    Again,
    /// Treat the current end as the end.
    Finish,
}

/// The callback of a waiting reader: runs the reader thread's periodic work, then decides.
pub type Waiter = Box<dyn FnMut() -> Wait + Send>;

/// How long a follower sleeps between looks at a quiet input.
pub const POLL: Duration = Duration::from_millis(50);

/// A file read as it grows.
pub struct TailFile {
    file: File,
    wait: Waiter,
}

impl TailFile {
    pub fn open(path: &Path, wait: Waiter) -> io::Result<TailFile> {
        Ok(TailFile { file: File::open(path)?, wait })
    }
}

impl Read for TailFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            match (self.wait)() {
                Wait::Again => std::thread::sleep(POLL),
                Wait::Finish => {
                    // One last look: the writer may have added the rest just before.
                    return self.file.read(buf);
                }
            }
        }
    }
}

/// Stdin read on a thread of its own, so that a quiet pipe still lets epochs close.
pub struct StdinPump {
    chunks: Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
    wait: Waiter,
}

impl StdinPump {
    pub fn start(wait: Waiter) -> StdinPump {
        let (tx, rx) = bounded::<Vec<u8>>(16);
        std::thread::Builder::new()
            .name("dupflow-stdin".into())
            .spawn(move || {
                let mut stdin = io::stdin().lock();
                loop {
                    let mut buf = vec![0u8; 256 * 1024];
                    match stdin.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            buf.truncate(n);
                            if tx.send(buf).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .expect("spawn the stdin reader");
        StdinPump { chunks: rx, current: Vec::new(), at: 0, wait }
    }
}

impl Read for StdinPump {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.current.len() {
            match self.chunks.recv_timeout(POLL) {
                Ok(chunk) => {
                    self.current = chunk;
                    self.at = 0;
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(0),
                Err(RecvTimeoutError::Timeout) => {
                    if (self.wait)() == Wait::Finish {
                        return Ok(0);
                    }
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The WARC files of a followed directory, in name order. Files still being written under a
/// temporary name (Heritrix's `*.open`) are not listed until renamed.
pub fn list_dir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    super::walk_files(dir, &mut out);
    out.retain(|p| !p.to_string_lossy().ends_with(".open"));
    out.sort();
    out
}
