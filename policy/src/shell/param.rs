//! Where the parameter of a `${…}` ends, as bash reads it.
//!
//! The parameter is a name, a run of digits or one special character
//! (`@ * # ? - $ !`), after an optional `#` (length) or `!` (indirection);
//! the operator follows. So `${x#$(cmd)}`, `${x-$(cmd)}` and `${x?$(cmd)}`
//! hold a substitution that runs, not a parameter named `x#$`.

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_special(b: u8) -> bool {
    matches!(b, b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!')
}

/// The end of the parameter of the `${…}` whose text starts at `start`
/// (after `${`). Two forms keep their suffix with the name, as the rest of
/// the analysis reads them: a transformation `${x@P}` and the names with a
/// prefix `${!x*}`, `${!x@}`.
pub(super) fn name_end(src: &[u8], start: usize) -> usize {
    let at = |i: usize| src.get(i).copied();
    let mut i = start;
    if matches!(at(i), Some(b'#' | b'!'))
        && at(i + 1).is_some_and(|b| is_name_char(b) || is_special(b))
    {
        i += 1;
    }
    match at(i) {
        Some(b) if is_name_start(b) => {
            while at(i).is_some_and(is_name_char) {
                i += 1;
            }
        }
        Some(b) if b.is_ascii_digit() => {
            while at(i).is_some_and(|b| b.is_ascii_digit()) {
                i += 1;
            }
        }
        Some(b) if is_special(b) => i += 1,
        _ => {}
    }
    if at(i) == Some(b'@') && at(i + 1).is_some_and(|b| b.is_ascii_alphabetic()) {
        i += 2;
    } else if at(start) == Some(b'!') && i > start + 1 && matches!(at(i), Some(b'*' | b'@')) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::name_end;

    fn name(s: &str) -> &str {
        &s[..name_end(s.as_bytes(), 0)]
    }

    #[test]
    fn parameters_end_where_bash_ends_them() {
        for (text, want) in [
            ("x#$(c)}", "x"),
            ("x-$(c)}", "x"),
            ("x?$(c)}", "x"),
            ("x:-y}", "x"),
            ("#x}", "#x"),
            ("#}", "#"),
            ("##}", "##"),
            ("!x}", "!x"),
            ("!}", "!"),
            ("!x*}", "!x*"),
            ("!x@}", "!x@"),
            ("x@P}", "x@P"),
            ("@:1}", "@"),
            ("10}", "10"),
            ("$}", "$"),
            ("-}", "-"),
            ("a[i]}", "a"),
            ("!a[@]}", "!a"),
        ] {
            assert_eq!(name(text), want, "{text}");
        }
    }
}
