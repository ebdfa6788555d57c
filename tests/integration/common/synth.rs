//! Synthetic crawl records: HTML pages made of sentences from a small vocabulary, with planted
//! near-duplicates (variants of a few base documents), as real uncompressed WARC records.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "river", "stone", "market", "garden", "winter", "signal", "harbor", "lantern", "orchard",
    "engine", "meadow", "copper", "violet", "thunder", "canyon", "pilot", "ribbon", "saddle",
    "tunnel", "velvet", "walnut", "anchor", "bishop", "candle", "dragon", "falcon", "glacier",
    "hammer", "island", "jungle", "kettle", "ladder", "mirror", "needle", "oyster", "pepper",
];

fn sentence(rng: &mut Rng) -> String {
    let n = 7 + rng.below(5) as usize;
    let words: Vec<&str> = (0..n).map(|_| WORDS[rng.below(WORDS.len() as u64) as usize]).collect();
    let mut s = words.join(" ");
    s[..1].make_ascii_uppercase();
    s + "."
}

/// `bases` documents of 12 sentences each; variant `v` of base `b` changes `v` of its sentences.
pub struct Corpus {
    bases: Vec<Vec<String>>,
    seed: u64,
}

impl Corpus {
    pub fn new(seed: u64, bases: usize) -> Corpus {
        let mut rng = Rng(seed | 1);
        Corpus {
            bases: (0..bases).map(|_| (0..12).map(|_| sentence(&mut rng)).collect()).collect(),
            seed,
        }
    }

    pub fn text(&self, base: usize, variant: usize) -> Vec<String> {
        let mut rng = Rng((self.seed ^ (base as u64 * 7919 + variant as u64 * 104_729)) | 1);
        let mut text = self.bases[base].clone();
        for k in 0..variant {
            let at = (k * 5 + base) % text.len();
            text[at] = sentence(&mut rng);
        }
        text
    }

    pub fn html(&self, base: usize, variant: usize) -> String {
        let body: String = self.text(base, variant).iter().map(|s| format!("<p>{s}</p>")).collect();
        format!("<html><head><title>doc {base}</title></head><body>{body}</body></html>")
    }
}

/// An uncompressed WARC response record for `url` crawled `secs` seconds after 2026-01-01.
pub fn warc_response(url: &str, secs: u64, record: u64, html: &str) -> Vec<u8> {
    let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{html}", html.len());
    let (day, rest) = (secs / 86_400, secs % 86_400);
    let date = format!(
        "2026-01-{:02}T{:02}:{:02}:{:02}Z",
        1 + day.min(27),
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    let head = format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Date: {date}\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{record:012}>\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
        http.len()
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(http.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out
}
