//! What `decide` returns: a verdict, the stage that settled it, and the
//! evidence a person needs to see why (segments, rules, paths, lifted limits).

use serde::{Deserialize, Serialize};

use crate::autonomy::Resolved;

/// Ordered by restrictiveness: `AutoApprove < RequireApproval < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    AutoApprove,
    RequireApproval,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::AutoApprove => "auto_approve",
            Verdict::RequireApproval => "require_approval",
            Verdict::Deny => "deny",
        }
    }
}

impl From<crate::autonomy::Approval> for Verdict {
    fn from(m: crate::autonomy::Approval) -> Verdict {
        match m {
            crate::autonomy::Approval::AutoApprove => Verdict::AutoApprove,
            crate::autonomy::Approval::RequireApproval => Verdict::RequireApproval,
            crate::autonomy::Approval::Deny => Verdict::Deny,
        }
    }
}

/// The stage that produced a finding, in the contract's order (a tie goes to
/// the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    DenyRule,
    DenyTemplate,
    AutonomyDeny,
    Privileged,
    NeverAuto,
    Scope,
    Opaque,
    AskRule,
    PartialAllow,
    AllowRule,
    Autonomy,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::DenyRule => "deny_rule",
            Stage::DenyTemplate => "deny_template",
            Stage::AutonomyDeny => "autonomy_deny",
            Stage::Privileged => "privileged",
            Stage::NeverAuto => "never_auto",
            Stage::Scope => "scope",
            Stage::Opaque => "opaque",
            Stage::AskRule => "ask_rule",
            Stage::PartialAllow => "partial_allow",
            Stage::AllowRule => "allow_rule",
            Stage::Autonomy => "autonomy",
        }
    }
}

/// Which list of a rules file a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

impl RuleList {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleList::Allow => "allow",
            RuleList::Ask => "ask",
            RuleList::Deny => "deny",
        }
    }
}

/// Where a rule was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceLoc {
    /// The file's name, or what stands for it (`<allow>`: a case's list),
    /// borrowed when it is such a name: a batch of cases gives each of its
    /// rules one, and none is copied.
    pub file: std::borrow::Cow<'static, str>,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A rule that matched, as written, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRef {
    pub list: RuleList,
    pub pattern: String,
    pub source: Option<SourceLoc>,
}

impl std::fmt::Display for RuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Pieces, not a format string: every allowed command's reason names
        // its rule.
        f.write_str(self.list.as_str())?;
        f.write_str(" \"")?;
        f.write_str(&self.pattern)?;
        f.write_str("\"")?;
        if let Some(src) = &self.source {
            write!(f, " ({src})")?;
        }
        Ok(())
    }
}

/// How a segment met the rules file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RuleMatch {
    /// No rule matched.
    None,
    /// Not a command (an assignment or redirection alone, a call of a function
    /// defined in the same line): no rule applies; its parts are judged.
    NotACommand,
    Allow {
        rule: RuleRef,
    },
    Ask {
        rule: RuleRef,
    },
    Deny {
        rule: RuleRef,
    },
}

/// Where a judged path lies in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// Under the project root.
    Project,
    /// Under an extra root declared in scope (host frame).
    ExtraRoot,
    /// A special file always in scope (`/dev/null`, `/dev/fd/N`, …).
    Special,
    /// Inside a container and not backed by a host mount.
    ContainerPrivate,
    /// Under a host mount declared in scope.
    DeclaredMount,
    /// Outside the scope.
    Outside,
    /// Not provable: a dynamic word or an unknown working directory.
    Unknown,
}

impl Location {
    pub fn in_scope(self) -> bool {
        !matches!(self, Location::Outside | Location::Unknown)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Location::Project => "project",
            Location::ExtraRoot => "extra_root",
            Location::Special => "special",
            Location::ContainerPrivate => "container_private",
            Location::DeclaredMount => "declared_mount",
            Location::Outside => "outside",
            Location::Unknown => "unknown",
        }
    }
}

/// One judged path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathReport {
    /// As written (after quote removal), or a description for the cwd.
    pub written: String,
    /// Lexically normalised absolute path in the frame, when known.
    pub resolved: Option<String>,
    pub location: Location,
}

/// One simple command of the line, as judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentReport {
    /// The argv of the program that really runs, after quote removal and
    /// with wrappers seen through.
    pub argv: Vec<String>,
    /// Wrappers seen through on the way to it (`timeout`, `sudo`, `bash -c`, …).
    pub wrappers: Vec<String>,
    pub matched: RuleMatch,
    /// Why the parser could not analyse this segment, when it could not.
    pub opaque: Option<String>,
    /// The privileged / external-effect class it belongs to, if any.
    pub privileged: Option<String>,
    /// The built-in deny template it meets, if any.
    pub template: Option<String>,
    pub paths: Vec<PathReport>,
}

/// A limit raised by one stage.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    pub stage: Stage,
    pub verdict: Verdict,
    pub reason: String,
    /// The segment it concerns, by index into `Decision::segments`.
    pub segment: Option<usize>,
}

/// The outcome of `decide`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub verdict: Verdict,
    pub stage: Stage,
    pub reason: String,
    /// The autonomy mode resolved for the action type, with its origin.
    pub autonomy: Resolved,
    pub segments: Vec<SegmentReport>,
    /// Every limit a stage raised that holds (whether or not it set the verdict).
    pub findings: Vec<Finding>,
    /// The limits auto mode lifted for this action (scope, partial allow).
    pub lifted: Vec<Finding>,
    /// What this decision leaves out, when it leaves something out: the
    /// segments of a command longer than `decide` reports one by one, or
    /// detail trimmed to fit a store. Absent when nothing is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
}

/// The outcome of [`crate::decide::decide_brief`]: what a caller that acts
/// on a decision reads (the batch, the hook, MCP), without the per-segment
/// report a person reads. Always the same verdict, stage and reason as the
/// full decision's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    pub verdict: Verdict,
    pub stage: Stage,
    pub reason: String,
}

impl Decision {
    pub fn is_auto_approved(&self) -> bool {
        self.verdict == Verdict::AutoApprove
    }
}
