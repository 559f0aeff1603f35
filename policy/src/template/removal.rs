//! The removal templates: `rm -r` of `/`, the system's directories, the
//! home or a directory above it, in any path spelling or glob; the same by
//! other names (`find -delete`, `rsync --delete`, `mv` away, `cmake -E
//! remove_directory`, `rimraf`); and a recursive change of mode or owner
//! reaching them. Each operand is asked [`target_danger`] once per cwd it
//! may resolve against.

use super::*;

/// The operating system's own directories: a recursive removal of one is
/// the removal of `/` in part. Site and user data (`/srv`, `/opt`, `/mnt`)
/// are not the system; `/home` is guarded as the home's parent.
pub(super) const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/lib",
];

/// `/`, the system's directories, the home and every directory above it:
/// what a recursive removal must never reach.
pub(super) fn guarded(home: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    out.extend(SYSTEM_DIRS.iter().map(|d| (*d).to_string()));
    let mut h = normalize("/", home);
    while h != "/" {
        out.push(h.clone());
        h = match h.rfind('/') {
            Some(0) | None => "/".to_string(),
            Some(i) => h[..i].to_string(),
        };
    }
    out
}

/// How dangerous a removal (or recursive change) of `op` is: it names one
/// of `guarded`, a glob can match one or every child of one, or it might.
pub(super) fn target_danger(op: &Arg, r: &Removal<'_>, guarded: &[String]) -> Danger {
    if op.find_placeholder {
        // `{}` is every path find walks: each root and all below it.
        let mut worst = Danger::No;
        for root in r.find_roots {
            let sub = Arg {
                text: op.text.replace("{}", &root.text),
                find_placeholder: false,
                ..root.clone()
            };
            worst = worst.max(target_danger(&sub, r, guarded));
        }
        return worst;
    }
    if op.dynamic {
        // The static skeleton: `$X/` or `"$Y"` could be anything at all.
        // A skeleton ending in `/` may end in a dynamic part (`/tmp/$X`,
        // `build/$X`): that part may be `..` and climb anywhere.
        let skel = op.text.trim_end_matches('/');
        // A dynamic part inside `/proc/…` may be a pid: `/proc/$$/root`.
        if skel.is_empty()
            || skel == "/*"
            || skel == "*"
            || op.text.ends_with('/')
            || normalize("/", skel).starts_with("/proc")
        {
            return Danger::Maybe;
        }
        let dirs = match r.cwd {
            Cwd::Known(d) => d.to_vec(),
            Cwd::Unknown => vec!["/".to_string()],
        };
        return if dirs
            .iter()
            .any(|d| guarded.contains(&normalize(d, &op.text)))
        {
            Danger::Maybe
        } else {
            Danger::No
        };
    }
    if op.tilde_user {
        // `~agent` is the home when it names the frame's own user.
        let rest = &op.text[1..];
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        if crate::arg::basename(r.home) != user {
            return Danger::No;
        }
        let own = Arg {
            text: format!("{}/{tail}", r.home),
            tilde_user: false,
            ..op.clone()
        };
        return target_danger(&own, r, guarded);
    }
    let mut worst = Danger::No;
    for place in places(r.cwd, &op.text) {
        let d = match place {
            None => unknown_place_danger(&op.text),
            Some(p) if op.glob => glob_danger(&p, guarded),
            Some(p) => {
                if guarded.contains(&p) {
                    Danger::Yes
                } else {
                    Danger::No
                }
            }
        };
        worst = worst.max(d);
    }
    // A glob that may match `..` may climb (`rm -rf .?/*` from a project
    // in the home): judged climbed too.
    if op.glob
        && worst != Danger::Yes
        && let Some(climbed) = crate::path_words::climbing(&op.text)
    {
        let up = Arg {
            text: climbed,
            ..op.clone()
        };
        worst = worst.max(target_danger(&up, r, guarded));
    }
    worst
}

/// A relative operand in an unknown cwd (or through another process's
/// cwd): `*`, `.`, `..` and the like could be `/` or the home.
pub(super) fn unknown_place_danger(text: &str) -> Danger {
    let first = text.split('/').find(|c| !c.is_empty()).unwrap_or(".");
    if text.starts_with('/')
        || first == "."
        || text.split('/').any(|c| c == "..")
        || scope::first_glob(first).is_some()
    {
        Danger::Maybe
    } else {
        Danger::No
    }
}

