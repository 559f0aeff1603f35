//! `decide`: the stages of POLICY.md, in order.
//!
//! 1. deny (rules, built-in templates, autonomy `deny`) — deny always wins;
//! 2. the external-effect / privileged limit (terminal);
//! 3. never-auto action types;
//! 4. path scope (terminal and file actions) — lifted in auto mode;
//! 5. the rules file: opaque segments, `ask`, all `allow`, or a synthesized
//!    partial-allow `require_approval` (a file without opinion: lifted in auto
//!    mode);
//! 6. autonomy, when the file has no opinion.
//!
//! Stages 2–4 only raise. The verdict is the most restrictive finding that
//! holds; its stage is the first in that order.

use std::hash::{Hash, Hasher};

use crate::action::Action;
use crate::arg::{self, Arg};
use crate::autonomy::{Approval, Autonomy};
use crate::decision::{
    Brief, Decision, Finding, PathReport, RuleList, RuleMatch, RuleRef, SegmentReport, Stage,
    Verdict,
};
use crate::frame::Frame;
use crate::network::{self, Host};
use crate::pattern::{Match, Pattern, Side};
use crate::program::git_normalized;
use crate::rules::{PathRule, PathTool, RuleSet};
use crate::scope::{self, normalize};
use crate::wrapper;
use crate::{pattern, privileged};

mod cwd_names;
mod repeats;
mod rule_index;
mod rules_tally;
mod shown;
mod terminal;
mod written_then_run;

/// Project-level additions to the built-in limits: more may be added, none removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// Extra privileged / external-effect patterns.
    pub privileged: Vec<Pattern>,
    /// Extra deny templates.
    pub deny: Vec<Pattern>,
}

impl Limits {
    /// Builds limits from plain patterns (berth.toml).
    pub fn from_patterns(privileged: &[String], deny: &[String]) -> Result<Limits, String> {
        let compile = |v: &[String]| {
            v.iter()
                .map(|p| Pattern::plain(p).map_err(|e| format!("`{p}`: {e}")))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Limits {
            privileged: compile(privileged)?,
            deny: compile(deny)?,
        })
    }
}

/// Everything `decide` looks at besides the action.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub frame: &'a Frame,
    /// The working directory, in the frame.
    pub cwd: &'a str,
    pub autonomy: &'a Autonomy,
    pub rules: &'a RuleSet,
    pub protected_branches: &'a [String],
    pub limits: &'a Limits,
}

/// The most simple commands one terminal action may have and still be
/// judged (and reported) one by one. Past it the command is opaque: never
/// auto-approved, deny rules still apply to what is visible, and the
/// decision holds no per-segment detail (100,000 segments made a 30 MB
/// decision, stored twice, listed by the API and drawn by the page).
pub const MAX_SEGMENTS: usize = 512;

/// System directories: a program named by a path there matches an allow
/// rule written with its basename.
const SYSTEM_DIRS: &[&str] = &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"];

/// Decides one action. Total: every input gets a decision.
pub fn decide(action: &Action, ctx: &Context<'_>) -> Decision {
    let (d, rules, resolved) = judge(action, ctx, true);
    d.finish(rules, resolved)
}

/// Decides one action for a caller that reads only the verdict, the stage
/// and the reason: the same stages and findings as [`decide`], without the
/// per-segment report.
pub fn decide_brief(action: &Action, ctx: &Context<'_>) -> Brief {
    let (d, rules, resolved) = judge(action, ctx, false);
    d.finish_brief(rules, &resolved)
}

