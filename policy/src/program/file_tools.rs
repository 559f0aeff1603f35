//! File tools that walk, archive or search files and can be told to run
//! another program: `find` (whose `-exec` commands are judged as commands in
//! their own right), `tar`, `zip`, `rg`, `sort`; and archive readers told to
//! write where the archive's member names say (`tar -P`, `unzip -:`,
//! `cpio -i`, `pax -r`), whose written paths no argument names.

use super::{Facts, HiddenPath, Inner, OrOpaque, opt_runs};
use crate::arg::Arg;
use crate::options::programs;

/// tar runs a program with `--to-command`, `-I`, `-F`, … in any spelling
/// (the table is [`crate::options::programs::TAR_RUNS`]).
pub(super) fn tar(args: &[Arg]) -> Facts {
    match programs::tar_runs(args) {
        Some(opt) => Facts::opaque(format!("`tar {opt}` runs a program")),
        None if programs::tar_absolute_names(args) => writes_member_paths(),
        None => Facts::default(),
    }
}

/// What an archive reader writes when it keeps its members' names as they
/// are (`/etc/x`, `../../x`): paths the command line does not name.
fn writes_member_paths() -> Facts {
    Facts {
        paths: vec![HiddenPath {
            path: None,
            writes: true,
        }],
        ..Facts::default()
    }
}

/// `unzip -:` keeps `../` in member names (by default unzip strips them).
pub(super) fn unzip(args: &[Arg]) -> Facts {
    let keeps_dotdot = args.iter().take_while(|a| !a.is("--")).any(|a| {
        a.dynamic && a.text.starts_with('-')
            || (!a.dynamic && a.text.len() > 1 && a.text.starts_with('-') && a.text.contains(':'))
    });
    if keeps_dotdot {
        writes_member_paths()
    } else {
        Facts::default()
    }
}

/// `cpio` in copy-in mode (`-i`, `--extract`) writes members at their
/// absolute names unless told `--no-absolute-filenames`.
pub(super) fn cpio(args: &[Arg]) -> Facts {
    let mut copy_in = false;
    let mut relative = false;
    for a in args.iter().take_while(|a| !a.is("--")) {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            // `--ex` is the shortest prefix of `--extract` cpio accepts.
            copy_in |= name.len() >= 2 && "extract".starts_with(name);
            relative |= name.len() >= 4 && "no-absolute-filenames".starts_with(name);
        } else if let Some(letters) = t.strip_prefix('-') {
            copy_in |= letters.bytes().next() == Some(b'i');
        }
    }
    if copy_in && !relative {
        writes_member_paths()
    } else {
        Facts::default()
    }
}

/// `pax -r` (read mode) writes members at the names the archive gives,
/// absolute ones included.
pub(super) fn pax(args: &[Arg]) -> Facts {
    let reads = args.iter().take_while(|a| !a.is("--")).any(|a| {
        !a.dynamic && a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('r')
    });
    if reads {
        writes_member_paths()
    } else {
        Facts::default()
    }
}

/// `rg` options that run a program.
const RG_RUNS_LONG: &[&str] = &[
    "--pre",          // runs a preprocessor on every file searched
    "--hostname-bin", // runs a program to learn the host name for hyperlinks
];

pub(super) fn rg(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        RG_RUNS_LONG,
        &[],
        "`rg --pre`/`--hostname-bin` runs a program",
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
            // `find . -exec {} ;`, `-exec ./{} +`: the program is each file
            // found, a name known only at run time (as `$X args`).
            if argv[start].text.contains("{}") {
                facts.opaque = Some(format!("`find {t}` runs each file it finds"));
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
