//! What bash runs, berth sees: an execution comparison with real bash.
//!
//! Random shell text (quotes, heredocs, substitutions, comments, escapes,
//! subscripts, line continuations) is run by bash with an empty `PATH` and a
//! `command_not_found_handle` that logs each program name bash would have
//! run. Every logged name must be a program (or wrapper) of one of berth's
//! segments — unless berth marked something opaque, which is never
//! auto-approved. A name bash runs that berth does not see is a hidden
//! command: the bypass class this file exists for.
//!
//! Known open difference (not fixed, a bash quirk): a heredoc inside a
//! process substitution inside another, followed by a `case` —
//! `<(<(3 $()'')<<'EOF'` ⏎ `EOF` ⏎ `"";case x in x){ m;} esac)` — is
//! re-serialised by bash 5.2 into different text, and bash runs `x`.
//!
//! bash runs as `nobody` (when the tests run as root), with a clean
//! environment, no programs to find, a process and file-size limit, in a
//! temporary directory, with a timeout. The texts hold no paths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use berth_policy::segment::{Analysis, analyze};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// Tokens spliced into generated commands at random (the mutations).
const TOKENS: &[&str] = &[
    "$(", ")", "`", "'", "\"", "${", "}", "{ ", " }", "(", "<(", "<<", "<<-", "<<<", "EOF",
    "\nEOF\n", "'EOF'", "|", "||", "&&", ";", "&", "\n", "\t", " ", "#", " #", "\\", "\\\n", "$'",
    "\\x6d", "\\'", "[", "]", "a[", "x=", "=", "$x", "eval ", "!", "[[ ", " ]]", "((", "))", "$((",
    "~", "*", "{a,b}", "%", ",", ":", "$\"", "2>&1", ">o", "|&", "\r", "\r\n",
];

/// A small deterministic generator (the case's seed comes from proptest).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
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
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// A program name, spelled the ways bash removes quotes from.
    fn name(&mut self) -> String {
        let n = format!("mk{}", 1 + self.below(9));
        match self.below(10) {
            0 => format!("'{n}'"),
            1 => format!("m\"\"k{}", &n[2..]),
            2 => format!("\\{n}"),
            3 => format!("$'\\x6d'k{}", &n[2..]),
            4 => format!("m\\\nk{}", &n[2..]),
            5 => format!("\"{n}\""),
            _ => n,
        }
    }

    /// An argument: plain, quoted, or holding a substitution.
    fn word(&mut self, depth: usize) -> String {
        match self.below(14) {
            0 => format!("'{} # ; x'", self.name()),
            1 if depth < 3 => format!("\"$({})\"", self.list(depth + 1)),
            2 if depth < 3 => format!("$({})", self.list(depth + 1)),
            3 if depth < 3 => format!("`{}`", self.name()),
            4 => "\"a'b\"".to_string(),
            5 => "'a\"b'".to_string(),
            6 => "$x".to_string(),
            7 => "${x:-y}".to_string(),
            8 if depth < 3 => format!("<({})", self.list(depth + 1)),
            9 => "$'a\\'b'".to_string(),
            10 => "a\\ b".to_string(),
            11 => "{a,b}".to_string(),
            _ => self.pick(&["x", "-v", "--", "a=b", "1", "o"]).to_string(),
        }
    }

    fn simple(&mut self, depth: usize) -> String {
        let mut s = String::new();
        if self.chance(10) {
            s.push_str("x=1 ");
        }
        if self.chance(8) {
            s.push_str(self.pick(&["nohup ", "command ", "eval ", "time ", "! ", "exec "]));
        }
        s.push_str(&self.name());
        for _ in 0..self.below(3) {
            s.push(' ');
            s.push_str(&self.word(depth));
        }
        match self.below(12) {
            0 => s.push_str(" # mk9 ; mk8"),
            1 => s.push_str(" >o"),
            2 => s.push_str(" 2>&1"),
            3 => s.push_str(" <<<x"),
            _ => {}
        }
        s
    }

    fn command(&mut self, depth: usize) -> String {
        if depth >= 3 {
            return self.simple(depth);
        }
        match self.below(16) {
            0 => format!("( {} )", self.list(depth + 1)),
            1 => format!("{{ {}; }}", self.list(depth + 1)),
            2 => format!(
                "if {}; then {}; fi",
                self.simple(depth),
                self.list(depth + 1)
            ),
            3 => format!("for a in b; do {}; done", self.list(depth + 1)),
            4 => format!("case x in x) {};; esac", self.list(depth + 1)),
            5 => {
                let delim = self.pick(&["EOF", "'EOF'", "\"EOF\"", "\\EOF", "E\"O\"F"]);
                let dash = if self.chance(30) { "-" } else { "" };
                let tab = if dash == "-" { "\t" } else { "" };
                format!(
                    "{} <<{dash}{delim}\n{tab}$({})\n{tab}{}\n{tab}EOF\n{}",
                    self.simple(depth),
                    self.simple(depth),
                    self.simple(depth),
                    self.simple(depth)
                )
            }
            6 => format!("f() {{ {}; }}; f", self.list(depth + 1)),
            7 => format!("a[{}]=1; {}", self.word(depth), self.simple(depth)),
            8 => format!("eval '{}'", self.simple(depth)),
            _ => self.simple(depth),
        }
    }

    fn list(&mut self, depth: usize) -> String {
        let mut s = self.command(depth);
        for _ in 0..self.below(3) {
            s.push_str(self.pick(&["; ", " && ", " || ", " | ", "\n", " & "]));
            s.push_str(&self.command(depth));
        }
        s
    }

    /// A command line, then a few random tokens spliced in.
    fn text(&mut self) -> String {
        let mut s = self.list(0);
        for _ in 0..self.below(4) {
            let mut at = self.below(s.len() + 1);
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            let t = self.pick(TOKENS);
            s.insert_str(at, t);
        }
        s
    }
}

