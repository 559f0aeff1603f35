//! Quote removal and escapes compared with real bash.
//!
//! For many generated static words — `'…'`, `"…"` with escapes, `$'…'` with
//! `\x`, `\u`, `\n`, `\0NN`, `\c` escapes, `$"…"`, backslash escapes, line
//! continuations inside words, brace expansion — the arguments berth's
//! parser produces (`segment::analyze` on `printf-args WORDS`, read from
//! `Segment.argv`) must be the ones bash passes (`printf '%s\0' WORDS` under
//! `set -f`, with a clean environment). The classic evasion spellings of
//! `rm` are in the table too.
//!
//! Deliberate differences are listed in `known_difference` with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

use berth_policy::segment::analyze;

/// Spellings every agent-tool bypass report tries first, and what bash
/// makes of them.
const CLASSIC: &[(&str, &[&str])] = &[
    ("'rm'", &["rm"]),
    ("\\rm", &["rm"]),
    ("r\"\"m", &["rm"]),
    ("r''m", &["rm"]),
    ("$'\\x72\\x6d'", &["rm"]),
    ("$'\\162\\155'", &["rm"]),
    ("$'\\u0072m'", &["rm"]),
    ("r\\\nm", &["rm"]),
    ("\"r\\\nm\"", &["rm"]),
    ("'r\\\nm'", &["r\\\nm"]),
    ("$\"rm\"", &["rm"]),
    ("\"r\"'m'", &["rm"]),
    ("{rm,}", &["rm"]),
    ("r{m,}", &["rm", "r"]),
    ("$'r\\x6d'", &["rm"]),
    ("$'\\cR'", &["\u{12}"]),
    ("\\r\\m", &["rm"]),
    ("'-rf'", &["-rf"]),
    ("-\\r\\f", &["-rf"]),
    ("/\"\"", &["/"]),
    ("'/'", &["/"]),
    ("$'/'", &["/"]),
    ("$'rm\\0x'", &["rm"]),
    ("$'r\\x00a'$'m\\c@b'", &["rm"]),
    ("$'\\c'", &["\\c"]),
    ("$'\\c?'", &["\u{7f}"]),
    ("$'a\\c\\\\b'", &["a\u{1c}b"]),
    ("git{,}", &["git", "git"]),
    ("{,}", &[]),
    ("$'\\x{72}\\x{6d}'", &["rm"]),
    ("$'\\x{4142}'", &["B"]),
    ("$'\\x{a,b}'", &["\n,b}"]),
    ("{,''}", &[""]),
    ("\"\"{,}", &["", ""]),
];

/// bash's arguments for each word, in one bash run.
fn bash_args(words: &[String]) -> Vec<Vec<Vec<u8>>> {
    const SEP: &str = "::berth-separator::";
    let mut script = String::from("set -f\n");
    // A first argument, so that printf with no word still runs once and
    // prints nothing of the word's own.
    for w in words {
        script.push_str("printf '%s\\0' :: ");
        script.push_str(w);
        script.push_str(&format!("\nprintf '%s\\0' '{SEP}'\n"));
    }
    // A UTF-8 locale, as an agent's shell has: `$'\u00e9'` is `é` (in the C
    // locale bash writes `\u00E9` for what it cannot encode).
    let out = Command::new("bash")
        .env_clear()
        .env("LC_ALL", "C.UTF-8")
        .args(["--norc", "--noprofile", "-c", &script])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs (the test compares quote removal with it)");
    assert!(out.status.success(), "bash failed on the batch");
    let mut per_word = Vec::new();
    let mut current = Vec::new();
    for arg in out.stdout.split(|&b| b == 0) {
        if arg == SEP.as_bytes() {
            let mut args = std::mem::take(&mut current);
            assert_eq!(args.first().map(Vec::as_slice), Some(&b"::"[..]));
            args.remove(0);
            per_word.push(args);
        } else {
            current.push(arg.to_vec());
        }
    }
    // The split leaves one empty piece after the last NUL.
    assert_eq!(per_word.len(), words.len(), "bash's output lost a word");
    per_word
}

/// berth's arguments for a word.
fn berth_args(word: &str) -> Result<Vec<Vec<u8>>, String> {
    let line = format!("printf-args {word}");
    let a = analyze(line.as_bytes(), "/work", "/home/agent");
    if let Some(e) = a.parse_error {
        return Err(format!("parse error: {e}"));
    }
    let [seg] = a.segments.as_slice() else {
        return Err(format!("{} segments", a.segments.len()));
    };
    if seg.argv.iter().any(|a| a.dynamic) {
        return Err("a dynamic argument".into());
    }
    Ok(seg.argv[1..]
        .iter()
        .map(|a| a.text.as_bytes().to_vec())
        .collect())
}

