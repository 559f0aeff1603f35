//! `berth hook claude-code`: berth's decision as a Claude Code `PreToolUse`
//! hook, so a developer gets segment-by-segment decisions inside the tool
//! they already use.
//!
//! Claude Code runs the hook before every tool call with a JSON payload on
//! stdin (`session_id`, `transcript_path`, `cwd`, `hook_event_name`,
//! `tool_name`, `tool_input`) and reads a decision from stdout:
//! `{"hookSpecificOutput": {"hookEventName": "PreToolUse",
//! "permissionDecision": "allow"|"ask"|"deny", "permissionDecisionReason": …}}`.
//!
//! The decision is berth's [`decide`] in the HOST frame — Claude Code runs on
//! the developer's machine — with the project root at `$CLAUDE_PROJECT_DIR`
//! (else the payload's `cwd`), the rules of `--project` (its
//! `permissions.json` and `berth.toml` limits, as the engine loads them) plus
//! the project's `.claude/settings.json` and `.claude/settings.local.json`
//! (read as Claude Code reads them: [`claude_settings`]), and the autonomy of
//! `--agent` (none when no agent is named).
//!
//! Installing the hook must never make Claude Code weaker, nor ask more than
//! it would alone. A hook's `allow` skips Claude Code's prompt, so the answer
//! follows the stage that settled berth's decision:
//!
//! - no output when berth only fell back to asking (stage `autonomy` with the
//!   built-in default or the wildcard `require_approval`, or
//!   `partial_allow`): Claude Code's own flow decides;
//! - `allow` only when an allow rule, or an autonomy the agent was given (a
//!   specific `auto_approve`, or auto mode), settled it;
//! - `ask` for `privileged`, `never_auto`, `scope`, `opaque`, `ask_rule`, a
//!   specific `require_approval`, a write or command touching the project's
//!   `.claude/` (where the rules and this hook are configured), or a path
//!   that leaves the project through a symlink (the engine's runner guard);
//! - `deny` for a deny, and for a path that reaches, through a symlink, one a
//!   deny rule names.
//!
//! The payload's `permission_mode` then applies: `acceptEdits` allows a file
//! write inside the project that no rule settles; `plan` leaves everything
//! but a deny to Claude Code; `bypassPermissions` decides in berth's auto mode
//! (the scope lifted; denies, privileged commands, written asks, opaque
//! commands and `.claude/` still answer); `dontAsk` turns `ask` into `deny`.
//! The reason is cut to Claude Code's 10,000-character cap on hook output.
//!
//! - Bash → `terminal`; Read → `file_read`; Edit, Write, MultiEdit,
//!   NotebookEdit → `file_write`; PowerShell, which berth cannot analyse,
//!   asks as an opaque command does. Any other tool: no opinion (no output,
//!   exit 0), and Claude Code applies its own rules.
//! - Fail closed: a payload that is not JSON or lacks what its tool needs, or
//!   rules or state that cannot be read, answer `ask` with the reason (and
//!   say so on stderr), never `allow`; the exit code stays 0 so Claude Code
//!   reads the answer instead of treating the hook as broken.
//!
//! It needs no server and no Docker engine, and opens the store only for
//! `--agent` (the agent's autonomy). It records nothing: the developer's own
//! Claude Code session is not an agent's berth.

mod claude_settings;

use std::io::Read as _;
use std::path::{Path, PathBuf};

use berth_engine::config::ProjectConfig;
use berth_engine::{Engine, StateDir};
use berth_policy::autonomy::WILDCARD;
use berth_policy::{
    Action, Approval, Autonomy, Decision, Frame, Origin, Resolved, RuleMatch, RuleSet, Stage,
    Verdict,
};
use berth_sandbox::host_scope::HostScope;
use serde_json::{Value, json};

/// Larger payloads are not a tool call Claude Code makes (a Write of a huge
/// file aside, which the limit still leaves room for).
const MAX_PAYLOAD: u64 = 64 << 20;

