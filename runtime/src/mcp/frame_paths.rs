//! Host paths out of what the agent reads: the agent works in its berth's
//! frame (`/work`), and a host path in a tool answer (an error naming the
//! worktree, git's message on a commit, a spawn error, `pwd` of a runner-mode
//! command) tells it where berth keeps its state on the host, which is none of
//! its business and which it could not use. Every string of every tool
//! answer passes through [`HostPaths::to_frame`] at the MCP boundary.
//!
//! The worktree becomes `/work` (its frame path); anything else under the
//! state directory becomes `<berth state>` (it is on no mount of the frame).
//! A prefix is only replaced where a path component ends, so `/s/wt` does not
//! rewrite `/s/wt2`.

use std::path::Path;

use serde_json::Value;

/// Host path prefixes and what the agent sees instead, longest first.
#[derive(Debug, Clone, Default)]
pub struct HostPaths {
    rewrites: Vec<(String, String)>,
}

/// What a host path the frame does not show reads as.
pub const REDACTED: &str = "<berth state>";

impl HostPaths {
    /// `worktree` is `/work` in the frame; the rest of `state` is hidden.
    pub fn new(worktree: Option<&Path>, state: Option<&Path>) -> HostPaths {
        let mut rewrites = Vec::new();
        let mut add = |host: &Path, frame: &str| {
            let mut forms = vec![host.to_path_buf()];
            if let Ok(real) = host.canonicalize() {
                forms.push(real);
            }
            for form in forms {
                let s = form.to_string_lossy().trim_end_matches('/').to_string();
                // `/` itself would rewrite every absolute path.
                if !s.is_empty() && !rewrites.iter().any(|(h, _)| *h == s) {
                    rewrites.push((s, frame.to_string()));
                }
            }
        };
        if let Some(w) = worktree {
            add(w, berth_policy::frame::WORK);
        }
        if let Some(s) = state {
            add(s, REDACTED);
        }
        rewrites.sort_by_key(|(host, _)| std::cmp::Reverse(host.len()));
        HostPaths { rewrites }
    }

    /// `text` with every host prefix replaced by what the agent sees.
    pub fn to_frame(&self, text: &str) -> String {
        let mut out = drop_host_path_notes(text);
        for (host, frame) in &self.rewrites {
            out = replace_at_boundaries(&out, host, frame);
        }
        out
    }

    /// Every string in `value` (keys stay), through [`Self::to_frame`].
    pub fn value_to_frame(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.to_frame(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value_to_frame(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.value_to_frame(v)),
            _ => {}
        }
    }
}

/// The sandbox's messages name the host form of a frame path for the person
/// reading the log (`open /work/a (host path /srv/…/a): …`); the agent
/// gets the frame path alone.
fn drop_host_path_notes(text: &str) -> String {
    const NOTE: &str = " (host path ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(NOTE) {
        out.push_str(&rest[..at]);
        let after = &rest[at + NOTE.len()..];
        match after.find(')') {
            Some(end) => rest = &after[end + 1..],
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replaces `host` where it starts a path (not preceded by a path character)
/// and ends at a component boundary (followed by `/` or a non-path character).
fn replace_at_boundaries(text: &str, host: &str, frame: &str) -> String {
    let is_path_char = |c: char| c.is_alphanumeric() || "._-/~+@".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(host) {
        let before = rest[..at].chars().next_back().or(out.chars().next_back());
        let after = rest[at + host.len()..].chars().next();
        let starts = before.is_none_or(|c| !is_path_char(c));
        let ends = after.is_none_or(|c| c == '/' || !is_path_char(c));
        out.push_str(&rest[..at]);
        if starts && ends {
            out.push_str(frame);
        } else {
            out.push_str(host);
        }
        rest = &rest[at + host.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_prefixes_become_frame_paths_at_component_boundaries() {
        let p = HostPaths::new(
            Some(Path::new("/srv/state/worktrees/dev-1")),
            Some(Path::new("/srv/state")),
        );
        let cases = [
            ("/srv/state/worktrees/dev-1", "/work"),
            (
                "open /srv/state/worktrees/dev-1/a.txt: no such file",
                "open /work/a.txt: no such file",
            ),
            ("cwd '/srv/state/worktrees/dev-1/x'", "cwd '/work/x'"),
            (
                "/srv/state/projects/demo/forge.git refused",
                "<berth state>/projects/demo/forge.git refused",
            ),
            (
                "/srv/state/worktrees/dev-10/a",
                "<berth state>/worktrees/dev-10/a",
            ),
            ("/srv/statex/a", "/srv/statex/a"),
            ("x/srv/state/a", "x/srv/state/a"),
            ("nothing here", "nothing here"),
            (
                "open /work/m (host path /srv/state/worktrees/dev-1/m): No such file",
                "open /work/m: No such file",
            ),
            ("a (host path b", "a (host path b"),
        ];
        for (text, want) in cases {
            assert_eq!(p.to_frame(text), want, "{text}");
        }
    }
}