/// A glob (absolute, normalised) judged by what it can match: one of the
/// guarded directories, every child of one (`/*`, `/.[!.]*`, `~/*`), or
/// some child of `/` (`/u*`).
pub(super) fn glob_danger(pattern: &str, guarded: &[String]) -> Danger {
    if guarded.iter().any(|g| scope::pattern_matches(pattern, g)) {
        return Danger::Yes;
    }
    let (prefix, dir) = scope::glob_prefix(pattern);
    let component = prefix.rsplit('/').next().unwrap_or("");
    if guarded.contains(&dir) && matches!(component, "" | ".") {
        return Danger::Yes;
    }
    if dir == "/" {
        return Danger::Maybe;
    }
    Danger::No
}

pub(super) fn rm(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let guarded = guarded(r.home);
    let recursive = recursion(inv);
    let mut maybe = None;
    for op in operands(inv) {
        // Without recursion only `find`'s placeholder removes a tree
        // (`find / -exec rm {} +` removes every file under `/`).
        if recursive == Some(false) && !op.find_placeholder {
            continue;
        }
        match target_danger(op, r, &guarded) {
            Danger::Yes if recursive == Some(true) || op.find_placeholder => {
                return Some(Hit::Deny(format!("`rm -r` of {}", describe(op))));
            }
            Danger::Yes => {
                maybe = Some(Hit::Maybe(format!(
                    "`rm` of {} with an option that cannot be read (it may be `-r`)",
                    describe(op)
                )))
            }
            Danger::Maybe => {
                maybe = Some(Hit::Maybe(format!(
                    "`rm -r` of {}, which may be / or the home directory",
                    describe(op)
                )))
            }
            Danger::No => {}
        }
    }
    if r.trailing
        && recursive != Some(false)
        && let Some(words) = r.stdin_words
    {
        // `echo / | xargs rm -rf`: the operands are visible.
        let mut worst = Danger::No;
        for w in words {
            match target_danger(w, r, &guarded) {
                Danger::Yes => {
                    return Some(Hit::Deny(format!(
                        "`rm -r` of `{}`, read from stdin",
                        w.text
                    )));
                }
                d => worst = worst.max(d),
            }
        }
        if worst == Danger::No && maybe.is_none() {
            return None;
        }
    }
    if maybe.is_none() && r.trailing && recursive != Some(false) {
        maybe = Some(Hit::Maybe(
            "`rm -r` of operands read from stdin or a file: they cannot be known".to_string(),
        ));
    }
    maybe
}

/// `mv ~ /tmp/x`, `mv /usr /old`: moving `/`, the home, a directory above
/// it or a system directory away removes it from where everything expects
/// it — `rm -r` by another name. Every operand but the destination is a
/// source; with `-t DIR` every operand is.
pub(super) fn mv_away(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let guarded = guarded(r.home);
    let ops = operands(inv);
    // `--target-directory`, or `t` in a short cluster before the letter
    // whose value ends it (`-vt DIR`, but not `-S.txt`).
    let target_option = inv.iter().skip(1).any(|a| {
        let t = a.text.as_str();
        !a.dynamic
            && (t.starts_with("--target-directory")
                || t.strip_prefix('-').is_some_and(|cluster| {
                    !cluster.starts_with('-')
                        && cluster
                            .bytes()
                            .take_while(|b| *b != b'S')
                            .any(|b| b == b't')
                }))
    });
    let sources = if target_option {
        &ops[..]
    } else {
        &ops[..ops.len().saturating_sub(1)]
    };
    // Only a provable one: `mv "$f" "$f.bak"` is everyday renaming, and a
    // dynamic source is judged by the scope as any dynamic path is.
    sources
        .iter()
        .find(|op| target_danger(op, r, &guarded) == Danger::Yes)
        .map(|op| {
            Hit::Deny(format!(
                "`mv` of {} moves it away: its removal by another name",
                describe(op)
            ))
        })
}

/// `chmod -R`, `chown -R`, `chgrp -R` of `/` (in any spelling of `/`).
pub(super) fn recursive_on_root(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let recursive = recursion(inv);
    let name = inv.first()?.basename();
    let system = system_guarded();
    let home = guarded(r.home);
    let mut maybe = None;
    // The first operand is the mode or the owner, not a file, unless
    // `--reference=F` gives them.
    let by_reference = inv
        .iter()
        .any(|a| !a.dynamic && a.text.starts_with("--reference"));
    let ops = operands(inv);
    let skip = if name == "chattr" {
        // `chattr -R +i /`; a mode starting with `-` reads as an option.
        ops.first().is_some_and(|o| o.text.starts_with(['+', '=']))
    } else {
        !by_reference
    };
    for op in ops.into_iter().skip(usize::from(skip)) {
        // Without recursion only `find`'s placeholder reaches a tree
        // (`find / -exec chmod 777 {} +` is `chmod -R 777 /`).
        if recursive == Some(false) && !op.find_placeholder {
            continue;
        }
        let whole = recursive == Some(true) || op.find_placeholder;
        match target_danger(op, r, &system) {
            Danger::Yes if whole => {
                return Some(Hit::Deny(format!(
                    "recursive `{name}` of {}: the system's files",
                    describe(op)
                )));
            }
            Danger::No => {}
            _ => {
                maybe = Some(Hit::Maybe(format!(
                    "recursive `{name}` of {}, which may be / or a system directory",
                    describe(op)
                )));
                continue;
            }
        }
        // The home and the directories above it: every file of the person
        // changes owner or mode at once. Held for a person, not denied
        // (`chown -R me ~` mends a home after a root-run tool).
        if target_danger(op, r, &home) != Danger::No {
            maybe = Some(Hit::Maybe(format!(
                "recursive `{name}` of {}, which is or may be the home directory or above it",
                describe(op)
            )));
        }
    }
    if maybe.is_none() && r.trailing && recursive == Some(true) {
        maybe = Some(Hit::Maybe(format!(
            "recursive `{name}` of operands read from stdin or a file"
        )));
    }
    maybe
}

