//! Translation of frame paths to host paths, applied only after a decision.
//!
//! The decision is made in the frame where a command runs (`/work` inside a
//! container, or the agent's view of `/work` in the runner). Only once an action
//! is approved does the engine translate it for execution on the host. The map
//! works at path-prefix boundaries only: `/work` and `/work/x` map, `/workspace`
//! never does. It cannot change a verdict: it is not consulted by `decide`.

use std::path::{Path, PathBuf};

/// An ordered set of `frame prefix → host prefix` pairs; the longest prefix wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMap {
    entries: Vec<(String, PathBuf)>,
}

impl PathMap {
    /// An empty map: every path maps to itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `frame → host`. A trailing slash on `frame` is ignored.
    pub fn with(mut self, frame: &str, host: impl Into<PathBuf>) -> Self {
        let frame = trim_trailing_slash(frame).to_string();
        self.entries.push((frame, host.into()));
        // Longest first, so nested mounts map by their own entry.
        self.entries.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
        self
    }

    /// The pairs, longest frame prefix first.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.entries.iter().map(|(f, h)| (f.as_str(), h.as_path()))
    }

    /// Maps one absolute frame path, or `None` when no prefix covers it.
    pub fn to_host(&self, frame_path: &str) -> Option<PathBuf> {
        for (prefix, host) in &self.entries {
            if let Some(rest) = strip_at_boundary(frame_path, prefix) {
                let rest = rest.trim_start_matches('/');
                return Some(if rest.is_empty() {
                    host.clone()
                } else {
                    host.join(rest)
                });
            }
        }
        None
    }

    /// Maps a host path back into the frame (for messages shown to the agent).
    pub fn to_frame(&self, host_path: &Path) -> Option<String> {
        let mut best: Option<(usize, String)> = None;
        for (prefix, host) in &self.entries {
            if let Ok(rest) = host_path.strip_prefix(host) {
                let len = host.as_os_str().len();
                if best.as_ref().is_some_and(|(l, _)| *l >= len) {
                    continue;
                }
                let rest = rest.to_string_lossy();
                let p = if rest.is_empty() {
                    prefix.clone()
                } else {
                    format!("{prefix}/{rest}")
                };
                best = Some((len, p));
            }
        }
        best.map(|(_, p)| p)
    }

    /// Rewrites every occurrence of a frame prefix in a command line that stands
    /// at a path boundary: preceded by the start, whitespace, a quote or one of
    /// `=:(<>|;&` and followed by the end, `/`, whitespace, a quote or one of
    /// `:)|;&<>`. `/workspace` and `x/work` are left alone.
    pub fn translate_command(&self, command: &str) -> String {
        if self.entries.is_empty() {
            return command.to_string();
        }
        let bytes = command.as_bytes();
        let mut out = String::with_capacity(command.len() + 64);
        let mut i = 0;
        let mut copied = 0;
        while i < bytes.len() {
            if bytes[i] == b'/' && (i == 0 || is_left_boundary(bytes[i - 1])) {
                let mut matched = None;
                for (prefix, host) in &self.entries {
                    let end = i + prefix.len();
                    if command.get(i..end) == Some(prefix.as_str())
                        && (end == bytes.len() || is_right_boundary(bytes[end]))
                    {
                        matched = Some((end, host));
                        break;
                    }
                }
                if let Some((end, host)) = matched {
                    out.push_str(&command[copied..i]);
                    out.push_str(&host.to_string_lossy());
                    copied = end;
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        out.push_str(&command[copied..]);
        out
    }
}

fn trim_trailing_slash(p: &str) -> &str {
    if p.len() > 1 {
        p.trim_end_matches('/')
    } else {
        p
    }
}

fn strip_at_boundary<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?;
    if rest.is_empty() || rest.starts_with('/') || prefix == "/" {
        Some(rest)
    } else {
        None
    }
}

fn is_left_boundary(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b'\'' | b'"' | b'=' | b':' | b'(' | b'<' | b'>' | b'|' | b';' | b'&' | b'`'
        )
}

fn is_right_boundary(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(
            b,
            b'/' | b'\'' | b'"' | b':' | b')' | b'|' | b';' | b'&' | b'<' | b'>' | b'`'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> PathMap {
        PathMap::new()
            .with("/work", "/srv/berth/worktrees/p/dev-1")
            .with("/work/cache", "/srv/cache")
    }

    #[test]
    fn maps_at_boundaries_only() {
        let m = map();
        let cases: &[(&str, Option<&str>)] = &[
            ("/work", Some("/srv/berth/worktrees/p/dev-1")),
            ("/work/", Some("/srv/berth/worktrees/p/dev-1")),
            (
                "/work/src/a.rs",
                Some("/srv/berth/worktrees/p/dev-1/src/a.rs"),
            ),
            ("/work/cache/x", Some("/srv/cache/x")),
            ("/workspace", None),
            ("/tmp/x", None),
        ];
        for (input, want) in cases {
            assert_eq!(m.to_host(input), want.map(PathBuf::from), "{input}");
        }
    }

    #[test]
    fn back_to_frame() {
        let m = map();
        assert_eq!(
            m.to_frame(Path::new("/srv/berth/worktrees/p/dev-1/src")),
            Some("/work/src".to_string())
        );
        assert_eq!(
            m.to_frame(Path::new("/srv/cache")),
            Some("/work/cache".to_string())
        );
        assert_eq!(m.to_frame(Path::new("/etc")), None);
    }

    #[test]
    fn translates_command_lines() {
        let m = PathMap::new().with("/work", "/h/wt");
        let cases = [
            ("cat /work/a", "cat /h/wt/a"),
            ("cd /work && ls", "cd /h/wt && ls"),
            ("ls /workspace /work", "ls /workspace /h/wt"),
            ("echo x>/work/o", "echo x>/h/wt/o"),
            (
                "F=/work/x cmd --out=/work:/work/y",
                "F=/h/wt/x cmd --out=/h/wt:/h/wt/y",
            ),
            ("ls a/work", "ls a/work"),
            ("cat '/work/a b'", "cat '/h/wt/a b'"),
        ];
        for (input, want) in cases {
            assert_eq!(m.translate_command(input), want, "{input}");
        }
    }
}
