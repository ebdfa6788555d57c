//! WACZ archives (Browsertrix Crawler, ArchiveWeb.page, py-wacz): a ZIP holding a crawl's WARC
//! files under `archive/`, with indexes and a page list beside them. An archive is one input:
//! its WARC members, in the archive's order, read in place as one stream (a stored member is a
//! range of the file; a deflated one is inflated on the way) whose records are the members'.
//! The members are all gzip-compressed WARC (as the format's writers make them) or all plain.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use flate2::read::DeflateDecoder;

use super::SourceError;

/// The local file header's signature: what every ZIP file starts with.
const ZIP_MAGIC: &[u8; 4] = b"PK\x03\x04";
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether the file at `path` is a ZIP archive (a WACZ, whatever its name).
pub fn is_archive(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && &magic == ZIP_MAGIC
}

/// One WARC member of an archive: where its data starts in the file, its stored length, and
/// whether it is deflated in the ZIP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    start: u64,
    stored: u64,
    deflated: bool,
}

/// The WARC members of the archive at `path`, in the archive's order: the files whose names end
/// in `.warc` or `.warc.gz` (WACZ keeps them under `archive/`).
pub fn members(path: &Path) -> Result<Vec<Member>, SourceError> {
    let bad = |message: String| SourceError::Archive { path: path.to_path_buf(), message };
    let file =
        File::open(path).map_err(|error| SourceError::Open { path: path.to_path_buf(), error })?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut members = Vec::new();
    for index in 0..archive.len() {
        let entry = archive.by_index_raw(index).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().map_err(|e| bad(e.to_string()))?.to_string();
        let lower = name.to_ascii_lowercase();
        if entry.is_dir() || !(lower.ends_with(".warc") || lower.ends_with(".warc.gz")) {
            continue;
        }
        let deflated = match entry.compression() {
            zip::CompressionMethod::Stored => false,
            // The crate's own inflater is not built in (a feature): flate2 reads the member.
            method if method == zip::CompressionMethod::DEFLATE => true,
            other => {
                return Err(bad(format!(
                    "{name} is compressed with {other}, not stored or deflated"
                )))
            }
        };
        let start = entry.data_start().ok_or_else(|| bad(format!("{name}: no data offset")))?;
        members.push(Member { name, start, stored: entry.compressed_size(), deflated });
    }
    if members.is_empty() {
        return Err(bad("no WARC file in it (a WACZ holds them under archive/)".into()));
    }
    Ok(members)
}

/// Bytes of the archive's WARC members as stored: what reading it reads (progress).
pub fn stored_bytes(path: &Path) -> Option<u64> {
    members(path).ok().map(|members| members.iter().map(|m| m.stored).sum())
}

/// The archive's WARC members one after the other, as a single stream of their bytes (each
/// inflated if the ZIP deflated it; a gzip member stays gzip, to the decoder's reading).
pub struct Members {
    path: PathBuf,
    left: std::collections::VecDeque<Member>,
    current: Option<Box<dyn Read + Send>>,
    /// Whether the members are gzip-compressed (from the first): all must be alike.
    gzip: Option<bool>,
}

impl Members {
    pub fn open(path: &Path) -> Result<Members, SourceError> {
        Ok(Members {
            path: path.to_path_buf(),
            left: members(path)?.into(),
            current: None,
            gzip: None,
        })
    }

    fn next_member(&mut self) -> io::Result<bool> {
        let Some(member) = self.left.pop_front() else { return Ok(false) };
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(member.start))?;
        let stored = file.take(member.stored);
        let mut reader: Box<dyn Read + Send> =
            if member.deflated { Box::new(DeflateDecoder::new(stored)) } else { Box::new(stored) };
        // Its first two bytes tell gzip from plain; they are handed on in front of the rest.
        let mut head = [0u8; 2];
        let mut got = 0;
        while got < 2 {
            match reader.read(&mut head[got..])? {
                0 => break,
                n => got += n,
            }
        }
        let gzip = got == 2 && head == GZIP_MAGIC;
        if got > 0 && *self.gzip.get_or_insert(gzip) != gzip {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: {} is {}, the members before it are not: a WACZ's WARC files are read as \
                     one stream, all gzip-compressed or all plain",
                    self.path.display(),
                    member.name,
                    if gzip { "gzip-compressed" } else { "plain" }
                ),
            ));
        }
        self.current = Some(Box::new(io::Cursor::new(head[..got].to_vec()).chain(reader)));
        Ok(true)
    }
}

impl Read for Members {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(current) = self.current.as_mut() {
                match current.read(buf)? {
                    0 => self.current = None,
                    n => return Ok(n),
                }
            }
            if !self.next_member()? {
                return Ok(0);
            }
        }
    }
}
