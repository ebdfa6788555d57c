//! Test support: an operator run time after time over given updates, at a worker count.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::Input;
use differential_dataflow::{ExchangeData, VecCollection};
use timely::dataflow::operators::{Inspect, Probe};

/// `build`'s output, consolidated, for `steps` (each time's updates, given at worker 0; time
/// `i` is complete before time `i + 1` is given) on `workers` workers.
pub fn run_steps<D, O, B>(
    steps: &[Vec<(D, isize)>],
    workers: usize,
    build: B,
) -> Vec<(O, u64, isize)>
where
    D: ExchangeData + Sync,
    O: ExchangeData + Sync,
    B: Fn(VecCollection<'_, u64, D, isize>) -> VecCollection<'_, u64, O, isize>
        + Send
        + Sync
        + 'static,
{
    let steps = steps.to_vec();
    let captured: Arc<Mutex<Vec<(O, u64, isize)>>> = Arc::default();
    let into = captured.clone();
    timely::execute(timely::Config::process(workers), move |worker| {
        let into = into.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, collection) = scope.new_collection::<D, isize>();
            let (probe, _) = build(collection)
                .inner
                .inspect(move |x| into.lock().unwrap().push(x.clone()))
                .probe();
            (input, probe)
        });
        for (time, step) in steps.iter().enumerate() {
            if worker.index() == 0 {
                for (data, diff) in step {
                    input.update(data.clone(), *diff);
                }
            }
            input.advance_to(time as u64 + 1);
            input.flush();
            while probe.less_than(&(time as u64 + 1)) {
                worker.step();
            }
        }
    })
    .expect("timely runs");
    let mut updates = std::mem::take(&mut *captured.lock().unwrap());
    differential_dataflow::consolidation::consolidate_updates(&mut updates);
    updates
}

/// The collection at `time`, from its consolidated updates.
pub fn state_at<O: Ord + Clone>(updates: &[(O, u64, isize)], time: u64) -> BTreeMap<O, isize> {
    let mut state = BTreeMap::new();
    for (data, t, d) in updates {
        if *t <= time {
            *state.entry(data.clone()).or_insert(0) += d;
        }
    }
    state.retain(|_, d| *d != 0);
    state
}

/// The input at `time`: `steps` up to it, accumulated.
pub fn input_at<D: Ord + Clone>(steps: &[Vec<(D, isize)>], time: u64) -> BTreeMap<D, isize> {
    let mut alive = BTreeMap::new();
    for step in &steps[..=time as usize] {
        for (data, d) in step {
            *alive.entry(data.clone()).or_insert(0) += d;
        }
    }
    alive.retain(|_, d| *d != 0);
    alive
}

/// `build` is incremental and deterministic on `steps`: on one worker its output at every time
/// is `from_scratch` at that time, and on 2 and 4 workers its output is the same.
pub fn assert_incremental<D, O, B>(
    steps: &[Vec<(D, isize)>],
    build: B,
    from_scratch: impl Fn(u64) -> BTreeMap<O, isize>,
    what: &str,
) where
    D: ExchangeData + Sync,
    O: ExchangeData + Sync + std::fmt::Debug,
    B: Fn(VecCollection<'_, u64, D, isize>) -> VecCollection<'_, u64, O, isize>
        + Send
        + Sync
        + Clone
        + 'static,
{
    let one = run_steps(steps, 1, build.clone());
    for time in 0..steps.len() as u64 {
        assert_eq!(state_at(&one, time), from_scratch(time), "{what}, time {time}");
    }
    for workers in [2, 4] {
        assert_eq!(run_steps(steps, workers, build.clone()), one, "{what}, {workers} workers");
    }
}

/// Pseudo-random numbers for test workloads.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = crate::runtime::hashing::mix64(self.0.wrapping_add(0x9e37_79b9_7f4a_7c15));
        self.0 % n
    }
}
