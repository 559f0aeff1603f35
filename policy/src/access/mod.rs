//! What a segment reads and what it writes, by meaning.
//!
//! The scope stage asks *where* a command's paths lie; the path rules
//! (`Read(…)`, `Edit(…)`) and the protected paths ask *what it does* there
//! (POLICY.md, "Spelling does not change meaning", points 9, 10 and 14).
//! A redirection `>` writes and `<` reads; `cp`/`mv`/`install`/`ln` write
//! their target, `tee`, `touch`, `truncate` their operands, `sed -i` and
//! `perl -i` their files, `dd` its `of=`, `curl -o`/`wget -O` their output.
//! A program known only to read reads every path it names; any other
//! program may write any path it names — it is not known not to.
//!
//! Every argument is a candidate path here, shaped or not (`cat config`
//! reads `config`): a rule or a protected name about a bare name must see
//! it. The values inside a word are found as the scope stage finds them
//! ([`crate::scope::path_candidates`]: option values, `=` values, `@file`).

use crate::arg::Arg;
use crate::protected;
use crate::scope::path_candidates;
use crate::segment::Segment;
use beneath::{may_write_beneath, unknown_names_beneath};
use write_options::{WRITE_OPTIONS, long_is, makes_directories, target_in_cluster};

mod beneath;
mod write_options;

/// What a segment does with one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    /// The program is not known to only read it.
    MayWrite,
    Write,
}

/// One path a segment names, with what it does there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAccess {
    /// The path as written (one candidate of a word); for a dynamic word,
    /// its static skeleton.
    pub text: String,
    pub access: Access,
    /// Holds an unquoted glob: judged by what it can match.
    pub glob: bool,
    /// Its value is unknown before running.
    pub dynamic: bool,
    /// Starts with `~user`: another user's home, whose place is unknown.
    pub tilde_user: bool,
    /// A program argument: relative to `git -C`'s directory when given.
    pub in_argv: bool,
    /// Read recursively (`grep -r`, `cp -r`, `rg`): everything under it is
    /// read, hidden names too when `hidden`.
    pub recursive: Option<Recursion>,
    /// Arguments appended from stdin (`xargs`): paths not known before it runs.
    pub from_stdin: bool,
    /// Written with names known only at run time beneath it: an archive
    /// extracted there, a repository cloned there, a directory's contents
    /// copied there, packages installed under it.
    pub beneath: bool,
}

/// How a directory is read recursively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recursion {
    /// Names starting with `.` are read too (`grep -r`, `cp -r`; not `rg`
    /// without `--hidden`).
    pub hidden: bool,
}

/// Programs that only read the paths they name: those of [`reads_only`],
/// and these, whose options that write are listed in [`WRITE_OPTIONS`] and
/// whose other writes are read below (`sed -i`, `tar x`, `uniq IN OUT`).
fn reader(name: &str) -> bool {
    reads_only(name)
        || matches!(
            name,
            "find"
                | "sort"
                | "git"
                | "xxd"
                | "sed"
                | "gsed"
                | "perl"
                | "yq"
                | "uniq"
                | "tar"
                | "gtar"
                | "bsdtar"
                | "wget"
                | "curl"
                | "dd"
                | "less"
                | "iconv"
                | "base64"
        )
}

/// Readers that write nothing whatever their options.
fn reads_only(name: &str) -> bool {
    matches!(
        name,
        "cat"
            | "tac"
            | "head"
            | "tail"
            | "more"
            | "bat"
            | "batcat"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "ag"
            | "ack"
            | "ls"
            | "dir"
            | "stat"
            | "file"
            | "wc"
            | "diff"
            | "cmp"
            | "comm"
            | "md5sum"
            | "sha1sum"
            | "sha224sum"
            | "sha256sum"
            | "sha384sum"
            | "sha512sum"
            | "b2sum"
            | "cksum"
            | "sum"
            | "du"
            | "df"
            | "tree"
            | "realpath"
            | "readlink"
            | "basename"
            | "dirname"
            | "echo"
            | "printf"
            | "test"
            | "["
            | "[["
            | "jq"
            | "od"
            | "hexdump"
            | "strings"
            | "nl"
            | "cut"
            | "tr"
            | "column"
            | "paste"
            | "join"
            | "awk"
            | "gawk"
            | "mawk"
            | "nawk"
            | "fold"
            | "fmt"
            | "expand"
            | "unexpand"
            | "rev"
            | "shasum"
            | "cd"
            | "pushd"
            | "popd"
            | "pwd"
            | "true"
            | "false"
            | "type"
            | "which"
            | "command"
            | "whereis"
            | "source"
            | "."
            | "exa"
            | "eza"
            | "fd"
            | "fdfind"
            | "locate"
            | "zcat"
            | "zless"
            | "zgrep"
            | "bzcat"
            | "xzcat"
            | "lsof"
            | "namei"
            | "getfacl"
            | "lsattr"
    )
}

