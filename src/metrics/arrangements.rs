//! The arrangement census: how many updates each of the dataflow's arrangements holds, from
//! differential's own batch log, into `dupflow_arranged_updates{arrangement}`.
//!
//! Differential reports every batch a trace takes in (`BatchEvent`), every merge of two batches
//! into one (`MergeEvent`, with the merged length) and the batches a dropped trace lets go
//! (`DropEvent`). Their balance is the number of updates a trace holds: what the dataflow's
//! state is made of, arrangement by arrangement. Timely's log names the operators
//! (`OperatesEvent`), so the label is the operator's name and its id (`ArrangeByKey#57`; ids are
//! the same on every worker, so the workers' counts add up under one label).
//!
//! Drops are not subtracted: a trace is dropped when its dataflow shuts down, and the census
//! then still says what the run held at its end (what the summary prints).
//!
//! Counted: updates, not bytes. An update's size depends on its types (a `(u64, u64)` pair with
//! its time and diff is 32 bytes before the batch's columnar layout shares keys).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use differential_dataflow::logging::{DifferentialEvent, DifferentialEventBuilder};
use timely::logging::{TimelyEvent, TimelyEventBuilder};
use timely::worker::Worker;

use super::{Registry, ARRANGED_UPDATES};

/// What one worker knows: operator names by id, and counts not yet published (an operator
/// whose name has not arrived yet: the two logs are flushed independently).
#[derive(Default)]
struct Census {
    names: HashMap<usize, String>,
    pending: HashMap<usize, i64>,
}

impl Census {
    fn count(&mut self, operator: usize, delta: i64) {
        if delta != 0 {
            *self.pending.entry(operator).or_default() += delta;
        }
    }

    /// Publishes the counts of operators whose names are known.
    fn publish(&mut self, registry: &Registry) {
        let names = &self.names;
        self.pending.retain(|operator, delta| match names.get(operator) {
            Some(name) => {
                registry.add(ARRANGED_UPDATES, &label(name, *operator), *delta);
                false
            }
            None => true,
        });
    }
}

/// The label of an arrangement: its operator's name and id.
pub fn label(name: &str, operator: usize) -> String {
    format!("{name}#{operator}")
}

/// The change in held updates one differential event makes (drops left out, see the module).
pub fn held_delta(event: &DifferentialEvent) -> Option<(usize, i64)> {
    match event {
        DifferentialEvent::Batch(batch) => Some((batch.operator, batch.length as i64)),
        DifferentialEvent::Merge(merge) => merge.complete.map(|complete| {
            (merge.operator, complete as i64 - merge.length1 as i64 - merge.length2 as i64)
        }),
        _ => None,
    }
}

/// Registers the two loggers on `worker`. Call before building the dataflow: operators take
/// their loggers when they are built.
pub fn enable(worker: &mut Worker, registry: Arc<Registry>) {
    let census = Rc::new(RefCell::new(Census::default()));
    let Some(mut register) = worker.log_register() else { return };
    let (names, names_registry) = (census.clone(), registry.clone());
    register.insert::<TimelyEventBuilder, _>("timely", move |_time, data| {
        let Some(events) = data else { return };
        let mut census = names.borrow_mut();
        let mut any = false;
        for (_, event) in events.iter() {
            if let TimelyEvent::Operates(operates) = event {
                census.names.insert(operates.id, operates.name.clone());
                any = true;
            }
        }
        if any {
            census.publish(&names_registry);
        }
    });
    register.insert::<DifferentialEventBuilder, _>("differential/arrange", move |_time, data| {
        let Some(events) = data else { return };
        let mut census = census.borrow_mut();
        for (_, event) in events.iter() {
            if let Some((operator, delta)) = held_delta(event) {
                census.count(operator, delta);
            }
        }
        census.publish(&registry);
    });
}

/// The largest arrangements of a run: (label, updates), largest first, at most `limit`.
pub fn largest(registry: &Registry, limit: usize) -> Vec<(String, i64)> {
    let mut all: Vec<(String, i64)> =
        registry.by_label(ARRANGED_UPDATES).into_iter().filter(|(_, n)| *n > 0).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(limit);
    all
}

#[cfg(test)]
mod tests {
    use differential_dataflow::input::Input;
    use differential_dataflow::logging::{BatchEvent, MergeEvent};
    use timely::dataflow::operators::Probe;

    use super::*;

    #[test]
    fn merges_replace_their_two_batches_by_the_merged_one() {
        assert_eq!(held_delta(&BatchEvent { operator: 3, length: 10 }.into()), Some((3, 10)));
        let start = MergeEvent { operator: 3, scale: 1, length1: 10, length2: 6, complete: None };
        assert_eq!(held_delta(&start.into()), None);
        // Two batches of 10 and 6 updates consolidate to 12 (4 cancelled).
        let done =
            MergeEvent { operator: 3, scale: 1, length1: 10, length2: 6, complete: Some(12) };
        assert_eq!(held_delta(&done.into()), Some((3, -4)));
    }

    /// A real dataflow: an arrangement of 1,000 distinct keys, 100 of them retracted later,
    /// holds at least the 1,000 insertions (merges may not have consolidated the retractions
    /// away yet) and its label names the operator.
    #[test]
    fn a_real_arrangement_is_counted_under_its_name() {
        let registry = Arc::new(Registry::default());
        let shared = registry.clone();
        timely::execute(timely::Config::process(2), move |worker| {
            enable(worker, shared.clone());
            // The trace handle is held (a trace nobody reads takes no batches).
            let (mut input, probe, _trace) = worker.dataflow::<u64, _, _>(|scope| {
                let (input, keys) = scope.new_collection::<u64, isize>();
                let arranged = keys.arrange_by_self_named("census test");
                (input, arranged.stream.probe().0, arranged.trace)
            });
            // Round 1 inserts 1,000 keys, round 2 retracts 100 of them.
            for (round, (keys, diff)) in
                [(0..1_000u64, 1isize), (0..100u64, -1)].into_iter().enumerate()
            {
                if worker.index() == 0 {
                    keys.for_each(|key| input.update(key, diff));
                }
                input.advance_to(round as u64 + 1);
                input.flush();
                worker.step_while(|| probe.less_than(input.time()));
            }
        })
        .expect("timely runs");
        let census = largest(&registry, 10);
        let (name, updates) = census
            .iter()
            .find(|(name, _)| name.starts_with("census test#"))
            .expect("the arrangement is in the census");
        assert!((1_000..=1_100).contains(updates), "{name} holds {updates} updates");
    }
}
