//! An agent's autonomy, and the one place its precedence lives: [`Autonomy::resolve`].
//!
//! ADR 0167: the decision must know not only the resolved mode but where it came
//! from. A rule for the action type (`specific`) beats the wildcard `*`; with
//! neither, the mode is `require_approval` by `default`. Auto mode is exactly
//! `(auto_approve, wildcard)` — a specific `terminal: auto_approve` is not auto
//! mode and lifts no limit.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an action of some type is approved: the value an autonomy entry
/// holds (`auto_approve`, `require_approval`, `deny`; the files and the API
/// call it the mode). Not the execution mode, nor the berth mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    AutoApprove,
    RequireApproval,
    Deny,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::AutoApprove => "auto_approve",
            Approval::RequireApproval => "require_approval",
            Approval::Deny => "deny",
        }
    }

    pub fn parse(s: &str) -> Option<Approval> {
        match s {
            "auto_approve" => Some(Approval::AutoApprove),
            "require_approval" => Some(Approval::RequireApproval),
            "deny" => Some(Approval::Deny),
            _ => None,
        }
    }
}

/// Where a resolved mode came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A rule for the action type itself.
    Specific,
    /// The wildcard `*`.
    Wildcard,
    /// Neither: the built-in default, `require_approval`.
    Default,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Specific => "specific",
            Origin::Wildcard => "wildcard",
            Origin::Default => "default",
        }
    }
}

/// A resolved mode with its origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    pub mode: Approval,
    pub origin: Origin,
}

impl Resolved {
    /// Auto mode (ADR 0167): the wildcard, resolved to `auto_approve`.
    pub fn is_auto_mode(&self) -> bool {
        self.mode == Approval::AutoApprove && self.origin == Origin::Wildcard
    }
}

/// The wildcard key.
pub const WILDCARD: &str = "*";

/// An agent's autonomy map: action type (or `*`) → mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Autonomy {
    modes: BTreeMap<String, Approval>,
}

impl Autonomy {
    pub fn new() -> Self {
        Self::default()
    }

    /// `{"*": "require_approval"}`: the switch off.
    pub fn manual() -> Self {
        Self::new().with(WILDCARD, Approval::RequireApproval)
    }

    /// `{"*": "auto_approve"}`: auto mode.
    pub fn auto() -> Self {
        Self::new().with(WILDCARD, Approval::AutoApprove)
    }

    pub fn with(mut self, kind: &str, mode: Approval) -> Self {
        self.set(kind, mode);
        self
    }

    pub fn set(&mut self, kind: &str, mode: Approval) {
        self.modes.insert(kind.to_string(), mode);
    }

    pub fn remove(&mut self, kind: &str) -> Option<Approval> {
        self.modes.remove(kind)
    }

    pub fn get(&self, kind: &str) -> Option<Approval> {
        self.modes.get(kind).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Approval)> {
        self.modes.iter().map(|(k, m)| (k.as_str(), *m))
    }

    /// The mode for an action type and where it came from. Precedence lives
    /// here and nowhere else: specific > wildcard > default.
    pub fn resolve(&self, kind: &str) -> Resolved {
        if kind != WILDCARD
            && let Some(mode) = self.modes.get(kind)
        {
            return Resolved {
                mode: *mode,
                origin: Origin::Specific,
            };
        }
        if let Some(mode) = self.modes.get(WILDCARD) {
            return Resolved {
                mode: *mode,
                origin: Origin::Wildcard,
            };
        }
        Resolved {
            mode: Approval::RequireApproval,
            origin: Origin::Default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_precedence() {
        let cases = [
            (
                Autonomy::new(),
                "terminal",
                Approval::RequireApproval,
                Origin::Default,
            ),
            (
                Autonomy::auto(),
                "terminal",
                Approval::AutoApprove,
                Origin::Wildcard,
            ),
            (
                Autonomy::manual(),
                "terminal",
                Approval::RequireApproval,
                Origin::Wildcard,
            ),
            (
                Autonomy::auto().with("terminal", Approval::RequireApproval),
                "terminal",
                Approval::RequireApproval,
                Origin::Specific,
            ),
            (
                Autonomy::manual().with("terminal", Approval::AutoApprove),
                "terminal",
                Approval::AutoApprove,
                Origin::Specific,
            ),
            (
                Autonomy::new().with("*", Approval::Deny),
                "git_push",
                Approval::Deny,
                Origin::Wildcard,
            ),
        ];
        for (autonomy, kind, mode, origin) in cases {
            assert_eq!(
                autonomy.resolve(kind),
                Resolved { mode, origin },
                "{autonomy:?} {kind}"
            );
        }
    }

    #[test]
    fn only_the_wildcard_is_auto_mode() {
        assert!(Autonomy::auto().resolve("terminal").is_auto_mode());
        assert!(
            !Autonomy::new()
                .with("terminal", Approval::AutoApprove)
                .resolve("terminal")
                .is_auto_mode()
        );
        assert!(!Autonomy::manual().resolve("terminal").is_auto_mode());
        assert!(
            !Autonomy::new()
                .with("*", Approval::Deny)
                .resolve("terminal")
                .is_auto_mode()
        );
    }
}
