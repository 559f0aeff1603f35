//! A project's `berth.toml`: what berth does for this project, read from the
//! state directory (never from a worktree, which an agent can write).
//!
//! Parsing is strict: an unknown key or a bad value is an error naming the
//! file, the line and column, and the key, so a typo never silently falls
//! back to a default.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

mod agent_env;
mod declared_dir;
pub(crate) mod key_line;
mod network;
pub(crate) mod sandbox;
mod sections;

pub use agent_env::AgentEnvConfig;
pub use declared_dir::DeclaredDir;
use key_line::find_key_line;
pub use sandbox::*;
pub use sections::*;

/// The whole of `berth.toml`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectConfig {
    pub execution: ExecutionConfig,
    pub git: GitConfig,
    pub scope: ScopeConfig,
    pub policy: PolicyConfig,
    pub sandbox: SandboxConfig,
    pub agents: AgentsConfig,
    pub agent: AgentConfig,
    pub followups: FollowupsConfig,
    pub hooks: Vec<HookConfig>,
    /// `[[checks]]`: what must pass on a PR's head.
    pub checks: Vec<CheckConfig>,
    /// `[review]`: the reviewer login and the approvals a PR needs.
    pub review: ReviewConfig,
    pub host: HostConfig,
    /// The project's `devcontainer.json` as last read from its base branch,
    /// applied under this file (whose keys override it); `None` when the
    /// project has none.
    #[serde(skip)]
    pub devcontainer: Option<crate::devcontainer::Applied>,
    /// The image `berth image build --project P` last built from the
    /// `[sandbox.build]` context on the base branch, and from what.
    #[serde(skip)]
    pub dockerfile_image: Option<crate::project_image::BuildRecord>,
    /// What a person should change in the file though it parsed (an old
    /// form): the CLI prints these.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// `[policy]`'s patterns, compiled once when the file is parsed: every
    /// decision in this project reads these ([`ProjectConfig::policy_context`]).
    #[serde(skip)]
    limits: berth_policy::Limits,
}