/// Runs the stages over one action; `reports` says whether each segment's
/// report is kept.
fn judge<'a>(
    action: &Action,
    ctx: &'a Context<'a>,
    reports: bool,
) -> (Decider<'a>, RulesOutcome, crate::autonomy::Resolved) {
    let resolved = ctx.autonomy.resolve(action.kind());
    let mut d = Decider {
        ctx,
        reports,
        auto: resolved.is_auto_mode(),
        findings: Vec::new(),
        lifted: Vec::new(),
        findings_seen: FindingSet::default(),
        lifted_seen: FindingSet::default(),
        segments: Vec::new(),
        omitted: None,
        dotglob: false,
        cwd_names: cwd_names::CwdNames::default(),
    };
    if resolved.mode == Approval::Deny {
        d.raise(
            Stage::AutonomyDeny,
            Verdict::Deny,
            format!(
                "the agent's autonomy for `{}` is deny ({})",
                action.kind(),
                resolved.origin.as_str()
            ),
            None,
        );
    }
    let rules = match action {
        Action::Terminal { command } => d.terminal(command),
        Action::FileRead { path } => d.file(path, PathTool::Read),
        Action::FileWrite { path } => d.file(path, PathTool::Write),
        Action::GitCommit => d.structured(&["git", "commit"]),
        Action::GitPush { branch } => {
            if let Some(why) = unreadable_branch(branch) {
                d.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!("the push's branch `{branch}` {why}: it cannot be compared with the protected branches"),
                    None,
                );
            } else if d.is_protected(branch) {
                d.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!("a push of the protected branch `{branch}` is never auto-approved"),
                    None,
                );
            }
            d.structured(&["git", "push", "origin", branch])
        }
        Action::PrOpen => d.structured(&["gh", "pr", "create"]),
        // Words on the PR, and marking a thread done: nothing in the worktree
        // or the forge's branches changes, so autonomy governs them as it
        // does `pr_open` (activation seeds `auto_approve`); a rule on the
        // equivalent `gh` command holds for them.
        Action::PrComment => d.structured(&["gh", "pr", "comment"]),
        Action::PrResolveThread => d.structured(&["gh", "pr", "resolve-thread"]),
        Action::GitMerge { target } => {
            if let Some(why) = unreadable_branch(target) {
                d.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!("the merge's target `{target}` {why}: it cannot be compared with the protected branches"),
                    None,
                );
            } else if d.is_protected(target) {
                d.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!("a merge into the protected branch `{target}` is never auto-approved"),
                    None,
                );
            }
            d.structured(&["git", "merge", target])
        }
        Action::InstructionPatch
        | Action::Parallelize
        | Action::RaiseMaxParallel
        | Action::ContainerRemove => {
            d.raise(
                Stage::NeverAuto,
                Verdict::RequireApproval,
                format!("`{}` is never auto-approved", action.kind()),
                None,
            );
            RulesOutcome::NoOpinion
        }
        Action::NetworkConnect { host, port } => d.network(host, *port),
        Action::Other { kind } => {
            d.raise(
                Stage::NeverAuto,
                Verdict::RequireApproval,
                format!("`{kind}` is not an action type berth knows: never auto-approved"),
                None,
            );
            RulesOutcome::NoOpinion
        }
    };
    (d, rules, resolved)
}

/// Finds a finding already in a list in constant time: a linear
/// `contains` made a decision quadratic in the number of segments
/// (`eval a \; a \; …` with 8,000 commands took seconds).
#[derive(Default)]
struct FindingSet {
    /// Indices into the list, by the finding's hash.
    by_hash: rustc_hash::FxHashMap<u64, Vec<usize>>,
}

impl FindingSet {
    /// Appends `f` to `list` unless an equal finding is there.
    fn push(&mut self, list: &mut Vec<Finding>, f: Finding) {
        let mut h = rustc_hash::FxHasher::default();
        f.hash(&mut h);
        let slot = self.by_hash.entry(h.finish()).or_default();
        if slot.iter().any(|&i| list.get(i) == Some(&f)) {
            return;
        }
        slot.push(list.len());
        list.push(f);
    }
}

/// What stage 5 concluded.
enum RulesOutcome {
    NoOpinion,
    /// No opinion, and why (the segments no rule matched).
    Unmatched(String),
    Allow(String),
}

struct Decider<'a> {
    ctx: &'a Context<'a>,
    /// Whether each segment's report is kept (`decide`), or only the
    /// findings (`decide_brief`).
    reports: bool,
    auto: bool,
    findings: Vec<Finding>,
    lifted: Vec<Finding>,
    findings_seen: FindingSet,
    lifted_seen: FindingSet,
    segments: Vec<SegmentReport>,
    omitted: Option<String>,
    /// The command may turn on `dotglob`: globs match hidden names.
    dotglob: bool,
    /// What the cwd of the command's segments names, asked once.
    cwd_names: cwd_names::CwdNames,
}

