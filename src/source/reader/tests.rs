use super::*;

/// `n` uncompressed WARC response records for `http://t.example/pI`.
fn warc(n: usize) -> &'static [u8] {
    let mut out = Vec::new();
    for i in 0..n {
        let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>page {i}</p>");
        out.extend_from_slice(
            format!(
                "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://t.example/p{i}\r\nWARC-Date: 2026-01-01T00:00:{:02}Z\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
                i % 60,
                http.len()
            )
            .as_bytes(),
        );
    }
    Box::leak(out.into_boxed_slice())
}

fn core(progress: ReaderProgress) -> (ReaderCore, crossbeam_channel::Receiver<Message>) {
    let (sender, receiver) = crossbeam_channel::unbounded();
    let registry = Arc::new(Registry::default());
    let policy = EpochPolicy {
        records: u64::MAX,
        max_age: Duration::from_secs(3600),
        refresh_epochs: 1,
        in_flight: u64::MAX,
    };
    let live = Arc::new(Live::new(registry, 0));
    let core = ReaderCore::new(
        vec![sender],
        source::ReaderShare::WHOLE,
        policy,
        (live, Default::default()),
        progress,
        Default::default(),
    );
    (core, receiver)
}

/// One run from `progress`: frames the input from its start, as a restarted reader does,
/// and "crashes" once its position reaches `stop` (or at the end). Returns the position it
/// would have checkpointed and the URLs it handed to the workers.
fn run(bytes: &'static [u8], progress: ReaderProgress, stop: u64) -> (ReaderProgress, Vec<String>) {
    let (mut core, receiver) = core(progress);
    if core.begin("in") {
        let decoder = (Input::Embedded { name: "in", bytes }).open().unwrap();
        let mut framer = source::Framer::new(decoder, 1 << 20);
        while core.progress.inputs.last().unwrap().items < stop {
            let Some(item) = framer.next_record() else {
                core.end_input();
                break;
            };
            core.item(item, "in");
        }
    }
    let urls = receiver
        .try_iter()
        .filter_map(|m| match m {
            Message::Record(_, r) => r.header("WARC-Target-URI").map(str::to_string),
            _ => None,
        })
        .collect();
    (core.progress, urls)
}

/// A reader of `bytes` under `policy`, begun, and the framer of its input.
fn reading(
    bytes: &'static [u8],
    policy: EpochPolicy,
) -> (ReaderCore, crossbeam_channel::Receiver<Message>, source::Framer) {
    let (mut core, receiver) = core(ReaderProgress::default());
    core.policy = policy;
    assert!(core.begin("in"));
    let decoder = (Input::Embedded { name: "in", bytes }).open().unwrap();
    (core, receiver, source::Framer::new(decoder, 1 << 20))
}

/// The epoch marks sent since the last look.
fn marks(receiver: &crossbeam_channel::Receiver<Message>) -> Vec<u64> {
    receiver
        .try_iter()
        .filter_map(|m| if let Message::Epoch { next, .. } = m { Some(next) } else { None })
        .collect()
}

