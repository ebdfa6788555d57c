//! Test support: an operator run time after time over given updates, at a worker count.

use std::sync::{Arc, Mutex};

use differential_dataflow::input::Input;
use differential_dataflow::{ExchangeData, VecCollection};
use timely::dataflow::operators::{Inspect, Probe};

/// `build`'s output, consolidated, for `steps` (each time's updates, given at worker 0; time
/// `i` is complete before time `i + 1` is given) on `workers` workers.
pub fn run_steps<D, O, B>(steps: &[Vec<(D, isize)>], workers: usize, build: B) -> Vec<(O, u64, isize)>
where
    D: ExchangeData + Sync,
    O: ExchangeData + Sync,
    B: Fn(VecCollection<'_, u64, D, isize>) -> VecCollection<'_, u64, O, isize> + Send + Sync + 'static,
{
    let steps = steps.to_vec();
    let captured: Arc<Mutex<Vec<(O, u64, isize)>>> = Arc::default();
    let into = captured.clone();
    timely::execute(timely::Config::process(workers), move |worker| {
        let into = into.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, collection) = scope.new_collection::<D, isize>();
            let (probe, _) = build(collection).inner.inspect(move |x| into.lock().unwrap().push(x.clone())).probe();
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
