//! Path scope, judged in the frame where the command runs.
//!
//! Paths are found where a command names them — arguments that look like
//! paths, redirection targets, assignment values, `cd` targets, `git -C`,
//! option values (`--out=/x`, `-o/x`), colon lists (`/a:/b`), and paths hidden
//! in program text (`sed w file`) — normalised lexically against the cwd and
//! compared byte for byte at path boundaries (`/workspace` is not `/work`,
//! `/wоrk` with a Cyrillic `о` is not `/work`).

use crate::arg::Arg;
use crate::decision::{Location, PathReport};
use crate::frame::{Frame, MountKind};
use crate::segment::{Cwd, Segment};

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
pub fn normalize(base: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let full_base = if path.starts_with('/') { "" } else { base };
    for piece in full_base.split('/').chain(path.split('/')) {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = String::with_capacity(path.len() + base.len() + 1);
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// `p` normalised, borrowed when it already is (roots and mount targets
/// usually are: no allocation on the hot path).
fn normal(p: &str) -> std::borrow::Cow<'_, str> {
    let already = p.starts_with('/')
        && (p == "/" || !p.ends_with('/'))
        && !p.contains("//")
        && !p.split('/').any(|c| c == "." || c == "..");
    if already {
        std::borrow::Cow::Borrowed(p)
    } else {
        std::borrow::Cow::Owned(normalize("/", p))
    }
}

/// Whether `path` is `root` or lies under it, at a path boundary.
pub fn under(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    path == root || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

fn is_special(path: &str) -> bool {
    SPECIAL.contains(&path) || under(path, "/dev/fd") || under(path, "/proc/self/fd")
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
    if is_special(path) {
        return Location::Special;
    }
    match frame {
        Frame::Host {
            project_root,
            extra_roots,
            ..
        } => {
            if under(path, &normal(project_root)) {
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
                let target = normal(&m.target);
                if under(path, &target) && best.is_none_or(|(len, _)| target.len() > len) {
                    best = Some((target.len(), m.kind));
                }
            }
            match best {
                Some((_, MountKind::Project)) => Location::Project,
                Some((_, MountKind::Host { in_scope: true })) => Location::DeclaredMount,
                Some((_, MountKind::Host { in_scope: false })) => Location::Outside,
                None if under(path, &normal(project_root)) => Location::Project,
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

/// The paths an argument's text names (none for plain words and URLs).
pub fn path_candidates(text: &str) -> Vec<String> {
    crate::path_words::candidates(text)
}

struct Judge<'a> {
    frame: &'a Frame,
    reports: Vec<PathReport>,
    /// `(written, resolved)` already reported: one report each.
    seen: rustc_hash::FxHashSet<(String, Option<String>)>,
}

impl Judge<'_> {
    fn report(&mut self, written: &str, resolved: Option<String>, location: Location) {
        if !self.seen.insert((written.to_string(), resolved.clone())) {
            return;
        }
        self.reports.push(PathReport {
            written: written.to_string(),
            resolved,
            location,
        });
    }

    /// Judges a static path written relative to `base` (the cwd, or
    /// `git -C`'s directory).
    fn path(&mut self, written: &str, base: &Cwd) {
        if written.starts_with('~') && self.tilde(written) {
            return;
        }
        if written.starts_with('/') {
            let abs = normalize("/", written);
            let loc = locate(self.frame, &abs);
            self.report(written, Some(abs), loc);
            return;
        }
        match base {
            Cwd::Known(dirs) => {
                for d in dirs {
                    let abs = normalize(d, written);
                    let loc = locate(self.frame, &abs);
                    self.report(written, Some(abs), loc);
                }
            }
            Cwd::Unknown => self.report(written, None, Location::Unknown),
        }
    }

    /// A `~` bash left as it is (`if=~root/x`, `--prefix=~/x`): `~user` is
    /// another user's home, outside in both frames (which user the frame
    /// runs as is not known here); `~/x` is the frame's home to a program
    /// that expands it, and a relative path to one that does not — judged
    /// both ways. Returns whether the path is fully judged.
    fn tilde(&mut self, written: &str) -> bool {
        let rest = &written[1..];
        if rest.is_empty() || rest.starts_with('/') {
            let abs = normalize(self.frame.home(), rest.trim_start_matches('/'));
            let loc = locate(self.frame, &abs);
            self.report(written, Some(abs), loc);
            return false;
        }
        self.report(written, None, Location::Outside);
        true
    }

    fn dynamic(&mut self, written: &str) {
        self.report(&format!("⟨{written}⟩"), None, Location::Unknown);
    }

    fn arg(&mut self, a: &Arg, base: &Cwd, roots: &[Arg], cwd: &Cwd) {
        if a.package {
            return;
        }
        if a.find_placeholder {
            for r in roots {
                self.arg(r, cwd, &[], cwd);
                if !r.dynamic && !looks_like_path(&r.text) {
                    // A plain root like `src` still lies under the cwd.
                    self.path(&r.text, cwd);
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
            self.report(&a.text, None, Location::Outside);
            return;
        }
        for p in path_candidates(&a.text) {
            self.path(&p, base);
        }
    }
}

/// Judges every path a segment touches.
pub fn judge(seg: &Segment, frame: &Frame) -> Vec<PathReport> {
    let mut j = Judge {
        frame,
        reports: Vec::new(),
        seen: rustc_hash::FxHashSet::default(),
    };
    // The cwd itself, unless a `cd` to a static absolute target.
    if !seg.cd_absolute {
        match &seg.cwd {
            Cwd::Known(dirs) => {
                for d in dirs {
                    let loc = locate(frame, d);
                    j.report("(working directory)", Some(d.clone()), loc);
                }
            }
            Cwd::Unknown => j.report("(working directory)", None, Location::Unknown),
        }
    }
    // Relative arguments of the program resolve against `git -C` when given.
    let arg_base = match &seg.arg_dir {
        Some(d) if !d.dynamic => match &seg.cwd {
            Cwd::Known(dirs) => Cwd::Known(dirs.iter().map(|c| normalize(c, &d.text)).collect()),
            Cwd::Unknown if d.text.starts_with('/') => Cwd::Known(vec![normalize("/", &d.text)]),
            Cwd::Unknown => Cwd::Unknown,
        },
        Some(_) => Cwd::Unknown,
        None => seg.cwd.clone(),
    };
    for inv in &seg.chain {
        if let Some(name) = inv.first()
            && !name.dynamic
            && name.text.contains('/')
        {
            j.path(&name.text, &seg.cwd);
        }
        for a in inv.iter().skip(1) {
            j.arg(a, &seg.cwd, &seg.find_roots, &seg.cwd);
        }
    }
    if let Some(name) = seg.argv.first()
        && !name.dynamic
        && !name.package
        && name.text.contains('/')
    {
        j.path(&name.text, &seg.cwd);
    }
    for a in seg.argv.iter().skip(1) {
        j.arg(a, &arg_base, &seg.find_roots, &seg.cwd);
    }
    for r in &seg.redirects {
        if r.target.dynamic {
            j.dynamic(&r.target.text);
        } else {
            let t = r.target.text.clone();
            j.path(&t, &seg.cwd);
        }
    }
    for (_, v) in &seg.assigns {
        j.arg(v, &seg.cwd, &[], &seg.cwd);
    }
    for h in &seg.hidden_paths {
        match &h.path {
            Some(p) => j.path(p, &seg.cwd),
            None => j.report("(a path computed at run time)", None, Location::Unknown),
        }
    }
    if seg.trailing_dynamic {
        j.report("(arguments read from stdin)", None, Location::Unknown);
    }
    j.reports
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Mount;

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
            (&host, "/dev/fd/63", Location::Special),
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
            assert_eq!(
                path_candidates(arg),
                want.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{arg}"
            );
        }
    }
}
