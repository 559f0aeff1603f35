//! The policy-case format: one JSON object a line, as `berth decide --batch`
//! reads it (the policy-cases README of the project brief; copies of the
//! cases are in `policy/tests/cases/`). Defaults: action
//! `terminal`, mode `manual`, frame `host`, project root `/work`, cwd the
//! root, home `/home/agent`, protected branches `main` and `master`.

use std::sync::Arc;

use serde::Deserialize;

use crate::action::Action;
use crate::autonomy::{Approval, Autonomy};
use crate::decide::{Context, Limits, decide};
use crate::decision::Decision;
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
    sets: rustc_hash::FxHashMap<CaseRules, Arc<RuleSet>>,
    /// The patterns of the sets, by text: most sets of a batch differ, but
    /// share most of their rules.
    patterns: PatternCache,
}

impl RulesCache {
    /// Most rule sets kept; past it the cache starts over.
    const CAPACITY: usize = 256;

    pub fn get(&mut self, rules: &CaseRules) -> Result<Arc<RuleSet>, String> {
        if let Some(set) = self.sets.get(rules) {
            return Ok(set.clone());
        }
        let set = Arc::new(
            RuleSet::from_lists_cached(&rules.allow, &rules.ask, &rules.deny, &mut self.patterns)
                .map_err(|e| e.to_string())?,
        );
        if self.sets.len() >= Self::CAPACITY {
            self.sets.clear();
        }
        self.sets.insert(rules.clone(), set.clone());
        Ok(set)
    }
}

impl Case {
    /// Builds the inputs, or says what is wrong with the case.
    pub fn inputs(&self) -> Result<Inputs, String> {
        self.inputs_cached(&mut RulesCache::default())
    }

    /// Builds the inputs, compiling the rules through `cache`.
    pub fn inputs_cached(&self, cache: &mut RulesCache) -> Result<Inputs, String> {
        let kind = self.action.as_deref().unwrap_or("terminal");
        if kind == "terminal" && self.command.is_none() {
            return Err("a terminal case needs `command`".into());
        }
        if matches!(kind, "file_read" | "file_write") && self.path.is_none() {
            return Err(format!("a {kind} case needs `path`"));
        }
        let action = Action::from_parts(
            kind,
            self.command.as_deref(),
            self.path.as_deref(),
            self.branch.as_deref(),
        );
        let autonomy = match &self.autonomy {
            Some(map) => {
                let mut a = Autonomy::new();
                for (k, v) in map {
                    let m = Approval::parse(v).ok_or_else(|| format!("autonomy `{k}`: unknown mode `{v}` (auto_approve, require_approval or deny)"))?;
                    a.set(k, m);
                }
                a
            }
            None => match self.mode.as_deref().unwrap_or("manual") {
                "manual" => Autonomy::manual(),
                "auto" => Autonomy::auto(),
                other => return Err(format!("unknown mode `{other}` (manual or auto)")),
            },
        };
        let root = self
            .project_root
            .clone()
            .unwrap_or_else(|| WORK.to_string());
        let home = self
            .home
            .clone()
            .unwrap_or_else(|| DEFAULT_HOME.to_string());
        let frame = match self.frame.as_deref().unwrap_or("host") {
            "host" => Frame::Host {
                project_root: root.clone(),
                extra_roots: self.extra_roots.clone().unwrap_or_default(),
                home,
            },
            "container" => {
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
                        target: root.clone(),
                        kind: MountKind::Project,
                    }],
                };
                Frame::Container {
                    project_root: root.clone(),
                    mounts,
                    home,
                }
            }
            other => return Err(format!("unknown frame `{other}` (host or container)")),
        };
        let rules = match &self.rules {
            Some(r) => cache.get(r)?,
            None => Arc::new(RuleSet::default()),
        };
        Ok(Inputs {
            action,
            frame,
            cwd: self.cwd.clone().unwrap_or(root),
            autonomy,
            rules,
            protected_branches: self
                .protected_branches
                .clone()
                .unwrap_or_else(|| vec!["main".into(), "master".into()]),
            limits: Limits::default(),
        })
    }
}