/// Programs whose operands are all written. `mv` removes its sources; `ln`
/// makes a second name for its targets, through which a later write
/// reaches them (`ln -s .git g; echo x > g/hooks/pre-commit`).
const WRITE_ALL: &[&str] = &[
    "tee", "touch", "truncate", "mkdir", "chmod", "chown", "chgrp", "shred", "mkfifo", "mknod",
    "setfacl", "chattr", "mv", "gmv", "ln", "gln", "link", "symlink",
];

/// Whether `ln` is given its link directory by option (`-t D`,
/// `--target-directory=D`): then every operand is a target.
/// A dynamic word may be such an option.
fn has_target_option(args: &[Arg]) -> bool {
    args.iter().any(|a| {
        let t = a.text.as_str();
        a.dynamic
            || t.starts_with("--t")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('t'))
    })
}

/// Programs that write their last operand (the target) and read the rest,
/// unless `-t DIR` names the target.
const WRITE_LAST: &[&str] = &["cp", "install", "rsync", "scp", "gcp", "ginstall"];

/// Programs that edit their file operands in place with an option
/// (`sed -i`, `perl -i`, `yq -i`).
const IN_PLACE: &[&str] = &["sed", "gsed", "perl", "yq"];

/// What the segment does with each path it names.
/// With `reads` unset, only what it writes (or may write): what the
/// protected paths need when no path rule is loaded.
pub fn accesses(seg: &Segment, reads: bool) -> Vec<FileAccess> {
    let cwd_protected = !reads && cwd_mentions_protected(&seg.cwd);
    accesses_under(seg, reads, cwd_protected)
}

/// Whether a directory the segment may run in mentions a protected name.
pub fn cwd_mentions_protected(cwd: &crate::segment::Cwd) -> bool {
    match cwd {
        crate::segment::Cwd::Known(dirs) => dirs.iter().any(|d| protected::mentioned_in(d)),
        crate::segment::Cwd::Unknown => false,
    }
}

