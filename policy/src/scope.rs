//! Path scope, judged in the frame where the command runs.
//!
//! Paths are found where a command names them — arguments that look like
//! paths, redirection targets, assignment values, `cd` targets, `git -C`,
//! option values (`--out=/x`, `-o/x`), colon lists (`/a:/b`), and paths hidden
//! in program text (`sed w file`) — normalised lexically against the cwd and
//! compared byte for byte at path boundaries (`/workspace` is not `/work`,
//! `/wоrk` with a Cyrillic `о` is not `/work`).
//!
//! Spelling does not change meaning (POLICY.md points 6–8): the kernel's
//! aliases are followed (`/proc/self/root/X` is `/X`, `/proc/self/cwd/X` is
//! `<cwd>/X`, another process's cwd is outside, `/dev/fd/N` beyond a
//! process substitution's own is unknown); a glob is judged by what it can
//! match (the directory holding its static prefix, and every mount it can
//! lead into: `/s*/git` reaches `/srv/git`); and a command that walks what
//! it is given (`rm -r`, `grep -r`, `find`, `du`, `tar c`) reaches every
//! out-of-scope mount below a directory it names.

use std::borrow::Cow;

use crate::arg::Arg;
use crate::decision::{Location, PathReport};
use crate::frame::{Frame, MountKind};
use crate::segment::{Cwd, Segment};
use crate::substring::slash_parts;

/// Special files that are always in scope.
const SPECIAL: &[&str] = &[
    "/dev/null",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/full",
];

/// Lexically normalises `path` against `base` (an absolute directory):
/// `.` and `..` resolved, repeated slashes collapsed, `..` at `/` stays `/`.
/// The kernel's root aliases are followed as the kernel follows them:
/// `/proc/self/root`, `/proc/<pid>/root`, `/proc/thread-self/root` and
/// `/proc/<pid>/task/<tid>/root` are `/` (so `/proc/self/root/..` is `/`
/// too). `/proc/self/cwd` needs the cwd: see [`resolve`].
pub fn normalize(base: &str, path: &str) -> String {
    match walk(base, path, CwdAlias::Lexical, true) {
        Ok(s) => s.into_owned(),
        // Lexical mode never fails; keep the plain lexical form regardless.
        Err(_) => lexical(base, path),
    }
}

/// What `/proc/self/cwd` (or another process's cwd) stands for in a walk.
#[derive(Clone, Copy)]
enum CwdAlias<'a> {
    /// Left as it is written (`normalize`).
    Lexical,
    /// This directory (absolute, normalised).
    Known(&'a str),
    /// Not known: resolving through it fails.
    Unknown,
}

/// Why a path could not be resolved to one frame path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// Through `/proc/self/cwd` while the cwd is not known.
    UnknownCwd,
    /// Through another process's cwd (`/proc/<pid>/cwd`): somewhere outside.
    OtherProcess,
}

/// Whether a `/proc` component names a process (`self`, `thread-self`, a
/// pid) — or, with `globs`, is a glob that may (`*`, `[0-9]*`): then it is
/// taken as one.
fn names_process(c: &str, globs: bool) -> bool {
    matches!(c, "self" | "thread-self")
        || (!c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()))
        || (globs
            && first_glob(c).is_some()
            && ["self", "thread-self", "1"]
                .iter()
                .any(|n| component_matches(c, n)))
}

/// The alias the components so far end in, if any: `root` (the process's
/// root), `cwd` of this process, or `cwd` of another.
fn alias_at(parts: &[&str], globs: bool) -> Option<(&'static str, bool)> {
    let may_be = |c: &str, name: &str| {
        c == name || (globs && first_glob(c).is_some() && component_matches(c, name))
    };
    let (proc_part, pid, tail) = match parts {
        [a, p, t] => (*a, *p, *t),
        [a, p, task, tid, t] if may_be(task, "task") && names_process(tid, globs) => (*a, *p, *t),
        _ => return None,
    };
    if !may_be(proc_part, "proc") || !names_process(pid, globs) {
        return None;
    }
    let own = matches!(pid, "self" | "thread-self");
    let is = |name: &str| may_be(tail, name);
    if is("root") {
        Some(("root", own))
    } else if is("cwd") {
        Some(("cwd", own))
    } else {
        None
    }
}

/// The normaliser behind [`normalize`] and [`resolve`]. `globs`: a glob
/// component that may name an alias (`/proc/*/root`) is taken as it. An
/// absolute path that is already normal comes back borrowed.
fn walk<'p>(
    base: &str,
    path: &'p str,
    cwd: CwdAlias<'_>,
    globs: bool,
) -> Result<Cow<'p, str>, Unresolved> {
    walk_from(base, None, path, cwd, globs)
}

/// [`walk`], with what [`plain_base`] answers for `base` when it is known
/// already (`None`: asked here, when a relative path needs it).
fn walk_from<'p>(
    base: &str,
    base_plain: Option<bool>,
    path: &'p str,
    cwd: CwdAlias<'_>,
    globs: bool,
) -> Result<Cow<'p, str>, Unresolved> {
    if let Some(plain) = already_normal(base, base_plain, path) {
        return Ok(plain);
    }
    let mut parts: Vec<&str> = Vec::new();
    let full_base = if path.starts_with('/') { "" } else { base };
    for piece in slash_parts(full_base).chain(slash_parts(path)) {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => {
                parts.push(p);
                if (p.ends_with("root") || p.ends_with("cwd") || first_glob(p).is_some())
                    && let Some((alias, own)) = alias_at(&parts, globs)
                {
                    match (alias, own, cwd) {
                        ("root", ..) => parts.clear(),
                        (_, _, CwdAlias::Lexical) => {}
                        (_, false, _) => return Err(Unresolved::OtherProcess),
                        (_, true, CwdAlias::Unknown) => return Err(Unresolved::UnknownCwd),
                        (_, true, CwdAlias::Known(dir)) => {
                            parts.clear();
                            parts.extend(dir.split('/').filter(|c| !c.is_empty()));
                        }
                    }
                }
            }
        }
    }
    Ok(Cow::Owned(join(&parts, path.len() + base.len() + 1)))
}

/// [`walk`] of a path that is borrowed for `'w` or owned: the result
/// borrowed from it when it is already normal, else owned.
fn walk_written<'w>(
    base: &str,
    base_plain: Option<bool>,
    written: &Written<'w>,
    cwd: CwdAlias<'_>,
    globs: bool,
) -> Result<Cow<'w, str>, Unresolved> {
    match &written.0 {
        Cow::Borrowed(w) => walk_from(base, base_plain, w, cwd, globs),
        Cow::Owned(w) => {
            walk_from(base, base_plain, w, cwd, globs).map(|r| Cow::Owned(r.into_owned()))
        }
    }
}