/// `/` and the system's directories, without the home.
pub(super) fn system_guarded() -> Vec<String> {
    let mut out = vec!["/".to_string()];
    out.extend(SYSTEM_DIRS.iter().map(|d| (*d).to_string()));
    out
}

/// Recursive removal by another program's name: `cmake -E remove_directory
/// D` and `cmake -E rm -r D` (its portable `rm -rf`), `rimraf D` (npm's):
/// judged as `rm -rf` of the same operands.
/// `git [-C D] [--work-tree=W] clean -f [-d] [-x] [paths]`: removes what
/// git does not track below each path (the work tree when none), so in `/`
/// or the home (a dotfiles repository) it is `rm -rf` of all that is not
/// tracked there: judged as `rm -rf` of those paths. A dry run (`-n`)
/// removes nothing.
pub(super) fn git_clean(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let mut dir = Arg::lit(".");
    let mut work_tree: Option<Arg> = None;
    let join = |base: &Arg, p: &Arg| -> Arg {
        let text = if p.text.starts_with('/') {
            p.text.clone()
        } else {
            format!("{}/{}", base.text, p.text)
        };
        Arg {
            text,
            dynamic: base.dynamic || p.dynamic,
            ..p.clone()
        }
    };
    let mut i = 1;
    while let Some(a) = inv.get(i) {
        let t = a.text.as_str();
        if a.dynamic {
            // `git $opt clean`: what the word is, only bash knows.
            return None;
        } else if t == "-C" {
            dir = join(&dir, inv.get(i + 1)?);
            i += 2;
        } else if let Some(w) = t.strip_prefix("--work-tree=") {
            work_tree = Some(join(
                &dir,
                &Arg {
                    text: w.to_string(),
                    ..a.clone()
                },
            ));
            i += 1;
        } else if t == "--work-tree" || t == "-c" || t == "--git-dir" || t == "--namespace" {
            if t == "--work-tree" {
                work_tree = Some(join(&dir, inv.get(i + 1)?));
            }
            i += 2;
        } else if t.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    if !inv.get(i)?.is("clean") {
        return None;
    }
    let base = work_tree.unwrap_or(dir);
    let mut force = false;
    let mut paths = Vec::new();
    let mut options_done = false;
    let mut args = inv[i + 1..].iter();
    while let Some(a) = args.next() {
        let t = a.text.as_str();
        if a.dynamic || options_done || !t.starts_with('-') || t == "-" {
            paths.push(join(&base, a));
        } else if t == "--" {
            options_done = true;
        } else if t == "--dry-run" || (!t.starts_with("--") && t.contains('n')) {
            return None;
        } else if t == "--force" || (!t.starts_with("--") && t.contains('f')) {
            force = true;
        } else if t == "-e" || t == "--exclude" {
            args.next();
        }
    }
    if !force {
        return None;
    }
    if paths.is_empty() {
        paths.push(base);
    }
    as_rm_rf("git clean", paths, r)
}

/// A removal by another program judged as `rm -rf -- operands…`, its
/// finding named for the program.
fn as_rm_rf(name: &str, operands: impl IntoIterator<Item = Arg>, r: &Removal<'_>) -> Option<Hit> {
    let mut argv = vec![Arg::lit("rm"), Arg::lit("-rf"), Arg::lit("--")];
    argv.extend(operands);
    rm(&argv, r).map(|hit| match hit {
        Hit::Deny(d) => Hit::Deny(format!("`{name}`: {d}")),
        Hit::Maybe(m) => Hit::Maybe(format!("`{name}`: {m}")),
    })
}

/// Programs that remove (or move to the trash) each operand with all
/// below it: `rm -rf` by another name, judged as `rm -rf` of its operands.
pub(super) const REMOVERS: &[&str] = &[
    "rimraf",    // Node's `rm -rf`
    "srm",       // secure-delete: overwrites, then removes (`-r` recurses)
    "wipe",      // the same
    "trash",     // trash-cli, macOS: moves a directory with all below it away
    "trash-put", // trash-cli's own name
    "rmtrash",
    "gtrash",
];

pub(super) fn removal_by_other_name(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let name = inv.first()?.basename();
    let operands: Vec<Arg> = match name {
        "cmake" => {
            let e = inv.iter().position(|a| a.is("-E"))?;
            let verb = inv.get(e + 1)?;
            let rest = &inv[e + 2..];
            let recursive = match verb.text.as_str() {
                "remove_directory" => true,
                "rm" => rest
                    .iter()
                    .any(|a| a.text.starts_with('-') && a.text[1..].contains(['r', 'R'])),
                _ if verb.dynamic => true,
                _ => false,
            };
            if !recursive {
                return None;
            }
            rest.iter()
                .filter(|a| !a.text.starts_with('-'))
                .cloned()
                .collect()
        }
        _ if REMOVERS.contains(&name) => inv[1..]
            .iter()
            .filter(|a| a.dynamic || !a.text.starts_with('-'))
            .cloned()
            .collect(),
        // `gio trash|remove PATH…`: GNOME's file tool, a verb first.
        "gio"
            if inv
                .get(1)
                .is_some_and(|v| v.dynamic || v.is("trash") || v.is("remove")) =>
        {
            inv[2..]
                .iter()
                .filter(|a| a.dynamic || !a.text.starts_with('-'))
                .cloned()
                .collect()
        }
        _ => return None,
    };
    as_rm_rf(name, operands, r)
}

/// `rsync --delete SRC /` (any `--del…` option): whatever the source lacks
/// is removed from the destination, so into `/` or the home it is `rm -rf`
/// of what is there by another name.
pub(super) fn rsync_delete(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    rsync_removes_sources(inv, r).or_else(|| rsync_delete_into(inv, r))
}

/// `rsync --remove-source-files ~/ dest`: every file it sends is removed
/// from the source, so a source of `/` or the home empties it (`--remove-s`
/// and longer prefixes are the option too).
fn rsync_removes_sources(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let removes = inv.iter().skip(1).any(|a| {
        !a.dynamic && {
            let name = a.text.split('=').next().unwrap_or(&a.text);
            name.len() >= "--remove-s".len() && "--remove-source-files".starts_with(name)
        }
    });
    if !removes {
        return None;
    }
    let ops = operands(inv);
    let (_, sources) = ops.split_last()?;
    as_rm_rf(
        "rsync --remove-source-files",
        sources.iter().map(|a| (*a).clone()),
        r,
    )
}

fn rsync_delete_into(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let deletes = inv.iter().skip(1).any(|a| {
        !a.dynamic && {
            let name = a.text.split('=').next().unwrap_or(&a.text);
            name.starts_with("--del")
        }
    });
    if !deletes {
        return None;
    }
    let dest = operands(inv).into_iter().last()?;
    match target_danger(dest, r, &guarded(r.home)) {
        Danger::Yes => Some(Hit::Deny(format!(
            "`rsync --delete` into {}: it removes everything there the source lacks",
            describe(dest)
        ))),
        Danger::Maybe => Some(Hit::Maybe(format!(
            "`rsync --delete` into {}, which may be / or the home directory",
            describe(dest)
        ))),
        Danger::No => None,
    }
}

/// `find / -delete` (or `find ~ -delete`): `rm -rf /` by another name.
/// (`find / -exec rm {} +` is the inner `rm`'s, through `{}`.)
pub(super) fn find_delete(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    if !inv.iter().any(|a| a.is("-delete")) {
        return None;
    }
    if inv.iter().any(|a| a.is("-files0-from")) {
        return Some(Hit::Maybe(
            "`find -files0-from … -delete`: start paths read from a file".to_string(),
        ));
    }
    let guarded = guarded(r.home);
    let mut maybe = None;
    let mut roots = inv
        .iter()
        .skip(1)
        .skip_while(|a| !a.dynamic && (matches!(a.text.as_str(), "-H" | "-L" | "-P")))
        .take_while(|a| a.dynamic || !(a.text.starts_with('-') || a.text == "(" || a.text == "!"))
        .peekable();
    roots.peek()?;
    for root in roots {
        match target_danger(root, r, &guarded) {
            Danger::Yes => return Some(Hit::Deny(format!("`find {} -delete`", root.text))),
            Danger::Maybe => {
                maybe = Some(Hit::Maybe(format!(
                    "`find -delete` from {}, which may be / or the home directory",
                    describe(root)
                )))
            }
            Danger::No => {}
        }
    }
    maybe
}