impl Decider<'_> {
    fn raise(&mut self, stage: Stage, verdict: Verdict, reason: String, segment: Option<usize>) {
        let f = Finding {
            stage,
            verdict,
            reason,
            segment,
        };
        self.findings_seen.push(&mut self.findings, f);
    }

    /// Whether a limit auto mode lifts is still looked at: raised in manual
    /// mode, recorded as lifted by [`decide`]. The brief decision in auto
    /// mode reads no lifted finding, so it neither judges nor words them.
    fn liftable_read(&self) -> bool {
        self.reports || !self.auto
    }

    /// A limit auto mode lifts: recorded as lifted in auto mode, raised otherwise.
    fn liftable(&mut self, stage: Stage, reason: String, segment: Option<usize>) {
        let f = Finding {
            stage,
            verdict: Verdict::RequireApproval,
            reason,
            segment,
        };
        if self.auto {
            if self.reports {
                self.lifted_seen.push(&mut self.lifted, f);
            }
        } else {
            self.findings_seen.push(&mut self.findings, f);
        }
    }

    /// Compared without case: a case-insensitive file system (a forge or
    /// runner on macOS) stores `MAIN` and `main` in one loose ref file.
    fn is_protected(&self, branch: &str) -> bool {
        let b = branch_meaning(branch).to_ascii_lowercase();
        self.ctx.protected_branches.iter().any(|p| {
            let p = branch_meaning(p).to_ascii_lowercase();
            p == b || (p.contains('*') && pattern::glob_match(p.as_bytes(), b.as_bytes()))
        })
    }

    fn finish(mut self, rules: RulesOutcome, resolved: crate::autonomy::Resolved) -> Decision {
        let (verdict, stage, reason) = self.outcome(rules, &resolved);
        Decision {
            verdict,
            stage,
            reason,
            autonomy: resolved,
            segments: std::mem::take(&mut self.segments),
            findings: self.findings,
            lifted: self.lifted,
            omitted: self.omitted,
        }
    }

    fn finish_brief(self, rules: RulesOutcome, resolved: &crate::autonomy::Resolved) -> Brief {
        let (verdict, stage, reason) = self.outcome(rules, resolved);
        Brief {
            verdict,
            stage,
            reason,
        }
    }

    /// The verdict: the most restrictive finding that holds, or what the
    /// rules file or autonomy concluded; its stage is the first in order.
    fn outcome(
        &self,
        rules: RulesOutcome,
        resolved: &crate::autonomy::Resolved,
    ) -> (Verdict, Stage, String) {
        let mut verdict = match &rules {
            RulesOutcome::Allow(_) => Verdict::AutoApprove,
            RulesOutcome::NoOpinion | RulesOutcome::Unmatched(_) => Verdict::from(resolved.mode),
        };
        let base_verdict = verdict;
        let base_stage = match &rules {
            RulesOutcome::Allow(_) => Stage::AllowRule,
            _ => Stage::Autonomy,
        };
        for f in &self.findings {
            verdict = verdict.max(f.verdict);
        }
        let found = self
            .findings
            .iter()
            .filter(|f| f.verdict == verdict)
            .min_by_key(|f| f.stage)
            .filter(|f| f.stage <= base_stage || base_verdict != verdict);
        if let Some(f) = found {
            return (verdict, f.stage, f.reason.clone());
        }
        let reason = match rules {
            RulesOutcome::Allow(reason) => reason,
            RulesOutcome::NoOpinion | RulesOutcome::Unmatched(_) => {
                let mut reason = match resolved.origin {
                    crate::Origin::Default => {
                        "no autonomy is set for this action type: approval is required by default"
                            .to_string()
                    }
                    o => format!(
                        "the agent's autonomy for this action is {} ({})",
                        resolved.mode.as_str(),
                        o.as_str()
                    ),
                };
                if let RulesOutcome::Unmatched(why) = rules {
                    reason = format!("{why}; {reason}");
                }
                reason
            }
        };
        (verdict, base_stage, reason)
    }

    /// A command past `MAX_SEGMENTS`: its findings so far give way to one
    /// opaque finding (and the strongest deny, which still wins); no segment
    /// is reported. Judged in full first, so a deny anywhere in it counts.
    fn beyond_bound(&mut self, segments: usize) -> RulesOutcome {
        let deny = self
            .findings
            .iter()
            .filter(|f| f.verdict == Verdict::Deny)
            .min_by_key(|f| f.stage)
            .cloned();
        self.findings.clear();
        self.findings_seen = FindingSet::default();
        self.lifted.clear();
        self.lifted_seen = FindingSet::default();
        self.segments.clear();
        if let Some(f) = deny {
            self.raise(f.stage, f.verdict, f.reason, None);
        }
        self.raise(
            Stage::Opaque,
            Verdict::RequireApproval,
            format!(
                "the command has {segments} simple commands, more than the {MAX_SEGMENTS} berth judges one by one: \
                 it is not analysed and never auto-approved (split it into smaller commands)"
            ),
            None,
        );
        self.omitted = Some(format!(
            "the {segments} segments of this command (more than {MAX_SEGMENTS}) are not reported one by one"
        ));
        RulesOutcome::NoOpinion
    }

    /// The cwd as an absolute frame path.
    fn cwd_abs(&self) -> String {
        normalize(self.ctx.frame.project_root(), self.ctx.cwd)
    }

    fn path_rule_matches(&self, rule: &PathRule, abs: &str) -> bool {
        path_glob(&self.rule_pattern(rule), abs)
    }

    /// Whether a path that holds globs (`/work/.e*`) may name a path the
    /// rule covers.
    fn path_rule_may_match(&self, rule: &PathRule, abs_glob: &str, hidden_rule: bool) -> bool {
        glob_path_may_match(&self.rule_pattern(rule), abs_glob, hidden_rule)
    }

    /// A rule's pattern as an absolute glob. A relative pattern with a `/`
    /// (`secrets/**`) in a deny or ask rule matches at any depth (point
    /// 14): a restriction must not depend on the directory a command runs in.
    fn rule_pattern(&self, rule: &PathRule) -> String {
        let g = rule.glob.as_str();
        let restricts = rule.list != RuleList::Allow;
        let root = normalize("/", self.ctx.frame.project_root());
        if let Some(rest) = g.strip_prefix("//") {
            format!("/{rest}")
        } else if let Some(rest) = g.strip_prefix("~/") {
            format!("{}/{rest}", self.ctx.frame.home().trim_end_matches('/'))
        } else if g == "~" {
            self.ctx.frame.home().to_string()
        } else if let Some(rest) = g.strip_prefix('/') {
            format!("{}/{rest}", root.trim_end_matches('/'))
        } else if let Some(rest) = g.strip_prefix("./") {
            format!("{}/{rest}", self.cwd_abs().trim_end_matches('/'))
        } else if g.contains('/') && !restricts {
            format!("{}/{g}", self.cwd_abs().trim_end_matches('/'))
        } else {
            // A bare name matches at any depth (gitignore).
            format!("**/{g}")
        }
    }

    // ---- file actions -----------------------------------------------------

    /// A file action's path in the frame, `~` expanded as in a command:
    /// `~` and `~/x` are the frame's home; `~user` is another user's home,
    /// whose place is not known (`None`: outside).
    fn file_path(&self, path: &str) -> Option<String> {
        match path.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => Some(normalize(
                self.ctx.frame.home(),
                rest.trim_start_matches('/'),
            )),
            Some(_) => None,
            None => Some(normalize(&self.cwd_abs(), path)),
        }
    }

    fn file(&mut self, path: &str, tool: PathTool) -> RulesOutcome {
        let resolved = self.file_path(path);
        let location = match &resolved {
            Some(abs) => scope::locate(self.ctx.frame, abs),
            None => crate::decision::Location::Outside,
        };
        let abs = resolved.clone().unwrap_or_else(|| path.to_string());
        if !location.in_scope() {
            self.liftable(
                Stage::Scope,
                format!("{abs} is outside the project scope"),
                None,
            );
        }
        // Writing a block device is a deny template in every front end
        // (POLICY.md, "Built-in deny templates"; point 12).
        if tool == PathTool::Write && crate::template::is_block_device(&abs) {
            self.raise(
                Stage::DenyTemplate,
                Verdict::Deny,
                format!("writing {abs} meets the built-in deny template: writing a block device"),
                None,
            );
        }
        if tool == PathTool::Write
            && let Some((name, why)) = crate::protected::why(&abs, false, false)
        {
            self.raise(
                Stage::NeverAuto,
                Verdict::RequireApproval,
                format!("writing {abs} is never auto-approved: `{name}` is protected ({why})"),
                None,
            );
        }
        let mut outcome = RulesOutcome::NoOpinion;
        let mut matched = RuleMatch::None;
        let ctx = self.ctx;
        for rule in &ctx.rules.paths {
            // A `Read` deny or ask also holds for writing there.
            let applies =
                rule.tool == tool || (tool == PathTool::Write && rule.list != RuleList::Allow);
            if !applies || resolved.is_none() || !self.path_rule_matches(rule, &abs) {
                continue;
            }
            let r = RuleRef {
                list: rule.list,
                pattern: rule.raw.clone(),
                source: rule.source.clone(),
            };
            self.rule_met(r, &format!("{abs} meets the"), &mut matched, &mut outcome);
        }
        self.segments.push(SegmentReport {
            argv: vec![
                if tool == PathTool::Read {
                    "read"
                } else {
                    "write"
                }
                .to_string(),
                path.to_string(),
            ],
            wrappers: Vec::new(),
            matched,
            opaque: None,
            privileged: None,
            template: None,
            paths: vec![PathReport {
                written: path.to_string(),
                resolved,
                location,
            }],
        });
        outcome
    }

    /// A path or host rule met, `what` saying by what (`/work/.env meets
    /// the`): a deny raises and is reported; an ask raises and is reported
    /// unless a deny was; the first allow is the outcome unless a
    /// restriction was met.
    fn rule_met(
        &mut self,
        r: RuleRef,
        what: &str,
        matched: &mut RuleMatch,
        outcome: &mut RulesOutcome,
    ) {
        match r.list {
            RuleList::Deny => {
                self.raise(
                    Stage::DenyRule,
                    Verdict::Deny,
                    format!("{what} deny rule {r}"),
                    None,
                );
                *matched = RuleMatch::Deny { rule: r };
            }
            RuleList::Ask => {
                self.raise(
                    Stage::AskRule,
                    Verdict::RequireApproval,
                    format!("{what} ask rule {r}"),
                    None,
                );
                if !matches!(matched, RuleMatch::Deny { .. }) {
                    *matched = RuleMatch::Ask { rule: r };
                }
            }
            RuleList::Allow => {
                if matches!(matched, RuleMatch::None) {
                    *outcome = RulesOutcome::Allow(format!("{what} allow rule {r}"));
                    *matched = RuleMatch::Allow { rule: r };
                }
            }
        }
    }

    // ---- structured actions -------------------------------------------------

    /// Commits, pushes, PRs and merges the runtime executes itself: governed
    /// by autonomy, but a deny or ask rule written for the equivalent command
    /// (`git push`, `gh pr create`) still holds.
    fn structured(&mut self, equivalent: &[&str]) -> RulesOutcome {
        let argv: Vec<Arg> = equivalent.iter().map(|w| Arg::lit(*w)).collect();
        let shown = equivalent.join(" ");
        for rule in &self.ctx.rules.commands {
            if rule.list == RuleList::Allow || matches!(rule.pattern.kind, pattern::Kind::All) {
                continue;
            }
            if rule.pattern.matches(&argv, false, Side::Restrict) == Match::Yes {
                let r = rule_ref(rule);
                let (stage, verdict) = if rule.list == RuleList::Deny {
                    (Stage::DenyRule, Verdict::Deny)
                } else {
                    (Stage::AskRule, Verdict::RequireApproval)
                };
                self.findings_seen.push(
                    &mut self.findings,
                    Finding {
                        stage,
                        verdict,
                        reason: format!("`{shown}` matches the {} rule {r}", rule.list.as_str()),
                        segment: None,
                    },
                );
            }
        }
        RulesOutcome::NoOpinion
    }
}