/// Whether a base directory leaves a plain relative path as it is joined:
/// absolute, and every piece plain ([`crate::plain_path::is_plain`]).
fn plain_base(base: &str) -> bool {
    base.strip_prefix('/')
        .is_some_and(crate::plain_path::is_plain)
}

/// The walk's result when no piece of the path (nor, for a relative
/// path, of the absolute base) changes anything: every piece a plain name
/// that is no alias (`root`, `cwd`) and no glob — the common case, built
/// without collecting the pieces (an absolute one is `path` itself,
/// borrowed).
fn already_normal<'p>(base: &str, base_plain: Option<bool>, path: &'p str) -> Option<Cow<'p, str>> {
    // Each piece plain, read in one pass (`plain_path`).
    let plain = crate::plain_path::is_plain;
    if let Some(rest) = path.strip_prefix('/') {
        return plain(rest).then_some(Cow::Borrowed(path));
    }
    if !(base_plain.unwrap_or_else(|| plain_base(base)) && plain(path)) {
        return None;
    }
    let mut out = String::with_capacity(base.len() + 1 + path.len());
    out.push_str(base);
    out.push('/');
    out.push_str(path);
    Some(Cow::Owned(out))
}

fn join(parts: &[&str], capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    for p in parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Purely lexical normalisation (no aliases).
fn lexical(base: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let full_base = if path.starts_with('/') { "" } else { base };
    for piece in slash_parts(full_base).chain(slash_parts(path)) {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    join(&parts, path.len() + base.len() + 1)
}

/// `path` resolved against `base` as the kernel would, with `cwd` standing
/// for `/proc/self/cwd` (`None`: not known).
pub fn resolve(base: &str, path: &str, cwd: Option<&str>) -> Result<String, Unresolved> {
    walk(base, path, cwd_alias(cwd), true).map(Cow::into_owned)
}

fn cwd_alias(cwd: Option<&str>) -> CwdAlias<'_> {
    match cwd {
        Some(d) => CwdAlias::Known(d),
        None => CwdAlias::Unknown,
    }
}

/// Where the first glob character of a word is (`*`, `?`, or a `[` that
/// closes). Quoted and unquoted characters are not told apart here: a word
/// known to hold a glob is cut at the first one, which can only widen what
/// it is judged to reach.
pub fn first_glob(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'*' | b'?' => return Some(i),
            b'[' if text[i + 1..].contains(']') => return Some(i),
            _ => {}
        }
    }
    None
}

/// One token of a glob component.
enum Tok {
    Star,
    Any,
    Lit(u8),
    /// `[…]`: byte ranges and character classes (`[[:digit:]]`), negated;
    /// `any` when it holds a class not known here, taken as matching
    /// anything.
    Set {
        ranges: Vec<(u8, u8)>,
        classes: Vec<fn(&u8) -> bool>,
        negated: bool,
        any: bool,
    },
}

/// A POSIX character class by name (ASCII, as in the C locale).
fn char_class(name: &[u8]) -> Option<fn(&u8) -> bool> {
    Some(match name {
        b"alpha" => u8::is_ascii_alphabetic,
        b"digit" => u8::is_ascii_digit,
        b"alnum" => u8::is_ascii_alphanumeric,
        b"upper" => u8::is_ascii_uppercase,
        b"lower" => u8::is_ascii_lowercase,
        b"space" => u8::is_ascii_whitespace,
        b"punct" => u8::is_ascii_punctuation,
        b"xdigit" => u8::is_ascii_hexdigit,
        b"graph" => u8::is_ascii_graphic,
        b"cntrl" => u8::is_ascii_control,
        b"print" => |c: &u8| c.is_ascii_graphic() || *c == b' ',
        b"blank" => |c: &u8| matches!(c, b' ' | b'\t'),
        b"word" => |c: &u8| c.is_ascii_alphanumeric() || *c == b'_',
        _ => return None,
    })
}

fn tokens(pat: &[u8]) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pat.len() {
        match pat[i] {
            b'*' => {
                if !matches!(out.last(), Some(Tok::Star)) {
                    out.push(Tok::Star);
                }
                i += 1;
            }
            b'?' => {
                out.push(Tok::Any);
                i += 1;
            }
            b'[' => {
                let mut j = i + 1;
                let negated = matches!(pat.get(j), Some(b'!' | b'^'));
                if negated {
                    j += 1;
                }
                let start = j;
                let mut ranges = Vec::new();
                let mut any = false;
                let mut classes = Vec::new();
                let mut closed = None;
                while j < pat.len() {
                    if pat[j] == b']' && j > start {
                        closed = Some(j);
                        break;
                    }
                    if pat[j] == b'[' && pat.get(j + 1) == Some(&b':') {
                        // `[:alpha:]`: taken as matching anything.
                        if let Some(k) = pat[j + 2..].windows(2).position(|w| w == b":]") {
                            match char_class(&pat[j + 2..j + 2 + k]) {
                                Some(c) => classes.push(c),
                                None => any = true,
                            }
                            j += k + 4;
                            continue;
                        }
                    }
                    if pat.get(j + 1) == Some(&b'-') && pat.get(j + 2).is_some_and(|&c| c != b']') {
                        ranges.push((pat[j], pat[j + 2]));
                        j += 3;
                    } else {
                        ranges.push((pat[j], pat[j]));
                        j += 1;
                    }
                }
                match closed {
                    Some(end) => {
                        out.push(Tok::Set {
                            ranges,
                            classes,
                            negated,
                            any,
                        });
                        i = end + 1;
                    }
                    None => {
                        out.push(Tok::Lit(b'['));
                        i += 1;
                    }
                }
            }
            c => {
                out.push(Tok::Lit(c));
                i += 1;
            }
        }
    }
    out
}

fn tok_matches(t: &Tok, c: u8) -> bool {
    match t {
        Tok::Star | Tok::Any => true,
        Tok::Lit(l) => *l == c,
        Tok::Set {
            ranges,
            classes,
            negated,
            any,
        } => {
            *any || (ranges.iter().any(|&(a, b)| a <= c && c <= b) || classes.iter().any(|f| f(&c)))
                != *negated
        }
    }
}