/// [`accesses`], told [`cwd_mentions_protected`] of the segment's cwd (read
/// only when `reads` is unset): the segments of one command mostly share
/// their cwd, and the caller asks once.
pub fn accesses_under(seg: &Segment, reads: bool, cwd_protected: bool) -> Vec<FileAccess> {
    let mut out = Vec::new();
    // Only writes wanted, for the protected names: a word that mentions
    // none, under a directory that names none, cannot write one. (With
    // reads wanted every word is collected: not looked at.)
    let base_protected = !reads
        && (cwd_protected
            || seg
                .arg_dir
                .as_ref()
                .is_some_and(|d| protected::mentioned_in(&d.text)));
    let push = |out: &mut Vec<FileAccess>, a: &Arg, access, in_argv, whole, reads: bool| {
        // `collect` keeps no read when reads are not wanted: asked first,
        // it spares the search for a protected name in most words.
        if !reads && access == Access::Read {
            return;
        }
        if reads || a.glob || base_protected || protected::mentioned_in(&a.text) {
            collect(out, a, access, in_argv, whole, reads);
        }
    };
    for r in &seg.redirects {
        let access = if r.writes {
            Access::Write
        } else {
            Access::Read
        };
        push(&mut out, &r.target, access, false, true, reads);
    }
    for (_, v) in &seg.assigns {
        push(&mut out, v, Access::Read, false, false, reads);
    }
    for h in &seg.hidden_paths {
        if let Some(p) = &h.path {
            let access = if h.writes {
                Access::Write
            } else {
                Access::Read
            };
            push(&mut out, &Arg::lit(p.as_str()), access, false, true, reads);
        }
    }
    for r in &seg.find_roots {
        push(&mut out, r, Access::Read, false, false, reads);
    }
    // The program's basename, once: asked below several times.
    let name = seg.argv.first().filter(|p| !p.dynamic).map(Arg::basename);
    // A program that only reads writes nothing through its words.
    if !reads && name.is_some_and(reads_only) {
        return out;
    }
    // Only writes wanted, and no word of argv can name a protected place
    // (no glob, no protected name, no `{}`, a directory that names none):
    // what the program does with its words changes nothing. (What it writes
    // through an option, `-oout`, `of=out`, `tar -C dir x`, is part of a
    // word, or the cwd `.`.)
    let words_matter = reads
        || base_protected
        || name.is_some_and(|n| may_write_beneath(&seg.argv, n))
        || seg
            .argv
            .iter()
            .skip(1)
            .any(|a| a.glob || a.find_placeholder || protected::mentioned_in(&a.text));
    let found = if words_matter {
        argv_accesses(&seg.argv)
    } else {
        ArgvAccess::default()
    };
    let from = out.len();
    for (i, (a, k)) in seg.argv.iter().zip(&found.kinds).enumerate().skip(1) {
        if found.beneath.contains(&i) {
            // Whatever the word mentions: what lands beneath it is unknown.
            let before = out.len();
            collect(&mut out, a, Access::Write, true, true, reads);
            mark_beneath(&mut out[before..]);
        } else {
            push(&mut out, a, *k, true, false, reads);
        }
    }
    // `… | xargs sed -i s/a/b/`: what the appended words are written as,
    // read from stdin.
    // (`mkdir` makes empty directories: nothing that runs.)
    if seg.trailing_dynamic && name.is_some_and(|n| n != "mkdir") {
        let mut with_appended = seg.argv.clone();
        with_appended.push(Arg::dynamic(""));
        let k = argv_accesses(&with_appended).kinds.last().copied();
        if k == Some(Access::Write) {
            out.push(FileAccess {
                text: String::new(),
                access: Access::Write,
                glob: false,
                dynamic: true,
                tilde_user: false,
                in_argv: true,
                recursive: None,
                from_stdin: true,
                beneath: false,
            });
        }
    }
    // `find ROOT … -exec sed -i … {} +`: what `{}` stands for lies under
    // the roots, and is written as `{}` is.
    let placeholder = seg
        .argv
        .iter()
        .zip(&found.kinds)
        .filter(|(a, _)| a.find_placeholder)
        .map(|(_, k)| *k)
        .max();
    if let Some(k) = placeholder.filter(|k| *k != Access::Read) {
        for r in &seg.find_roots {
            push(&mut out, r, k, false, false, reads);
        }
    }
    if let Some(r) = found.recursive {
        for fa in &mut out[from..] {
            if fa.access == Access::Read {
                fa.recursive = Some(r);
            }
        }
        if found.searches_cwd && reads {
            let before = out.len();
            push(&mut out, &Arg::lit("."), Access::Read, false, true, reads);
            for fa in &mut out[before..] {
                fa.recursive = Some(r);
            }
        }
    }
    for v in found.attached_writes {
        push(&mut out, &Arg::lit(v), Access::Write, true, true, reads);
    }
    for v in found.attached_beneath {
        let before = out.len();
        collect(&mut out, &Arg::lit(v), Access::Write, true, true, reads);
        mark_beneath(&mut out[before..]);
    }
    // `GIT_TRACE=/path git status`: git appends its trace to that file.
    for (name, v) in &seg.assigns {
        if name.starts_with("GIT_TRACE") && (v.dynamic || v.text.starts_with(['/', '~', '.'])) {
            collect(&mut out, v, Access::Write, false, true, reads);
        }
    }
    out
}

fn mark_beneath(added: &mut [FileAccess]) {
    for fa in added {
        fa.beneath = true;
    }
}

fn collect(
    out: &mut Vec<FileAccess>,
    a: &Arg,
    access: Access,
    in_argv: bool,
    whole: bool,
    reads: bool,
) {
    if a.package || a.find_placeholder || a.proc_sub || !reads && access == Access::Read {
        return;
    }
    let base = FileAccess {
        text: String::new(),
        access,
        glob: a.glob,
        dynamic: a.dynamic,
        tilde_user: a.tilde_user,
        in_argv,
        recursive: None,
        from_stdin: false,
        beneath: false,
    };
    let mut add = |t: &str, tilde_user: bool| {
        if t.is_empty() || out.iter().any(|f| f.text == t && f.access == access) {
            return;
        }
        out.push(FileAccess {
            text: t.to_string(),
            tilde_user,
            ..base.clone()
        });
    };
    if a.dynamic {
        // Its value is unknown: one access, its skeleton as the text.
        out.push(FileAccess {
            text: a.text.clone(),
            ..base
        });
        return;
    }
    let t = a.text.as_str();
    // A redirection target is one path; an argument is itself a path
    // (unless it is an option) and may hold more.
    if whole || !t.starts_with('-') || t == "-" {
        if t != "-" {
            add(t, a.tilde_user);
        }
        if whole {
            return;
        }
    }
    let candidates = path_candidates(t);
    for &p in &candidates {
        let tilde_user = p.starts_with('~') && !p.starts_with("~/") && p != "~";
        add(p, tilde_user || a.tilde_user);
    }
    // A glob that may match `..` may climb: its climbed path too.
    if a.glob {
        let own = (whole || !t.starts_with('-')).then_some(t);
        for p in own
            .into_iter()
            .chain(candidates.iter().copied())
            .filter_map(crate::path_words::climbing)
        {
            add(&p, a.tilde_user);
        }
    }
}

