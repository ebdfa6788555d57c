//! Prints the text blocks dupflow sees for the pages whose URL contains a pattern.
//! `cargo run --release --example blocks WARC PATTERN`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let input = dupflow::source::expand(&args[..1]).expect("input").remove(0);
    dupflow::source::read_records(&input, 64 << 20, |item| {
        let Ok(record) = item else { return };
        if let Ok((dupflow::source::http::Outcome::Page(doc), _)) =
            dupflow::source::http::interpret(&record, 2 << 20)
        {
            if doc.url.contains(&args[1]) {
                println!("== {}", doc.url);
                for block in dupflow_operators::ingest::html::strip(&doc.html).blocks {
                    println!("  | {block}");
                }
            }
        }
    })
    .expect("open");
}