/// Whether a glob component can match the name `name`, as bash matches
/// without `dotglob`: a leading `.` only by a literal `.`; `.` and `..`
/// never by a pattern.
pub fn component_matches(pat: &str, name: &str) -> bool {
    if (name == "." || name == "..") && pat != name {
        return false;
    }
    name_matches(pat, name)
}

/// Whether a glob component can match `..` in the shells berth runs
/// commands with: dash and busybox `sh` match `.?`, `.[.]` and `.*` against
/// `..` (bash ≥ 5.2 does not, by `globskipdots`); so such a word may climb
/// out of its directory (`cat .?/secret` reads `../secret`).
pub fn may_match_dotdot(pat: &str) -> bool {
    pat.starts_with('.') && first_glob(pat).is_some() && name_matches(pat, "..")
}

/// [`component_matches`] without bash's `globskipdots`.
fn name_matches(pat: &str, name: &str) -> bool {
    let toks = tokens(pat.as_bytes());
    let text = name.as_bytes();
    if text.first() == Some(&b'.') && !matches!(toks.first(), Some(Tok::Lit(b'.'))) {
        return false;
    }
    let (mut p, mut t) = (0usize, 0usize);
    let (mut star, mut mark) = (None, 0usize);
    while t < text.len() {
        match toks.get(p) {
            Some(Tok::Star) => {
                star = Some(p);
                mark = t;
                p += 1;
            }
            Some(tok) if tok_matches(tok, text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some(s) => {
                    p = s + 1;
                    mark += 1;
                    t = mark;
                }
                None => return false,
            },
        }
    }
    while matches!(toks.get(p), Some(Tok::Star)) {
        p += 1;
    }
    p == toks.len()
}

/// Whether an absolute, normalised glob pattern can match the absolute,
/// normalised path `path` (component by component; `**` is `*`, as bash
/// has it without `globstar`).
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let mut pc = slash_parts(pattern).filter(|c| !c.is_empty());
    let mut tc = slash_parts(path).filter(|c| !c.is_empty());
    loop {
        match (pc.next(), tc.next()) {
            (None, None) => return true,
            (Some(p), Some(t)) => {
                let ok = if first_glob(p).is_some() {
                    component_matches(p, t)
                } else {
                    p == t
                };
                if !ok {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// The static part of a normalised glob pattern: the text before its
/// first glob character (`/s*/git` → `/s`), and the directory that holds
/// every match (`/`).
pub fn glob_prefix(pattern: &str) -> (&str, String) {
    let cut = first_glob(pattern).unwrap_or(pattern.len());
    let prefix = &pattern[..cut];
    let dir = match prefix.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => prefix[..i].to_string(),
    };
    (prefix, dir)
}

/// `p` normalised, borrowed when it already is (roots and mount targets
/// usually are: no allocation on the hot path).
fn normal(p: &str) -> std::borrow::Cow<'_, str> {
    if is_normal_absolute(p) {
        std::borrow::Cow::Borrowed(p)
    } else {
        std::borrow::Cow::Owned(normalize("/", p))
    }
}

/// Whether `p` is absolute and already normal: `/`, or `/` and pieces
/// none of which is empty (`//`, a trailing `/`), `.` or `..` — read in
/// one pass over its bytes (asked of every mount target each time a path
/// is located; the searches for `//` and a dot this replaces cost about
/// 165 instructions for `/work`).
fn is_normal_absolute(p: &str) -> bool {
    let Some(rest) = p.as_bytes().strip_prefix(b"/") else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let mut start = 0;
    for i in 0..=rest.len() {
        if i == rest.len() || rest[i] == b'/' {
            if matches!(&rest[start..i], b"" | b"." | b"..") {
                return false;
            }
            start = i + 1;
        }
    }
    true
}

/// Whether `path` is `root` or lies under it, at a path boundary.
pub fn under(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    path == root || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

/// Special files, and the standard streams by descriptor (`/dev/fd/0`–`2`,
/// `/proc/self/fd/0`–`2`). Another descriptor (`/dev/fd/5`) is whatever the
/// shell opened there: not known (a process substitution's own is judged
/// where it is written, see `Judge::arg`).
fn is_special(path: &str) -> bool {
    if SPECIAL.contains(&path) || path == "/dev/fd" {
        return true;
    }
    ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
        .iter()
        .any(|d| {
            path.strip_prefix(d)
                .is_some_and(|n| matches!(n, "0" | "1" | "2"))
        })
}

/// Whether `path` may be special or a descriptor ([`is_special`],
/// [`is_other_descriptor`]): those lie under `/dev` or `/proc`, so their
/// first piece starts `dev` or `proc`. Most paths need neither test.
fn may_be_special(path: &str) -> bool {
    // The bytes after the leading `/`s (read as bytes: std's
    // `trim_start_matches('/')` decodes each character).
    let b = path.as_bytes();
    let first = &b[b.iter().take_while(|&&c| c == b'/').count()..];
    first.starts_with(b"dev") || first.starts_with(b"proc")
}

/// A descriptor path that is not a standard stream: unknown.
fn is_other_descriptor(path: &str) -> bool {
    if under(path, "/dev/fd") {
        return true;
    }
    let mut c = slash_parts(path).filter(|c| !c.is_empty());
    c.next() == Some("proc")
        && c.next().is_some_and(|p| names_process(p, true))
        && c.next() == Some("fd")
}

/// Whether an extra root adds to the scope: only an absolute, normalised
/// path does (point 13). `""`, `"."` or `"a/../"` would otherwise
/// normalise to `/` or the cwd and put far more in scope than was meant.
pub fn usable_extra_root(root: &str) -> bool {
    root.starts_with('/') && normalize("/", root) == root
}

/// A warning for each extra root of the frame that adds nothing (see
/// [`usable_extra_root`]), for whoever builds the frame to show.
pub fn ignored_extra_roots(frame: &Frame) -> Vec<String> {
    match frame {
        Frame::Host { extra_roots, .. } => extra_roots
            .iter()
            .filter(|r| !usable_extra_root(r))
            .map(|r| {
                format!(
                    "extra root {r:?} is ignored: an extra root must be an absolute, normalised path"
                )
            })
            .collect(),
        Frame::Container { .. } => Vec::new(),
    }
}

/// Where an absolute, normalised frame path lies.
pub fn locate(frame: &Frame, path: &str) -> Location {
    locate_with(frame, path, false)
}

/// Whether the frame's roots — its project root and every mount's target
/// — are absolute and normal already (they almost always are): then
/// [`locate_with`] takes them as they are, not asking each again.
fn roots_normal(frame: &Frame) -> bool {
    match frame {
        Frame::Host { project_root, .. } => is_normal_absolute(project_root),
        Frame::Container {
            project_root,
            mounts,
            ..
        } => {
            is_normal_absolute(project_root) && mounts.iter().all(|m| is_normal_absolute(&m.target))
        }
    }
}

/// [`locate`], the frame's roots taken as they are when `roots_normal`
/// (what [`roots_normal`] answered for `frame`).
fn locate_with(frame: &Frame, path: &str, roots_normal: bool) -> Location {
    let root = |r| {
        if roots_normal {
            Cow::Borrowed(r)
        } else {
            normal(r)
        }
    };
    if may_be_special(path) {
        if is_special(path) {
            return Location::Special;
        }
        if is_other_descriptor(path) {
            return Location::Unknown;
        }
    }
    match frame {
        Frame::Host {
            project_root,
            extra_roots,
            ..
        } => {
            if under(path, &root(project_root)) {
                Location::Project
            } else if extra_roots
                .iter()
                .any(|r| usable_extra_root(r) && under(path, r))
            {
                Location::ExtraRoot
            } else {
                Location::Outside
            }
        }
        Frame::Container {
            project_root,
            mounts,
            ..
        } => {
            let mut best: Option<(usize, MountKind)> = None;
            for m in mounts {
                let target = root(&m.target);
                if under(path, &target) && best.is_none_or(|(len, _)| target.len() > len) {
                    best = Some((target.len(), m.kind));
                }
            }
            match best {
                Some((_, MountKind::Project)) => Location::Project,
                Some((_, MountKind::Host { in_scope: true })) => Location::DeclaredMount,
                Some((_, MountKind::Host { in_scope: false })) => Location::Outside,
                None if under(path, &root(project_root)) => Location::Project,
                None => Location::ContainerPrivate,
            }
        }
    }
}

/// Whether every path of the frame is in scope: a container whose every
/// host-backed mount is the project or declared in scope. Then a dynamic
/// path cannot leave the scope.
pub fn all_in_scope(frame: &Frame) -> bool {
    match frame {
        Frame::Host { .. } => false,
        Frame::Container { mounts, .. } => mounts.iter().all(|m| {
            matches!(
                m.kind,
                MountKind::Project | MountKind::Host { in_scope: true }
            )
        }),
    }
}

fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.starts_with('~') || s.starts_with('.')
}

/// The paths an argument's text names (none for plain words and URLs):
/// pieces of it.
pub fn path_candidates(text: &str) -> Vec<&str> {
    crate::path_words::candidates(text)
}

/// Host mounts out of scope in a container frame (none in the host frame:
/// there everything outside the roots is outside already).
fn out_of_scope_mounts(frame: &Frame) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    let mounts: &[crate::frame::Mount] = match frame {
        Frame::Host { .. } => &[],
        Frame::Container { mounts, .. } => mounts,
    };
    mounts
        .iter()
        .filter(|m| m.kind == MountKind::Host { in_scope: false })
        .map(|m| normal(&m.target))
}

/// Whether a path (or glob pattern), absolute and normalised, reaches
/// `target`: it names it or a path below it, or — `below`, a command that
/// walks what it is given — a directory above it.
fn reaches(pattern: &str, target: &str, below: bool) -> bool {
    let pc: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let tc: Vec<&str> = target.split('/').filter(|c| !c.is_empty()).collect();
    for (p, t) in pc.iter().zip(&tc) {
        let ok = if first_glob(p).is_some() {
            component_matches(p, t)
        } else {
            p == t
        };
        if !ok {
            return false;
        }
    }
    pc.len() >= tc.len() || below
}

struct Judge<'a> {
    frame: &'a Frame,
    /// Whether the frame's roots are normal already ([`roots_normal`]).
    roots_normal: bool,
    /// Whether the frame has an out-of-scope mount ([`out_of_scope_mounts`]).
    mounts_outside: bool,
    /// The last single directory a path was resolved against, and
    /// [`plain_base`] of it ([`Judge::plain_dir`]).
    plain_dirs: Option<(std::sync::Arc<[String]>, bool)>,
    reports: Vec<Reported<'a>>,
    /// The hash of each `(written, resolved)` reported (one report each),
    /// to the first report with that hash; kept once there are
    /// [`SCAN_REPORTS`] reports (fewer are compared one by one).
    seen: rustc_hash::FxHashMap<u64, usize>,
}