#[derive(Debug, clap::Subcommand)]
pub enum HookCommand {
    /// A Claude Code PreToolUse hook: a payload on stdin, the decision on stdout.
    ClaudeCode(ClaudeCodeArgs),
}

#[derive(Debug, clap::Args)]
pub struct ClaudeCodeArgs {
    /// The berth project whose permissions.json and berth.toml limits apply
    /// (default: the agent's project, else none).
    #[arg(long)]
    project: Option<String>,
    /// The agent whose autonomy applies (default: none; what no rule settles
    /// is left to Claude Code's own flow).
    #[arg(long)]
    agent: Option<String>,
}

/// What the process environment contributes.
#[derive(Debug, Clone, Default)]
pub struct HookEnv {
    /// `--state` / `$BERTH_HOME` / `~/.local/share/berth`.
    pub state: Option<StateDir>,
    /// `$CLAUDE_PROJECT_DIR`.
    pub project_dir: Option<String>,
    /// `$HOME`: `~` in commands and rules.
    pub home: Option<String>,
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAnswer {
    /// Print nothing; exit 0. The note (why) goes to stderr when there is one.
    NoOpinion {
        note: Option<String>,
        warning: Option<String>,
    },
    /// Print the decision; `warning` goes to stderr.
    Decide {
        decision: &'static str,
        reason: String,
        warning: Option<String>,
    },
}

impl HookAnswer {
    /// The JSON Claude Code reads on stdout, when there is one.
    pub fn output(&self) -> Option<Value> {
        match self {
            HookAnswer::NoOpinion { .. } => None,
            HookAnswer::Decide {
                decision, reason, ..
            } => Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision,
                    "permissionDecisionReason": reason,
                }
            })),
        }
    }

    fn ask(reason: String, warning: Option<String>) -> HookAnswer {
        HookAnswer::Decide {
            decision: "ask",
            reason,
            warning,
        }
    }

    /// Fail closed: a person decides, told why berth could not.
    fn cannot_decide(why: String) -> HookAnswer {
        HookAnswer::ask(
            format!("berth could not decide, so a person must: {why}"),
            Some(format!("berth hook: {why}")),
        )
    }
}

pub fn run(state: Option<PathBuf>, cmd: HookCommand) -> anyhow::Result<u8> {
    let HookCommand::ClaudeCode(args) = cmd;
    let env = HookEnv {
        state: StateDir::locate(state.as_deref()),
        project_dir: std::env::var("CLAUDE_PROJECT_DIR")
            .ok()
            .filter(|v| !v.is_empty()),
        home: std::env::var("HOME").ok().filter(|v| !v.is_empty()),
    };
    let mut input = Vec::new();
    let answer = match std::io::stdin()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut input)
    {
        Err(e) => HookAnswer::cannot_decide(format!("cannot read the payload on stdin: {e}")),
        Ok(_) if input.len() as u64 > MAX_PAYLOAD => {
            HookAnswer::cannot_decide(format!("the payload is larger than {MAX_PAYLOAD} bytes"))
        }
        Ok(_) => answer(&input, &env, &args),
    };
    match &answer {
        HookAnswer::NoOpinion { note, warning } => {
            if let Some(n) = note {
                eprintln!("berth hook: {n}");
            }
            if let Some(w) = warning {
                eprintln!("{w}");
            }
        }
        HookAnswer::Decide { warning, .. } => {
            if let Some(w) = warning {
                eprintln!("{w}");
            }
            if let Some(out) = answer.output() {
                println!("{out}");
            }
        }
    }
    Ok(0)
}

/// Claude Code's permission mode, from the payload's `permission_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PermissionMode {
    /// `default` (Manual), and any value this hook does not know (`auto`,
    /// a mode added later): berth's answer by the stage that settled it.
    Default,
    /// `acceptEdits`: file writes inside the project as allowed.
    AcceptEdits,
    /// `plan`: Claude Code's own plan-mode flow decides.
    Plan,
    /// `bypassPermissions`: berth's auto mode.
    BypassPermissions,
    /// `dontAsk`: what would ask is denied.
    DontAsk,
}

