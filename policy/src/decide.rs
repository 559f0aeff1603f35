//! `decide`: the stages of POLICY.md, in order.

use crate::action::Action;
use crate::autonomy::Autonomy;
use crate::decision::{Decision, Stage};
use crate::frame::Frame;
use crate::rules::RuleSet;

/// Project-level additions to the built-in limits: more may be added, none removed.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// Extra privileged / external-effect patterns (word prefixes).
    pub privileged: Vec<String>,
    /// Extra deny templates (word prefixes).
    pub deny: Vec<String>,
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

/// Decides one action. Total: every input gets a decision.
pub fn decide(action: &Action, ctx: &Context<'_>) -> Decision {
    let resolved = ctx.autonomy.resolve(action.kind());
    // Placeholder until the stages land: fail closed.
    Decision {
        verdict: crate::Verdict::RequireApproval,
        stage: Stage::Autonomy,
        reason: "policy engine under construction".into(),
        autonomy: resolved,
        segments: Vec::new(),
        findings: Vec::new(),
        lifted: Vec::new(),
    }
}
