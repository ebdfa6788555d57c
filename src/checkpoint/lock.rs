//! One run at a time in a checkpoint directory: an advisory lock on its `lock` file.

use std::path::Path;

use super::failed;
use crate::types::RunError;

/// A run's exclusive hold on a checkpoint directory (an advisory lock on its `lock` file, which
/// says the holder's process id): released when dropped, or when the process ends however it
/// ends. Each process of a cluster holds its own (`lock-pP`).
#[derive(Debug)]
pub struct DirLock {
    _file: std::fs::File,
}

/// Takes the checkpoint directory `dir` (created if need be) for process `process` of this run;
/// another run holding it is refused with its process id named.
pub fn lock(dir: &Path, process: usize) -> Result<DirLock, RunError> {
    use std::io::{Seek as _, Write as _};
    std::fs::create_dir_all(dir).map_err(failed(dir.to_path_buf()))?;
    let path = match process {
        0 => dir.join("lock"),
        p => dir.join(format!("lock-p{p}")),
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(failed(path.clone()))?;
    if !try_lock(&file).map_err(failed(path.clone()))? {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        let holder = holder.trim();
        let holder = if holder.is_empty() { "unknown".to_string() } else { holder.to_string() };
        return Err(super::CheckpointError::InUse { path: dir.to_path_buf(), holder }.into());
    }
    let write_pid = |file: &mut std::fs::File| {
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())
    };
    write_pid(&mut file).map_err(failed(path))?;
    Ok(DirLock { _file: file })
}

/// Takes an exclusive advisory lock on `file` without waiting (flock): false when another open
/// file holds it.
fn try_lock(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: flock takes a file descriptor this function borrows open, and flags; it changes
    // no memory.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if taken == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        _ => Err(error),
    }
}
