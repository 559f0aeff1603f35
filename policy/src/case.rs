//! The policy-case format: one JSON object a line, as `berth decide --batch`
//! reads it (the policy-cases README of the project brief; copies of the
//! cases are in `policy/tests/cases/`). Defaults: action
//! `terminal`, mode `manual`, frame `host`, project root `/work`, cwd the
//! root, home `/home/agent`, protected branches `main` and `master`.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use crate::action::Action;
use crate::autonomy::{Approval, Autonomy};
use crate::decide::{Context, Limits, decide};
use crate::decision::{Brief, Decision};
use crate::frame::{DEFAULT_HOME, Frame, Mount, MountKind, WORK};
use crate::rules::{PatternCache, RuleSet};

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
pub struct CaseRules {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CaseMount {
    pub target: String,
    #[serde(default)]
    pub project: bool,
    #[serde(default)]
    pub host: bool,
    #[serde(default)]
    pub in_scope: bool,
}

/// One policy case.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Case {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
    #[serde(default)]
    pub rules: Option<CaseRules>,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub autonomy: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    pub frame: Option<String>,
    #[serde(default)]
    pub project_root: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub home: Option<String>,
    #[serde(default)]
    pub mounts: Option<Vec<CaseMount>>,
    #[serde(default)]
    pub extra_roots: Option<Vec<String>>,
    #[serde(default)]
    pub protected_branches: Option<Vec<String>>,
    #[serde(default)]
    pub expect: Option<String>,
}

/// The inputs of a case, owned, ready to build a [`Context`].
#[derive(Debug, Clone)]
pub struct Inputs {
    pub action: Action,
    pub frame: Frame,
    pub cwd: String,
    pub autonomy: Autonomy,
    pub rules: Arc<RuleSet>,
    pub protected_branches: Vec<String>,
    pub limits: Limits,
}

impl Inputs {
    pub fn context(&self) -> Context<'_> {
        Context {
            frame: &self.frame,
            cwd: &self.cwd,
            autonomy: &self.autonomy,
            rules: &self.rules,
            protected_branches: &self.protected_branches,
            limits: &self.limits,
        }
    }

    pub fn decide(&self) -> Decision {
        decide(&self.action, &self.context())
    }

    /// The verdict, stage and reason alone (see [`crate::decide::decide_brief`]).
    pub fn decide_brief(&self) -> crate::decision::Brief {
        crate::decide::decide_brief(&self.action, &self.context())
    }
}

/// Compiled rule sets by their lists: a batch of cases usually repeats a
/// few rules files, and compiling them is a good part of a decision's cost.
#[derive(Debug, Default)]
pub struct RulesCache {
    /// Keyed by the three lists written out as one byte string
    /// ([`RulesCache::key`]): a case's lists are looked up as borrowed from
    /// its line, and only a set not seen yet stores a key (one buffer, not
    /// a string a rule).
    sets: rustc_hash::FxHashMap<Vec<u8>, Arc<RuleSet>>,
    /// The key of the case being looked up, reused from case to case.
    key: Vec<u8>,
    /// The patterns of the sets, by text: most sets of a batch differ, but
    /// share most of their rules.
    patterns: PatternCache,
}

impl RulesCache {
    /// Most rule sets kept; past it the cache starts over. A set of a few
    /// dozen rules is a few KB, so this is a few MB at most; with 256 the
    /// 4 MB corpus (2,854 distinct sets among 5,079 cases) compiled 4,295
    /// sets, with this 2,854.
    const CAPACITY: usize = 4096;

    /// The compiled set of these lists, compiled now if not seen before.
    pub fn get<S: AsRef<str>>(
        &mut self,
        allow: &[S],
        ask: &[S],
        deny: &[S],
    ) -> Result<Arc<RuleSet>, String> {
        Self::key(&mut self.key, [allow, ask, deny]);
        if let Some(set) = self.sets.get(self.key.as_slice()) {
            return Ok(set.clone());
        }
        let set = Arc::new(
            RuleSet::from_lists_cached(allow, ask, deny, &mut self.patterns)
                .map_err(|e| e.to_string())?,
        );
        if self.sets.len() >= Self::CAPACITY {
            self.sets.clear();
        }
        self.sets.insert(self.key.clone(), set.clone());
        Ok(set)
    }

