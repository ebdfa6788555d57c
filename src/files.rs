//! Small file helpers shared by the reader, the workers and the sink: atomic writes, scratch
//! files that never outlive an error, and the probe of an output directory before a run reads
//! anything.
//!
//! Every temporary file or folder the process creates is a [`Scratch`]: it is removed when the
//! guard drops unless it was kept (renamed into place), and `process::remove_scratch` removes
//! whatever is still registered when the process must exit at once (a fatal error, a forced
//! stop).

use std::path::{Path, PathBuf};

use crate::process::{remove_path as remove, scratch as registry};

/// A temporary file or folder: removed on drop unless `keep` was called.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    kept: bool,
}

impl Scratch {
    /// Registers `path` (nothing is created here).
    pub fn new(path: PathBuf) -> Scratch {
        registry().push(path.clone());
        Scratch { path, kept: false }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path is no longer temporary (it was renamed into place, or is kept on purpose).
    pub fn keep(mut self) {
        self.kept = true;
        forget(&self.path);
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.kept {
            remove(&self.path);
            forget(&self.path);
        }
    }
}

fn forget(path: &Path) {
    let mut paths = registry();
    if let Some(at) = paths.iter().rposition(|p| p == path) {
        paths.swap_remove(at);
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, synced. On any error the
/// temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, |file| {
        use std::io::Write as _;
        file.write_all(bytes)
    })
}

/// Writes `path` through a temporary file in the same directory (`.NAME.tmp-PID`), filled by
/// `fill`, synced and renamed into place; the temporary file is removed on any error.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name =
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = Scratch::new(dir.join(format!(".{name}.tmp-{}", std::process::id())));
    let mut file = std::io::BufWriter::new(std::fs::File::create(tmp.path())?);
    fill(&mut file)?;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(tmp.path(), path)?;
    tmp.keep();
    Ok(())
}

/// Why a directory cannot take a run's files.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("{what} {path}: a file of that name is in the way (a directory is needed)")]
    NotADirectory { what: &'static str, path: PathBuf },
    #[error("{what} {path}: cannot create it: {error}")]
    Create { what: &'static str, path: PathBuf, error: std::io::Error },
    #[error("{what} {path}: cannot write in it: {error}")]
    Write { what: &'static str, path: PathBuf, error: std::io::Error },
}

/// Creates `dir` if needed and proves that files can be written in it (a probe file is created
/// and removed): a run checks its output and checkpoint directories this way before it reads
/// any input. `what` names the directory in the error (`--out`, `--checkpoint`).
pub fn prepare_dir(dir: &Path, what: &'static str) -> Result<(), DirError> {
    let blocked = |p: &Path| p.exists() && !p.is_dir();
    if let Some(file) = dir.ancestors().find(|p| blocked(p)) {
        return Err(DirError::NotADirectory { what, path: file.to_path_buf() });
    }
    std::fs::create_dir_all(dir).map_err(|error| DirError::Create {
        what,
        path: dir.to_path_buf(),
        error,
    })?;
    let probe = Scratch::new(dir.join(format!(".dupflow-probe-{}", std::process::id())));
    std::fs::write(probe.path(), b"probe").map_err(|error| DirError::Write {
        what,
        path: dir.to_path_buf(),
        error,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dupflow-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = temp("failed");
        let err = write_with(&dir.join("out.jsonl"), |_| Err(std::io::Error::other("disk full")))
            .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        write_atomic(&dir.join("out.jsonl"), b"x\n").unwrap();
        assert_eq!(names(&dir), ["out.jsonl"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn scratch_paths_are_removed_on_drop_or_on_a_forced_exit_unless_kept() {
        let dir = temp("scratch");
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        {
            let guard = Scratch::new(a.clone());
            std::fs::create_dir_all(guard.path().join("round-1")).unwrap();
        }
        assert!(!a.exists());
        let kept = Scratch::new(b.clone());
        std::fs::write(&b, b"kept").unwrap();
        kept.keep();
        let held = Scratch::new(c.clone());
        std::fs::write(&c, b"in flight").unwrap();
        // What a forced exit does (`process::remove_scratch`), to this test's paths alone.
        crate::process::remove_scratch_under(&dir);
        assert!(b.exists() && !c.exists());
        std::mem::forget(held);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_directory_is_probed_before_use() {
        let dir = temp("probe");
        let file = dir.join("file");
        std::fs::write(&file, b"").unwrap();
        let err = prepare_dir(&file, "--out").unwrap_err().to_string();
        assert!(err.contains("a file of that name is in the way"), "{err}");
        let err = prepare_dir(&file.join("sub"), "--out").unwrap_err().to_string();
        assert!(err.starts_with(&format!("--out {}:", file.display())), "{err}");
        prepare_dir(&dir.join("new/deeper"), "--out").unwrap();
        assert!(names(&dir.join("new/deeper")).is_empty(), "the probe is removed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