/// The program names bash looks up when it runs `text`, in a sandbox.
/// Each case logs to a file of its own (a background job of an earlier case
/// may still write to its log), and bash waits for its jobs before it exits.
fn bash_runs(text: &str, dir: &std::path::Path, case: u32) -> BTreeSet<String> {
    let log = dir.join(format!("ran-{case}"));
    let prelude = format!(
        "command_not_found_handle() {{ printf '%s\\0' \"$1\" >> '{}'; return 127; }}; \
         trap wait EXIT; PATH=/nonexistent\n",
        log.display()
    );
    let script = format!("{prelude}{text}");
    let root = nix_is_root();
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "prlimit",
        ]);
        c
    } else {
        Command::new("prlimit")
    };
    cmd.args([
        "--nproc=256",
        "--fsize=100000",
        "--",
        "timeout",
        "-s",
        "KILL",
        "3",
        "bash",
        "--norc",
        "--noprofile",
        "-c",
        "--",
        &script,
    ])
    .env_clear()
    .current_dir(dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd.status()
        .expect("run bash in its sandbox (setpriv, prlimit, timeout, bash)");
    let ran = std::fs::read(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    ran.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}

/// The program and wrapper names of berth's segments; `None` when berth
/// found something opaque (then nothing is auto-approved).
fn berth_sees(a: &Analysis) -> Option<BTreeSet<String>> {
    if a.parse_error.is_some() || a.segments.iter().any(|s| s.opaque.is_some()) {
        return None;
    }
    let mut names = BTreeSet::new();
    for s in &a.segments {
        for inv in s.invocations() {
            if let Some(first) = inv.first() {
                names.insert(first.text.replace('\r', ""));
            }
        }
    }
    Some(names)
}

/// A directory bash (as nobody) may write its log and `>o` files in;
/// removed on drop.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// `tag` tells apart the tests that run at once (each removes its own).
    fn new(tag: &str) -> ScratchDir {
        use std::os::unix::fs::PermissionsExt;
        let path =
            std::env::temp_dir().join(format!("berth-bash-segments-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        ScratchDir(path)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_program_bash_runs_is_a_segment() {
    let dir = ScratchDir::new("random");
    let scale: u32 = std::env::var("BERTH_PROPTEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut runner = TestRunner::new(Config {
        cases: 300 * scale,
        rng_seed: seed(),
        failure_persistence: None,
        ..Config::default()
    });
    let failures = std::cell::RefCell::new(Vec::new());
    let (compared, ran_any) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let counter = std::cell::Cell::new(0u32);
    runner
        .run(&any::<u64>(), |seed| {
            let text = Gen(seed | 1).text();
            let case = counter.get();
            counter.set(case + 1);
            let ran = bash_runs(&text, &dir.0, case);
            // Names with a slash are not looked up; globs and expansions
            // in a command name make berth's segment opaque anyway.
            // berth reads CR LF as a newline, bash reads the CR as part of
            // the word (`ls` CR LF runs `ls\r`): a deliberate difference.
            // Names are compared without CRs, on both sides.
            let ran: BTreeSet<String> = ran
                .into_iter()
                .filter(|n| !n.contains('/'))
                .map(|n| n.replace('\r', ""))
                .filter(|n| !n.is_empty())
                .collect();
            if !ran.is_empty() {
                ran_any.set(ran_any.get() + 1);
            }
            let analysis = analyze(text.as_bytes(), "/work", "/home/agent");
            let Some(seen) = berth_sees(&analysis) else {
                return Ok(());
            };
            compared.set(compared.get() + 1);
            let hidden: Vec<&String> = ran.iter().filter(|n| !seen.contains(*n)).collect();
            if !hidden.is_empty() {
                failures
                    .borrow_mut()
                    .push(format!("{text:?}: bash ran {hidden:?}, berth saw {seen:?}"));
            }
            Ok(())
        })
        .unwrap();
    let failures = failures.into_inner();
    assert!(
        failures.is_empty(),
        "{} hidden command(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The comparison has teeth: bash ran programs, and berth judged most texts.
    assert!(
        ran_any.get() * 4 > 300 * scale && compared.get() * 4 > 300 * scale,
        "bash ran programs in {} texts, berth judged {} without opaque parts",
        ran_any.get(),
        compared.get()
    );
}

/// Texts of classes a probe found, each with whether bash runs `mk1`:
/// compared as the random texts are, and — where bash does not run it —
/// berth must not see it either (no prompt for a heredoc's text).
const FIXED: &[(&str, bool)] = &[
    // An unquoted heredoc's lines join at a continuation before bash
    // compares them with the delimiter: `EO\⏎F` ends the body.
    ("cat <<EOF\nx\nEO\\\nF\nmk1\nEOF", true),
    ("cat <<EOF\nE\\\nOF\nmk1\nEOF", true),
    ("cat <<-EOF\n\tE\\\nOF\nmk1\nEOF", true),
    // …joined, `x\⏎EOF` is `xEOF`: the body goes on; an escaped backslash
    // does not continue; a quoted delimiter reads lines verbatim.
    ("cat <<EOF\nx\\\nEOF\nmk1\nEOF", false),
    ("cat <<EOF\nx\\\\\nEOF\nmk1\nEOF", true),
    ("cat <<'EOF'\nE\\\nOF\nmk1\nEOF", false),
    ("cat <<-EOF\n\tE\\\n\tOF\nmk1\nEOF", false),
];

#[test]
fn fixed_texts_every_program_bash_runs_is_a_segment() {
    let dir = ScratchDir::new("fixed");
    let mut failures = Vec::new();
    for (k, &(text, runs)) in FIXED.iter().enumerate() {
        let ran = bash_runs(text, &dir.0, 1_000_000 + k as u32);
        if ran.contains("mk1") != runs {
            failures.push(format!(
                "{text:?}: bash ran {ran:?}, the row says mk1 {runs}"
            ));
            continue;
        }
        let analysis = analyze(text.as_bytes(), "/work", "/home/agent");
        let seen = berth_sees(&analysis);
        let ok = match (&seen, runs) {
            (None, true) => true,
            (Some(names), true) => names.contains("mk1"),
            (Some(names), false) => !names.contains("mk1"),
            (None, false) => false,
        };
        if !ok {
            failures.push(format!(
                "{text:?}: bash runs mk1: {runs}, berth saw {seen:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A fixed seed, so that CI runs the same cases every time;
/// `BERTH_PROPTEST_SEED=random` (or a number) explores others.
fn seed() -> RngSeed {
    match std::env::var("BERTH_PROPTEST_SEED") {
        Ok(s) if s == "random" => RngSeed::Random,
        Ok(s) => RngSeed::Fixed(s.parse().unwrap_or(0x0be7_70c1)),
        Err(_) => RngSeed::Fixed(0x0be7_70c1),
    }
}
