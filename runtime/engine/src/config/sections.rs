//! The other tables of `berth.toml`: `[execution]`, `[git]`, `[scope]`,
//! `[policy]`, `[host]`, `[agents]`, `[agent]` (its `[agent.env]` in
//! `agent_env.rs`), `[followups]`, `[[hooks]]`, `[[checks]]`
//! and `[review]`.

use serde::{Deserialize, Serialize};

/// How a pipeline task ends (ARCHITECTURE.md: the execution mode, not auto mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    Auto,
    #[default]
    Review,
}

impl ExecutionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Auto => "auto",
            ExecutionMode::Review => "review",
        }
    }

    pub fn parse(s: &str) -> Option<ExecutionMode> {
        match s {
            "auto" => Some(ExecutionMode::Auto),
            "review" => Some(ExecutionMode::Review),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecutionConfig {
    pub mode: ExecutionMode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GitConfig {
    pub protected_branches: Vec<String>,
    /// `Name <email>`: the person agents work for.
    pub co_author: String,
    /// The largest object (uncompressed) a push may bring into the forge.
    pub max_object_bytes: u64,
    /// The most bytes of new objects one push may bring into the forge.
    pub max_push_bytes: u64,
    /// The most bytes a checkout into a worktree may write (each file at
    /// every path it is written to).
    pub max_checkout_bytes: u64,
}

impl Default for GitConfig {
    fn default() -> Self {
        GitConfig {
            protected_branches: vec!["main".into(), "master".into()],
            co_author: "berth user <user@localhost>".into(),
            max_object_bytes: berth_worktrees::GitLimits::DEFAULT_MAX_OBJECT_BYTES,
            max_push_bytes: berth_worktrees::GitLimits::DEFAULT_MAX_PUSH_BYTES,
            max_checkout_bytes: berth_worktrees::GitLimits::DEFAULT_MAX_CHECKOUT_BYTES,
        }
    }
}

impl GitConfig {
    /// The size bounds of what enters the forge.
    pub fn limits(&self) -> berth_worktrees::GitLimits {
        berth_worktrees::GitLimits {
            max_object_bytes: self.max_object_bytes,
            max_push_bytes: self.max_push_bytes,
        }
    }

    /// The co-author split into name and email.
    pub fn co_author_parts(&self) -> Option<(&str, &str)> {
        let (name, rest) = self.co_author.split_once('<')?;
        let email = rest.strip_suffix('>')?;
        let name = name.trim();
        (!name.is_empty() && email.contains('@') && !email.contains(['<', '>', ' ']))
            .then_some((name, email))
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScopeConfig {
    pub extra_roots: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    pub deny: Vec<String>,
    pub privileged: Vec<String>,
}

/// `[host]`: how berth uses the machine it runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostConfig {
    /// `[first, last]`: the uids (gid = uid) berths are given, one each.
    pub uid_range: [u32; 2],
}

/// The default `[host] uid_range`: 0x70000000–0x7000FFFF. systemd's table of
/// UID ranges (<https://systemd.io/UIDS-GIDS/>) lists 1879048192–2147483647
/// as unused by Linux, distributions and systemd, above its container ranges
/// (524288–1879048191, `systemd-nspawn --private-users=pick`) and below the
/// "HIC SVNT LEONES" half where a signed uid goes negative; shadow's default
/// subordinate ids (`SUB_UID_MIN` 100000 … `SUB_UID_MAX` 600100000 in
/// login.defs) end far below it. 65,536 berths.
pub const DEFAULT_UID_RANGE: [u32; 2] = [0x7000_0000, 0x7000_FFFF];

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            uid_range: DEFAULT_UID_RANGE,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentsConfig {
    pub max_parallel: u32,
    pub circuit_breaker: u32,
}

impl Default for AgentsConfig {
    fn default() -> Self {
        AgentsConfig {
            max_parallel: 1,
            circuit_breaker: 3,
        }
    }
}

/// `[agent]`: how a `command` agent's program runs (issue 18).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// `[agent.env]`: the names of variables passed from berth's
    /// environment to the program (names only: a value never lives in
    /// berth.toml).
    #[serde(deserialize_with = "super::agent_env::env_table_or_names")]
    pub env: super::AgentEnvConfig,
    /// One turn's deadline, in seconds: the program's process tree is
    /// killed when it passes.
    pub turn_timeout_secs: u64,
    /// Sessions of this project's agents that may run a turn at once.
    pub max_sessions: u32,
    /// The hosts a `command` agent's program may reach (the model's API),
    /// through berth's egress proxy: patterns as in `[sandbox.network]
    /// allow` (`api.anthropic.com`, `*.openai.com`). Empty: the program
    /// runs with open network, and `activate` says so.
    pub model_hosts: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            env: super::AgentEnvConfig::default(),
            turn_timeout_secs: 1800,
            max_sessions: 4,
            model_hosts: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FollowupsConfig {
    pub enabled: bool,
    pub command: String,
    /// The generator's deadline, in seconds.
    pub timeout_secs: u64,
}

impl Default for FollowupsConfig {
    fn default() -> Self {
        FollowupsConfig {
            enabled: false,
            command: String::new(),
            timeout_secs: 60,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub event: String,
    pub command: String,
    #[serde(default = "default_hook_timeout")]
    pub timeout_secs: u64,
}

fn default_hook_timeout() -> u64 {
    30
}

/// One `[[checks]]` entry: a command run against each new head of a PR, as
/// berth's own effect, in a throwaway checkout of that head (never in an
/// agent's berth), confined like a runner exec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckConfig {
    pub name: String,
    pub command: String,
    #[serde(default = "default_check_timeout")]
    pub timeout_secs: u64,
    /// The check's commands reach the network (package installs); without
    /// it they see only loopback.
    #[serde(default)]
    pub network: bool,
}

fn default_check_timeout() -> u64 {
    600
}

/// `[review]`: who reviews this project's PRs, and how many approvals a PR
/// needs before it is ready to merge. The login can change: a new one is
/// read at the next look (the review-requested flag follows it).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// The reviewer identity whose review requests the PR view reports
    /// (`review_requested`); none: any open request counts.
    pub login: Option<String>,
    /// Approvals (each person's latest review) a PR needs to be ready.
    pub required_approvals: u32,
}

/// The most approvals a project may require: more is a typo.
pub const MAX_REQUIRED_APPROVALS: u32 = 100;

impl ReviewConfig {
    /// What is wrong with the table, if anything: (key, why).
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if let Some(login) = &self.login {
            if login.trim().is_empty() {
                return Some((
                    "login",
                    "must not be empty: name the reviewer, or remove the key".into(),
                ));
            }
            if login.chars().any(|c| c.is_whitespace() || c.is_control()) || login.len() > 100 {
                return Some((
                    "login",
                    format!(
                        "`{login}` is not a login (no spaces or control characters, at most 100 bytes)"
                    ),
                ));
            }
        }
        if self.required_approvals > MAX_REQUIRED_APPROVALS {
            return Some((
                "required_approvals",
                format!("must be at most {MAX_REQUIRED_APPROVALS}"),
            ));
        }
        None
    }
}