/// Up to this many reports, a new one is compared with each (no table);
/// past it, [`Judge::seen`] finds it by its hash. No key is copied.
const SCAN_REPORTS: usize = 16;

/// A path as written, as a report keeps it: borrowed from the segment
/// judged (almost always), or built for the judge (a glob's climbed form,
/// a program's file in the home, a dynamic word as shown) and moved into
/// the report.
#[derive(Clone)]
struct Written<'a>(Cow<'a, str>);

impl<'a> Written<'a> {
    fn of(text: &'a str) -> Self {
        Written(Cow::Borrowed(text))
    }

    fn built(text: String) -> Self {
        Written(Cow::Owned(text))
    }
}

impl std::ops::Deref for Written<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// How a path is judged: as a glob (by what it can match), and whether the
/// command walks everything below it.
#[derive(Clone, Copy, Default)]
struct Reach {
    glob: bool,
    below: bool,
}

/// A judged path as [`Judge`] keeps it: a [`PathReport`] whose text may
/// be borrowed from the segment judged (the cwd's, reported for every
/// segment) until it is handed out.
pub(crate) struct Reported<'a> {
    pub written: Cow<'a, str>,
    pub resolved: Option<Cow<'a, str>>,
    pub location: Location,
}

impl Reported<'_> {
    pub fn into_report(self) -> PathReport {
        PathReport {
            written: self.written.into_owned(),
            resolved: self.resolved.map(Cow::into_owned),
            location: self.location,
        }
    }
}

impl<'a> Judge<'a> {
    /// Reports `(written, resolved)` unless it is reported already. Text
    /// that lives as long as the judge (the segment's words, the frame's
    /// mounts, an absolute path already normal) stays borrowed: a decision
    /// that hands out no report copies none of it.
    fn report(
        &mut self,
        written: &Written<'a>,
        resolved: Option<Cow<'a, str>>,
        location: Location,
    ) {
        if self.is_reported(written, resolved.as_deref()) {
            return;
        }
        self.reports.push(Reported {
            written: written.0.clone(),
            resolved,
            location,
        });
    }