impl PermissionMode {
    fn read(value: Option<&str>) -> PermissionMode {
        match value {
            Some("acceptEdits") => PermissionMode::AcceptEdits,
            Some("plan") => PermissionMode::Plan,
            Some("bypassPermissions") => PermissionMode::BypassPermissions,
            Some("dontAsk") => PermissionMode::DontAsk,
            _ => PermissionMode::Default,
        }
    }
}

/// A tool call berth governs.
struct Call {
    action: Action,
    mode: PermissionMode,
    /// A PowerShell call: its command is not bash, so nothing in it is
    /// judged and it answers as an opaque command does.
    powershell: bool,
    /// The directory the call runs in (absolute).
    cwd: String,
    /// The project root (absolute).
    root: String,
}

/// Decides one payload.
pub fn answer(input: &[u8], env: &HookEnv, args: &ClaudeCodeArgs) -> HookAnswer {
    let call = match read_call(input, env) {
        Ok(Some(c)) => c,
        Ok(None) => {
            return HookAnswer::NoOpinion {
                note: None,
                warning: None,
            };
        }
        Err(Malformed::NotPreToolUse(event)) => {
            return HookAnswer::NoOpinion {
                note: Some(format!(
                    "`{event}` is not a PreToolUse payload: no opinion (install the hook under hooks.PreToolUse)"
                )),
                warning: None,
            };
        }
        Err(Malformed::Invalid(why)) => {
            return HookAnswer::cannot_decide(format!("malformed PreToolUse payload: {why}"));
        }
    };
    match decide_call(&call, env, args) {
        Ok(a) => a,
        // Agent SDK permissions: "In dontAsk mode a matching ask rule is
        // denied instead, because that mode never prompts." What berth
        // cannot decide would ask, so under dontAsk it is denied.
        Err(why) if call.mode == PermissionMode::DontAsk => HookAnswer::Decide {
            decision: "deny",
            reason: bounded(format!(
                "berth deny (permission mode dontAsk: berth could not decide, and what would ask is denied): {why}"
            )),
            warning: Some(format!("berth hook: {why}")),
        },
        Err(why) => HookAnswer::cannot_decide(why),
    }
}

enum Malformed {
    NotPreToolUse(String),
    Invalid(String),
}

/// The payload as a governed call, `None` for a tool berth does not govern.
fn read_call(input: &[u8], env: &HookEnv) -> Result<Option<Call>, Malformed> {
    let v: Value =
        serde_json::from_slice(input).map_err(|e| Malformed::Invalid(format!("not JSON ({e})")))?;
    let Value::Object(p) = &v else {
        return Err(Malformed::Invalid("expected a JSON object".into()));
    };
    let text = |k: &str| p.get(k).and_then(Value::as_str);
    match text("hook_event_name") {
        Some("PreToolUse") => {}
        Some(other) => return Err(Malformed::NotPreToolUse(other.to_string())),
        None => {
            return Err(Malformed::Invalid(
                "no `hook_event_name` (expected \"PreToolUse\")".into(),
            ));
        }
    }
    let tool =
        text("tool_name").ok_or_else(|| Malformed::Invalid("no `tool_name` string".into()))?;
    let input = p.get("tool_input");
    let field = |name: &str| -> Result<String, Malformed> {
        input
            .and_then(|i| i.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Malformed::Invalid(format!("{tool}: no `tool_input.{name}` string")))
    };
    let action = match tool {
        "Bash" => Action::Terminal {
            command: field("command")?,
        },
        "Read" => Action::FileRead {
            path: field("file_path")?,
        },
        "Edit" | "Write" | "MultiEdit" => Action::FileWrite {
            path: field("file_path")?,
        },
        "NotebookEdit" => Action::FileWrite {
            path: field("notebook_path")?,
        },
        // A PowerShell command berth cannot analyse: decided as opaque.
        "PowerShell" => Action::Terminal {
            command: field("command")?,
        },
        _ => return Ok(None),
    };
    let powershell = tool == "PowerShell";
    let mode = PermissionMode::read(text("permission_mode"));
    let cwd = text("cwd").filter(|c| c.starts_with('/'));
    let root = env
        .project_dir
        .as_deref()
        .filter(|d| d.starts_with('/'))
        .or(cwd)
        .ok_or_else(|| {
            Malformed::Invalid(
                "no absolute `cwd` and no $CLAUDE_PROJECT_DIR: the project directory is unknown"
                    .into(),
            )
        })?;
    let root = berth_policy::scope::normalize("/", root);
    Ok(Some(Call {
        action,
        mode,
        powershell,
        cwd: cwd.map_or_else(|| root.clone(), |c| berth_policy::scope::normalize("/", c)),
        root,
    }))
}