    /// The lists written into `key` so that two keys are equal exactly when
    /// the lists are: each list's length, then each entry's length and
    /// bytes (lengths in 8 bytes each, before what they measure, so no text
    /// can pass for a boundary).
    fn key<S: AsRef<str>>(key: &mut Vec<u8>, lists: [&[S]; 3]) {
        key.clear();
        for list in lists {
            key.extend_from_slice(&list.len().to_le_bytes());
            for e in list {
                let e = e.as_ref().as_bytes();
                key.extend_from_slice(&e.len().to_le_bytes());
                key.extend_from_slice(e);
            }
        }
    }
}

/// A string of a case, borrowed from the JSON line when it holds no escape
/// (most do not), owned when it does. Read like `String`: the same errors
/// for what is not a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Text<'a>(pub Cow<'a, str>);

impl AsRef<str> for Text<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> serde::de::Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            // What `String`'s visitor says it expected.
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_string(TextVisitor)
    }
}

/// [`CaseRules`] borrowed from a JSON line (serde's messages name it
/// `CaseRules`, as they did the owned one).
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "struct CaseRules")]
pub struct CaseRulesLine<'a> {
    #[serde(default, borrow)]
    pub allow: Vec<Text<'a>>,
    #[serde(default, borrow)]
    pub ask: Vec<Text<'a>>,
    #[serde(default, borrow)]
    pub deny: Vec<Text<'a>>,
}

/// One policy case as `berth decide --batch` reads it: [`Case`] with its
/// strings borrowed from the line (a command, and a list of rules a case,
/// are most of a line: copying them cost more than reading them). serde's
/// messages name it `Case`: a line that is not a case is told what it was.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "struct Case")]
pub struct CaseLine<'a> {
    #[serde(default, borrow)]
    pub id: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub action: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub command: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub path: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub branch: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub rules: Option<CaseRulesLine<'a>>,
    #[serde(default, borrow)]
    pub mode: Option<Text<'a>>,
    #[serde(default)]
    pub autonomy: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, borrow)]
    pub frame: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub project_root: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub cwd: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub home: Option<Text<'a>>,
    #[serde(default)]
    pub mounts: Option<Vec<CaseMount>>,
    #[serde(default, borrow)]
    pub extra_roots: Option<Vec<Text<'a>>>,
    #[serde(default, borrow)]
    pub protected_branches: Option<Vec<Text<'a>>>,
    #[serde(default, borrow)]
    pub expect: Option<Text<'a>>,
}

impl Case {
    /// Builds the inputs, or says what is wrong with the case.
    pub fn inputs(&self) -> Result<Inputs, String> {
        self.inputs_cached(&mut RulesCache::default())
    }

    /// Builds the inputs, compiling the rules through `cache`.
    pub fn inputs_cached(&self, cache: &mut RulesCache) -> Result<Inputs, String> {
        fn text(s: &Option<String>) -> Option<Text<'_>> {
            s.as_deref().map(|s| Text(Cow::Borrowed(s)))
        }
        fn list(v: &[String]) -> Vec<Text<'_>> {
            v.iter().map(|s| Text(Cow::Borrowed(s.as_str()))).collect()
        }
        fn texts(v: &Option<Vec<String>>) -> Option<Vec<Text<'_>>> {
            v.as_deref().map(list)
        }
        let line = CaseLine {
            id: text(&self.id),
            action: text(&self.action),
            command: text(&self.command),
            path: text(&self.path),
            branch: text(&self.branch),
            rules: self.rules.as_ref().map(|r| CaseRulesLine {
                allow: list(&r.allow),
                ask: list(&r.ask),
                deny: list(&r.deny),
            }),
            mode: text(&self.mode),
            autonomy: self.autonomy.clone(),
            frame: text(&self.frame),
            project_root: text(&self.project_root),
            cwd: text(&self.cwd),
            home: text(&self.home),
            mounts: self.mounts.clone(),
            extra_roots: texts(&self.extra_roots),
            protected_branches: texts(&self.protected_branches),
            expect: text(&self.expect),
        };
        line.inputs_cached(cache)
    }
}

/// An optional string of a case.
fn text<'t>(t: &'t Option<Text<'_>>) -> Option<&'t str> {
    t.as_ref().map(|t| t.0.as_ref())
}

/// A list of strings of a case, owned.
fn owned(v: &[Text<'_>]) -> Vec<String> {
    v.iter().map(|t| t.0.to_string()).collect()
}

/// Which frame a case asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Host,
    Container,
}

/// The autonomy a case asks for: its own map, or a mode's.
enum Modes {
    Map(Autonomy),
    Manual,
    Auto,
}