/// What a program does with each word of its argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgvAccess {
    /// The access of each word (the program itself reads).
    pub kinds: Vec<Access>,
    /// Values attached to a writing option (`-oout`, `--output=out`,
    /// `of=out`): exactly the path written.
    pub attached_writes: Vec<String>,
    /// The directories it names are read recursively.
    pub recursive: Option<Recursion>,
    /// With no directory named, it searches the cwd (`rg x`, `grep -r x`).
    pub searches_cwd: bool,
    /// Words written with names known only at run time beneath them
    /// ([`FileAccess::beneath`]).
    pub beneath: Vec<usize>,
    /// Values (attached to an option, or implied: the cwd) written so.
    pub attached_beneath: Vec<String>,
}

/// What the program of `argv` does with each of its words.
pub fn argv_accesses(argv: &[Arg]) -> ArgvAccess {
    let mut kinds = vec![Access::Read; argv.len()];
    let mut attached_writes = Vec::new();
    let Some(name) = argv.first().map(Arg::basename) else {
        return ArgvAccess {
            kinds,
            attached_writes,
            ..ArgvAccess::default()
        };
    };
    let args = &argv[1..];
    let git_config = name == "git" && argv.iter().skip(1).any(|a| a.is("config"));
    let write_opts = WRITE_OPTIONS
        .iter()
        .find(|(n, _)| *n == name || (n == &"tar" && matches!(name, "gtar" | "bsdtar")))
        .filter(|(n, _)| *n != "git" || git_config)
        .map_or(&[][..], |(_, o)| *o);
    // Which words are operands, and which option words' values are written.
    let mut operands: Vec<usize> = Vec::new();
    let mut in_place = false;
    let mut target_dir = false;
    let mut script_given = false;
    let mut creates = false;
    let mut extracts = false;
    // `tar -C dir`: where an extraction writes.
    let mut tar_dirs: Vec<String> = Vec::new();
    let mut i = 0;
    let mut opts_done = false;
    while i < args.len() {
        let a = &args[i];
        let idx = i + 1;
        let t = a.text.as_str();
        if opts_done || a.dynamic || !t.starts_with('-') || t == "-" {
            operands.push(idx);
            i += 1;
            continue;
        }
        if t == "--" {
            opts_done = true;
            i += 1;
            continue;
        }
        let (opt, attached) = match t.split_once('=') {
            Some((o, v)) if t.starts_with("--") || matches!(name, "dd") => (o, Some(v)),
            _ => (t, None),
        };
        // A write option: `-o out`, `--output=out`, `-oout`, `-sSLo out`.
        let long_hit = t.starts_with("--") && write_opts.iter().any(|o| long_is(name, opt, o));
        let short_hit = !t.starts_with("--")
            && write_opts.iter().any(|o| {
                o.len() == 2 && !o.starts_with("--") && t.as_bytes()[1..].contains(&o.as_bytes()[1])
            });
        let find_hit = name == "find" && write_opts.contains(&t);
        if long_hit || find_hit {
            if let Some(v) = attached {
                attached_writes.push(v.to_string());
            } else if idx + 1 < argv.len() {
                kinds[idx + 1] = Access::Write;
                i += 1;
            }
        } else if short_hit {
            // The value is attached after the option letter or is the next word.
            let letters: Vec<u8> = write_opts
                .iter()
                .filter(|o| o.len() == 2 && !o.starts_with("--"))
                .map(|o| o.as_bytes()[1])
                .collect();
            let pos = t.as_bytes()[1..]
                .iter()
                .position(|b| letters.contains(b))
                .map_or(t.len(), |p| p + 1);
            if pos + 1 < t.len() {
                attached_writes.push(t[pos + 1..].to_string());
            } else if idx + 1 < argv.len() {
                kinds[idx + 1] = Access::Write;
                i += 1;
            }
        }
        // `-t DIR`, `-rtDIR`, `--target-directory=DIR`, `--t=DIR`: the
        // directory every operand is written into.
        let copier = WRITE_LAST.contains(&name) || matches!(name, "mv" | "gmv" | "ln" | "gln");
        let long_target = t.starts_with("--") && long_is(name, opt, "--target-directory");
        if copier && let Some(v) = target_in_cluster(t).or(long_target.then_some("")) {
            target_dir = WRITE_LAST.contains(&name);
            if let Some(v) = attached
                .filter(|_| long_target)
                .or(Some(v).filter(|v| !v.is_empty()))
            {
                attached_writes.push(v.to_string());
            } else if idx + 1 < argv.len() {
                kinds[idx + 1] = Access::Write;
                i += 1;
            }
        }
        if IN_PLACE.contains(&name) {
            let short = !t.starts_with("--");
            // The letters that take a value (the rest of the word or the
            // next word): sed's `-e script`, `-f file`, `-l N`; perl's
            // `-e code`, `-E code`, `-I dir`, `-M module`, …
            let value_letters: &[char] = match name {
                "sed" | "gsed" => &['e', 'f', 'l'],
                "perl" => &['e', 'E', 'I', 'M', 'm', 'x', 'd', 'D', 'C', 'l', '0'],
                _ => &[],
            };
            let letters = t.trim_start_matches('-');
            // `-i`, `-i.bak`, `-ni`, `-pi`, `-Ei`: `i` before any letter that
            // takes a value; what follows `i` is its backup suffix
            // (`sed -ie` and `perl -pie` back up with the suffix `e`).
            let cut = letters.find(value_letters).unwrap_or(letters.len());
            let i_at = letters.find('i').filter(|&p| p < cut);
            if short && i_at.is_some() || opt == "--in-place" || opt == "--inplace" {
                in_place = true;
            }
            if short && i_at.is_none() && cut < letters.len() {
                let c = letters[cut..].chars().next().unwrap_or('e');
                script_given |= match name {
                    "perl" => matches!(c, 'e' | 'E'),
                    _ => matches!(c, 'e' | 'f'),
                };
                // The value is the next word when the letter ends the word.
                if letters.len() == cut + c.len_utf8() {
                    i += 1;
                }
            }
            if opt == "--expression" || opt == "--file" {
                script_given = true;
                if attached.is_none() {
                    i += 1;
                }
            }
        }
        if matches!(name, "tar" | "gtar" | "bsdtar") {
            if !t.starts_with("--") {
                creates |= t.contains('c') || t.contains('r') || t.contains('u');
                extracts |= t.contains('x');
                if t == "-C" {
                    if let Some(v) = args.get(i + 1).and_then(Arg::known) {
                        tar_dirs.push(v.to_string());
                    }
                } else if let Some(v) = t.strip_prefix("-C").filter(|v| !v.is_empty()) {
                    tar_dirs.push(v.to_string());
                }
            }
            if t.starts_with("--") && long_is(name, opt, "--directory") {
                match attached {
                    Some(v) => tar_dirs.push(v.to_string()),
                    None => tar_dirs.extend(args.get(i + 1).and_then(Arg::known).map(String::from)),
                }
            }
            extracts |= matches!(opt, "--extract" | "--get");
        }
        if matches!(opt, "--create" | "--append" | "--update") {
            creates = true;
        }
        i += 1;
    }
    // `tar czf a.tgz …`: the first word is options without a dash.
    if matches!(name, "tar" | "gtar" | "bsdtar")
        && let Some(&first) = operands.first()
        && first == 1
        && let Some(t) = argv.get(1).and_then(Arg::known)
        && !t.contains('/')
    {
        creates |= t.contains('c') || t.contains('r') || t.contains('u');
        extracts |= t.contains('x');
        if let Some(fpos) = t.find('f') {
            let value_at = 2 + t[..fpos]
                .matches(['b', 'C', 'T', 'X', 'g', 'N', 'K', 'V'])
                .count();
            if let Some(k) = kinds.get_mut(value_at)
                && creates
            {
                *k = Access::Write;
            }
        }
    }
    if matches!(name, "tar" | "gtar" | "bsdtar") && !creates {
        for k in kinds.iter_mut() {
            *k = Access::Read;
        }
        attached_writes.clear();
    }
    let n = name;
    if n == "dd" {
        for (k, a) in kinds.iter_mut().zip(argv).skip(1) {
            if let Some(v) = a.known().and_then(|t| t.strip_prefix("of=")) {
                *k = Access::Write;
                attached_writes.push(v.to_string());
            }
        }
    } else if n == "uniq" || n == "xxd" {
        if let Some(&second) = operands.get(1) {
            kinds[second] = Access::Write;
        }
    } else if matches!(n, "install" | "ginstall") && makes_directories(args) {
        // `install -d DIR…`: every operand is a directory made.
        for &o in &operands {
            kinds[o] = Access::Write;
        }
    } else if WRITE_LAST.contains(&n) {
        if let Some(&last) = operands.last()
            && operands.len() > 1
            && !target_dir
        {
            kinds[last] = Access::Write;
        }
    } else if matches!(n, "ln" | "gln") && operands.len() > 1 && !has_target_option(args) {
        // `ln [-s] TARGET… LINK`: the link is written, and so is a target
        // as far as protected places go (a later write through the link
        // reaches it) — except the places held only for a known write
        // (`ln -s /usr/bin/python3 venv/bin/python`): named, not written.
        if let Some((&last, targets)) = operands.split_last() {
            kinds[last] = Access::Write;
            for &o in targets {
                kinds[o] = if crate::protected::in_place_held_only_when_written(&argv[o].text) {
                    Access::MayWrite
                } else {
                    Access::Write
                };
            }
        }
    } else if WRITE_ALL.contains(&n) {
        for &o in &operands {
            kinds[o] = Access::Write;
        }
    } else if IN_PLACE.contains(&n) {
        if in_place {
            let skip = usize::from(!script_given);
            for &o in operands.iter().skip(skip) {
                kinds[o] = Access::Write;
            }
        }
    } else if !reader(n) {
        for k in kinds.iter_mut().skip(1) {
            if *k == Access::Read {
                *k = Access::MayWrite;
            }
        }
    }
    let (recursive, searches_cwd) = recursion(name, args, operands.len());
    let mut attached_beneath = Vec::new();
    // An extraction writes its members beneath `-C`'s directory (or the
    // cwd): names known only at run time.
    if matches!(name, "tar" | "gtar" | "bsdtar") && !creates && extracts {
        if tar_dirs.is_empty() {
            attached_beneath.push(".".to_string());
        }
        attached_beneath.extend(tar_dirs);
    }
    let mut beneath = Vec::new();
    unknown_names_beneath(
        name,
        argv,
        &operands,
        recursive.is_some(),
        &mut beneath,
        &mut attached_beneath,
    );
    for &b in &beneath {
        kinds[b] = Access::Write;
    }
    ArgvAccess {
        kinds,
        attached_writes,
        recursive,
        searches_cwd,
        beneath,
        attached_beneath,
    }
}

