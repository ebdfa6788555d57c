//! The method's counters: what the graph observes (`dupflow_operators::graph::Observer`),
//! into the registry's metrics.

use dupflow_operators::graph::Observer;
use dupflow_operators::verify::VerifyStats;

use super::Registry;

/// Gauges move once a batch, not once an update (the registry takes a lock).
impl Observer for Registry {
    fn filtered(&self, pages: i64) {
        self.add(super::STAGE_PAGES, "filtered", pages);
    }

    fn template_sentences(&self, host: u64, change: i64) {
        self.add(super::TEMPLATE_SENTENCES, &self.host_name(host), change);
    }

    fn exact_duplicates(&self, change: i64) {
        self.add(super::EXACT_DUPLICATES, "", change);
    }

    fn oversized_fingerprints(&self, change: i64) {
        self.add(super::OVERSIZED_FINGERPRINTS, "", change);
    }

    /// Each call brings the groups (or sets) of one time, summed here so that each metric
    /// takes its lock once.
    fn verification(&self, all: &[VerifyStats]) {
        let mut sum = VerifyStats::default();
        // A group change that compared nothing (a page alone in a group) only moves the gauges.
        let compared = || all.iter().filter(|stats| stats.pages > 0);
        for stats in all {
            sum.accepted += stats.accepted;
            sum.rejected += stats.rejected;
            sum.pruned += stats.pruned;
            sum.computed += stats.computed;
            sum.groups += stats.groups;
            sum.entries += stats.entries;
            sum.cost_capped += stats.cost_capped;
            sum.set_cuts += stats.set_cuts;
            sum.cache_clears += stats.cache_clears;
            sum.pages += stats.pages;
        }
        if sum.pages > 0 {
            self.observe_all(
                super::STAGE_SECONDS,
                "verify",
                compared().map(|stats| stats.nanos as f64 / 1e9),
            );
            self.observe_all(super::SET_PAGES, "", compared().map(|stats| stats.pages as f64));
            self.add(super::STAGE_PAGES, "clustered", sum.pages as i64);
        }
        self.add(super::VERIFICATIONS, "accepted", sum.accepted as i64);
        // The pruned pairs are counted among the rejected by the scans that met them.
        self.add(super::VERIFICATIONS, "rejected", sum.rejected.saturating_sub(sum.pruned) as i64);
        if sum.pruned > 0 {
            self.add(super::VERIFICATIONS, "pruned", sum.pruned as i64);
        }
        if sum.computed > 0 {
            self.add(super::COMPARISONS, "", sum.computed as i64);
        }
        if sum.groups != 0 {
            self.add(super::GROUPS_HELD, "", sum.groups);
        }
        if sum.entries != 0 {
            self.add(super::GROUP_ENTRIES, "", sum.entries);
        }
        if sum.cost_capped > 0 {
            self.add(super::CAPS, "max_diff_distance", sum.cost_capped as i64);
        }
        if sum.set_cuts > 0 {
            self.add(super::CAPS, "max_set_pages", sum.set_cuts as i64);
        }
        if sum.cache_clears > 0 {
            self.add(super::CAPS, "verdict_cache_entries", sum.cache_clears as i64);
        }
    }
}
