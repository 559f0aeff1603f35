//! Prints the segments berth sees in a command line (`cargo run -p
//! berth-policy --example segments_dump -- 'COMMAND'`), for comparing with
//! what bash runs.
fn main() {
    let input = std::env::args().nth(1).unwrap_or_default();
    let a = berth_policy::segment::analyze(input.as_bytes(), "/work", "/home/agent");
    for s in &a.segments {
        let argv: Vec<&str> = s.argv.iter().map(|a| a.text.as_str()).collect();
        println!("{:?} opaque={:?} kind={:?}", argv, s.opaque, s.kind);
    }
    println!("parse_error={:?}", a.parse_error);
}
