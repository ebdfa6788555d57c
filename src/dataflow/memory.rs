//! The run's memory limit (`run.memory_limit_mb`): a run whose resident memory passes it stops
//! at once with one line, rather than being killed by the kernel with none (or taking the
//! machine down first).

use crate::metrics::resident_bytes;
use crate::types::RunError;

/// The share of the machine's memory (or of its control group's limit, if lower) that a run
/// may take when `run.memory_limit_mb` is 0.
const MACHINE_SHARE: f64 = 0.9;

/// The limit in bytes: `limit_mb` MiB, or with 0 `MACHINE_SHARE` of what the machine (or the
/// control group) has; `None` where neither can be read.
pub fn limit_bytes(limit_mb: u64) -> Option<(u64, &'static str)> {
    if limit_mb > 0 {
        return Some((limit_mb << 20, "run.memory_limit_mb"));
    }
    let machine = std::fs::read_to_string("/proc/meminfo").ok().and_then(|info| {
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib << 10)
    });
    // cgroup v2 (`max` when unlimited), then v1.
    let group = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok());
    let total = match (machine, group) {
        (Some(m), Some(g)) => m.min(g),
        (m, g) => m.or(g)?,
    };
    Some((
        (total as f64 * MACHINE_SHARE) as u64,
        "90% of this machine's memory (run.memory_limit_mb = 0)",
    ))
}

/// Watches the process's resident memory against the limit.
pub struct MemoryWatch {
    limit: Option<(u64, &'static str)>,
    checks: u64,
}

impl MemoryWatch {
    pub fn new(limit_mb: u64) -> MemoryWatch {
        MemoryWatch { limit: limit_bytes(limit_mb), checks: 0 }
    }

    /// Called every few milliseconds: every 50th call reads the resident memory, and returns
    /// the run's error once it is over the limit.
    pub fn check(&mut self) -> Result<(), RunError> {
        self.checks += 1;
        let Some((limit, source)) = self.limit.filter(|_| self.checks.is_multiple_of(50)) else {
            return Ok(());
        };
        let resident = resident_bytes().max(0) as u64;
        if resident > limit {
            return Err(RunError::Memory { resident, limit, setting: source });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_most_of_the_machine_and_a_setting_is_mib() {
        assert_eq!(limit_bytes(512), Some((512 << 20, "run.memory_limit_mb")));
        let (auto, source) = limit_bytes(0).expect("/proc/meminfo on Linux");
        assert!(auto > (64 << 20), "{auto}");
        assert!(source.contains("90%"));
        let mut watch = MemoryWatch::new(1);
        let error = (0..50).find_map(|_| watch.check().err()).expect("over 1 MiB");
        let line = error.to_string();
        assert!(line.contains("run.memory_limit_mb") && !line.contains('\n'), "{line}");
    }
}