/// Records go to the workers in turn, past a full channel (a worker busy with the dataflow
/// does not hold the reader up), numbered in the order read; with every channel full the
/// reader waits for the first to have room.
#[test]
fn records_go_to_any_worker_with_room_numbered_in_the_order_read() {
    let (mut core, _unused, mut framer) = reading(
        warc(8),
        EpochPolicy {
            records: u64::MAX,
            max_age: Duration::from_secs(3600),
            refresh_epochs: 1,
            in_flight: u64::MAX,
        },
    );
    let (busy_tx, busy) = crossbeam_channel::bounded(1);
    let (free_tx, free) = crossbeam_channel::bounded(8);
    core.senders = vec![busy_tx, free_tx];
    for _ in 0..4 {
        core.item(framer.next_record().expect("a record"), "in");
    }
    let seqs = |r: &crossbeam_channel::Receiver<Message>| -> Vec<u64> {
        r.try_iter()
            .filter_map(|m| if let Message::Record(seq, _) = m { Some(seq) } else { None })
            .collect()
    };
    // The first went to the busy worker and filled its channel: the rest to the other.
    assert_eq!((seqs(&busy), seqs(&free)), (vec![0], vec![1, 2, 3]));
    // Both full: the reader waits, and the record goes to the first worker with room.
    let (busy_tx, busy) = crossbeam_channel::bounded(1);
    let (slow_tx, slow) = crossbeam_channel::bounded(1);
    core.senders = vec![busy_tx, slow_tx];
    core.item(framer.next_record().expect("a record"), "in");
    core.item(framer.next_record().expect("a record"), "in");
    let taker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        let first = slow.recv().expect("a record");
        (first, slow.recv_timeout(Duration::from_secs(10)).expect("the waiting record"))
    });
    core.item(framer.next_record().expect("a record"), "in");
    let (first, waited) = taker.join().expect("taker");
    assert!(matches!(first, Message::Record(5, _)) && matches!(waited, Message::Record(6, _)));
    assert_eq!(seqs(&busy), vec![4]);
}

#[test]
fn an_idle_reader_advances_the_epochs_to_the_template_refresh_after_its_last_items() {
    // Template changes of an epoch take effect at the next refresh (every 4 epochs here):
    // with no more input, the epochs still advance to it, so that they are applied.
    let (mut core, receiver, mut framer) = reading(
        warc(3),
        EpochPolicy { records: 1, max_age: Duration::ZERO, refresh_epochs: 4, in_flight: u64::MAX },
    );
    // An item into epoch 0 (a refresh point itself): nothing is pending once it closes.
    core.item(framer.next_record().expect("a record"), "in");
    assert_eq!(marks(&receiver), vec![1]);
    done(&core, 1);
    core.age_check();
    assert!(
        marks(&receiver).is_empty(),
        "epoch 0's changes took effect at 0: nothing to advance to"
    );
    // Items into epochs 1 and 2: their changes take effect at 4. While the dataflow is
    // behind, the idle reader waits; once it is done, one empty epoch takes it past 4.
    core.item(framer.next_record().expect("a record"), "in");
    core.item(framer.next_record().expect("a record"), "in");
    assert_eq!(marks(&receiver), vec![2, 3]);
    core.age_check();
    assert!(marks(&receiver).is_empty(), "the dataflow is behind");
    done(&core, 3);
    core.age_check();
    assert_eq!(marks(&receiver), vec![5], "to the refresh at 4, and past it");
    done(&core, 5);
    core.age_check();
    assert!(marks(&receiver).is_empty(), "no refresh ahead: the idle reader rests");
    // Refreshes every epoch: never an empty epoch.
    let (mut core, receiver, mut framer) = reading(
        warc(3),
        EpochPolicy { records: 1, max_age: Duration::ZERO, refresh_epochs: 1, in_flight: u64::MAX },
    );
    core.item(framer.next_record().expect("a record"), "in");
    core.item(framer.next_record().expect("a record"), "in");
    done(&core, 2);
    core.age_check();
    assert_eq!(marks(&receiver), vec![1, 2]);
}

/// Reads `records` records an epoch each, with checkpoints due every 2 epochs and template
/// refreshes every `refresh_epochs`, to the end and a stop: the epochs closed (`next`) and
/// those that are checkpoints.
fn checkpointed(
    dir: &std::path::Path,
    records: usize,
    refresh_epochs: u64,
) -> (Vec<u64>, Vec<u64>) {
    let (mut core, receiver, mut framer) = reading(
        warc(records),
        EpochPolicy {
            records: 1,
            max_age: Duration::from_secs(3600),
            refresh_epochs,
            in_flight: u64::MAX,
        },
    );
    core.checkpoint = Some((dir.to_path_buf(), 2));
    while let Some(item) = framer.next_record() {
        core.item(item, "in");
    }
    core.end_input();
    core.finish();
    let epochs: Vec<(u64, bool)> = receiver
        .try_iter()
        .filter_map(|m| {
            if let Message::Epoch { next, checkpoint, .. } = m {
                Some((next, checkpoint))
            } else {
                None
            }
        })
        .collect();
    (
        epochs.iter().map(|&(next, _)| next).collect(),
        epochs.iter().filter(|&&(_, c)| c).map(|&(next, _)| next).collect(),
    )
}

