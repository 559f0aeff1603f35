//! What a caller asks of the action pipeline and what it gets back: the
//! proposal and its parameters, and the three answers every caller must
//! look at (`executed | pending | refused`). Kept apart from how the store
//! holds an action, so a caller's vocabulary reads in one place.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use berth_policy::{Action, Decision};
use serde::{Deserialize, Serialize};

use super::Outcome;
use crate::AgentName;
use crate::events::Actor;
use crate::permissions::RuleChange;

/// Inputs of an action beyond what the policy judges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionParams {
    /// terminal: the working directory in the frame (default `/work`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// terminal: the deadline in seconds (default: the project's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// file_write: the new content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// git_commit: the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// pr_open: the title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// git_merge: the PR being merged; pr_comment, pr_resolve_thread: the
    /// PR (default: the open PR of the agent's task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    /// pr_comment: the comment's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// pr_comment: the file (relative to the repository's root) a line
    /// comment is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// pr_comment: the line of `path` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// pr_comment: the thread replied to; pr_resolve_thread: the thread
    /// resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// terminal: run with `/work` read-only (a pipeline step that did not ask
    /// to write). Part of the action, so whoever executes it — the pipeline,
    /// or a person's `berth approve` in another process — enforces it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Why the agent proposes it, in its own words (MCP `run_command`'s
    /// `description`, as Claude Code's Bash tool has): shown to the person
    /// deciding, never judged by the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A request to act.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub agent: AgentName,
    pub action: Action,
    pub params: ActionParams,
    /// The task the action serves, when it is part of its delivery.
    pub task: Option<String>,
    /// Makes a retry safe: the same key returns the first proposal's state
    /// and never runs the action twice. A new random key when `None`.
    pub idempotency_key: Option<String>,
    /// Who asks: the agent, or a person acting on its berth (`berth pr merge`).
    pub proposer: Actor,
    /// The environment of the process it is proposed for, when that is not
    /// the one running it (`berth exec` handed to `berth serve`).
    pub caller_env: Option<CallerEnv>,
}

/// The environment of the process an action is proposed for, when another
/// process runs it (`berth exec` handed to `berth serve`): a runner derives
/// the command's environment from it as the proposing process would have
/// (`Sandbox::environment_from`). Never stored or logged: its `Debug` says
/// only how many variables it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct CallerEnv(Arc<BTreeMap<String, String>>);

impl CallerEnv {
    pub fn new(vars: BTreeMap<String, String>) -> CallerEnv {
        CallerEnv(Arc::new(vars))
    }

    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// The first variable that chooses how berth itself works — every
    /// `BERTH_*` and `DOCKER_*` one but `BERTH_LOG` (where to log) and
    /// `BERTH_HOME` (which state: found already) — set otherwise here than
    /// in this process, or `None`. A process handed an action runs it only
    /// when `None`: its engine would act otherwise than the caller's.
    pub fn engine_setting_differs(&self) -> Option<String> {
        let own = own_engine_settings();
        self.0
            .iter()
            .filter(|(n, v)| chooses_parts(n) && own.get(*n) != Some(*v))
            .map(|(n, _)| n)
            .chain(own.keys().filter(|n| !self.0.contains_key(*n)))
            .min()
            .cloned()
    }
}

impl std::fmt::Debug for CallerEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CallerEnv({} variables)", self.0.len())
    }
}

/// This process's engine settings, read once: its environment does not
/// change after start, and a server compares them at every hand-off.
fn own_engine_settings() -> &'static BTreeMap<String, String> {
    static OWN: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    OWN.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(n, _)| chooses_parts(n))
            .collect()
    })
}

/// Whether a variable chooses how berth itself works (see
/// [`CallerEnv::engine_setting_differs`]).
fn chooses_parts(name: &str) -> bool {
    (name.starts_with("BERTH_") || name.starts_with("DOCKER_"))
        && name != "BERTH_LOG"
        && name != "BERTH_HOME"
}

impl Proposal {
    /// A proposal by the agent itself.
    pub fn by_agent(agent: &AgentName, action: Action) -> Proposal {
        Proposal {
            agent: agent.clone(),
            action,
            params: ActionParams::default(),
            task: None,
            idempotency_key: None,
            proposer: Actor::agent(agent),
            caller_env: None,
        }
    }

    pub fn caller_env(mut self, env: CallerEnv) -> Self {
        self.caller_env = Some(env);
        self
    }

    pub fn params(mut self, params: ActionParams) -> Self {
        self.params = params;
        self
    }

    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    pub fn task(mut self, task: Option<String>) -> Self {
        self.task = task;
        self
    }
}

/// What `propose` made of a proposal. Every caller handles all three.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProposeStatus {
    /// It ran (successfully or not: see the outcome).
    Executed { outcome: Outcome },
    /// It waits for a person (`berth approve ID`).
    Pending { reason: String },
    /// It will not run.
    Refused { reason: String },
}

impl ProposeStatus {
    pub fn name(&self) -> &'static str {
        match self {
            ProposeStatus::Executed { .. } => "executed",
            ProposeStatus::Pending { .. } => "pending",
            ProposeStatus::Refused { .. } => "refused",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposed {
    pub id: String,
    pub status: ProposeStatus,
    pub decision: Decision,
    /// True when the idempotency key had been used: nothing new happened.
    pub replayed: bool,
}

/// What `approve` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Approved {
    pub id: String,
    pub outcome: Outcome,
    /// `--always`: what happened to each segment.
    pub rules: Vec<RuleChange>,
}

/// A sink for a terminal action's output as it arrives: bounded, so a slow
/// reader throttles the command ([`berth_sandbox::output_channel`]).
pub type OutputSink = berth_sandbox::OutputSink;
pub use berth_sandbox::{OutputChunk, output_channel};

#[cfg(test)]
mod tests {
    use super::{CallerEnv, chooses_parts};

    #[test]
    fn engine_settings_count_and_logging_does_not() {
        assert!(chooses_parts("DOCKER_HOST"));
        assert!(chooses_parts("BERTH_EXEC_SHIM"));
        assert!(chooses_parts("BERTH_EGRESS_HOSTS"));
        assert!(!chooses_parts("BERTH_LOG"));
        assert!(!chooses_parts("BERTH_HOME"));
        assert!(!chooses_parts("PATH"));
    }

    #[test]
    fn a_caller_env_names_its_size_not_its_values() {
        let env =
            CallerEnv::new([("AWS_SECRET_ACCESS_KEY".to_string(), "s3cr3t".to_string())].into());
        let shown = format!("{env:?}");
        assert_eq!(shown, "CallerEnv(1 variables)");
        assert!(!shown.contains("s3cr3t"));
    }
}