    /// Whether `(written, resolved)` is among the reports: compared with
    /// each while they are few, else found by its hash (and compared with
    /// each only when another pair has the same hash).
    fn is_reported(&mut self, written: &str, resolved: Option<&str>) -> bool {
        use std::hash::BuildHasher as _;
        let same = |r: &Reported<'_>| r.written == written && r.resolved.as_deref() == resolved;
        if self.reports.len() < SCAN_REPORTS {
            return self.reports.iter().any(same);
        }
        let hasher = rustc_hash::FxBuildHasher;
        if self.seen.is_empty() {
            for (i, r) in self.reports.iter().enumerate() {
                let h = hasher.hash_one((r.written.as_ref(), r.resolved.as_deref()));
                self.seen.entry(h).or_insert(i);
            }
        }
        match self.seen.entry(hasher.hash_one((written, resolved))) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(self.reports.len());
                false
            }
            std::collections::hash_map::Entry::Occupied(o) => {
                same(&self.reports[*o.get()]) || self.reports.iter().any(same)
            }
        }
    }

    /// Whether a bare word (`git`) names, beneath a known cwd, an
    /// out-of-scope mount or a directory that holds one: words that do not
    /// look like paths are paths there. Only a container frame has such
    /// mounts; elsewhere (and in most containers) the caller asks
    /// [`Judge::mounts_outside`] first.
    fn names_a_mount_below(&self, word: &str, base: &Cwd) -> bool {
        let Cwd::Known(dirs) = base else {
            return false;
        };
        if word.is_empty() || word.starts_with('-') || word.contains('=') {
            return false;
        }
        out_of_scope_mounts(self.frame).any(|target| {
            dirs.iter().any(|d| {
                let d = d.trim_end_matches('/');
                target
                    .strip_prefix(d)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|rest| rest.split('/').next() == Some(word))
            })
        })
    }

    /// Judges a static path written relative to `base` (the cwd, or
    /// `git -C`'s directory); `cwd` is what `/proc/self/cwd` stands for.
    fn path(&mut self, written: &Written<'a>, base: &Cwd, cwd: &Cwd, reach: Reach) {
        if written.starts_with('~') && self.tilde(written) {
            return;
        }
        // `/proc/self/cwd` (or a glob that may be it) needs the cwd.
        let alias_needed = reach.glob || crate::substring::contains(written, "cwd");
        let absolute = written.starts_with('/');
        match (base, cwd) {
            _ if absolute && !alias_needed => self.resolved(written, "/", None, None, reach),
            (Cwd::Unknown, _) if !absolute => self.report(written, None, Location::Unknown),
            (_, Cwd::Known(cwds)) if alias_needed => {
                for c in cwds.iter() {
                    match base {
                        Cwd::Known(dirs) if !absolute => {
                            for b in dirs.iter() {
                                self.resolved(written, b, None, Some(c), reach);
                            }
                        }
                        _ => self.resolved(written, "/", None, Some(c), reach),
                    }
                }
            }
            (Cwd::Known(dirs), _) if !absolute => {
                let plain = self.plain_dir(dirs);
                for b in dirs.iter() {
                    self.resolved(written, b, plain, None, reach);
                }
            }
            _ => self.resolved(written, "/", None, None, reach),
        }
    }

    /// [`plain_base`] of the only directory of `dirs` (`None` for
    /// several), asked once a judge for the same `Arc`: the cwd most paths
    /// are relative to.
    fn plain_dir(&mut self, dirs: &std::sync::Arc<[String]>) -> Option<bool> {
        let [dir] = &dirs[..] else {
            return None;
        };
        if let Some((known, plain)) = &self.plain_dirs
            && std::sync::Arc::ptr_eq(known, dirs)
        {
            return Some(*plain);
        }
        let plain = plain_base(dir);
        self.plain_dirs = Some((dirs.clone(), plain));
        Some(plain)
    }

    /// Judges `written` resolved against `base` ([`plain_base`] of it
    /// `base_plain`, when known), with `cwd` standing for
    /// `/proc/self/cwd`.
    fn resolved(
        &mut self,
        written: &Written<'a>,
        base: &str,
        base_plain: Option<bool>,
        cwd: Option<&str>,
        reach: Reach,
    ) {
        match walk_written(base, base_plain, written, cwd_alias(cwd), true) {
            Ok(abs) if !reach.glob => self.located(written, abs, reach),
            Ok(abs) => {
                self.located(written, abs.clone(), reach);
                // A glob that may or may not pass a kernel alias
                // (`/*/*/root/…`) reaches both ways.
                match walk_written(base, base_plain, written, cwd_alias(cwd), false) {
                    Ok(plain) if plain != abs => self.located(written, plain, reach),
                    Ok(_) => {}
                    Err(_) => self.report(written, None, Location::Unknown),
                }
            }
            Err(Unresolved::UnknownCwd) => self.report(written, None, Location::Unknown),
            Err(Unresolved::OtherProcess) => self.report(written, None, Location::Outside),
        }
    }

    /// Reports a resolved path (or glob pattern) and the out-of-scope
    /// mounts it reaches.
    fn located(&mut self, written: &Written<'a>, abs: Cow<'a, str>, reach: Reach) {
        let loc = if reach.glob {
            let (_, dir) = glob_prefix(&abs);
            locate_with(self.frame, &dir, self.roots_normal)
        } else {
            locate_with(self.frame, &abs, self.roots_normal)
        };
        if !(reach.glob || reach.below) {
            self.report(written, Some(abs), loc);
            return;
        }
        self.report(written, Some(abs.clone()), loc);
        let frame = self.frame;
        for t in out_of_scope_mounts(frame) {
            if reaches(&abs, &t, reach.below) {
                self.report(written, Some(t), Location::Outside);
            }
        }
    }

    /// A `~` bash left as it is (`if=~root/x`, `--prefix=~/x`): `~user` is
    /// another user's home, outside in both frames (which user the frame
    /// runs as is not known here); `~/x` is the frame's home to a program
    /// that expands it, and a relative path to one that does not — judged
    /// both ways. Returns whether the path is fully judged.
    fn tilde(&mut self, written: &Written<'a>) -> bool {
        let rest = &written[1..];
        if rest.is_empty() || rest.starts_with('/') {
            let abs = normalize(self.frame.home(), rest.trim_start_matches('/'));
            let loc = locate_with(self.frame, &abs, self.roots_normal);
            self.report(written, Some(Cow::Owned(abs)), loc);
            return false;
        }
        self.report(written, None, Location::Outside);
        true
    }

    fn dynamic(&mut self, written: &str) {
        // `⟨written⟩`, without the formatting machinery.
        let mut shown = String::with_capacity(written.len() + 2 * '⟨'.len_utf8());
        shown.push('⟨');
        shown.push_str(written);
        shown.push('⟩');
        self.report(&Written::built(shown), None, Location::Unknown);
    }

    fn arg(&mut self, a: &'a Arg, base: &Cwd, roots: &'a [Arg], cwd: &Cwd, below: bool) {
        if a.package {
            return;
        }
        let text = Written::of(&a.text);
        if a.proc_sub {
            // `<(…)`: the shell's own descriptor for the substitution.
            self.report(&text, None, Location::Special);
            return;
        }
        if a.find_placeholder {
            // `{}` is every path find walks under its roots.
            for r in roots {
                self.arg(r, cwd, &[], cwd, true);
                if !r.dynamic && !looks_like_path(&r.text) {
                    // A plain root like `src` still lies under the cwd.
                    self.path(
                        &Written::of(&r.text),
                        cwd,
                        cwd,
                        Reach {
                            glob: r.glob,
                            below: true,
                        },
                    );
                }
            }
            return;
        }
        if a.dynamic {
            self.dynamic(&a.text);
            return;
        }
        if a.tilde_user {
            // Another user's home: outside in both frames (point 9).
            self.report(&text, None, Location::Outside);
            return;
        }
        let reach = Reach {
            glob: a.glob,
            below,
        };
        // Most words are answered without a list ([`crate::path_words::quick`]).
        let (read, one);
        let candidates: &[&str] = match crate::path_words::quick(&a.text) {
            Some(None) => &[],
            Some(Some(text)) => {
                one = text;
                std::slice::from_ref(&one)
            }
            None => {
                read = path_candidates(&a.text);
                &read
            }
        };
        if candidates.is_empty()
            && a.glob
            && !a.text.starts_with('-')
            && crate::path_words::url_scheme(&a.text).is_none()
        {
            // `*.rs`, `e*`: a glob expands to paths under the cwd.
            self.path(&text, base, cwd, reach);
        } else if candidates.is_empty()
            && self.mounts_outside
            && self.names_a_mount_below(&a.text, base)
        {
            // `cd /srv && rm -rf git`: a bare word is a path when the cwd
            // holds an out-of-scope mount of that name.
            self.path(&text, base, cwd, reach);
        }
        for &p in candidates {
            self.path(&Written::of(p), base, cwd, reach);
        }
        if a.glob {
            // A glob that may match `..` may climb: judged climbed too.
            let words = candidates
                .iter()
                .copied()
                .chain(candidates.is_empty().then_some(a.text.as_str()));
            for p in words.filter_map(crate::path_words::climbing) {
                self.path(&Written::built(p), base, cwd, reach);
            }
        }
    }
}