impl ProjectConfig {
    /// Reads and checks a `berth.toml`.
    pub fn load(path: &Path) -> Result<ProjectConfig> {
        let text = std::fs::read_to_string(path).map_err(EngineError::io("reading", path))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses `text` as the file `file` (named in errors).
    pub fn parse(text: &str, file: &str) -> Result<ProjectConfig> {
        let mut config: ProjectConfig = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            let key = key_at(text, line);
            let message = e.message().trim().to_string();
            EngineError::Config {
                file: file.to_string(),
                line,
                column,
                message: match key {
                    Some(k) if !message.contains(&k) => format!("key `{k}`: {message}"),
                    _ => message,
                },
            }
        })?;
        config.limits = config.compile_limits(text, file)?;
        config.check(text, file)?;
        config
            .warnings
            .extend(config.agent.env.legacy_note(text, file));
        if let Some(BuildSource::HostPath(path)) = config.sandbox.build.source() {
            let line = find_key_line(text, "sandbox.build", "context").unwrap_or(1);
            config.warnings.push(format!(
                "{file}:{line}: `[sandbox.build] context = {:?}` is a host path, read when the image is built: deprecated. Commit the Dockerfile and its context to the project's repository and name the directory there (context = \"docker\", or \".\" for the root): berth reads it from the base branch in the forge, so only a merged change reaches the image",
                path.display()
            ));
        }
        if let Some(old) = &config.sandbox.network.legacy {
            let line = find_key_line(text, "sandbox", "network").unwrap_or(1);
            config.warnings.push(format!(
                "{file}:{line}: `[sandbox] network = {old:?}` is the old form: write the table\n{}\ninstead{}",
                config.sandbox.network.replacement(),
                match config.sandbox.network.mode {
                    NetworkMode::None | NetworkMode::Allowlist => " (it means the same)",
                    NetworkMode::Open => {
                        " (the old form named a container's network only; the table's \"open\" also gives runner berths the host's network, which they do not get now)"
                    }
                }
            ));
        }
        Ok(config)
    }

    /// The policy's extra limits from `[policy]`, as compiled when parsed.
    pub fn limits(&self) -> &berth_policy::Limits {
        &self.limits
    }

    /// `[policy]`'s patterns compiled, each list once; a bad pattern names
    /// its key's line.
    fn compile_limits(&self, text: &str, file: &str) -> Result<berth_policy::Limits> {
        let compile = |key: &str, privileged: &[String], deny: &[String]| {
            berth_policy::Limits::from_patterns(privileged, deny).map_err(|e| EngineError::Config {
                file: file.to_string(),
                line: find_key_line(text, "policy", key).unwrap_or(1),
                column: 1,
                message: format!("key `policy.{key}`: {e}"),
            })
        };
        let privileged = compile("privileged", &self.policy.privileged, &[])?.privileged;
        let deny = compile("deny", &[], &self.policy.deny)?.deny;
        Ok(berth_policy::Limits { privileged, deny })
    }

    /// `[sandbox.network]` (or the old `[sandbox] network`): a Docker network
    /// never shares the host's or another container's namespace, and is
    /// named only where it is used.
    fn check_network(&self, text: &str, file: &str) -> Result<()> {
        let n = &self.sandbox.network;
        let (line, key) = match n.legacy {
            Some(_) => (find_key_line(text, "sandbox", "network"), "sandbox.network"),
            None => (
                find_key_line(text, "sandbox.network", "docker_network"),
                "sandbox.network.docker_network",
            ),
        };
        let why = if n.legacy.as_deref() == Some("") {
            Some("must be a table `[sandbox.network]` with `mode = \"none\"` or `mode = \"open\"`")
        } else if n.docker_network == "host" || n.docker_network.starts_with("container:") {
            Some(
                "must name a Docker network of its own (never \"host\" or \"container:…\", which share namespaces); for the network use `mode = \"open\"`",
            )
        } else if n.mode != NetworkMode::Open && !n.docker_network.is_empty() {
            Some("applies only with `mode = \"open\"`: remove it, or set the mode")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(EngineError::Config {
                file: file.to_string(),
                line: line.unwrap_or(1),
                column: 1,
                message: format!("key `{key}`: {why}"),
            });
        }
        self.check_network_lists(text, file)
    }

    /// Value checks serde cannot express; each names its key's line.
    fn check(&self, text: &str, file: &str) -> Result<()> {
        self.check_network(text, file)?;
        crate::declared_dirs::check(&self.sandbox, text, file)?;
        let [first, last] = self.host.uid_range;
        let problems: [(bool, &str, &str, &str); 17] = [
            (
                self.sandbox.disk.bytes() < MIN_DISK_BYTES,
                "sandbox",
                "disk",
                "must be at least 32MiB (the berth's worktree and repository live on it)",
            ),
            (
                self.sandbox.disk_inodes < 1024,
                "sandbox",
                "disk_inodes",
                "must be at least 1024",
            ),
            (
                first < 65_536 || first > last || last >= 0x8000_0000,
                "host",
                "uid_range",
                "must be [first, last] with 65536 <= first <= last < 2147483648: above every account a distribution makes, below the uids that go negative",
            ),
            (
                self.sandbox.tmp_mb == 0 || self.sandbox.home_mb == 0,
                "sandbox",
                if self.sandbox.tmp_mb == 0 {
                    "tmp_mb"
                } else {
                    "home_mb"
                },
                "must be at least 1",
            ),
            (
                self.sandbox.tmp_inodes < 64 || self.sandbox.home_inodes < 64,
                "sandbox",
                if self.sandbox.tmp_inodes < 64 {
                    "tmp_inodes"
                } else {
                    "home_inodes"
                },
                "must be at least 64",
            ),
            (
                self.sandbox.uid == 0,
                "sandbox",
                "uid",
                "must not be 0: berth commands never run as root",
            ),
            (
                self.sandbox.pids < 8,
                "sandbox",
                "pids",
                "must be at least 8",
            ),
            (
                self.sandbox.memory_mb == 0,
                "sandbox",
                "memory_mb",
                "must be at least 1",
            ),
            (
                !(self.sandbox.cpus > 0.0 && self.sandbox.cpus.is_finite()),
                "sandbox",
                "cpus",
                "must be a positive number",
            ),
            (
                self.sandbox.timeout_secs == 0,
                "sandbox",
                "timeout_secs",
                "must be at least 1",
            ),
            (
                self.agents.max_parallel == 0,
                "agents",
                "max_parallel",
                "must be at least 1",
            ),
            (
                self.agent.max_sessions == 0,
                "agent",
                "max_sessions",
                "must be at least 1",
            ),
            (
                self.agent.turn_timeout_secs == 0,
                "agent",
                "turn_timeout_secs",
                "must be at least 1",
            ),
            (
                self.agents.circuit_breaker == 0,
                "agents",
                "circuit_breaker",
                "must be at least 1",
            ),
            (
                self.git.co_author_parts().is_none(),
                "git",
                "co_author",
                "must look like `Name <email@host>`",
            ),
            (
                self.git.max_object_bytes == 0,
                "git",
                "max_object_bytes",
                "must be at least 1",
            ),
            (
                self.git.max_push_bytes == 0,
                "git",
                "max_push_bytes",
                "must be at least 1",
            ),
        ];
        for (bad, table, key, why) in problems {
            if bad {
                let line = find_key_line(text, table, key).unwrap_or(1);
                return Err(EngineError::Config {
                    file: file.to_string(),
                    line,
                    column: 1,
                    message: format!("key `{table}.{key}`: {why}"),
                });
            }
        }
        if let Some((key, why)) = self.sandbox.build_problem() {
            return Err(EngineError::Config {
                file: file.to_string(),
                line: find_key_line(text, "sandbox.build", key)
                    .or_else(|| find_key_line(text, "sandbox", key))
                    .unwrap_or(1),
                column: 1,
                message: format!("key `sandbox.build.{key}`: {why}"),
            });
        }
        if self.git.max_checkout_bytes == 0 {
            return Err(EngineError::Config {
                file: file.to_string(),
                line: find_key_line(text, "git", "max_checkout_bytes").unwrap_or(1),
                column: 1,
                message: "key `git.max_checkout_bytes`: must be at least 1".to_string(),
            });
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, c) in self.checks.iter().enumerate() {
            let why = if c.name.trim().is_empty() || c.command.trim().is_empty() {
                Some("`name` and `command` must not be empty")
            } else if c.timeout_secs == 0 {
                Some("`timeout_secs` must be at least 1")
            } else if !names.insert(c.name.as_str()) {
                Some("another check has this `name`")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(EngineError::Config {
                    file: file.to_string(),
                    line: find_key_line(text, "checks", "name").unwrap_or(1),
                    column: 1,
                    message: format!("checks[{i}] ({}): {why}", c.name),
                });
            }
        }
        self.agent.env.check(text, file)?;
        if let Some((key, why)) = self.review.problem() {
            return Err(EngineError::Config {
                file: file.to_string(),
                line: find_key_line(text, "review", key).unwrap_or(1),
                column: 1,
                message: format!("key `review.{key}`: {why}"),
            });
        }
        for (i, h) in self.hooks.iter().enumerate() {
            if h.command.trim().is_empty() || h.event.trim().is_empty() {
                return Err(EngineError::Config {
                    file: file.to_string(),
                    line: find_key_line(text, "hooks", "command").unwrap_or(1),
                    column: 1,
                    message: format!("hooks[{i}]: `event` and `command` must not be empty"),
                });
            }
        }
        Ok(())
    }
}

pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, column)
}

/// The dotted key written on `line` (1-based), with its table header.
fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?;
    let (key, _) = here.split_once('=')?;
    let key = key.trim();
    if key.is_empty() {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

/// The commented default written by `berth project add`.
pub fn default_toml(project: &str, co_author: &str) -> String {
    DEFAULT_TOML
        .replace("{project}", project)
        .replace("{co_author}", &co_author.replace('"', "'"))
}

const DEFAULT_TOML: &str = r#"# berth configuration of project `{project}`.
#
# This file lives in berth's state directory, outside every worktree: agents
# cannot write it. Unknown keys and bad values are errors (file:line:key).
#
# The command rules live beside it in permissions.json:
#   {"allow": ["cargo test", ...], "ask": [...], "deny": [...]}
# A plain pattern is a word prefix: "npm test" matches `npm test --watch` but
# not `npm testx`. Claude Code's forms work too: "Bash(npm test:*)" (prefix) and
# "Bash(npm test)" (exact). A settings.json of Claude Code ({"permissions": {...}})
# is read the same way. `berth approve ID --always` appends allow rules to it,
# never for shells, interpreters, wrappers or privileged commands.

[execution]
# How a pipeline task ends: "review" (in_review, waits for a person) or "auto".
mode = "review"

[git]
# No merge into these is ever auto-approved.
protected_branches = ["main", "master"]
# The person the agents work for: the Co-authored-by trailer of their commits.
co_author = "{co_author}"
# The largest object (uncompressed) a git_push may bring into the forge (100 MiB):
# libgit2 reads an object whole, so one small pack of a huge blob of zeros would
# otherwise cost that much memory at every later read. Sizes are read from
# object headers; a larger object is refused with its id.
max_object_bytes = 104857600
# The most bytes of new objects (uncompressed, and of pack read) one git_push
# may bring into the forge (1 GiB).
max_push_bytes = 1073741824
# The most bytes checking a branch out into an agent's worktree may write (2 GiB),
# each file counted at every path it is written to: a small repository can name
# one large blob thousands of times. Measured from object headers before
# anything is written; `berth up` refuses a larger checkout with its size.
max_checkout_bytes = 2147483648

[scope]
# Host directories besides the project that commands may touch without asking
# (runner mode; in a container, everything not backed by a host mount is in scope).
extra_roots = []

[policy]
# Extra deny templates (word prefixes): added to the built-in ones, never removing any.
deny = []
# Extra privileged / external-effect patterns: always ask, whatever autonomy says.
privileged = []

[sandbox]
# Where `berth up` runs a berth when no --mode is given: "auto" (mounted when
# the Docker engine answers, else the runner, said plainly), "runner"
# (processes on this host inside the worktree — no container boundary) or
# "mounted" (a Docker container per agent; an error when Docker does not answer).
mode = "auto"
# mounted: the agent image ("" = the default one built by `berth image build`).
image = ""
# mounted: the uid of berths made before [host] uid_range existed (they keep
# it; `berth doctor` lists those whose uid is a host account). New berths get
# their own uid from [host] uid_range.
uid = 1000
# mounted: the container's memory, CPU and process limits. (The runner sets
# rlimits of its own — no core dumps, open files — and cannot cap memory
# without breaking runtimes that reserve address space.)
memory_mb = 2048
cpus = 2.0
pids = 512
# mounted: mount the image read-only; only /work, the agent repository and the
# tmpfs /tmp and $HOME below are writable.
read_only_root = true
# mounted: commands reach the container through its exec agent (berth-helper
# inside, connecting out to a socket berth publishes): a socket round trip and
# a fork instead of a Docker API exec. false: every command is a Docker exec.
exec_agent = true
# mounted: the tmpfs /tmp and $HOME (/home/agent): size in MiB, and how many
# files and directories each may hold. Both allow executing what is in them.
tmp_mb = 256
tmp_inodes = 65536
home_mb = 256
home_inodes = 65536
# Default deadline of one command, in seconds (`berth exec --timeout` overrides).
timeout_secs = 600
# Bytes kept of each output stream; beyond it the tail is kept and the cut said.
output_cap_bytes = 1048576
# Auto mode on a runner berth lifts the path scope on this host. Where the
# runner's confinement (namespaces, Landlock, seccomp) is not available, auto
# mode is refused unless this is true (then only the policy stands in the way).
allow_unconfined = false
# Host directories shown to commands at their own paths: toolchains read-only
# (e.g. "/opt/rust"), caches read-write (e.g. "/var/cache/cargo-registry").
# Absolute paths. When berth runs as root, the berth's uid must be able to
# reach them: `berth up` names each one it cannot (e.g. under a 0700 /root).
# An entry may be a table carrying the variables its tool needs ("{path}" is
# the entry's path) and its programs' directory, appended to PATH:
#   toolchains = [{ path = "/opt/rustup", env = { RUSTUP_HOME = "{path}" } }]
#   caches = [{ path = "/opt/cargo", env = { CARGO_HOME = "{path}" }, path_bin = "bin" }]
# A variable that changes what runs (RUSTUP_HOME, CARGO_HOME, JAVA_HOME, …)
# may only point into declared directories; PATH and HOME are berth's.
toolchains = []
caches = []
# When berth runs as root, each berth's worktree and agent repository live on
# a disk of their own: a sparse ext4 image in berth's state directory,
# loop-mounted nosuid,nodev at the berth's directory and deleted at
# `berth down`. An agent that fills it gets "No space left on device" in its
# berth; the host's disk and berth's own store are untouched. `disk` is its
# size ("8GiB", "512MiB"), `disk_inodes` how many files and directories it
# holds (at most one per 8 KiB of `disk`); both apply to disks made from then on (a berth kept across
# `down --keep-worktree` keeps its disk). Where berth is not root (or the host
# has no loop devices or mkfs.ext4) `berth up` and `berth doctor` say that
# /work is not bounded; with disk_required = true `berth up` fails instead.
disk = "8GiB"
disk_inodes = 524288
disk_required = false
# The project's devcontainer.json: a path in its repository, read from the
# base branch in the forge (never from a worktree) at `berth project add` and
# `berth image build --project P`. "" reads .devcontainer/devcontainer.json or
# .devcontainer.json when there is one. Its image, build, containerEnv,
# remoteEnv and post commands apply; this file's keys override its values.
devcontainer = ""

[sandbox.network]
# What commands reach: "none" (only loopback: a container on Docker's `none`
# network, a runner exec in a network namespace holding only `lo`) or "open"
# (a container on Docker's default bridge, a runner exec on the host's network).
mode = "none"
# mounted, mode "open": a Docker network by name instead of the default bridge.
# docker_network = "my-net"
# mode "allowlist": no route out but berth's egress proxy, where each connection
# is a `network_connect` decision: `deny` refuses (auto mode too); private,
# loopback and link-local addresses are refused unless named in `allow`;
# `allow` (`*.` covers names under a domain) and `allow_presets` ("npm",
# "pypi", "crates") approve; any other host is the agent's autonomy's call,
# held up to `wait_secs` for a person.
# allow = ["registry.npmjs.org", "*.pypi.org"]
# deny = []
# allow_presets = ["npm", "pypi", "crates"]
# wait_secs = 60

[sandbox.build]
# mounted: the project's image from a Dockerfile instead of `image`. The
# local engine builds it with no network (an `ADD <url>` is refused, every
# FROM must be a local image), from a context berth tars without following
# links, tagged by the hash of the context, the Dockerfile and the args, so it
# is rebuilt only when one of them changes (`berth image build --project P`
# builds it now). Whatever it holds, berth's tools are added at /opt/berth.
# `context` is a directory of the repository ("." the root; "" = no build),
# read from the base branch in the forge — never from a worktree, so an
# agent's change reaches the image only once merged — by `berth image build
# --project P`, which records the image `berth up` runs from then on (after a
# merge that changes the directory, build again). An absolute host path
# outside berth's state still works, read at each build: deprecated.
context = ""
dockerfile = "Dockerfile"
# args = { PYTHON_VERSION = "3.12" }

[agents]
# How many agents may work on this project at once.
max_parallel = 1
# Consecutive failures that pause an agent until `berth agent resume`.
circuit_breaker = 3

[agent]
# A `command` agent's program (`berth agent activate NAME --impl command
# --command '…'`): one turn's deadline.
turn_timeout_secs = 1800
# The hosts the program may reach (its model's API), through berth's egress
# proxy, as patterns like [sandbox.network] allow: ["api.anthropic.com"].
# Empty: the program runs with open network (activate says so).
model_hosts = []
# Sessions of this project's agents that may run a turn at once; a prompt
# for one more waits in its queue.
max_sessions = 4

[agent.env]
# The names of variables passed to the program from berth's environment:
# names only, never values (berth.toml holds no secret), e.g.
# pass = ["ANTHROPIC_API_KEY"].
pass = []

[followups]
# A command run on the host when a pipeline task is done (auto mode) or
# approved (review mode): it reads the task and its steps' output as JSON on
# stdin and prints JSON lines of followup tasks:
#   {"title": "...", "steps": ["cmd", ...], "permission_blocked": false}
# Followups inherit this project's mode; followups of followups generate none.
enabled = false
command = ""
timeout_secs = 60

[host]
# The uids berths run as, one each (gid = uid), [first, last]. The default is
# a block systemd's table of UID ranges (https://systemd.io/UIDS-GIDS/) leaves
# unused by every distribution; `berth up` also skips any uid the passwd or
# group database, /etc/subuid or /etc/subgid gives to someone.
uid_range = [1879048192, 1879113727]

# Commands run on the host on an event, with the event JSON on stdin; a hook
# that fails or times out is logged (hook.failed) and never blocks anything.
# Pipeline events: task_auto_approved, pipeline_completed,
# task_permission_retry, task.in_review, task.done, task.blocked.
# [[hooks]]
# event = "pipeline_completed"
# command = "logger -t berth"
# timeout_secs = 30
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeclaredDir;

    #[test]
    fn the_default_file_parses_to_the_defaults() {
        let text = default_toml("p", "Ada Lovelace <ada@example.com>");
        let c = ProjectConfig::parse(&text, "berth.toml").unwrap();
        let mut want = ProjectConfig::default();
        want.git.co_author = "Ada Lovelace <ada@example.com>".into();
        assert_eq!(c, want);
    }

    #[test]
    fn disk_sizes_read_as_bytes_with_their_units() {
        for (text, want) in [
            ("8GiB", Some(8u64 << 30)),
            ("8G", Some(8 << 30)),
            ("512 MiB", Some(512 << 20)),
            ("64M", Some(64 << 20)),
            ("1TiB", Some(1 << 40)),
            ("2GB", Some(2_000_000_000)),
            ("100kB", Some(100_000)),
            ("4096", Some(4096)),
            ("4096B", Some(4096)),
            ("8 gib", None),
            ("GiB", None),
            ("-1GiB", None),
            ("1.5GiB", None),
            ("99999999999999TiB", None),
            ("", None),
        ] {
            assert_eq!(ByteSize::parse(text).map(ByteSize::bytes), want, "{text:?}");
        }
        for (bytes, shown) in [
            (8u64 << 30, "8GiB"),
            (65 << 20, "65MiB"),
            (3072, "3KiB"),
            (1536, "1536B"),
            (1000, "1000B"),
        ] {
            assert_eq!(ByteSize(bytes).to_string(), shown);
            assert_eq!(ByteSize::parse(shown), Some(ByteSize(bytes)));
        }
    }

    #[test]
    fn the_disk_keys_parse_and_are_checked() {
        let c = ProjectConfig::parse(
            "[sandbox]\ndisk = \"64MiB\"\ndisk_inodes = 4096\ndisk_required = true\n",
            "berth.toml",
        )
        .unwrap();
        assert_eq!(c.sandbox.disk, ByteSize(64 << 20));
        assert_eq!(c.sandbox.disk_inodes, 4096);
        assert!(c.sandbox.disk_required);
        assert_eq!(
            ProjectConfig::parse("[sandbox]\ndisk = 1073741824\n", "berth.toml")
                .unwrap()
                .sandbox
                .disk,
            ByteSize::gib(1)
        );
        for (text, want) in [
            (
                "[sandbox]\ndisk = \"16MiB\"\n",
                "berth.toml:2:1: key `sandbox.disk`: must be at least 32MiB",
            ),
            (
                "[sandbox]\n\ndisk_inodes = 10\n",
                "berth.toml:3:1: key `sandbox.disk_inodes`: must be at least 1024",
            ),
            ("[sandbox]\ndisk = \"8 parsecs\"\n", "is not a size"),
        ] {
            let err = ProjectConfig::parse(text, "berth.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn toolchains_and_caches_are_absolute_paths() {
        let c = ProjectConfig::parse(
            "[sandbox]\ntoolchains = [\"/opt/rust\", \"/usr/local/go\"]\ncaches = [\"/var/cache/cargo\"]\n",
            "berth.toml",
        )
        .unwrap();
        assert_eq!(
            c.sandbox.toolchains,
            [
                DeclaredDir::plain("/opt/rust"),
                DeclaredDir::plain("/usr/local/go")
            ]
        );
        assert_eq!(c.sandbox.caches, [DeclaredDir::plain("/var/cache/cargo")]);
        for (text, key, line) in [
            (
                "[sandbox]\nmode = \"runner\"\ntoolchains = [\"opt/rust\"]\n",
                "toolchains",
                3,
            ),
            ("[sandbox]\ncaches = [\"/var/../root\"]\n", "caches", 2),
            ("[sandbox]\n\ncaches = [\"/work/cache\"]\n", "caches", 3),
        ] {
            match ProjectConfig::parse(text, "berth.toml") {
                Err(EngineError::Config {
                    file,
                    line: l,
                    message,
                    ..
                }) => {
                    assert_eq!(file, "berth.toml");
                    assert_eq!(l, line, "{text:?}");
                    assert!(message.contains(&format!("sandbox.{key}")), "{message}");
                }
                other => panic!("{text:?} parsed: {other:?}"),
            }
        }
    }

    #[test]
    fn the_mode_is_a_choice_auto_by_default() {
        let cases = [
            ("", BerthModeChoice::Auto, None),
            ("[sandbox]\nmode = \"auto\"\n", BerthModeChoice::Auto, None),
            (
                "[sandbox]\nmode = \"runner\"\n",
                BerthModeChoice::Runner,
                Some(BerthMode::Runner),
            ),
            (
                "[sandbox]\nmode = \"mounted\"\n",
                BerthModeChoice::Mounted,
                Some(BerthMode::Mounted),
            ),
        ];
        for (text, choice, fixed) in cases {
            let c = ProjectConfig::parse(text, "berth.toml").unwrap();
            assert_eq!(c.sandbox.mode, choice, "{text:?}");
            assert_eq!(c.sandbox.mode.fixed(), fixed, "{text:?}");
        }
    }

    #[test]
    fn the_network_is_a_table_and_the_old_string_still_parses_with_a_warning() {
        let c = ProjectConfig::parse("", "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.mode, NetworkMode::None);
        assert!(c.warnings.is_empty());

        let c = ProjectConfig::parse("[sandbox.network]\nmode = \"open\"\n", "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.mode, NetworkMode::Open);
        assert_eq!(c.sandbox.network.docker_network, "");
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);

        let text = "[sandbox]\nnetwork = { mode = \"open\", docker_network = \"br0\" }\n";
        let c = ProjectConfig::parse(text, "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.mode, NetworkMode::Open);
        assert_eq!(c.sandbox.network.docker_network, "br0");
        assert!(c.warnings.is_empty());

        let c = ProjectConfig::parse("[sandbox]\nnetwork = \"none\"\n", "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.mode, NetworkMode::None);
        assert_eq!(c.warnings.len(), 1);
        assert!(
            c.warnings[0]
                .starts_with("berth.toml:2: `[sandbox] network = \"none\"` is the old form")
                && c.warnings[0].contains("[sandbox.network]\nmode = \"none\""),
            "{:?}",
            c.warnings
        );

        let c = ProjectConfig::parse("[sandbox]\n\nnetwork = \"br0\"\n", "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.mode, NetworkMode::Open);
        assert_eq!(c.sandbox.network.docker_network, "br0");
        assert!(
            c.warnings[0].starts_with("berth.toml:3:")
                && c.warnings[0].contains("mode = \"open\"\ndocker_network = \"br0\"")
                && c.warnings[0].contains("runner berths"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let cases: &[(&str, &str)] = &[
            (
                "[sandbox]\nuid = 1\nmemroy_mb = 3\n",
                "berth.toml:3:1: key `sandbox.memroy_mb`: unknown field `memroy_mb`",
            ),
            (
                "[sandbox]\n\ncpus = \"two\"\n",
                "berth.toml:3:8: key `sandbox.cpus`: invalid type",
            ),
            ("[sandboxx]\n", "berth.toml:1:2: unknown field `sandboxx`"),
            (
                "[agents]\nmax_parallel = 0\n",
                "berth.toml:2:1: key `agents.max_parallel`: must be at least 1",
            ),
            (
                "[git]\nco_author = \"nobody\"\n",
                "berth.toml:2:1: key `git.co_author`: must look like",
            ),
            (
                "[git]\n\nmax_object_bytes = 0\n",
                "berth.toml:3:1: key `git.max_object_bytes`: must be at least 1",
            ),
            (
                "[sandbox]\nmode = \"vm\"\n",
                "berth.toml:2:8: key `sandbox.mode`: unknown variant `vm`",
            ),
            (
                "[sandbox]\nuid = 0\n",
                "berth.toml:2:1: key `sandbox.uid`: must not be 0",
            ),
            (
                "[sandbox]\nnetwork = \"host\"\n",
                "berth.toml:2:1: key `sandbox.network`: must name a Docker network of its own",
            ),
            (
                "[sandbox]\nnetwork = \"\"\n",
                "berth.toml:2:1: key `sandbox.network`: must be a table",
            ),
            (
                "[sandbox.network]\n\nmode = \"closed\"\n",
                "berth.toml:3:8: key `sandbox.network.mode`: unknown variant `closed`, expected one of `none`, `allowlist`, `open`",
            ),
            (
                "[sandbox.network]\nmode = \"open\"\ndocker_network = \"container:x\"\n",
                "berth.toml:3:1: key `sandbox.network.docker_network`: must name a Docker network of its own",
            ),
            (
                "[sandbox.network]\ndocker_network = \"br\"\n",
                "berth.toml:2:1: key `sandbox.network.docker_network`: applies only with `mode = \"open\"`",
            ),
            (
                "[sandbox.network]\nmode = \"open\"\nallow = [\"x\"]\n",
                "berth.toml:3:1: key `sandbox.network.allow`: applies only with `mode = \"allowlist\"` (the mode is \"open\")",
            ),
            (
                "[sandbox]\nnetwork = 3\n",
                "berth.toml:2:11: key `sandbox.network`: invalid type: integer `3`, expected a table with `mode = \"none\"`",
            ),
            (
                "[sandbox]\npids = 2\n",
                "berth.toml:2:1: key `sandbox.pids`: must be at least 8",
            ),
            ("x = = 1\n", "berth.toml:1:5:"),
            (
                "[host]\nuid_range = [1000, 2000]\n",
                "berth.toml:2:1: key `host.uid_range`: must be [first, last] with 65536",
            ),
            (
                "[host]\nuid_range = [2000000000, 1900000000]\n",
                "berth.toml:2:1: key `host.uid_range`: must be",
            ),
            (
                "[sandbox]\ntmp_inodes = 3\n",
                "berth.toml:2:1: key `sandbox.tmp_inodes`: must be at least 64",
            ),
        ];
        for (text, want) in cases {
            let err = ProjectConfig::parse(text, "berth.toml")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{text:?}: got {err}");
        }
    }
}