#[test]
fn checkpoints_fall_just_after_a_template_refresh_and_the_last_one_too() {
    // Due every 2 epochs, taken at the first epoch after a refresh (every 3): the state a
    // resumed run rebuilds from the pages alone. The epochs themselves do not move.
    let dir =
        std::env::temp_dir().join(format!("dupflow-reader-checkpoints-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (closed, checkpoints) = checkpointed(&dir, 11, 3);
    // Eleven epochs of one record; at the end, the last is closed to just after the
    // refresh at 12.
    assert_eq!(closed, (1..=11).chain([13]).collect::<Vec<u64>>());
    assert_eq!(checkpoints, vec![4, 7, 10, 13]);
    // Refreshes every epoch: every epoch where a multiple of 2 is reached.
    let (closed, checkpoints) = checkpointed(&dir, 5, 1);
    assert_eq!(closed, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(checkpoints, vec![2, 4, 6]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_old_epoch_waits_for_the_dataflow_and_the_record_cap_does_not() {
    // Epochs grow while the dataflow is behind: an epoch past its age closes only once
    // the epochs before it are complete; `records` closes it whatever the dataflow does.
    let (mut core, receiver, mut framer) = reading(
        warc(30),
        EpochPolicy {
            records: 20,
            max_age: Duration::ZERO,
            refresh_epochs: 1,
            in_flight: u64::MAX,
        },
    );
    let mut next = |core: &mut ReaderCore| {
        let item = framer.next_record().expect("a record");
        core.item(item, "in");
        core.age_check();
    };
    // Nothing is behind at the start: the first record's epoch closes at its age.
    next(&mut core);
    assert_eq!(marks(&receiver), vec![1]);
    // Epoch 0 is not complete: epoch 1 stays open however old, and grows.
    for _ in 0..5 {
        next(&mut core);
    }
    assert_eq!((core.epoch, core.in_epoch), (1, 5));
    assert!(marks(&receiver).is_empty());
    // Epoch 0 done: the next look closes epoch 1.
    done(&core, 1);
    core.age_check();
    assert_eq!(marks(&receiver), vec![2]);
    // Behind again: the record cap still closes epoch 2 at 20 records.
    for _ in 0..24 {
        next(&mut core);
    }
    assert_eq!(marks(&receiver), vec![3]);
    assert_eq!((core.epoch, core.in_epoch), (3, 4));
}

#[test]
fn the_reader_waits_while_epochs_in_flight_are_at_the_bound() {
    // Epochs of two records, two in flight at most: epoch 0 and 1 are read with the
    // dataflow at 0; the first record of epoch 2 waits until epoch 0 is complete.
    let (mut core, receiver, mut framer) = reading(
        warc(6),
        EpochPolicy {
            records: 2,
            max_age: Duration::from_secs(3600),
            refresh_epochs: 1,
            in_flight: 2,
        },
    );
    for _ in 0..4 {
        core.item(framer.next_record().expect("a record"), "in");
    }
    assert_eq!(marks(&receiver), vec![1, 2]);
    let clock = core.clock.clone();
    let completed = std::thread::scope(|scope| {
        let dataflow = scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            let at = Instant::now();
            clock.complete_below(1);
            at
        });
        core.item(framer.next_record().expect("a record"), "in");
        let read = Instant::now();
        (dataflow.join().unwrap(), read)
    });
    assert!(
        completed.1 >= completed.0,
        "epoch 2's first record is read only once epoch 0 is complete"
    );
    let waited = core.metrics.get(metrics::READER_WAIT, "");
    assert!(waited >= 150, "the wait is counted: {waited} ms");
    // Within the bound again: the next record does not wait.
    let before = Instant::now();
    core.item(framer.next_record().expect("a record"), "in");
    assert!(before.elapsed() < Duration::from_millis(100));
    assert_eq!(marks(&receiver), vec![3]);
}

/// A reader core whose epochs close at 1 s of age (never by records), inside input "in",
/// with a framer over four records; its epoch 0 (one record, nothing behind) has closed.
fn epoch_core() -> (ReaderCore, crossbeam_channel::Receiver<Message>, source::Framer) {
    let (mut core, receiver) = core(ReaderProgress::default());
    core.policy = EpochPolicy {
        records: u64::MAX,
        max_age: Duration::from_secs(1),
        refresh_epochs: 1,
        in_flight: u64::MAX,
    };
    assert!(core.begin("in"));
    let decoder = (Input::Embedded { name: "in", bytes: warc(4) }).open().unwrap();
    let mut framer = source::Framer::new(decoder, 1 << 20);
    core.item(framer.next_record().expect("a record"), "in");
    aged(&mut core, 2);
    core.age_check();
    assert_eq!(
        (closes(&receiver), core.held_age),
        (1, Duration::ZERO),
        "epoch 0 closes at its age"
    );
    (core, receiver, framer)
}

/// Epoch marks sent since the last look.
fn closes(receiver: &crossbeam_channel::Receiver<Message>) -> usize {
    receiver.try_iter().filter(|m| matches!(m, Message::Epoch { .. })).count()
}

/// The dataflow has completed the epochs before `n`.
fn done(core: &ReaderCore, n: u64) {
    core.clock.complete_below(n);
}

/// The open epoch's first record was read `secs` seconds ago.
fn aged(core: &mut ReaderCore, secs: u64) {
    core.epoch_started = Instant::now() - Duration::from_secs(secs);
}

/// Epoch 1 (one record) reaches its age of 2 s while epoch 0 is incomplete: held, it closes
/// once epoch 0 is done, and its age sets the doubling for the next.
fn held_epoch(
    core: &mut ReaderCore,
    receiver: &crossbeam_channel::Receiver<Message>,
    record: &mut impl FnMut(&mut ReaderCore),
) {
    record(core);
    aged(core, 2);
    core.age_check();
    assert_eq!(closes(receiver), 0);
    done(core, 1);
    core.age_check();
    assert_eq!(closes(receiver), 1);
    assert!(core.held_age >= Duration::from_secs(2));
}

#[test]
fn epochs_held_behind_the_dataflow_double_and_the_first_not_held_closes_at_its_age() {
    let (mut core, receiver, mut framer) = epoch_core();
    let mut record =
        |core: &mut ReaderCore| core.item(framer.next_record().expect("a record"), "in");
    // Epoch 1 reaches its age with epoch 0 incomplete: held; it closes once epoch 0 is done.
    held_epoch(&mut core, &receiver, &mut record);
    // Epoch 2 is held too: once the dataflow catches up it still waits for twice epoch 1's age.
    record(&mut core);
    aged(&mut core, 3);
    core.age_check();
    done(&core, 2);
    core.age_check();
    assert_eq!(closes(&receiver), 0, "3 s is under twice 2 s");
    aged(&mut core, 5);
    core.age_check();
    assert_eq!(closes(&receiver), 1);
    // Epoch 3: the dataflow is not behind when it reaches its age: it closes then.
    record(&mut core);
    done(&core, 3);
    aged(&mut core, 1);
    core.age_check();
    assert_eq!((closes(&receiver), core.held_age), (1, Duration::ZERO));
}

#[test]
fn an_epoch_the_reader_waited_in_closes_once_the_dataflow_is_done_without_doubling() {
    let (mut core, receiver, mut framer) = epoch_core();
    let mut record =
        |core: &mut ReaderCore| core.item(framer.next_record().expect("a record"), "in");
    // Epoch 1 is held behind the dataflow with a backlog in the input (the reader never
    // waited): it sets the doubling for the next.
    held_epoch(&mut core, &receiver, &mut record);
    // Epochs 2 and 3 are held too, but the reader waits for its input in both (a live
    // feed): each closes once the one before is complete, at 3 s, under twice epoch 1's
    // age, and sets no doubling.
    for epoch in 2..4 {
        record(&mut core);
        assert_eq!(core.tick(), follow::Wait::Again);
        aged(&mut core, 3);
        core.age_check();
        assert_eq!(closes(&receiver), 0, "epoch {epoch} waits for the one before");
        done(&core, epoch);
        aged(&mut core, 3);
        core.age_check();
        assert_eq!(
            (closes(&receiver), core.held_age),
            (1, Duration::ZERO),
            "epoch {epoch} closes without doubling"
        );
    }
}

#[test]
fn resuming_twice_inside_one_input_reads_every_record_once() {
    // A second resume must not skip records never processed.
    let bytes = warc(100);
    let (first, a) = run(bytes, ReaderProgress::default(), 60);
    assert_eq!(first.inputs[0].items, 60);
    let (second, b) = run(bytes, first, 90);
    assert_eq!(second.inputs[0].items, 90, "the position counts the skipped prefix once");
    let (third, c) = run(bytes, second, u64::MAX);
    assert_eq!(third.inputs[0].items, 100, "never past the records the input holds");
    assert!(third.inputs[0].done);
    let all: Vec<String> = a.into_iter().chain(b).chain(c).collect();
    let want: Vec<String> = (0..100).map(|i| format!("http://t.example/p{i}")).collect();
    assert_eq!(all, want, "every record handed on once, in order");
    // A fourth start reads nothing: the input is done.
    let (_, d) = run(bytes, third, u64::MAX);
    assert!(d.is_empty());
}

#[test]
fn a_crash_while_skipping_keeps_the_full_position() {
    // A checkpoint taken before the skip is over (deletions can close epochs meanwhile)
    // states the position of the prefix, not of the part skipped so far.
    let bytes = warc(50);
    let (first, _) = run(bytes, ReaderProgress::default(), 40);
    let (mut core, _receiver) = core(first);
    assert!(core.begin("in"));
    let decoder = (Input::Embedded { name: "in", bytes }).open().unwrap();
    let mut framer = source::Framer::new(decoder, 1 << 20);
    for _ in 0..10 {
        core.item(framer.next_record().unwrap(), "in");
    }
    assert_eq!(core.progress.inputs[0].items, 40);
    let (rest, urls) = run(bytes, core.progress.clone(), u64::MAX);
    assert_eq!(rest.inputs[0].items, 50);
    assert_eq!(urls.first().map(String::as_str), Some("http://t.example/p40"));
    assert_eq!(urls.len(), 10);
}

#[test]
fn the_deletions_offset_counts_complete_lines_only() {
    let dir = std::env::temp_dir().join(format!("dupflow-deletions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("deleted.txt");
    std::fs::write(&path, "http://t.example/p1\nhttp://t.example/p2\nhttp://t.ex").unwrap();
    let (mut core, receiver) = core(ReaderProgress::default());
    core.deletions = Some(path.clone());
    core.poll_deletions();
    assert_eq!(core.progress.deletions_offset, 40);
    // Resumed twice from that offset, the partial line is read once, when complete.
    for _ in 0..2 {
        let (mut again, receiver) = self::core(core.progress.clone());
        again.deletions = Some(path.clone());
        again.poll_deletions();
        assert_eq!(again.progress.deletions_offset, 40);
        assert_eq!(receiver.try_iter().count(), 0);
    }
    std::fs::write(&path, "http://t.example/p1\nhttp://t.example/p2\nhttp://t.example/p3\n")
        .unwrap();
    core.poll_deletions();
    let deleted: Vec<String> = receiver
        .try_iter()
        .filter_map(|m| match m {
            Message::Delete(_, url, _) => Some(url),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["http://t.example/p1", "http://t.example/p2", "http://t.example/p3"]);
    assert_eq!(core.progress.deletions_offset, std::fs::metadata(&path).unwrap().len());
    let _ = std::fs::remove_dir_all(&dir);
}