impl Decider<'_> {
    // ---- network connections ----------------------------------------------

    /// `network_connect`: a deny rule denies; an internal address (in any
    /// spelling) is denied unless an allow rule names it; an allow rule
    /// approves; an ask rule holds in auto mode; otherwise autonomy decides.
    fn network(&mut self, host: &str, port: u16) -> RulesOutcome {
        let shown = format!("{host}:{port}");
        let h = match Host::parse(host) {
            Ok(h) => h,
            Err(why) => {
                self.raise(
                    Stage::DenyTemplate,
                    Verdict::Deny,
                    format!("a connection to {why}: refused"),
                    None,
                );
                return RulesOutcome::NoOpinion;
            }
        };
        if port == 0 {
            self.raise(
                Stage::DenyTemplate,
                Verdict::Deny,
                format!("a connection to port 0 of {h}: refused"),
                None,
            );
        }
        let rules = &self.ctx.rules.network;
        let internal = match &h {
            network::Host::Ip(ip) => network::internal(*ip),
            network::Host::Name(name) => network::internal_name(name),
        };
        if let Some(why) = internal
            && !network::named_in_allow(rules, &h)
        {
            self.raise(
                Stage::DenyTemplate,
                Verdict::Deny,
                format!("{h} is {why}: refused unless named in the network allow list"),
                None,
            );
        }
        let mut outcome = RulesOutcome::NoOpinion;
        let mut matched = RuleMatch::None;
        for rule in rules.iter().filter(|r| r.pattern.matches(&h)) {
            let r = RuleRef {
                list: rule.list,
                pattern: rule.raw.clone(),
                source: rule.source.clone(),
            };
            self.rule_met(
                r,
                &format!("{h} meets the network"),
                &mut matched,
                &mut outcome,
            );
        }
        if self.reports {
            self.segments.push(SegmentReport {
                argv: vec!["connect".to_string(), shown],
                wrappers: Vec::new(),
                matched,
                opaque: None,
                privileged: None,
                template: None,
                paths: Vec::new(),
            });
        }
        outcome
    }
}