/// Where the last single-directory cwd judged lies: the segments of one
/// command mostly share their cwd (one `Arc`), and it is located once;
/// and whether the frame's roots are normal ([`roots_normal`]), asked once
/// a command.
#[derive(Debug, Default)]
pub struct CwdLocations {
    last: Option<(std::sync::Arc<[String]>, Location)>,
    roots_normal: Option<bool>,
}

impl CwdLocations {
    /// [`roots_normal`] of `frame` (the same frame every call).
    fn roots_normal(&mut self, frame: &Frame) -> bool {
        *self.roots_normal.get_or_insert_with(|| roots_normal(frame))
    }

    /// Where `d`, one of `dirs`, lies in `frame` (the same frame every
    /// call).
    fn of(&mut self, frame: &Frame, dirs: &std::sync::Arc<[String]>, d: &str) -> Location {
        let roots_normal = self.roots_normal(frame);
        if dirs.len() != 1 {
            return locate_with(frame, d, roots_normal);
        }
        match &self.last {
            Some((known, loc)) if std::sync::Arc::ptr_eq(known, dirs) => *loc,
            _ => {
                let loc = locate_with(frame, d, roots_normal);
                self.last = Some((dirs.clone(), loc));
                loc
            }
        }
    }
}

/// What the cwd's report is written as.
const WORKING_DIRECTORY: Written<'static> = Written(Cow::Borrowed("(working directory)"));

/// Judges every path a segment touches.
pub fn judge(seg: &Segment, frame: &Frame) -> Vec<PathReport> {
    judge_with(seg, frame, &mut CwdLocations::default())
}

/// [`judge`], the cwd located through `cwds` (kept across the segments of
/// one command, in one frame).
pub fn judge_with(seg: &Segment, frame: &Frame, cwds: &mut CwdLocations) -> Vec<PathReport> {
    judge_borrowed(seg, frame, cwds)
        .into_iter()
        .map(Reported::into_report)
        .collect()
}

