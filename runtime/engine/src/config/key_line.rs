//! Where a key stands in `berth.toml`, so an error names its line
//! (`berth.toml:12: sandbox.network: …`) even for values serde accepted.

/// The 1-based line of `key` in `[table]`, when it is there.
pub(crate) fn find_key_line(text: &str, table: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            current = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        } else if current == table && t.split_once('=').is_some_and(|(k, _)| k.trim() == key) {
            return Some(i + 1);
        }
    }
    None
}
