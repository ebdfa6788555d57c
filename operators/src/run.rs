//! What a run gives its operators beside their inputs: the stores that keep what is too large
//! to hold (a page's words, held pages, members' contents), the spill of large maps, and the
//! totals its operators' gauges report into.
//!
//! The streaming system makes one `Runtime` a run and hands it to every worker's dataflow in
//! timely's worker configuration (`Runtime::configure`), as differential-dataflow hands its own
//! settings; an operator takes it from its scope when it is built (`Runtime::of`). Nothing of
//! it is process-wide: two runs of one process have two.
//!
//! Values that come from elsewhere (a checkpoint, another process of a cluster) arrive in
//! memory; the operator that keeps one puts it in the run's store (`Words::stored_in`,
//! `Kept::keep_in`).

use std::sync::Arc;

use timely::dataflow::Scope;
use timely::progress::Timestamp;
use timely::WorkerConfig;

use crate::ingest::page::{Content, Page};
use crate::runtime::footprint::Totals;
use crate::runtime::spill::Spill;
use crate::runtime::store::{Store, WordStore};

/// One run's resources (see the module's documentation).
#[derive(Debug, Default)]
pub struct Runtime {
    /// The pages' words (`run.words = "disk"`).
    pub words: Option<Arc<WordStore>>,
    /// Held pages: the source's and the template filter's (`run.pages = "disk"`).
    pub pages: Option<Arc<Store<Page>>>,
    /// Group members' contents (`run.pages = "disk"`).
    pub contents: Option<Arc<Store<Content>>>,
    /// Where the indexes' entries of one page spill (`run.pages = "disk"`).
    pub spill: Option<Arc<Spill>>,
    /// The bytes each structure holds, over the run's workers.
    pub footprint: Arc<Totals>,
}

/// The key of the runtime in timely's worker configuration.
const KEY: &str = "dupflow/runtime";

impl Runtime {
    /// A run that holds everything in memory.
    pub fn in_memory() -> Arc<Runtime> {
        Arc::new(Runtime::default())
    }

    /// Hands `runtime` to the dataflows of the workers `config` starts.
    pub fn configure(runtime: &Arc<Runtime>, config: &mut WorkerConfig) {
        config.set(KEY.to_string(), runtime.clone());
    }

    /// The run's runtime, as its worker's configuration holds it; a dataflow built outside a
    /// run (a test's) holds everything in memory.
    pub fn of<T: Timestamp>(scope: &Scope<'_, T>) -> Arc<Runtime> {
        scope.worker().config().get::<Arc<Runtime>>(KEY).cloned().unwrap_or_else(Runtime::in_memory)
    }

    /// `page`'s words in the run's word store, if it has one (a page parsed here or read from
    /// elsewhere, as its holder takes it).
    pub fn keep_words(&self, page: &mut Page) {
        if self.words.is_some() && !page.words.is_stored() {
            page.words = std::mem::take(&mut page.words).stored_in(self.words.as_ref());
        }
    }
}