/// What a decision of this hook depends on, besides the call.
struct Inputs {
    /// The project's `berth.toml` (its protected branches and compiled
    /// `[policy]` limits), or the defaults when the hook has no project.
    config: ProjectConfig,
    rules: RuleSet,
    autonomy: Autonomy,
    extra_roots: Vec<String>,
    warnings: Vec<String>,
}

fn decide_call(call: &Call, env: &HookEnv, args: &ClaudeCodeArgs) -> Result<HookAnswer, String> {
    let mut inputs = load_inputs(&call.root, env, args)?;
    if call.mode == PermissionMode::BypassPermissions {
        // Claude Code skips its prompts: berth's auto mode (the agent's
        // specific modes stay, the wildcard becomes auto_approve).
        inputs.autonomy.set(WILDCARD, Approval::AutoApprove);
    }
    let frame = Frame::Host {
        project_root: call.root.clone(),
        extra_roots: inputs.extra_roots.clone(),
        home: env.home.clone().unwrap_or_else(|| "/".to_string()),
    };
    let ctx = inputs
        .config
        .policy_context(&inputs.rules, &frame, &call.cwd, &inputs.autonomy);
    let warning = (!inputs.warnings.is_empty()).then(|| {
        inputs
            .warnings
            .iter()
            .map(|w| format!("berth hook: warning: {w}"))
            .collect::<Vec<_>>()
            .join("\n")
    });
    let resolved = inputs.autonomy.resolve(call.action.kind());
    let d = berth_policy::decide(&call.action, &ctx);
    let (mut answer, mut reason) = if call.powershell {
        (
            Answer::Ask,
            "berth ask (stage opaque): a PowerShell command, which berth cannot analyse"
                .to_string(),
        )
    } else {
        (settle(&d, resolved), explain(&d))
    };
    // A path that reaches, through a symlink, one a deny rule names.
    if answer != Answer::Deny
        && !call.powershell
        && let Some(held) = symlink_deny(call, &d, &ctx)
    {
        answer = Answer::Deny;
        reason = held;
    }
    if call.mode == PermissionMode::AcceptEdits
        && let Action::FileWrite { path } = &call.action
        && answer == Answer::NoOpinion
        && d.stage == Stage::Autonomy
    {
        answer = Answer::Allow;
        reason = format!(
            "berth allow (permission mode acceptEdits): a write of {path}, inside the project, that no rule settles"
        );
    }
    if matches!(answer, Answer::Allow | Answer::NoOpinion) && !call.powershell {
        let held = settings_hold(call, &d).or_else(|| {
            // berth's auto mode lifts the scope: a link out of it is in scope.
            (call.mode != PermissionMode::BypassPermissions)
                .then(|| symlink_hold(call, &inputs.extra_roots, &d))
                .flatten()
        });
        if let Some(held) = held {
            answer = Answer::Ask;
            reason = format!("berth ask (held after the decision): {held}; {reason}");
        }
    }
    match call.mode {
        PermissionMode::Plan if answer != Answer::Deny => answer = Answer::NoOpinion,
        PermissionMode::DontAsk if answer == Answer::Ask => {
            answer = Answer::Deny;
            reason =
                format!("berth deny (permission mode dontAsk: what would ask is denied); {reason}");
        }
        _ => {}
    }
    let reason = bounded(reason);
    Ok(match answer {
        Answer::NoOpinion => HookAnswer::NoOpinion {
            note: None,
            warning,
        },
        Answer::Allow => HookAnswer::Decide {
            decision: "allow",
            reason,
            warning,
        },
        Answer::Ask => HookAnswer::ask(reason, warning),
        Answer::Deny => HookAnswer::Decide {
            decision: "deny",
            reason,
            warning,
        },
    })
}