/// [`judge_with`], the reports of the cwd borrowed from the segment: a
/// decision that hands out no report reads them and copies none.
pub(crate) fn judge_borrowed<'s>(
    seg: &'s Segment,
    frame: &'s Frame,
    cwds: &mut CwdLocations,
) -> Vec<Reported<'s>> {
    let mut j = Judge {
        frame,
        roots_normal: cwds.roots_normal(frame),
        mounts_outside: out_of_scope_mounts(frame).next().is_some(),
        plain_dirs: None,
        // Room for the cwd and a few words: most segments report no more.
        reports: Vec::with_capacity(4),
        seen: rustc_hash::FxHashMap::default(),
    };
    // The cwd itself, unless a `cd` to a static absolute target.
    if !seg.cd_absolute {
        match &seg.cwd {
            Cwd::Known(dirs) => {
                for d in dirs.iter() {
                    let loc = cwds.of(frame, dirs, d);
                    j.report(&WORKING_DIRECTORY, Some(Cow::Borrowed(d)), loc);
                }
            }
            Cwd::Unknown => j.report(&WORKING_DIRECTORY, None, Location::Unknown),
        }
    }
    // Relative arguments of the program resolve against `git -C` when given.
    // Borrowed when there is no `-C` (most commands): no copy of the cwd.
    let given_base;
    let arg_base = match &seg.arg_dir {
        Some(d) if !d.dynamic => {
            given_base = match &seg.cwd {
                Cwd::Known(dirs) => {
                    Cwd::Known(dirs.iter().map(|c| normalize(c, &d.text)).collect())
                }
                Cwd::Unknown if d.text.starts_with('/') => {
                    Cwd::Known(std::sync::Arc::from([normalize("/", &d.text)]))
                }
                Cwd::Unknown => Cwd::Unknown,
            };
            &given_base
        }
        Some(_) => &Cwd::Unknown,
        None => &seg.cwd,
    };
    let cwd = &seg.cwd;
    for inv in &seg.chain {
        if let Some(name) = inv.first()
            && !name.dynamic
            && name.text.contains('/')
        {
            j.path(&Written::of(&name.text), cwd, cwd, Reach::default());
        }
        for a in inv.iter().skip(1) {
            j.arg(a, cwd, &seg.find_roots, cwd, false);
        }
    }
    if let Some(name) = seg.argv.first()
        && !name.dynamic
        && !name.package
        && name.text.contains('/')
    {
        j.path(&Written::of(&name.text), cwd, cwd, Reach::default());
    }
    // A command that walks its operands reaches what lies below them.
    let below = crate::template::walks_operands(&seg.argv);
    for a in seg.argv.iter().skip(1) {
        j.arg(a, arg_base, &seg.find_roots, cwd, below);
    }
    if below {
        // A walker's plain operands (`srv` in `/`) are directories under
        // the cwd too; with none it walks the cwd itself (`grep -r x`).
        let mut operands = 0;
        let mut pattern = crate::template::pattern_operand(&seg.argv);
        for a in seg.argv.iter().skip(1) {
            if a.dynamic || a.package || a.find_placeholder || a.text.starts_with('-') {
                continue;
            }
            if std::mem::take(&mut pattern) {
                continue;
            }
            operands += 1;
            if !a.glob
                && !looks_like_path(&a.text)
                && crate::path_words::url_scheme(&a.text).is_none()
            {
                j.path(
                    &Written::of(&a.text),
                    arg_base,
                    cwd,
                    Reach {
                        glob: false,
                        below: true,
                    },
                );
            }
        }
        if operands == 0 {
            j.path(
                &Written::of("."),
                arg_base,
                cwd,
                Reach {
                    glob: false,
                    below: true,
                },
            );
        }
    }
    for r in &seg.redirects {
        if r.target.dynamic {
            j.dynamic(&r.target.text);
        } else {
            let reach = Reach {
                glob: r.target.glob,
                below: false,
            };
            j.path(&Written::of(&r.target.text), cwd, cwd, reach);
        }
    }
    for (_, v) in &seg.assigns {
        j.arg(v, cwd, &[], cwd, false);
    }
    for h in &seg.hidden_paths {
        match &h.path {
            // A program's own file in the home (`git config --global`).
            Some(p) if p.starts_with("~/") => {
                let abs = format!("{}/{}", frame.home().trim_end_matches('/'), &p[2..]);
                j.path(&Written::built(abs), cwd, cwd, Reach::default());
            }
            Some(p) => j.path(&Written::of(p), cwd, cwd, Reach::default()),
            None => j.report(
                &Written::of("(a path known only at run time)"),
                None,
                Location::Unknown,
            ),
        }
    }
    if seg.trailing_dynamic {
        j.report(
            &Written::of("(arguments read from stdin)"),
            None,
            Location::Unknown,
        );
    }
    j.reports
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`is_normal_absolute`] answers as the tests it replaced, on every
    /// short string of the bytes that matter.
    #[test]
    fn normal_absolute_is_the_searches_it_replaced() {
        let searched = |p: &str| {
            p.starts_with('/')
                && (p == "/" || !p.ends_with('/'))
                && !p.contains("//")
                && !slash_parts(p).any(|c| c == "." || c == "..")
        };
        crate::short_strings::each(b"/.a", 7, |text| {
            assert_eq!(is_normal_absolute(text), searched(text), "{text:?}");
        });
        for p in [
            "/work",
            "/work/",
            "/home/agent/.config",
            "/a/./b",
            "/a/../b",
            "/é/x",
            "work",
        ] {
            assert_eq!(is_normal_absolute(p), searched(p), "{p:?}");
        }
    }
    use crate::frame::Mount;

    /// A walk told [`plain_base`] of its base answers as one that asks it,
    /// on every short path over the bytes that matter.
    #[test]
    fn a_known_plain_base_walks_as_an_asked_one() {
        for base in ["/w", "/", "/w/root", "/a*", "w", "/w/./x", "/proc/self"] {
            let plain = Some(plain_base(base));
            crate::short_strings::each(b"/.w*r", 5, |path| {
                for cwd in [CwdAlias::Lexical, CwdAlias::Known("/w"), CwdAlias::Unknown] {
                    assert_eq!(
                        walk_from(base, plain, path, cwd, true),
                        walk(base, path, cwd, true),
                        "{base} {path}"
                    );
                }
            });
        }
    }

    #[test]
    fn normalizes_lexically() {
        let cases = [
            ("/work", "a/b", "/work/a/b"),
            ("/work", "../../etc", "/etc"),
            ("/work", "/tmp/../etc//x/", "/etc/x"),
            ("/", "..", "/"),
            ("/work", ".", "/work"),
            ("/work/sub", "../README.md", "/work/README.md"),
        ];
        for (base, p, want) in cases {
            assert_eq!(normalize(base, p), want, "{base} {p}");
        }
    }

    #[test]
    fn follows_kernel_aliases() {
        let cases = [
            ("/", "/proc/self/root/srv/git", Ok("/srv/git")),
            ("/", "/proc/1/root/../etc", Ok("/etc")),
            ("/", "/proc/thread-self/root", Ok("/")),
            ("/", "/proc/self/task/7/root/x", Ok("/x")),
            ("/proc", "self/root/x", Ok("/x")),
            ("/", "/proc/*/root/x", Ok("/x")),
            ("/", "/proc/self/cwd/src", Ok("/work/src")),
            ("/", "/proc/self/cwd/..", Ok("/")),
            ("/", "/proc/1/cwd/x", Err(Unresolved::OtherProcess)),
            ("/", "/proc/self/status", Ok("/proc/self/status")),
            ("/", "/proc/selfish/root", Ok("/proc/selfish/root")),
        ];
        for (base, path, want) in cases {
            assert_eq!(
                resolve(base, path, Some("/work")),
                want.map(str::to_string),
                "{base} {path}"
            );
        }
        assert_eq!(
            resolve("/", "/proc/self/cwd/x", None),
            Err(Unresolved::UnknownCwd)
        );
        // Without a cwd, `normalize` leaves the cwd alias as written.
        assert_eq!(normalize("/", "/proc/self/cwd/x"), "/proc/self/cwd/x");
    }

    #[test]
    fn globs_reach_what_they_can_match() {
        let cases = [
            ("/s*/git/p.git/config", "/srv/git", false, true),
            ("/s*", "/srv/git", false, false),
            ("/s*", "/srv/git", true, true),
            ("/t*/git", "/srv/git", false, false),
            ("/srv/g?t", "/srv/git", false, true),
            ("/srv", "/srv/git", true, true),
            ("/srv/gitx", "/srv/git", true, false),
        ];
        for (pattern, target, below, want) in cases {
            assert_eq!(reaches(pattern, target, below), want, "{pattern} {target}");
        }
        assert_eq!(glob_prefix("/s*/git").1, "/");
        assert_eq!(glob_prefix("/work/src/*.rs").1, "/work/src");
        assert!(pattern_matches("/[!.]*", "/home"));
        assert!(!pattern_matches("/[!.]*", "/.x"));
        assert!(!pattern_matches("/*", "/home/agent"));
    }

    #[test]
    fn locates_in_frames() {
        let host = Frame::Host {
            project_root: "/work".into(),
            extra_roots: vec!["/opt/cache".into()],
            home: "/home/agent".into(),
        };
        let container = Frame::Container {
            project_root: "/work".into(),
            mounts: vec![
                Mount {
                    target: "/work".into(),
                    kind: MountKind::Project,
                },
                Mount {
                    target: "/srv/git".into(),
                    kind: MountKind::Host { in_scope: false },
                },
                Mount {
                    target: "/state/agents".into(),
                    kind: MountKind::Host { in_scope: true },
                },
            ],
            home: "/home/agent".into(),
        };
        let cases = [
            (&host, "/work/a", Location::Project),
            (&host, "/workspace", Location::Outside),
            (&host, "/tmp", Location::Outside),
            (&host, "/opt/cache/x", Location::ExtraRoot),
            (&host, "/dev/null", Location::Special),
            // A descriptor that is not a standard stream is whatever the
            // shell opened there (a process substitution's own is judged
            // where it is written).
            (&host, "/dev/fd/63", Location::Unknown),
            (&host, "/dev/fd/1", Location::Special),
            (&host, "/proc/self/fd/0", Location::Special),
            (&host, "/proc/self/fd/9", Location::Unknown),
            (&container, "/proc/1/fd/3", Location::Unknown),
            (&container, "/tmp/x", Location::ContainerPrivate),
            (&container, "/srv/git/p.git", Location::Outside),
            (&container, "/state/agents/p/a.git", Location::DeclaredMount),
            (&container, "/work", Location::Project),
            (&container, "/w\u{43e}rk", Location::ContainerPrivate),
        ];
        for (frame, path, want) in cases {
            assert_eq!(locate(frame, path), want, "{path}");
        }
    }

    /// [`locate_with`] with the frame's roots taken as they are answers
    /// as [`locate`] wherever [`roots_normal`] says they are normal, on
    /// every short path over the bytes that matter.
    #[test]
    fn normal_roots_are_located_as_normalised_ones() {
        let mount = |target: &str, kind| Mount {
            target: target.into(),
            kind,
        };
        let outside = MountKind::Host { in_scope: false };
        let frames = [
            Frame::host("/w"),
            Frame::host("/w/"),
            Frame::container("/w"),
            Frame::Container {
                project_root: "/w".into(),
                mounts: vec![
                    mount("/w", MountKind::Project),
                    mount("/s/g", outside),
                    mount("/s", MountKind::Host { in_scope: true }),
                ],
                home: "/h".into(),
            },
            Frame::Container {
                project_root: "/w/./".into(),
                mounts: vec![mount("/s//g/", outside), mount("/w/../s", outside)],
                home: "/h".into(),
            },
        ];
        for frame in &frames {
            let normal_roots = roots_normal(frame);
            crate::short_strings::each(b"/wsg.", 6, |path| {
                if normal_roots {
                    assert_eq!(
                        locate_with(frame, path, true),
                        locate(frame, path),
                        "{path}"
                    );
                }
            });
        }
        assert!(roots_normal(&frames[3]) && !roots_normal(&frames[1]));
        assert!(!roots_normal(&frames[4]));
    }

    #[test]
    fn finds_paths_in_arguments() {
        let cases: &[(&str, &[&str])] = &[
            ("src/main.rs", &["src/main.rs"]),
            ("README", &[]),
            ("--out=/tmp/x", &["/tmp/x"]),
            ("--out=build", &[]),
            ("-o/tmp/x", &["/tmp/x"]),
            ("-la", &[]),
            ("of=/dev/sda", &["of=/dev/sda", "/dev/sda"]),
            ("/work/a:/etc/b", &["/work/a:/etc/b", "/etc/b", "/work/a"]),
            ("https://example.com/x.sh", &[]),
            ("file:///etc/passwd", &["/etc/passwd"]),
            ("~/.ssh/id_rsa", &["~/.ssh/id_rsa"]),
            ("../x", &["../x"]),
            (".gitignore", &[".gitignore"]),
        ];
        for (arg, want) in cases {
            assert_eq!(path_candidates(arg), want.to_vec(), "{arg}");
        }
    }

    /// [`may_be_special`] answers as the character trim it replaced, on
    /// every short string of the bytes that matter.
    #[test]
    fn may_be_special_is_the_trim_it_replaced() {
        let trimmed = |p: &str| {
            let first = p.trim_start_matches('/');
            first.starts_with("dev") || first.starts_with("proc")
        };
        crate::short_strings::each(b"/devprc", 6, |path| {
            assert_eq!(may_be_special(path), trimmed(path), "{path:?}");
        });
    }

    #[test]
    fn special_paths_pass_the_cheap_test() {
        let mut paths: Vec<String> = [
            "/dev/null",
            "/dev/fd",
            "/dev/fd/0",
            "/dev/fd/5",
            "//dev/fd/7",
            "/dev//fd/3",
            "/proc/self/fd/1",
            "//proc/self/fd/9",
            "/proc/123/fd/4",
            "/proc//self//fd/2",
            "/proc/thread-self/fd/2",
            "/work/dev/null",
            "/work/proc/self/fd/3",
            "/",
            "",
            "/devices",
            "/process/fd/1",
            "dev/null",
            "proc/self/fd/3",
        ]
        .map(String::from)
        .to_vec();
        paths.extend(SPECIAL.iter().map(|s| s.to_string()));
        for p in &paths {
            if is_special(p) || is_other_descriptor(p) {
                assert!(may_be_special(p), "{p}");
            }
        }
    }
}