/// A case's inputs as its line gives them, checked, before anything is
/// copied out of the line: [`CaseLine::inputs_cached`] makes them owned
/// [`Inputs`], [`CaseLine::decide_brief_shared`] lends them to a decision.
struct Parts<'l> {
    action: Action,
    modes: Modes,
    root: &'l str,
    home: &'l str,
    frame: FrameKind,
    rules: Arc<RuleSet>,
}

impl CaseLine<'_> {
    /// Checks the case and reads its parts, compiling the rules through
    /// `cache`; the errors in the order the checks run.
    fn parts(&self, cache: &mut RulesCache) -> Result<Parts<'_>, String> {
        let kind = text(&self.action).unwrap_or("terminal");
        if kind == "terminal" && self.command.is_none() {
            return Err("a terminal case needs `command`".into());
        }
        if matches!(kind, "file_read" | "file_write") && self.path.is_none() {
            return Err(format!("a {kind} case needs `path`"));
        }
        let action = Action::from_parts(
            kind,
            text(&self.command),
            text(&self.path),
            text(&self.branch),
        );
        let modes = match &self.autonomy {
            Some(map) => {
                let mut a = Autonomy::new();
                for (k, v) in map {
                    let m = Approval::parse(v).ok_or_else(|| format!("autonomy `{k}`: unknown mode `{v}` (auto_approve, require_approval or deny)"))?;
                    a.set(k, m);
                }
                Modes::Map(a)
            }
            None => match text(&self.mode).unwrap_or("manual") {
                "manual" => Modes::Manual,
                "auto" => Modes::Auto,
                other => return Err(format!("unknown mode `{other}` (manual or auto)")),
            },
        };
        let root = text(&self.project_root).unwrap_or(WORK);
        let home = text(&self.home).unwrap_or(DEFAULT_HOME);
        let frame = match text(&self.frame).unwrap_or("host") {
            "host" => FrameKind::Host,
            "container" => FrameKind::Container,
            other => return Err(format!("unknown frame `{other}` (host or container)")),
        };
        let rules = match &self.rules {
            Some(r) => cache.get(&r.allow, &r.ask, &r.deny)?,
            None => Arc::new(RuleSet::default()),
        };
        Ok(Parts {
            action,
            modes,
            root,
            home,
            frame,
            rules,
        })
    }

    /// The frame of the case, from its parts.
    fn frame_of(&self, p: &Parts<'_>) -> Frame {
        match p.frame {
            FrameKind::Host => Frame::Host {
                project_root: p.root.to_string(),
                extra_roots: self.extra_roots.as_deref().map(owned).unwrap_or_default(),
                home: p.home.to_string(),
            },
            FrameKind::Container => {
                let mounts = match &self.mounts {
                    Some(ms) => ms
                        .iter()
                        .map(|m| Mount {
                            target: m.target.clone(),
                            kind: if m.project {
                                MountKind::Project
                            } else {
                                MountKind::Host {
                                    in_scope: m.in_scope,
                                }
                            },
                        })
                        .collect(),
                    None => vec![Mount {
                        target: p.root.to_string(),
                        kind: MountKind::Project,
                    }],
                };
                Frame::Container {
                    project_root: p.root.to_string(),
                    mounts,
                    home: p.home.to_string(),
                }
            }
        }
    }

    /// Builds the inputs, compiling the rules through `cache`.
    pub fn inputs_cached(&self, cache: &mut RulesCache) -> Result<Inputs, String> {
        let p = self.parts(cache)?;
        let frame = self.frame_of(&p);
        Ok(Inputs {
            frame,
            cwd: text(&self.cwd).unwrap_or(p.root).to_string(),
            autonomy: match p.modes {
                Modes::Map(a) => a,
                Modes::Manual => Autonomy::manual(),
                Modes::Auto => Autonomy::auto(),
            },
            rules: p.rules,
            protected_branches: self
                .protected_branches
                .as_deref()
                .map(owned)
                .unwrap_or_else(default_branches),
            limits: Limits::default(),
            action: p.action,
        })
    }

    /// `self.inputs_cached(..)?.decide_brief()`, with the inputs most cases
    /// share lent by `shared` (made once a batch, or once a frame) instead
    /// of made for each case: the same context, so the same decision, and
    /// the same errors.
    pub fn decide_brief_shared(&self, shared: &mut CaseShared) -> Result<Brief, String> {
        let p = self.parts(&mut shared.rules)?;
        let own_frame;
        let frame: &Frame = if self.mounts.is_none() && self.extra_roots.is_none() {
            // Then the frame is the kind's, of the root and the home alone.
            match &mut shared.frame {
                Some((kind, root, home, frame))
                    if *kind == p.frame && root == p.root && home == p.home =>
                {
                    frame
                }
                slot => {
                    &slot
                        .insert((
                            p.frame,
                            p.root.to_string(),
                            p.home.to_string(),
                            self.frame_of(&p),
                        ))
                        .3
                }
            }
        } else {
            own_frame = self.frame_of(&p);
            &own_frame
        };
        let own_branches;
        let protected_branches: &[String] = match self.protected_branches.as_deref() {
            Some(b) => {
                own_branches = owned(b);
                &own_branches
            }
            None => &shared.branches,
        };
        let autonomy = match &p.modes {
            Modes::Map(a) => a,
            Modes::Manual => &shared.manual,
            Modes::Auto => &shared.auto,
        };
        let ctx = Context {
            frame,
            cwd: text(&self.cwd).unwrap_or(p.root),
            autonomy,
            rules: &p.rules,
            protected_branches,
            limits: &shared.limits,
        };
        Ok(crate::decide::decide_brief(&p.action, &ctx))
    }
}