fn rule_ref(rule: &crate::rules::CommandRule) -> RuleRef {
    RuleRef {
        list: rule.list,
        pattern: rule.pattern.raw.clone(),
        source: rule.source.clone(),
    }
}

/// Gitignore-style match of an absolute path: `**` any number of
/// components, `*` and `?` within one; a pattern without glob characters
/// also matches everything under it.
pub fn path_glob(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let comps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let literal = !pattern.contains(['*', '?', '[']);
    if literal {
        return comps.len() >= pat.len() && comps[..pat.len()] == pat[..];
    }
    // Also match everything under a matched directory.
    (0..=comps.len())
        .rev()
        .any(|n| match_components(&pat, &comps[..n]))
}

/// A branch name as git resolves it for a push or a merge: `+x` (forced)
/// and `SRC:x` (a refspec) name `x`; `refs/heads/x` and `heads/x` are `x`.
/// Why git would not read `branch` (a push refspec's destination, or a
/// merge's target) as one branch, if it would not: `HEAD` and `@` name
/// whatever is checked out, and a name `git check-ref-format` refuses
/// (`refs/heads//main`, `x/../main`, `main.lock`, `main^{}`, a space) is
/// no branch at all, so comparing it with the protected ones proves
/// nothing.
pub fn unreadable_branch(branch: &str) -> Option<&'static str> {
    let b = branch.strip_prefix('+').unwrap_or(branch);
    let b = b.rsplit_once(':').map_or(b, |(_, dst)| dst);
    if b.is_empty() {
        return Some("names no destination");
    }
    if b == "HEAD" || b == "@" || b.ends_with("/HEAD") {
        return Some("names whatever is checked out");
    }
    let bad_char = b.bytes().any(|c| {
        c < 0x20 || c == 0x7f || matches!(c, b' ' | b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\')
    });
    let bad_component = b
        .split('/')
        .any(|c| c.is_empty() || c.starts_with('.') || c.ends_with(".lock"));
    if bad_char || bad_component || b.contains("..") || b.contains("@{") || b.ends_with('.') {
        return Some("is not a name git accepts for a branch");
    }
    None
}

