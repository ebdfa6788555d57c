//! The run's memory limit (`run.memory_limit_mb`): a run whose resident memory passes it stops
//! at once with one line, rather than being killed by the kernel with none (or taking the
//! machine down first). Past `PRESSURE_SHARE` of the limit the process first gives back what
//! it freed at once (`process::on_memory_pressure`: the binary's allocator), once, with a line saying so.

use std::sync::Arc;

use crate::metrics::resident_bytes;
use crate::types::RunError;
use dupflow_operators::runtime::footprint::{Structure, Totals};

/// The share of the limit past which freed memory goes back to the system at once.
pub const PRESSURE_SHARE: f64 = 0.5;

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
    /// What the run's structures hold, named in the limit's line.
    footprint: Arc<Totals>,
    checks: u64,
    /// Called once, past `PRESSURE_SHARE` of the limit (then `None`).
    pressure: Option<fn()>,
}

impl MemoryWatch {
    /// A watch that calls the process's pressure hook (`process::on_memory_pressure`), if any,
    /// and names what `footprint` (the run's) holds when the limit is passed.
    pub fn new(limit_mb: u64, footprint: Arc<Totals>) -> MemoryWatch {
        MemoryWatch::with_hook(limit_mb, footprint, crate::process::pressure_hook())
    }

    fn with_hook(limit_mb: u64, footprint: Arc<Totals>, pressure: Option<fn()>) -> MemoryWatch {
        MemoryWatch { limit: limit_bytes(limit_mb), footprint, checks: 0, pressure }
    }

    /// Called every few milliseconds: every 50th call reads the resident memory, calls the
    /// pressure hook the first time it is past `PRESSURE_SHARE` of the limit, and returns the
    /// run's error once it is over the limit.
    pub fn check(&mut self) -> Result<(), RunError> {
        self.checks += 1;
        let Some((limit, source)) = self.limit.filter(|_| self.checks.is_multiple_of(50)) else {
            return Ok(());
        };
        self.observe(resident_bytes().max(0) as u64, limit, source)
    }

    /// One reading of the resident memory against the limit.
    fn observe(&mut self, resident: u64, limit: u64, source: &'static str) -> Result<(), RunError> {
        if resident as f64 > limit as f64 * PRESSURE_SHARE {
            if let Some(hook) = self.pressure.take() {
                tracing::info!(
                    "resident memory {} MiB is past {:.0}% of the limit ({} MiB, {source}): freed \
                     memory now goes back to the system at once",
                    resident >> 20,
                    PRESSURE_SHARE * 100.0,
                    limit >> 20
                );
                hook();
            }
        }
        if resident > limit {
            let state = state_held(&Structure::ALL.map(|s| (s.name(), self.footprint.held(s))));
            return Err(RunError::Memory { resident, limit, setting: source, state });
        }
        Ok(())
    }
}

/// What the method's structures hold (`(name, bytes)`, at their operators' last walks), for
/// the memory limit's line: their sum and the three largest, or nothing before any walk.
pub fn state_held(structures: &[(&str, i64)]) -> String {
    let total: i64 = structures.iter().map(|s| s.1).sum();
    if total <= 0 {
        return String::new();
    }
    let mut largest = structures.to_vec();
    largest.sort_by_key(|&(name, bytes)| (std::cmp::Reverse(bytes), name));
    let gb = |bytes: i64| bytes as f64 / 1e9;
    let named: Vec<String> = largest
        .iter()
        .take(3)
        .map(|(name, bytes)| format!("{name} {:.2} GB", gb(*bytes)))
        .collect();
    format!("; the method's state {:.2} GB, largest {}", gb(total), named.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_line_names_the_largest_structures_once_they_are_walked() {
        assert_eq!(state_held(&[("groups", 0), ("holders", 0)]), "", "nothing walked yet");
        let line = state_held(&[
            ("groups", 2_000_000_000),
            ("members", 500_000_000),
            ("verdicts", 100_000_000),
            ("holders", 3_000_000_000),
            ("filtered", 400_000_000),
        ]);
        assert_eq!(
            line,
            "; the method's state 6.00 GB, largest holders 3.00 GB, groups 2.00 GB, members 0.50 GB"
        );
    }

    #[test]
    fn the_default_is_most_of_the_machine_and_a_setting_is_mib() {
        assert_eq!(limit_bytes(512), Some((512 << 20, "run.memory_limit_mb")));
        let (auto, source) = limit_bytes(0).expect("/proc/meminfo on Linux");
        assert!(auto > (64 << 20), "{auto}");
        assert!(source.contains("90%"));
        let mut watch = MemoryWatch::with_hook(1, Arc::default(), None);
        let error = (0..50).find_map(|_| watch.check().err()).expect("over 1 MiB");
        let line = error.to_string();
        assert!(line.contains("run.memory_limit_mb") && !line.contains('\n'), "{line}");
    }

    static PRESSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn press() {
        PRESSED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    #[test]
    fn the_pressure_hook_runs_once_past_half_of_the_limit_and_not_below_it() {
        let (limit, source) = (1000 << 20, "run.memory_limit_mb");
        let mut watch = MemoryWatch::with_hook(1000, Arc::default(), Some(press));
        let count = || PRESSED.load(std::sync::atomic::Ordering::SeqCst);
        watch.observe(limit / 2, limit, source).expect("under the limit");
        assert_eq!(count(), 0, "at half, not past it");
        for resident in [limit / 2 + 1, limit * 3 / 4, limit / 4, limit] {
            watch.observe(resident, limit, source).expect("under the limit");
        }
        assert_eq!(count(), 1, "once, however often it is past half");
        let error = watch.observe(limit + 1, limit, source).expect_err("over the limit");
        assert!(error.to_string().contains(source));
        assert_eq!(count(), 1);
    }
}
