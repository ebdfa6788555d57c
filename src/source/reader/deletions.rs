//! Deletions: the URLs appended to the deletions file, read as it grows, each sent to its
//! owner as a retraction dated by the feed's newest crawl date.

use std::time::Instant;

use super::*;

impl ReaderCore {
    pub(super) fn delete(&mut self, url: &str) {
        self.wait_for_the_dataflow();
        let as_of = self.progress.max_date;
        self.dispatch(|seq| Message::Delete(seq, url.to_string(), as_of));
        if self.in_epoch == 0 {
            self.epoch_started = Instant::now();
        }
        self.in_epoch += 1;
    }

    /// Reads the complete lines added to the deletions file since the last look.
    pub(super) fn poll_deletions(&mut self) {
        let Some(path) = self.deletions.clone() else { return };
        let Ok(mut file) = std::fs::File::open(&path) else { return };
        use std::io::{Read as _, Seek as _};
        if file
            .seek(std::io::SeekFrom::Start(
                self.progress.deletions_offset + self.pending_deletion.len() as u64,
            ))
            .is_err()
        {
            return;
        }
        let mut fresh = Vec::new();
        if file.read_to_end(&mut fresh).is_err() {
            return;
        }
        self.pending_deletion.extend_from_slice(&fresh);
        while let Some(end) = memchr::memchr(b'\n', &self.pending_deletion) {
            let line: Vec<u8> = self.pending_deletion.drain(..=end).collect();
            self.progress.deletions_offset += line.len() as u64;
            let url = String::from_utf8_lossy(&line).trim().to_string();
            if !url.is_empty() && !url.starts_with('#') {
                self.delete(&url);
            }
        }
    }
}
