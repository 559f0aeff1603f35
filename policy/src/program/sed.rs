//! sed: its script can run commands (the `e` command and the `s///e` flag)
//! and read or write files by name (`r`, `R`, `w`, `W`); the scanner here
//! finds both, so an allowed `sed` is judged by what its script does.

use super::{Facts, HiddenPath};
use crate::arg::Arg;
use crate::options::programs::SED;
use crate::options::{Role, Syntax, parse};

/// Reads sed's options as GNU sed does (`-ne SCRIPT`, `--expr=SCRIPT`,
/// `-i.bak`; the table is [`crate::options::programs::SED`]): the scripts
/// given with `-e`, else the first operand, are scanned; `-f` reads a
/// script berth cannot see.
pub(super) fn sed(argv: &[Arg]) -> Facts {
    let parsed = parse(argv, 1, &Syntax::gnu(SED));
    if let Some(p) = &parsed.problem {
        return Facts::opaque(p.describe("sed"));
    }
    if parsed.first_with(Role::Runs).is_some() {
        return Facts::opaque("a sed script from a file berth cannot see");
    }
    let mut scripts: Vec<&Arg> = parsed
        .found
        .iter()
        .filter(|f| f.opt.long == "expression")
        .filter_map(|f| f.value.as_ref())
        .collect();
    if scripts.is_empty()
        && let Some(&first) = parsed.operands.first()
    {
        scripts.push(&argv[first]);
    }
    let mut facts = Facts::default();
    for s in scripts {
        if s.dynamic {
            return Facts::opaque("a sed script from a dynamic string");
        }
        match sed_script(&s.text) {
            Err(reason) => return Facts::opaque(reason),
            Ok(paths) => facts.paths.extend(paths),
        }
    }
    facts
}

/// Scans a sed script: the `e` command and flag run commands; `w`/`W` write
/// and `r`/`R` read the named files.
pub fn sed_script(script: &str) -> Result<Vec<HiddenPath>, String> {
    let b = script.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b';' | b'\r') {
            *i += 1;
        }
    };
    let rest_of_line = |i: &mut usize| -> String {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
        let start = *i;
        while *i < b.len() && b[*i] != b'\n' {
            *i += 1;
        }
        String::from_utf8_lossy(&b[start..*i]).into_owned()
    };
    // Reads a delimited part, honouring backslash escapes; returns false if unterminated.
    let delimited = |i: &mut usize, delim: u8| -> bool {
        while *i < b.len() {
            if b[*i] == b'\\' {
                *i += 2;
                continue;
            }
            if b[*i] == delim {
                *i += 1;
                return true;
            }
            if b[*i] == b'\n' && delim != b'\n' {
                // GNU sed allows newlines in some places; keep going.
            }
            *i += 1;
        }
        false
    };
    let mut guard = 0usize;
    loop {
        guard += 1;
        if guard > b.len() + 8 {
            return Err("a sed script berth could not read".into());
        }
        skip_ws(&mut i);
        if i >= b.len() {
            break;
        }
        // Addresses.
        for _ in 0..2 {
            match b.get(i) {
                Some(c) if c.is_ascii_digit() => {
                    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'~') {
                        i += 1;
                    }
                }
                Some(b'$') => i += 1,
                Some(b'/') => {
                    i += 1;
                    if !delimited(&mut i, b'/') {
                        return Err("a sed address berth could not read".into());
                    }
                    while i < b.len() && matches!(b[i], b'I' | b'M') {
                        i += 1;
                    }
                }
                Some(b'\\') => {
                    let Some(&d) = b.get(i + 1) else {
                        return Err("a sed address berth could not read".into());
                    };
                    i += 2;
                    if !delimited(&mut i, d) {
                        return Err("a sed address berth could not read".into());
                    }
                }
                Some(b'+') | Some(b'~') => {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                _ => {}
            }
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if b.get(i) == Some(&b',') {
                i += 1;
                continue;
            }
            break;
        }
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i] == b'!') {
            i += 1;
        }
        let Some(&cmd) = b.get(i) else { break };
        i += 1;
        match cmd {
            b'{' | b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'l' | b'n' | b'N'
            | b'p' | b'P' | b'x' | b'z' | b'F' | b'q' | b'Q' | b'L' => {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b' ' || b[i] == b'\t') {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b':' | b'b' | b't' | b'T' | b'v' => {
                while i < b.len() && b[i] != b'\n' && b[i] != b';' && b[i] != b'}' {
                    i += 1;
                }
            }
            b'a' | b'i' | b'c' => {
                // Text to the end of the line (with backslash-newline continuation).
                while i < b.len() {
                    if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\n' {
                        break;
                    }
                    i += 1;
                }
            }
            b'r' | b'R' => {
                let f = rest_of_line(&mut i);
                paths.push(HiddenPath {
                    path: Some(f),
                    writes: false,
                });
            }
            b'w' | b'W' => {
                let f = rest_of_line(&mut i);
                paths.push(HiddenPath {
                    path: Some(f),
                    writes: true,
                });
            }
            b'e' => return Err("a sed script with the `e` command runs a command".into()),
            b's' | b'y' => {
                let Some(&delim) = b.get(i) else {
                    return Err("a sed `s` command berth could not read".into());
                };
                if delim == b'\n' || delim == b'\\' {
                    return Err("a sed `s` command berth could not read".into());
                }
                i += 1;
                if !delimited(&mut i, delim) || !delimited(&mut i, delim) {
                    return Err("a sed `s` command berth could not read".into());
                }
                if cmd == b's' {
                    while i < b.len() {
                        match b[i] {
                            b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => i += 1,
                            b'e' => return Err("a sed `s///e` runs the result as a command".into()),
                            b'w' => {
                                i += 1;
                                let f = rest_of_line(&mut i);
                                paths.push(HiddenPath {
                                    path: Some(f),
                                    writes: true,
                                });
                                break;
                            }
                            _ => break,
                        }
                    }
                }
            }
            _ => {
                return Err(format!(
                    "a sed command berth does not know (`{}`)",
                    cmd as char
                ));
            }
        }
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        let cases: &[(&str, Result<usize, ()>)] = &[
            ("s/foo/bar/g", Ok(0)),
            ("s|/usr|/opt|", Ok(0)),
            ("1d", Ok(0)),
            ("/^#/d;s/a/b/", Ok(0)),
            ("$!N;P;D", Ok(0)),
            ("10q", Ok(0)),
            ("s/x/y/w /tmp/out", Ok(1)),
            ("w out.txt", Ok(1)),
            ("r /etc/passwd", Ok(1)),
            ("1e id", Err(())),
            ("s/.*/id/e", Err(())),
            ("e", Err(())),
            ("/start/,/end/{s/a/b/}", Ok(0)),
            ("y/abc/xyz/", Ok(0)),
            ("a\\text", Ok(0)),
            ("1i header", Ok(0)),
        ];
        for (script, want) in cases {
            let got = sed_script(script).map(|p| p.len()).map_err(|_| ());
            assert_eq!(got, *want, "{script}");
        }
    }
}
