//! Prints what dupflow reads from a WARC: one line per record or skipped stretch.
//! `cargo run --example inspect FILE`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    for input in dupflow::source::expand(&args).expect("inputs") {
        dupflow::source::read_records(&input, 64 << 20, |item| match item {
            Ok(record) => {
                let outcome = dupflow::source::http::interpret(&record, 2 << 20);
                let what = match outcome {
                    Ok((dupflow::source::http::Outcome::Page(d), q)) => {
                        format!("page {} ({}, {} bytes, {q:?})", d.url, d.charset, d.html.len())
                    }
                    Ok((o, _)) => format!("{o:?}").chars().take(100).collect(),
                    Err(e) => format!("error {e}"),
                };
                println!("{:>8} {:<9} {}", record.offset, record.type_name(), what);
            }
            Err(e) => println!("skipped: {e}"),
        })
        .expect("open");
    }
}
