//! File tools that walk, archive or search files and can be told to run
//! another program: `find` (whose `-exec` commands are judged as commands in
//! their own right), `tar`, `zip`, `rg`, `sort`.

use super::{Facts, HiddenPath, Inner, OrOpaque, opt_runs};
use crate::arg::Arg;
use crate::options::programs;

/// tar runs a program with `--to-command`, `-I`, `-F`, … in any spelling
/// (the table is [`crate::options::programs::TAR_RUNS`]).
pub(super) fn tar(args: &[Arg]) -> Facts {
    match programs::tar_runs(args) {
        Some(opt) => Facts::opaque(format!("`tar {opt}` runs a program")),
        None => Facts::default(),
    }
}

/// `rg` options that run a program.
const RG_RUNS_LONG: &[&str] = &[
    "--pre", // runs a preprocessor on every file searched
];

pub(super) fn rg(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        RG_RUNS_LONG,
        &[],
        "`rg --pre` runs a preprocessor program",
    )
}

/// `sort` options that run a program.
const SORT_RUNS_LONG: &[&str] = &[
    "--compress-program", // compresses temporary files with any program
];

pub(super) fn sort(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        SORT_RUNS_LONG,
        &[],
        "`sort --compress-program` runs a program",
    )
}

/// `zip` options that run a program.
const ZIP_RUNS_LONG: &[&str] = &[
    "--unzip-command", // the command `-T` tests the archive with
];

pub(super) fn zip(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        ZIP_RUNS_LONG,
        &[],
        "`zip -TT/--unzip-command` runs a program",
    )
    // `-TT CMD`: short for --unzip-command.
    .or(if args.iter().any(|a| a.is("-TT")) {
        Some("`zip -TT` runs a program")
    } else {
        None
    })
}

pub(super) fn find(argv: &[Arg]) -> Facts {
    let mut facts = Facts::default();
    let mut own = vec![argv[0].clone()];
    let mut i = 1;
    // Leading options.
    while i < argv.len() {
        let t = argv[i].text.as_str();
        if argv[i].dynamic {
            break;
        }
        if matches!(t, "-H" | "-L" | "-P") || t.starts_with("-O") {
            own.push(argv[i].clone());
            i += 1;
        } else if t == "-D" {
            own.extend_from_slice(&argv[i..(i + 2).min(argv.len())]);
            i += 2;
        } else {
            break;
        }
    }
    // Start paths.
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && ((t.starts_with('-') && t.len() > 1) || t == "(" || t == "!" || t == ",") {
            break;
        }
        facts.find_roots.push(a.clone());
        own.push(a.clone());
        i += 1;
    }
    if facts.find_roots.is_empty() {
        facts.find_roots.push(Arg::lit("."));
    }
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut j = start;
            let mut end = None;
            while j < argv.len() {
                let w = &argv[j];
                if w.is(";") || (w.is("+") && j > start && argv[j - 1].text.contains("{}")) {
                    end = Some(j);
                    break;
                }
                j += 1;
            }
            let Some(end) = end else {
                facts.opaque = Some(format!("`find {t}` without its terminating `;` or `+`"));
                return facts;
            };
            if end == start {
                facts.opaque = Some(format!("`find {t}` without a command"));
                return facts;
            }
            let inner: Vec<Arg> = argv[start..end]
                .iter()
                .map(|w| {
                    if !w.dynamic && w.text.contains("{}") {
                        Arg {
                            find_placeholder: true,
                            ..w.clone()
                        }
                    } else {
                        w.clone()
                    }
                })
                .collect();
            facts.inner.push(Inner::Argv(inner));
            i = end + 1;
            continue;
        }
        if !a.dynamic
            && matches!(t, "-fprint" | "-fprint0" | "-fls" | "-fprintf")
            && let Some(f) = argv.get(i + 1)
        {
            facts.paths.push(HiddenPath {
                path: f.known().map(str::to_string),
                writes: true,
            });
        }
        own.push(a.clone());
        i += 1;
    }
    facts.own_argv = Some(own);
    facts
}
