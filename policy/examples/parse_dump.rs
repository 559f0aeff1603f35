fn main() {
    let input = std::env::args().nth(1).unwrap_or_default();
    let s = berth_policy::shell::parse(input.as_bytes());
    println!("{:#?}", s);
}