/// A small deterministic generator.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn plain(&mut self) -> String {
        (0..1 + self.below(4))
            .map(|_| {
                self.pick(&[
                    "a", "b", "Z", "0", "7", "-", ".", "/", "=", ",", "%", ":", "+", "_", "^",
                ])
            })
            .collect()
    }

    /// Text bash keeps as it is inside single quotes.
    fn single(&mut self) -> String {
        let inner: String = (0..self.below(5))
            .map(|_| {
                self.pick(&[
                    "a", " ", "\"", "\\", "$x", "`", "\\n", "\n", "*", "{a,b}", "#", ";",
                ])
            })
            .collect();
        format!("'{inner}'")
    }

    fn double(&mut self) -> String {
        let inner: String = (0..self.below(5))
            .map(|_| {
                self.pick(&[
                    "a", " ", "'", "\\\"", "\\\\", "\\$", "\\`", "\\n", "\\a", "\\x", "\\\n", "*",
                    "{a,b}", "#", ";", "\\'", "~", "\n",
                ])
            })
            .collect();
        let dollar = if self.below(6) == 0 { "$" } else { "" };
        format!("{dollar}\"{inner}\"")
    }

    fn ansi_c(&mut self) -> String {
        let inner: String = (0..self.below(5))
            .map(|_| {
                self.pick(&[
                    "a",
                    " ",
                    "\\x41",
                    "\\x{6d}",
                    "\\x{a",
                    "\\x{4142}",
                    "\\x7e",
                    "\\x4",
                    "\\xg",
                    "\\x",
                    "\\u00e9",
                    "\\u263a",
                    "\\U0001F600",
                    "\\u",
                    "\\n",
                    "\\t",
                    "\\r",
                    "\\a",
                    "\\b",
                    "\\e",
                    "\\E",
                    "\\f",
                    "\\v",
                    "\\\\",
                    "\\'",
                    "\\\"",
                    "\\?",
                    "\\q",
                    "\\101",
                    "\\7",
                    "\\0101",
                    "\\12x",
                    "\\cA",
                    "\\cz",
                    "\\c?",
                    "\\c[",
                    "\"",
                    "$x",
                    "\\$",
                ])
            })
            .collect();
        format!("$'{inner}'")
    }

    fn escaped(&mut self) -> String {
        self.pick(&[
            "\\a", "\\ ", "\\'", "\\\"", "\\$", "\\\\", "\\*", "\\{", "\\}", "\\,", "\\~", "\\#",
            "\\;", "\\|", "\\&", "\\(", "\\<", "\\\n",
        ])
        .to_string()
    }

    fn brace(&mut self) -> String {
        self.pick(&[
            "{a,b}",
            "{1..3}",
            "{a..c}",
            "{3..1}",
            "{1..10..3}",
            "{a,{b,c}}",
            "{a,b}{c,d}",
            "{,x}",
            "{x}",
            "{}",
            "{01..3}",
            "{a,'b c'}",
            "{\"x,y\",z}",
            "{a\\,b,c}",
            "{c..a..2}",
            "x{-1..1}",
            "{a,b",
        ])
        .to_string()
    }

    fn word(&mut self) -> String {
        let mut w = String::new();
        for _ in 0..1 + self.below(4) {
            let piece = match self.below(7) {
                0 => self.plain(),
                1 => self.single(),
                2 => self.double(),
                3 => self.ansi_c(),
                4 => self.escaped(),
                5 => self.brace(),
                _ => format!("{}\\\n{}", self.plain(), self.plain()),
            };
            w.push_str(&piece);
        }
        w
    }
}

/// A deliberate difference, with its reason, or `None`. Every other
/// difference found was a parser bug, fixed with a case in `regressions.rs`.
fn known_difference(_word: &str, bash: &[Vec<u8>], berth: &[Vec<u8>]) -> Option<&'static str> {
    // berth's arguments are strings: a byte that is not UTF-8 (`$'\xaa'`)
    // becomes U+FFFD. No rule or path can be written with such bytes.
    let lossy: Vec<Vec<u8>> = bash
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned().into_bytes())
        .collect();
    if bash.iter().any(|a| std::str::from_utf8(a).is_err()) && lossy == berth {
        return Some("bytes that are not UTF-8 become U+FFFD");
    }
    None
}

fn compare(words: &[String]) -> Vec<String> {
    let bash = bash_args(words);
    let mut failures = Vec::new();
    for (w, b) in words.iter().zip(&bash) {
        match berth_args(w) {
            Ok(ours) if &ours == b => {}
            Ok(ours) if known_difference(w, b, &ours).is_some() => {}
            Ok(ours) => failures.push(format!(
                "{w:?}: bash {:?}, berth {:?}",
                b.iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>(),
                ours.iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>()
            )),
            Err(e) => failures.push(format!("{w:?}: berth: {e}")),
        }
    }
    failures
}

#[test]
fn classic_evasions_are_removed_like_bash() {
    let words: Vec<String> = CLASSIC.iter().map(|(w, _)| w.to_string()).collect();
    let bash = bash_args(&words);
    // The table says what bash does; check the table against bash first.
    for ((w, want), got) in CLASSIC.iter().zip(&bash) {
        let want: Vec<Vec<u8>> = want.iter().map(|s| s.as_bytes().to_vec()).collect();
        assert_eq!(&want, got, "the table is wrong about {w:?}");
    }
    let failures = compare(&words);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn generated_words_are_removed_like_bash() {
    let scale: usize = std::env::var("BERTH_PROPTEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut g = Gen(0x5eed_cafe_f00d_d00d);
    let mut failures = Vec::new();
    for _ in 0..10 * scale {
        let words: Vec<String> = (0..200).map(|_| g.word()).collect();
        failures.extend(compare(&words));
    }
    assert!(
        failures.is_empty(),
        "{} of {} words differ:\n{}",
        failures.len(),
        2000 * scale,
        failures.join("\n")
    );
}
