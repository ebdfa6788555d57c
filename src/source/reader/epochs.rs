//! The reader's epochs: when the open epoch closes (by its records, its age, the dataflow's
//! progress, a cluster's pace), the wait that keeps the epochs in flight bounded, the
//! checkpoint marks, and the last epoch when the input ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::*;

/// A run's epoch clock, made by the run and shared by its readers and its workers: the epochs
/// its workers have completed (a reader closes an epoch by age only once the ones before it are
/// complete, so epochs grow while the dataflow is behind instead of queueing), and the latest
/// epoch of any item its workers received from any process (a reader behind it jumps to it, so
/// that a cluster's epochs advance in step).
#[derive(Debug, Default)]
pub struct EpochClock {
    done: AtomicU64,
    floor: AtomicU64,
}

impl EpochClock {
    /// Every epoch below `epoch` is complete at this process's workers.
    pub fn complete_below(&self, epoch: u64) {
        self.done.fetch_max(epoch, Ordering::Relaxed);
    }

    /// Epochs below this are complete at this process's workers.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// A worker of this process received an item of `epoch`.
    pub fn received(&self, epoch: u64) {
        self.floor.fetch_max(epoch, Ordering::Relaxed);
    }

    /// The latest epoch of an item this process's workers received.
    pub fn floor(&self) -> u64 {
        self.floor.load(Ordering::Relaxed)
    }
}