/// The hook's answer as it is settled: by the stage, then the symlink deny,
/// the holds and the permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// No output: Claude Code's own flow decides.
    NoOpinion,
    Allow,
    Ask,
    Deny,
}

/// The answer by the stage that settled berth's decision: `allow` only where
/// a rule, or an autonomy the agent was given, approved; no opinion where
/// berth only fell back to asking (the built-in default, the switch off, or
/// a command partly allowed), so Claude Code asks no more than it would alone;
/// `ask` where berth's policy itself holds the action; `deny` for a deny.
fn settle(d: &Decision, resolved: Resolved) -> Answer {
    match (d.verdict, d.stage) {
        (Verdict::Deny, _) => Answer::Deny,
        (Verdict::RequireApproval, Stage::PartialAllow) => Answer::NoOpinion,
        (Verdict::RequireApproval, Stage::Autonomy) => {
            if resolved.origin == Origin::Specific {
                Answer::Ask
            } else {
                Answer::NoOpinion
            }
        }
        (Verdict::RequireApproval, _) => Answer::Ask,
        (Verdict::AutoApprove, Stage::Autonomy) => {
            if resolved.origin == Origin::Specific || resolved.is_auto_mode() {
                Answer::Allow
            } else {
                Answer::NoOpinion
            }
        }
        (Verdict::AutoApprove, _) => Answer::Allow,
    }
}

/// Claude Code's cap on a hook's output strings.
const MAX_REASON_CHARS: usize = 10_000;

/// The reason within [`MAX_REASON_CHARS`], cut on a character boundary with a
/// marker saying how much was left out.
fn bounded(reason: String) -> String {
    let total = reason.chars().count();
    if total <= MAX_REASON_CHARS {
        return reason;
    }
    // The marker is at most 64 characters; the head fills the rest.
    let keep = MAX_REASON_CHARS - 64;
    let cut = reason
        .char_indices()
        .nth(keep)
        .map_or(reason.len(), |(i, _)| i);
    format!(
        "{} … [{} characters truncated]",
        &reason[..cut],
        total - keep
    )
}

fn load_inputs(root: &str, env: &HookEnv, args: &ClaudeCodeArgs) -> Result<Inputs, String> {
    let mut rules = RuleSet::default();
    let mut config = ProjectConfig::default();
    let mut extra_roots = Vec::new();
    // No agent: no autonomy at all, so what no rule settles falls to the
    // built-in default and Claude Code's own flow decides it.
    let mut autonomy = Autonomy::new();

    // Names become paths in the state directory: berth's one name rule,
    // parsed first.
    let given_project = (args.project.as_deref())
        .map(berth_engine::ProjectName::new)
        .transpose()
        .map_err(|e| e.to_string())?;
    let given_agent = (args.agent.as_deref())
        .map(berth_engine::AgentName::new)
        .transpose()
        .map_err(|e| e.to_string())?;
    let mut project = given_project.map(String::from);
    if let Some(agent) = &given_agent {
        let state = env.state.clone().ok_or_else(no_state)?;
        let (agent_project, a) = agent_autonomy(state, agent)?;
        if let Some(p) = &project
            && *p != agent_project
        {
            return Err(format!(
                "agent `{agent}` belongs to project `{agent_project}`, not `{p}`"
            ));
        }
        project = Some(agent_project);
        autonomy = a;
    }
    if let Some(p) = &project {
        let state = env.state.clone().ok_or_else(no_state)?;
        let config_path = state.project_config(p);
        if !config_path.is_file() {
            return Err(format!(
                "unknown project `{p}`: no {} (list projects with `berth project ls`)",
                config_path.display()
            ));
        }
        let (project_config, project_rules) =
            berth_engine::projects::project_files(&state, p).map_err(|e| e.to_string())?;
        config = project_config;
        extra_roots.clone_from(&config.scope.extra_roots);
        rules.extend(project_rules);
    }
    let claude = Path::new(root).join(".claude");
    let mut settings_warnings = Vec::new();
    for name in ["settings.json", "settings.local.json"] {
        let path = claude.join(name);
        if !path.is_file() {
            continue;
        }
        let (set, skipped) = claude_settings::load(&path)?;
        rules.extend(set);
        settings_warnings.extend(skipped);
        extra_roots.extend(additional_directories(&path, root, env.home.as_deref())?);
    }
    // Entries berth skips on purpose (other tools' rules, Claude Code's own
    // keys) are not worth a line on every tool call; the rest is.
    let warnings = std::mem::take(&mut rules.warnings)
        .into_iter()
        .filter(|w| !w.contains("which berth does not run") && !w.contains("is not used by berth"))
        .chain(settings_warnings)
        .collect();
    Ok(Inputs {
        config,
        rules,
        autonomy,
        extra_roots,
        warnings,
    })
}