/// Whether the program reads the directories it names recursively, and
/// whether, naming none, it reads the cwd so.
fn recursion(name: &str, args: &[Arg], operands: usize) -> (Option<Recursion>, bool) {
    let short_has = |letters: &[char]| {
        args.iter().any(|a| {
            let t = a.text.as_str();
            !a.dynamic && t.starts_with('-') && !t.starts_with("--") && t[1..].contains(letters)
        })
    };
    let long_has = |opts: &[&str]| {
        args.iter().any(|a| {
            opts.iter()
                .any(|o| a.text == *o || a.text.starts_with(&format!("{o}=")))
        })
    };
    let all = Some(Recursion { hidden: true });
    match name {
        "grep" | "egrep" | "fgrep" | "zgrep"
            if short_has(&['r', 'R'])
                || long_has(&["--recursive", "--dereference-recursive"])
                || args.windows(2).any(|w| w[0].is("-d") && w[1].is("recurse")) =>
        {
            (all, operands <= 1)
        }
        "rg" | "ag" | "ack" => {
            let hidden =
                long_has(&["--hidden", "--unrestricted", "--all-types"]) || short_has(&['u', '.']);
            let files = long_has(&["--files"]);
            (Some(Recursion { hidden }), operands <= usize::from(!files))
        }
        "cp" | "gcp" | "scp"
            if short_has(&['r', 'R', 'a']) || long_has(&["--recursive", "--archive"]) =>
        {
            (all, false)
        }
        "rsync" if short_has(&['r', 'a']) || long_has(&["--recursive", "--archive"]) => {
            (all, false)
        }
        "zip" if short_has(&['r']) || long_has(&["--recurse-paths"]) => (all, false),
        "tar" | "gtar" | "bsdtar" => (all, false),
        _ => (None, false),
    }
}

