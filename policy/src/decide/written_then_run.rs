//! A program this command wrote, then runs: `echo 'git push' > p.sh && sh
//! p.sh` is `git push` spelled through a file, and `ln -s /usr/bin/git g
//! && ./g push` is `git push` under another name (POLICY.md, "Spelling does
//! not change meaning": the decision judges what runs, and here what runs
//! is not in any word the stages read). A segment that runs a file an
//! earlier segment of the same command wrote — as its program, as a shell's
//! or an interpreter's script, as the Makefile `make` reads or the
//! `package.json` whose scripts npm runs — is opaque: never auto-approved,
//! deny rules still checked on what is visible.
//!
//! Written means written for certain and with content the command names:
//! a redirection, `tee`, `cp`/`install`/`ln`/`mv` targets, `dd of=`,
//! `curl -o`, `sed -i`. Names written beneath a directory only when it runs
//! (an archive extracted, a repository cloned) and files an unknown program
//! may write (`gcc -o a`, `cargo build`) are not: running a build's output
//! or an unpacked release is running the project's or a third party's
//! code, which the OS confinement bounds, not a respelling of a command.
//! A command of one segment writes nothing before it runs: the common case
//! costs one scan of the later segments' programs.

use crate::access::{self, Access};
use crate::scope::normalize;
use crate::segment::{Cwd, Segment};

/// Script extensions an interpreter's operand may carry past options the
/// model does not know (`python3 -W ignore p.py`).
const SCRIPT_EXTENSIONS: &[&str] = &[
    ".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".pl", ".rb", ".php", ".lua",
    ".R", ".tcl", ".jl", ".ps1",
];

/// The files `seg` runs as code, as written (relative to its cwd).
pub(super) fn files_run(seg: &Segment) -> Vec<&str> {
    let Some(program) = seg.argv.first().filter(|a| !a.dynamic) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let text = program.text.as_str();
    if text.contains('/') {
        out.push(text);
    }
    let name = program.basename();
    let operands = || {
        seg.argv[1..]
            .iter()
            .filter(|a| !a.dynamic && !a.text.starts_with('-'))
            .map(|a| a.text.as_str())
    };
    if crate::wrapper::is_shell(name) || crate::wrapper::is_interpreter(name) {
        out.extend(operands().take(1));
        out.extend(operands().filter(|o| SCRIPT_EXTENSIONS.iter().any(|e| o.ends_with(e))));
    }
    match name {
        "make" | "gmake" => {
            let mut named = false;
            for (i, a) in seg.argv.iter().enumerate().skip(1) {
                let t = a.text.as_str();
                if matches!(t, "-f" | "--file" | "--makefile")
                    && let Some(v) = seg.argv.get(i + 1)
                {
                    out.push(v.text.as_str());
                    named = true;
                } else if let Some(v) = t
                    .strip_prefix("--file=")
                    .or_else(|| t.strip_prefix("--makefile="))
                    .or_else(|| t.strip_prefix("-f").filter(|v| !v.is_empty()))
                {
                    out.push(v);
                    named = true;
                }
            }
            if !named {
                out.extend(["GNUmakefile", "makefile", "Makefile"]);
            }
        }
        // Every npm command may run the package's scripts (`test`,
        // `start`, lifecycle scripts of `install`).
        "npm" | "pnpm" | "yarn" | "bun" => out.push("package.json"),
        _ => {}
    }
    out
}

/// The absolute paths `text` names from `seg`'s cwd (several when the cwd
/// is one of several; none when unknown and `text` is relative).
pub(super) fn resolve(seg: &Segment, text: &str, home: &str) -> Vec<String> {
    if text.starts_with('/') {
        return vec![normalize("/", text)];
    }
    if let Some(rest) = text.strip_prefix("~/") {
        return vec![normalize(home, rest)];
    }
    match &seg.cwd {
        Cwd::Known(dirs) => dirs.iter().map(|d| normalize(d, text)).collect(),
        Cwd::Unknown => Vec::new(),
    }
}

/// Programs that change a file's metadata, not its content: `chmod +x
/// build.sh && ./build.sh` runs what was there before.
const METADATA_ONLY: &[&str] = &[
    "chmod", "chown", "chgrp", "touch", "chattr", "setfacl", "mkdir", "mkfifo",
];

/// Programs that write a file's content through their words (the rest
/// write only through redirections, or only what an unknown program may).
const CONTENT_WRITERS: &[&str] = &[
    "cp", "gcp", "install", "ginstall", "ln", "gln", "link", "symlink", "mv", "gmv", "tee", "dd",
    "curl", "wget", "sed", "gsed", "perl", "yq", "truncate", "rsync", "scp", "sort", "uniq", "xxd",
    "tar", "gtar", "bsdtar",
];

/// What `seg` writes for certain, as absolute paths.
pub(super) fn files_written(seg: &Segment, home: &str) -> Vec<String> {
    let writer = seg
        .argv
        .first()
        .is_some_and(|p| p.dynamic || CONTENT_WRITERS.contains(&p.basename()));
    if !writer && !seg.redirects.iter().any(|r| r.writes) && seg.assigns.is_empty() {
        return Vec::new();
    }
    if seg
        .argv
        .first()
        .is_some_and(|p| !p.dynamic && METADATA_ONLY.contains(&p.basename()))
    {
        return seg
            .redirects
            .iter()
            .filter(|r| r.writes && !r.target.dynamic)
            .flat_map(|r| resolve(seg, &r.target.text, home))
            .collect();
    }
    access::accesses(seg, true)
        .iter()
        .filter(|fa| fa.access == Access::Write && !fa.beneath && !fa.dynamic && !fa.glob)
        .flat_map(|fa| resolve(seg, &fa.text, home))
        .collect()
}

/// The file of `runs` that `written` holds (or lies beneath one of its
/// directories: `cp x bin/ && bin/x`).
pub(super) fn written_and_run<'w>(written: &'w [String], runs: &[String]) -> Option<&'w str> {
    written
        .iter()
        .find(|w| {
            runs.iter().any(|r| {
                r == *w
                    || r.strip_prefix(w.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        })
        .map(String::as_str)
}