fn no_state() -> String {
    "no berth state directory: pass --state DIR or set BERTH_HOME in the hook's command".into()
}

/// The agent's project and autonomy from the store (the one async step).
fn agent_autonomy(state: StateDir, agent: &str) -> Result<(String, Autonomy), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    rt.block_on(async {
        let engine = Engine::open(state.clone())
            .await
            .map_err(|e| e.to_string())?;
        // Before every tool call: with the store's keeper, the next one
        // finds the WAL's index whole.
        crate::cli::use_keeper(&state, engine.store());
        let result = async {
            let a = engine.agent(agent).await?;
            let autonomy = engine.autonomy(agent).await?;
            Ok::<_, berth_engine::EngineError>((a.project, autonomy))
        }
        .await
        .map_err(|e| e.to_string());
        engine.close().await;
        result
    })
}

/// `permissions.additionalDirectories` of a Claude Code settings file: more
/// directories Claude Code may work in, so in scope for the host frame too
/// (relative ones against the project root, `~/` against the home).
fn additional_directories(
    path: &Path,
    root: &str,
    home: Option<&str>,
) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let Some(dirs) = v.pointer("/permissions/additionalDirectories") else {
        return Ok(Vec::new());
    };
    let Some(list) = dirs.as_array() else {
        return Err(format!(
            "{}: `permissions.additionalDirectories` must be a list of paths",
            path.display()
        ));
    };
    list.iter()
        .map(|d| {
            let d = d.as_str().ok_or_else(|| {
                format!(
                    "{}: `permissions.additionalDirectories` entries must be strings",
                    path.display()
                )
            })?;
            Ok(match (d.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => berth_policy::scope::normalize(h, rest),
                _ => berth_policy::scope::normalize(root, d),
            })
        })
        .collect()
}

/// Why an allowed write or command must ask after all: it touches the
/// project's `.claude/` directory, whose settings hold the rules berth reads
/// and the hook itself — the tool they govern must not rewrite them unseen.
fn settings_hold(call: &Call, d: &Decision) -> Option<String> {
    if matches!(call.action, Action::FileRead { .. }) {
        return None;
    }
    let claude = format!("{}/.claude", call.root.trim_end_matches('/'));
    d.segments
        .iter()
        .flat_map(|s| s.paths.iter())
        .filter_map(|p| p.resolved.as_deref())
        .find(|p| berth_policy::scope::under(p, &claude))
        .map(|p| {
            format!(
                "{p} is in {claude}, whose settings hold the rules berth reads and this hook: a person decides"
            )
        })
}