/// The protected branches of a case that names none.
fn default_branches() -> Vec<String> {
    vec!["main".into(), "master".into()]
}

/// What a batch lends each case that does not give its own, made once: the
/// compiled rule sets ([`RulesCache`]), the two modes, the protected
/// branches and the limits by default, and the frame of the last case
/// (most cases of a batch share theirs). Made for each case, these were
/// about ten allocations a case.
#[derive(Debug)]
pub struct CaseShared {
    rules: RulesCache,
    manual: Autonomy,
    auto: Autonomy,
    branches: Vec<String>,
    limits: Limits,
    /// The last frame made for a case without mounts or extra roots, with
    /// its kind, root and home.
    frame: Option<(FrameKind, String, String, Frame)>,
}

impl Default for CaseShared {
    fn default() -> Self {
        CaseShared {
            rules: RulesCache::default(),
            manual: Autonomy::manual(),
            auto: Autonomy::auto(),
            branches: default_branches(),
            limits: Limits::default(),
            frame: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case read as the batch reads it.
    fn read(line: &str) -> Option<CaseLine<'_>> {
        crate::case_json::read(line).or_else(|| serde_json::from_str(line).ok())
    }

    /// The shared inputs decide every case as its own inputs do, and fail
    /// it with the same message: the case files in turn, one `CaseShared`
    /// across all of them, and lines that change the frame, root, home,
    /// mounts, roots, branches and modes from one case to the next.
    #[test]
    fn shared_inputs_decide_as_each_cases_own() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
        let mut lines: Vec<String> = Vec::new();
        for file in [
            "replay-tldr-dev.jsonl",
            "public.jsonl",
            "mount-words.jsonl",
            "wrapper-regressions.jsonl",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{file}")).expect("a case file");
            lines.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(String::from),
            );
        }
        for command in [
            "rm -rf ~/x",
            "cat /work/.git/config > /tmp/x",
            "git push origin main",
            "ls",
        ] {
            for fields in [
                r#""frame":"container""#,
                r#""frame":"container","home":"/root""#,
                r#""frame":"container","project_root":"/srv/p","cwd":"/srv""#,
                r#""frame":"host","project_root":"/srv/p""#,
                r#""frame":"host","extra_roots":["/data"]"#,
                r#""frame":"container","mounts":[{"target":"/work","project":true},{"target":"/data","in_scope":false}]"#,
                r#""frame":"container","mode":"auto""#,
                r#""mode":"auto","protected_branches":["dev"]"#,
                r#""autonomy":{"terminal":"auto_approve"}"#,
                r#""autonomy":{"terminal":"sometimes"}"#,
                r#""frame":"moon""#,
                r#""mode":"never""#,
                r#""frame":"container","rules":{"allow":["ls","rm"],"deny":["git push"]}"#,
            ] {
                let command = serde_json::to_string(command).expect("a JSON string");
                lines.push(format!(r#"{{"command":{command},{fields}}}"#));
            }
        }
        let mut shared = CaseShared::default();
        let mut cache = RulesCache::default();
        let mut compared = 0;
        for line in &lines {
            let Some(case) = read(line) else { continue };
            let own = case.inputs_cached(&mut cache).map(|i| i.decide_brief());
            assert_eq!(case.decide_brief_shared(&mut shared), own, "{line}");
            compared += 1;
        }
        assert!(compared > 100, "{compared} cases compared");
    }
}
