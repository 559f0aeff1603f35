//! sed: its script can run commands (the `e` command and the `s///e` flag)
//! and read or write files by name (`r`, `R`, `w`, `W`); the scanner here
//! finds both, so an allowed `sed` is judged by what its script does.

use super::{Facts, HiddenPath};
use crate::arg::Arg;

/// sed options that read the script from a file berth cannot see.
const SED_SCRIPT_FROM_FILE: &[&str] = &[
    "-f",     // the script from a file (`e` in it runs commands)
    "--file", // the same, long
];

pub(super) fn sed(args: &[Arg]) -> Facts {
    let mut facts = Facts::default();
    let mut scripts: Vec<&Arg> = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    let mut first_operand: Option<&Arg> = None;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if !a.dynamic && t.starts_with('-') && t.len() > 1 {
            let name = t.split('=').next().unwrap_or(t);
            match name {
                "-e" | "--expression" => {
                    explicit = true;
                    if let Some(v) = t.strip_prefix("--expression=") {
                        let _ = v;
                        scripts.push(a);
                        i += 1;
                    } else {
                        if let Some(s) = args.get(i + 1) {
                            scripts.push(s);
                        }
                        i += 2;
                    }
                    continue;
                }
                _ if SED_SCRIPT_FROM_FILE.contains(&name) => {
                    return Facts::opaque("a sed script from a file berth cannot see");
                }
                "-l" | "--line-length" => {
                    i += if t.len() == 2 { 2 } else { 1 };
                    continue;
                }
                _ => {
                    if t.starts_with("-e") && t.len() > 2 {
                        explicit = true;
                        scripts.push(a);
                    } else if !t.starts_with("--")
                        && (t.starts_with("-f") || t[1..].contains('f') && !t.contains('i'))
                    {
                        return Facts::opaque("a sed script from a file berth cannot see");
                    }
                    i += 1;
                    continue;
                }
            }
        }
        if first_operand.is_none() {
            first_operand = Some(a);
        }
        i += 1;
    }
    if !explicit && let Some(s) = first_operand {
        scripts.push(s);
    }
    for s in scripts {
        if s.dynamic {
            return Facts::opaque("a sed script from a dynamic string");
        }
        let text = s
            .text
            .strip_prefix("--expression=")
            .or_else(|| s.text.strip_prefix("-e"))
            .filter(|_| s.text.starts_with('-'))
            .unwrap_or(&s.text);
        match sed_script(text) {
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
