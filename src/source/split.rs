//! Record ranges: one large WARC file read by several processes of a cluster. A per-record
//! gzip file cut where a gzip member starts, or an uncompressed WARC file cut where a record
//! starts, is a WARC file of its own; each range is read as one, and the ranges together hold
//! every byte of the file once.
//!
//! A cut is moved forward from its nominal offset to the first place a record starts: for gzip,
//! a member header whose member inflates to `WARC/`; uncompressed, `\r\n\r\nWARC/` whose header's
//! Content-Length ends exactly at the record terminator, followed by the end of the file or the
//! next record. Every process computes the same cuts from the same bytes. Other formats (a
//! whole-file gzip stream, LZ4, zstd, ARC, text corpora) are not cut: one process reads them.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

const GZIP_MEMBER: [u8; 3] = [0x1f, 0x8b, 0x08];
const WINDOW: usize = 1 << 20;
/// How far past its nominal offset a cut is looked for (no record start that far: no cut).
const MAX_SCAN: u64 = 64 << 20;
/// A header this long without its blank line is no header.
const MAX_HEADER: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gzip,
    Plain,
}

/// The byte ranges `[start, end)` that split `path` into about `parts` pieces at record starts:
/// `[(0, size)]` when the file cannot be cut (or `parts` is 1).
pub fn record_ranges(path: &Path, parts: usize) -> io::Result<Vec<(u64, u64)>> {
    let size = std::fs::metadata(path)?.len();
    let mut file = File::open(path)?;
    let mut magic = [0u8; 5];
    let kind = match file.read(&mut magic)? {
        n if n >= 3 && magic[..3] == GZIP_MEMBER => Kind::Gzip,
        5 if &magic == b"WARC/" => Kind::Plain,
        _ => return Ok(vec![(0, size)]),
    };
    let mut cuts = vec![0];
    for i in 1..parts.max(1) {
        let nominal = size * i as u64 / parts as u64;
        if let Some(cut) =
            next_record(&mut file, nominal.max(*cuts.last().expect("a cut")), size, kind)?
        {
            if cut > *cuts.last().expect("a cut") && cut < size {
                cuts.push(cut);
            }
        }
    }
    cuts.push(size);
    Ok(cuts.windows(2).map(|w| (w[0], w[1])).collect())
}

/// The first offset at or after `from` where a record starts.
fn next_record(file: &mut File, from: u64, size: u64, kind: Kind) -> io::Result<Option<u64>> {
    let pattern: &[u8] = match kind {
        Kind::Gzip => &GZIP_MEMBER,
        Kind::Plain => b"\r\n\r\nWARC/",
    };
    let mut at = from;
    let mut window = vec![0u8; WINDOW];
    while at < size.min(from + MAX_SCAN) {
        file.seek(SeekFrom::Start(at))?;
        let n = read_full(file, &mut window)?;
        if n < pattern.len() {
            return Ok(None);
        }
        for hit in memchr::memmem::find_iter(&window[..n], pattern) {
            let candidate = at + hit as u64 + if kind == Kind::Plain { 4 } else { 0 };
            let valid = match kind {
                Kind::Gzip => member_is_warc(file, candidate)?,
                Kind::Plain => record_frames(file, candidate, size)?,
            };
            if valid {
                return Ok(Some(candidate));
            }
        }
        // The next window overlaps this one by the pattern's length less one.
        at += (n - (pattern.len() - 1)) as u64;
    }
    Ok(None)
}

fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Whether a gzip member starts at `offset` and inflates to a WARC record.
fn member_is_warc(file: &mut File, offset: u64) -> io::Result<bool> {
    file.seek(SeekFrom::Start(offset))?;
    let mut head = [0u8; 5];
    let mut member = flate2::read::GzDecoder::new(file.take(MAX_HEADER as u64));
    Ok(member.read_exact(&mut head).is_ok() && &head == b"WARC/")
}

/// Whether an uncompressed record starting at `offset` frames exactly: its Content-Length ends
/// at `\r\n\r\n`, followed by the end of the file or the next `WARC/` record.
fn record_frames(file: &mut File, offset: u64, size: u64) -> io::Result<bool> {
    file.seek(SeekFrom::Start(offset))?;
    let mut head = vec![0u8; MAX_HEADER];
    let n = read_full(file, &mut head)?;
    let Some(end) = memchr::memmem::find(&head[..n], b"\r\n\r\n") else { return Ok(false) };
    let header = String::from_utf8_lossy(&head[..end]);
    let length = header.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<u64>().ok())?
    });
    let Some(length) = length else { return Ok(false) };
    let terminator = offset + end as u64 + 4 + length;
    if terminator + 4 > size {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(terminator))?;
    let mut tail = [0u8; 9];
    let k = read_full(file, &mut tail)?;
    Ok(&tail[..4] == b"\r\n\r\n" && (k == 4 || &tail[4..9] == b"WARC/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn record(i: usize) -> Vec<u8> {
        // A payload that holds what a naive cut would take for a record start.
        let body =
            format!("<p>page {i}</p>\r\n\r\nWARC/1.0 inside a page {}", "x".repeat(i * 37 % 500));
        format!(
            "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: {}\r\n\r\n{body}\r\n\r\n",
            body.len()
        )
        .into_bytes()
    }

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dupflow-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Record starts: the offsets a cut may fall on.
    fn starts(records: &[Vec<u8>], gzip: bool) -> (Vec<u8>, Vec<u64>) {
        let (mut out, mut starts) = (Vec::new(), Vec::new());
        for r in records {
            starts.push(out.len() as u64);
            if gzip {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(r).unwrap();
                out.extend(e.finish().unwrap());
            } else {
                out.extend_from_slice(r);
            }
        }
        (out, starts)
    }

    #[test]
    fn ranges_cover_the_file_once_and_cut_only_at_record_starts() {
        let records: Vec<Vec<u8>> = (0..300).map(record).collect();
        for gzip in [true, false] {
            let (bytes, starts) = starts(&records, gzip);
            let path = temp(if gzip { "a.warc.gz" } else { "a.warc" }, &bytes);
            for parts in [1, 2, 3, 7] {
                let ranges = record_ranges(&path, parts).unwrap();
                assert_eq!(ranges.len(), parts, "gzip {gzip}, {parts} parts: {ranges:?}");
                assert_eq!(ranges.first().unwrap().0, 0);
                assert_eq!(ranges.last().unwrap().1, bytes.len() as u64);
                for w in ranges.windows(2) {
                    assert_eq!(w[0].1, w[1].0, "ranges are contiguous");
                    assert!(
                        starts.contains(&w[1].0),
                        "gzip {gzip}: cut {} is a record start",
                        w[1].0
                    );
                }
            }
        }
    }

    #[test]
    fn a_whole_file_gzip_stream_is_not_cut() {
        let all: Vec<u8> = (0..200).flat_map(record).collect();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&all).unwrap();
        let path = temp("whole.warc.gz", &e.finish().unwrap());
        let size = std::fs::metadata(&path).unwrap().len();
        assert_eq!(record_ranges(&path, 4).unwrap(), vec![(0, size)]);
    }
}