/// Programs that read the files their operands name (what a dynamic
/// operand of theirs may read is unknown). Programs that do not read their
/// operands as files (`echo`, `git commit -m`) are not here.
const FILE_READERS: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "batcat",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "base64",
    "wc",
    "sort",
    "uniq",
    "cut",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "diff",
    "cmp",
    "comm",
    "jq",
    "yq",
    "source",
    ".",
    "cp",
    "scp",
    "rsync",
    "tar",
    "gtar",
    "zip",
    "gzip",
    "bzip2",
    "xz",
    "zcat",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "awk",
    "gawk",
    "sed",
    "gsed",
    "paste",
    "join",
    "tee",
    "dd",
    "install",
    "ln",
    "mv",
    "curl",
    "wget",
    "file",
    "stat",
    "fold",
    "fmt",
    "rev",
    "iconv",
    "column",
    "tr",
    "split",
];

/// Whether what a dynamic word of this access reads is unknown: a read
/// redirection, or an operand of a program that reads its operands as files.
pub fn dynamic_read(fa: &FileAccess, program: Option<&Arg>) -> bool {
    fa.dynamic
        && (!fa.in_argv
            || program.is_some_and(|p| !p.dynamic && FILE_READERS.contains(&p.basename())))
}

/// Where a command writes outside the project without naming a path
/// (point 9): installs and config writes that land in the user's home or
/// the system. `argv` is the program's argv with global options removed.
/// Outside in the host frame; a container's own home is private to it.
pub fn writes_outside_unnamed(argv: &[Arg]) -> Option<&'static str> {
    let name = argv.first().filter(|a| !a.dynamic)?.basename();
    let mut args: Vec<&str> = argv[1..].iter().map(|a| a.text.as_str()).collect();
    // `python -m pip …` is pip.
    let name = if name.starts_with("python") && args.len() >= 2 && args[0] == "-m" {
        let module = args[1];
        args.drain(..2);
        match module {
            "pip" | "pip3" => "pip",
            "pipx" => "pipx",
            _ => return None,
        }
    } else {
        name
    };
    let has = |w: &[&str]| args.iter().any(|a| w.contains(a));
    let sub = args.iter().find(|a| !a.starts_with('-')).copied();
    match name {
        // `--global`/`--system`: ~/.gitconfig or /etc/gitconfig.
        // Reading it (`--get`, `--list`, `git config get|list`) writes nothing.
        "git"
            if sub == Some("config")
                && has(&["--global", "--system"])
                && !has(&[
                    "--get",
                    "--get-all",
                    "--get-regexp",
                    "--get-urlmatch",
                    "--get-color",
                    "--get-colorbool",
                    "-l",
                    "--list",
                ])
                && !args
                    .iter()
                    .skip_while(|a| **a != "config")
                    .nth(1)
                    .is_some_and(|a| matches!(*a, "get" | "list")) =>
        {
            Some("the user's or the system's git config (`git config --global|--system`)")
        }
        // `git maintenance register|start` adds the repository to the
        // user's git config and schedules it (crontab, systemd timers).
        "git"
            if sub == Some("maintenance")
                && args
                    .iter()
                    .skip_while(|a| **a != "maintenance")
                    .nth(1)
                    .is_some_and(|a| {
                        matches!(*a, "register" | "start" | "unregister" | "stop")
                    }) =>
        {
            Some("the user's git config and scheduler (`git maintenance start|register`)")
        }
        // `-g`: the global node_modules and bin directory.
        "npm" | "pnpm" | "bun" | "cnpm"
            if has(&["-g", "--global", "--location=global"])
                || args.windows(2).any(|w| w == ["--location", "global"]) =>
        {
            Some("the global package directory (`-g`)")
        }
        // `npm link` without a package: a global symlink to this package.
        "npm" | "pnpm" if matches!(sub, Some("link" | "ln")) && args.len() == 1 => {
            Some("the global package directory (`npm link`)")
        }
        // `npm config set` (and its alias `npm set`) writes the user's
        // ~/.npmrc unless told the project's.
        "npm" | "pnpm"
            if (sub == Some("set")
                || (sub == Some("config")
                    && args
                        .iter()
                        .filter(|a| !a.starts_with('-'))
                        .nth(1)
                        .is_some_and(|a| {
                            matches!(*a, "set" | "delete" | "rm" | "del" | "edit")
                        })))
                && !has(&["--location=project"])
                && !args
                    .windows(2)
                    .any(|w| matches!(w[0], "--location" | "-L") && w[1] == "project") =>
        {
            Some("the user's npm config (`npm config set`)")
        }
        // `pip config set|unset|edit`: the user's pip.conf (or the site's,
        // the system's).
        "pip" | "pip3"
            if sub == Some("config")
                && args
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .nth(1)
                    .is_some_and(|a| matches!(*a, "set" | "unset" | "edit")) =>
        {
            Some("pip's config file (`pip config set`)")
        }
        "yarn" if sub == Some("global") => Some("yarn's global directory (`yarn global`)"),
        // `--user`: ~/.local.
        "pip" | "pip3" if sub == Some("install") && has(&["--user"]) => {
            Some("the user's site-packages (`pip install --user`)")
        }
        "pipx" if matches!(sub, Some("install" | "inject" | "upgrade" | "upgrade-all")) => {
            Some("pipx's directories in the user's home")
        }
        "uv" if sub == Some("tool") => Some("uv's tool directory in the user's home (`uv tool`)"),
        // ~/.cargo/bin, unless `--root` names a path (judged as a path).
        "cargo"
            if sub == Some("install")
                && !args
                    .iter()
                    .any(|a| *a == "--list" || *a == "--root" || a.starts_with("--root=")) =>
        {
            Some("cargo's bin directory in the user's home (`cargo install`)")
        }
        // $GOBIN or ~/go/bin.
        "go" if sub == Some("install") => Some("Go's bin directory (`go install`)"),
        "gem"
            if sub == Some("install")
                && !args.iter().any(|a| {
                    matches!(*a, "-i" | "--install-dir") || a.starts_with("--install-dir=")
                }) =>
        {
            Some("the gem directory (`gem install`)")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(cmd: &str) -> Vec<(String, Access)> {
        let argv: Vec<Arg> = cmd.split_whitespace().map(Arg::lit).collect();
        let found = argv_accesses(&argv);
        argv.iter()
            .zip(found.kinds)
            .skip(1)
            .map(|(a, k)| (a.text.clone(), k))
            .filter(|(_, k)| *k != Access::Read)
            .chain(
                found
                    .attached_writes
                    .into_iter()
                    .chain(found.attached_beneath)
                    .map(|v| (v, Access::Write)),
            )
            .collect()
    }

    #[test]
    fn finds_what_is_written() {
        use Access::*;
        let cases: &[(&str, &[(&str, Access)])] = &[
            ("cat a b", &[]),
            ("cp a b", &[("b", Write)]),
            ("cp -r a b c", &[("c", Write)]),
            ("cp -t d a b", &[("d", Write)]),
            (
                "mv a .git/hooks/x",
                &[("a", Write), (".git/hooks/x", Write)],
            ),
            ("ln -s .git g", &[(".git", Write), ("g", Write)]),
            ("tee -a a b", &[("a", Write), ("b", Write)]),
            ("sed -i s/a/b/ f", &[("f", Write)]),
            ("sed -i -e s/a/b/ f g", &[("f", Write), ("g", Write)]),
            ("sed -n p f", &[]),
            ("perl -pi -e s/a/b/ f", &[("f", Write)]),
            ("perl -pie s/a/b/ f", &[("f", Write)]),
            ("sed -ie s/a/b/ f", &[("f", Write)]),
            ("sed -Ei s/a/b/ f", &[("f", Write)]),
            ("sed -E -i s/a/b/ f", &[("f", Write)]),
            ("sed -ni.bak -e p f", &[("f", Write)]),
            ("sed -n -e p -f x.sed f", &[]),
            ("dd if=a of=b", &[("of=b", Write), ("b", Write)]),
            ("curl -sSLo out https://x", &[("out", Write)]),
            ("curl -sSLoout https://x", &[("out", Write)]),
            ("curl -o out https://x", &[("out", Write)]),
            ("curl --output=out https://x", &[("out", Write)]),
            ("tar -czf/tmp/out.tgz .", &[("/tmp/out.tgz", Write)]),
            ("git push -f origin main", &[]),
            ("wget -O out https://x", &[("out", Write)]),
            ("tar -czf out.tgz src", &[("out.tgz", Write)]),
            ("tar czf out.tgz src", &[("out.tgz", Write)]),
            ("tar -xzf in.tgz", &[(".", Write)]),
            ("tar -xzf in.tgz -C .git/hooks", &[(".git/hooks", Write)]),
            ("tar xf in.tar --directory=out", &[("out", Write)]),
            ("tar -tzf in.tgz", &[]),
            ("sort -o out in", &[("out", Write)]),
            ("touch a", &[("a", Write)]),
            ("git config --file f k v", &[("f", Write)]),
            ("git add .vscode", &[]),
            (
                "python3 gen.py out",
                &[("gen.py", MayWrite), ("out", MayWrite)],
            ),
        ];
        for (cmd, want) in cases {
            let want: Vec<(String, Access)> =
                want.iter().map(|(t, k)| (t.to_string(), *k)).collect();
            assert_eq!(kinds(cmd), want, "{cmd}");
        }
    }
}