pub fn branch_meaning(branch: &str) -> &str {
    let b = branch.strip_prefix('+').unwrap_or(branch);
    let b = b.rsplit_once(':').map_or(b, |(_, dst)| dst);
    b.strip_prefix("refs/heads/")
        .or_else(|| b.strip_prefix("heads/"))
        .unwrap_or(b)
}

/// Whether `path` — absolute, its components possibly bash globs — may
/// name a path `pattern` covers (the path itself or something under it).
/// With `hidden_rule`, a glob does not match a leading `.` (bash without
/// `dotglob`).
pub fn glob_path_may_match(pattern: &str, path: &str, hidden_rule: bool) -> bool {
    let pat: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let comps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    (0..=comps.len()).rev().any(|n| {
        let mut states = vec![(0usize, 0usize)];
        let mut seen = std::collections::HashSet::new();
        while let Some((p, c)) = states.pop() {
            if !seen.insert((p, c)) {
                continue;
            }
            if p == pat.len() && c == n {
                return true;
            }
            let (pp, cc) = (pat.get(p), comps[..n].get(c));
            if pp == Some(&"**") {
                states.push((p + 1, c));
                if c < n {
                    states.push((p, c + 1));
                }
            }
            // bash's `**` (globstar) may stand for any number of components.
            if cc == Some(&"**") {
                states.push((p, c + 1));
                if let Some(pp) = pat.get(p)
                    && (*pp == "**" || crate::glob_meet::may_meet("*", pp, hidden_rule))
                {
                    states.push((p + 1, c));
                }
            }
            if let (Some(pp), Some(cc)) = (pp, cc)
                && crate::glob_meet::may_meet(cc, pp, hidden_rule)
            {
                states.push((p + 1, c + 1));
            }
        }
        false
    })
}