/// Why the action is denied after all: a path it touches resolves on this
/// host, through a symlink, to one a deny rule names. The policy judges
/// paths as written; Claude Code checks a symlink and its target, and "a
/// symlink that points to a denied file is itself denied".
fn symlink_deny(call: &Call, d: &Decision, ctx: &berth_policy::Context<'_>) -> Option<String> {
    let write = matches!(call.action, Action::FileWrite { .. });
    // A project that itself lives under a symlink (`/tmp` → `/private/tmp`)
    // keeps its own spelling, so its rules still match what is inside it.
    let root = call.root.as_str();
    let canonical_root = host_target(root).filter(|r| r != root);
    for path in berth_sandbox::host_scope::judged_paths(d, &call.cwd) {
        let Some(mut target) = host_target(&path) else {
            continue;
        };
        if let Some(rest) = canonical_root
            .as_deref()
            .and_then(|c| target.strip_prefix(c))
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        {
            target = format!("{root}{rest}");
        }
        if target == path {
            continue;
        }
        let reads = std::iter::once(Action::FileRead {
            path: target.clone(),
        });
        let writes = write.then(|| Action::FileWrite {
            path: target.clone(),
        });
        for probe in reads.chain(writes) {
            let t = berth_policy::decide(&probe, ctx);
            if t.verdict == Verdict::Deny
                && matches!(t.stage, Stage::DenyRule | Stage::DenyTemplate)
            {
                return Some(format!(
                    "berth deny (through a symlink): {path} resolves on the host to {target}; {}",
                    explain(&t)
                ));
            }
        }
    }
    None
}

/// Where `path` leads on this host: its longest existing prefix with every
/// symlink resolved, the rest appended as written (`None` when the path is
/// not UTF-8 once resolved).
fn host_target(path: &str) -> Option<String> {
    let mut existing = Path::new(path);
    let mut rest = Vec::new();
    loop {
        if let Ok(mut resolved) = std::fs::canonicalize(existing) {
            for part in rest.iter().rev() {
                resolved.push(part);
            }
            return resolved.to_str().map(str::to_string);
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// Why an allowed action must ask after all: a judged path inside the scope
/// that leaves it through a symlink on this host (the engine's runner guard).
fn symlink_hold(call: &Call, extra_roots: &[String], d: &Decision) -> Option<String> {
    let roots = std::iter::once(call.root.as_str())
        .chain(extra_roots.iter().map(String::as_str))
        .filter(|r| Path::new(r).is_dir());
    let scope = match HostScope::new(roots) {
        Ok(s) => s,
        Err(e) => return Some(e.to_string()),
    };
    let paths = berth_sandbox::host_scope::judged_paths(d, &call.cwd);
    let findings = scope.check(&berth_policy::PathMap::new(), &paths);
    (!findings.is_empty()).then(|| {
        findings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// The reason Claude Code shows: berth's verdict, the stage that settled it,
/// the segment that decided, and why.
fn explain(d: &Decision) -> String {
    let word = match d.verdict {
        Verdict::AutoApprove => "allow",
        Verdict::RequireApproval => "ask",
        Verdict::Deny => "deny",
    };
    let shown = |i: usize| -> Option<String> {
        d.segments.get(i).map(|s| {
            format!(
                "segment {} of {} `{}`",
                i + 1,
                d.segments.len(),
                s.argv.join(" ")
            )
        })
    };
    let deciding = d
        .findings
        .iter()
        .filter(|f| f.stage == d.stage && f.verdict == d.verdict)
        .find_map(|f| f.segment)
        .and_then(shown);
    let segments = match deciding {
        Some(s) => s,
        None if d.verdict == Verdict::AutoApprove && d.segments.len() > 1 => d
            .segments
            .iter()
            .map(|s| {
                let by = match &s.matched {
                    RuleMatch::Allow { rule } => format!(" by {rule}"),
                    _ => String::new(),
                };
                format!("`{}`{by}", s.argv.join(" "))
            })
            .collect::<Vec<_>>()
            .join(", "),
        None if d.segments.len() == 1 => shown(0).unwrap_or_default(),
        None => "the whole action".to_string(),
    };
    format!(
        "berth {word} (stage {}; {segments}): {}",
        d.stage.as_str(),
        d.reason
    )
}
