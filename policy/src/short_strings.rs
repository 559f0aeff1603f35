//! Test support: every string of a few bytes, for the tests that hold a
//! fast reading of a string equal to the plain reading it replaced
//! (`plain_path`, `path_words`, `scope`, `protected`, `name_fold`,
//! `program::compilers`, `substring`).

/// Calls `check` with every string of at most `max_len` bytes, each byte
/// one of `bytes` (ASCII).
pub(crate) fn each(bytes: &[u8], max_len: u32, mut check: impl FnMut(&str)) {
    let mut s = Vec::new();
    for len in 0..=max_len {
        for mut n in 0..bytes.len().pow(len) {
            s.clear();
            for _ in 0..len {
                s.push(bytes[n % bytes.len()]);
                n /= bytes.len();
            }
            check(std::str::from_utf8(&s).expect("ASCII"));
        }
    }
}