fn match_components(pat: &[&str], comps: &[&str]) -> bool {
    // Iterative over (pattern index, component index) with `**` backtracking.
    let mut states = vec![(0usize, 0usize)];
    let mut seen = std::collections::HashSet::new();
    while let Some((p, c)) = states.pop() {
        if !seen.insert((p, c)) {
            continue;
        }
        if p == pat.len() {
            if c == comps.len() {
                return true;
            }
            continue;
        }
        if pat[p] == "**" {
            states.push((p + 1, c));
            if c < comps.len() {
                states.push((p, c + 1));
            }
        } else if c < comps.len() && pattern::glob_match(pat[p].as_bytes(), comps[c].as_bytes()) {
            states.push((p + 1, c + 1));
        }
    }
    false
}

/// Whether a program is one `--always` must never add an allow rule for:
/// shells, interpreters, wrappers and privileged commands.
pub fn never_always(program: &str) -> bool {
    let name = arg::basename(program);
    wrapper::is_wrapper(name)
        || wrapper::is_interpreter(name)
        || privileged::check(&[Arg::lit(name)]).is_some()
}

/// git's argv as deny rules see it (global options removed); exposed for
/// `explain`.
pub fn normalized_git(argv: &[Arg]) -> Vec<Arg> {
    git_normalized(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_globs() {
        let cases = [
            ("/work/.env", "/work/.env", true),
            ("/work/secrets", "/work/secrets/a/b", true),
            ("/work/src/**/*.ts", "/work/src/a/b/c.ts", true),
            ("/work/src/**/*.ts", "/work/src/c.ts", true),
            ("/work/src/**/*.ts", "/work/lib/c.ts", false),
            ("**/.env", "/work/x/.env", true),
            ("/home/agent/.ssh/**", "/home/agent/.ssh/id_rsa", true),
            ("/work/.env", "/work/.envrc", false),
        ];
        for (p, path, want) in cases {
            assert_eq!(path_glob(p, path), want, "{p} {path}");
        }
    }
}
