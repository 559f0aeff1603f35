//! Sets of bytes as tables of 256 flags, built at compile time: the scans
//! over every byte of a word (is it plain, may it fold, may it expand)
//! look each byte up once instead of comparing it with each byte of the
//! set in turn.

/// The set of `bytes`, and of every non-ASCII byte when `non_ascii`.
pub(crate) const fn byte_set(bytes: &[u8], non_ascii: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    if non_ascii {
        let mut b = 0x80;
        while b < 256 {
            table[b] = true;
            b += 1;
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::byte_set;

    #[test]
    fn holds_the_bytes_given_and_no_other() {
        let set = byte_set(b"/*", true);
        for b in 0..=u8::MAX {
            assert_eq!(
                set[usize::from(b)],
                b == b'/' || b == b'*' || b >= 0x80,
                "{b:#x}"
            );
        }
        assert!(byte_set(b"", false).iter().all(|&x| !x));
    }
}