impl ReaderCore {
    /// Waits until the open epoch is within `policy.in_flight` of the dataflow's completed
    /// epochs: a reader that is ahead (a replay, a burst, a followed file far behind its end)
    /// stops there, so the epochs in the dataflow, and all they hold until complete, stay
    /// bounded whatever the input's pace. The open epoch does not change while it waits, and
    /// only its first item can wait (the completed epochs only grow). Called before an item is
    /// stamped as read: the wait is the input's, as a full channel's is.
    pub(super) fn wait_for_the_dataflow(&mut self) {
        let done = || self.clock.done();
        if self.epoch < done().saturating_add(self.policy.in_flight) {
            return;
        }
        let started = Instant::now();
        while self.epoch >= done().saturating_add(self.policy.in_flight) && !self.abort.raised() {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.metrics.add(metrics::READER_WAIT, "", started.elapsed().as_millis() as i64);
    }

    /// The periodic work while an input is quiet: deletions, epochs by age, stop requests.
    pub(super) fn tick(&mut self) -> follow::Wait {
        self.waited = true;
        self.poll_deletions();
        self.age_check();
        if crate::process::stop_requested() || self.abort.raised() {
            follow::Wait::Finish
        } else {
            follow::Wait::Again
        }
    }

    /// Closes the epoch when it is old enough and the dataflow has completed the epochs before
    /// it: while the dataflow is behind, the open epoch grows (up to `policy.records`) instead
    /// of queueing behind others, so a replay or a burst runs in few large epochs and a feed
    /// the dataflow keeps up with in epochs of `max_age`. An epoch that reached its age with the
    /// dataflow behind (held) after one that was held too closes no younger than twice the
    /// age that one closed at: under a lasting backlog epochs double, so a replay of N records
    /// takes O(log N) epochs below the record cap; the first epoch the dataflow is not behind
    /// for closes at `max_age` again. The doubling is for a backlog in the input (a replay, a
    /// followed file far ahead of the reader): an epoch during which the reader waited for its
    /// input (a live feed it has caught up with) closes as soon as the epochs before it are
    /// complete, so its size follows what arrives while the dataflow works on the one before.
    /// (Many small epochs cost more than their records: a sentence crossing its host's
    /// template threshold re-filters its pages once per epoch it crosses in.) In a cluster
    /// also when another process's reader is ahead (its items arrived at a later epoch: jump
    /// to it at once), or when items sent at this very epoch are waiting for this reader to
    /// move on (close it once it is as old as an epoch may be, even with no records of its
    /// own): the cluster's epochs advance in step, no reader holds the others' records back,
    /// and an idle one does not stop the frontier.
    pub(super) fn age_check(&mut self) {
        let caught_up = self.clock.done() >= self.epoch;
        let age = self.epoch_started.elapsed();
        let old = self.in_epoch > 0 && age >= self.policy.max_age;
        if old && !caught_up {
            self.held = true;
        }
        let due = old && caught_up && (!self.held || self.waited || age >= 2 * self.held_age);
        let cluster = self.part.processes > 1;
        let floor = self.clock.floor();
        let behind = floor > self.epoch
            || (floor == self.epoch && self.epoch_opened.elapsed() >= self.policy.max_age);
        if due || (cluster && behind) {
            self.close_epoch();
            return;
        }
        // Idle with a template refresh still ahead of the last items (their template changes
        // take effect there): the epochs advance to it, empty, so that a paused feed's clusters
        // do not wait for its next record.
        let refresh =
            self.items_epoch.map(|e| template::refresh_time(e, self.policy.refresh_epochs));
        if let Some(refresh) = refresh.filter(|&r| r >= self.epoch) {
            if self.in_epoch == 0 && caught_up && self.epoch_opened.elapsed() >= self.policy.max_age
            {
                self.close_epoch_to(refresh + 1);
            }
        }
    }

    pub(super) fn close_epoch(&mut self) {
        self.close_epoch_to(0);
    }

    /// Closes the current epoch; the next is at least `at`.
    pub(super) fn close_epoch_to(&mut self, at: u64) {
        if self.in_epoch > 0 {
            self.items_epoch = Some(self.epoch);
        }
        self.held_age =
            if self.held && !self.waited { self.epoch_started.elapsed() } else { Duration::ZERO };
        self.held = false;
        self.waited = false;
        self.epoch_opened = Instant::now();
        let previous = self.epoch;
        self.epoch = (self.epoch + 1).max(self.clock.floor()).max(at);
        // Process 0's reader chooses the checkpoint epochs: one is due where a multiple of
        // `every` is reached or passed (epochs may jump, see `age_check`), and taken at the
        // first epoch that follows a template refresh (a resumed run rebuilds the state there
        // from the pages alone; `template::checkpoint_epoch`).
        let marks = match &self.checkpoint {
            Some((_, every)) if self.part.process == 0 => {
                let due = self.checkpoint_due || previous / every < self.epoch / every;
                let after_refresh =
                    template::checkpoint_epoch(self.epoch, self.policy.refresh_epochs)
                        == self.epoch;
                self.checkpoint_due = due && !after_refresh;
                due && after_refresh
            }
            _ => false,
        };
        self.in_epoch = 0;
        let now = Instant::now();
        // Several reader threads close the same epochs: the first close and every read count.
        self.live.epoch_closed.lock().expect("epochs").entry(previous).or_insert(now);
        if !self.reads.is_empty() {
            self.live
                .epoch_reads
                .lock()
                .expect("reads")
                .entry(previous)
                .or_default()
                .append(&mut self.reads);
        }
        let expire_before = if self.retention_secs > 0 {
            self.progress.max_date.saturating_sub(self.retention_secs)
        } else {
            0
        };
        // In a cluster every reader writes its positions at each epoch it closes (a checkpoint
        // of process 0's may fall on any).
        let (part, cluster) = (self.part, self.part.processes > 1);
        if self.checkpoint.is_some() && (marks || cluster) {
            self.note_read();
        }
        let checkpoint = match &self.checkpoint {
            Some((dir, _)) => {
                if marks || cluster {
                    let bytes = serde_json::to_vec(&self.progress).expect("progress serializes");
                    let path = reader_path(dir, self.epoch, part.process, part.processes);
                    if let Err(e) = write_atomic(&path, &bytes) {
                        self.checkpoint_failed(path, e);
                    }
                }
                marks
            }
            None => false,
        };
        let next = self.epoch;
        self.send_all(|| Message::Epoch { next, expire_before, checkpoint });
        self.metrics.set(metrics::EPOCHS_CLOSED, "", self.epoch as i64);
    }

    pub(super) fn finish(&mut self) {
        if self.abort.raised() {
            // The run is failing: no last epoch, no checkpoint of a state that is not whole.
            return;
        }
        self.poll_deletions();
        if self.in_epoch > 0 || self.checkpoint.is_some() {
            // The last epoch is always a checkpoint: a stopped run resumes where it ended (the
            // epochs jump to just after the next template refresh).
            let mut at = 0;
            if let Some((_, every)) = &mut self.checkpoint {
                *every = 1;
                at = template::checkpoint_epoch(self.epoch + 1, self.policy.refresh_epochs);
            }
            self.close_epoch_to(at);
        }
        self.note_read();
        if let (Some((dir, _)), true) = (&self.checkpoint, self.part.processes > 1) {
            let bytes = serde_json::to_vec(&self.progress).expect("progress serializes");
            let path = reader_done_path(dir, self.part.process);
            if let Err(e) = write_atomic(&path, &bytes) {
                self.checkpoint_failed(path, e);
            }
        }
        self.send_all(|| Message::End);
    }
}
