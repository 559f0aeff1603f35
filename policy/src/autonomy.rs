//! An agent's autonomy, and the one place its precedence lives: [`Autonomy::resolve`].
//!
//! ADR 0167: the decision must know not only the resolved mode but where it came
//! from. A rule for the action type (`specific`) beats the wildcard `*`; with
//! neither, the mode is `require_approval` by `default`. Auto mode is exactly
//! `(auto_approve, wildcard)` — a specific `terminal: auto_approve` is not auto
//! mode and lifts no limit.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an action of some type is approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    AutoApprove,
    RequireApproval,
    Deny,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::AutoApprove => "auto_approve",
            Mode::RequireApproval => "require_approval",
            Mode::Deny => "deny",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "auto_approve" => Some(Mode::AutoApprove),
            "require_approval" => Some(Mode::RequireApproval),
            "deny" => Some(Mode::Deny),
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
    pub mode: Mode,
    pub origin: Origin,
}

impl Resolved {
    /// Auto mode (ADR 0167): the wildcard, resolved to `auto_approve`.
    pub fn is_auto_mode(&self) -> bool {
        self.mode == Mode::AutoApprove && self.origin == Origin::Wildcard
    }
}

/// The wildcard key.
pub const WILDCARD: &str = "*";

/// An agent's autonomy map: action type (or `*`) → mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Autonomy {
    modes: BTreeMap<String, Mode>,
}

impl Autonomy {
    pub fn new() -> Self {
        Self::default()
    }

    /// `{"*": "require_approval"}`: the switch off.
    pub fn manual() -> Self {
        Self::new().with(WILDCARD, Mode::RequireApproval)
    }

    /// `{"*": "auto_approve"}`: auto mode.
    pub fn auto() -> Self {
        Self::new().with(WILDCARD, Mode::AutoApprove)
    }

    pub fn with(mut self, kind: &str, mode: Mode) -> Self {
        self.set(kind, mode);
        self
    }

    pub fn set(&mut self, kind: &str, mode: Mode) {
        self.modes.insert(kind.to_string(), mode);
    }

    pub fn remove(&mut self, kind: &str) -> Option<Mode> {
        self.modes.remove(kind)
    }

    pub fn get(&self, kind: &str) -> Option<Mode> {
        self.modes.get(kind).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Mode)> {
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
            mode: Mode::RequireApproval,
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
                Mode::RequireApproval,
                Origin::Default,
            ),
            (
                Autonomy::auto(),
                "terminal",
                Mode::AutoApprove,
                Origin::Wildcard,
            ),
            (
                Autonomy::manual(),
                "terminal",
                Mode::RequireApproval,
                Origin::Wildcard,
            ),
            (
                Autonomy::auto().with("terminal", Mode::RequireApproval),
                "terminal",
                Mode::RequireApproval,
                Origin::Specific,
            ),
            (
                Autonomy::manual().with("terminal", Mode::AutoApprove),
                "terminal",
                Mode::AutoApprove,
                Origin::Specific,
            ),
            (
                Autonomy::new().with("*", Mode::Deny),
                "git_push",
                Mode::Deny,
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
                .with("terminal", Mode::AutoApprove)
                .resolve("terminal")
                .is_auto_mode()
        );
        assert!(!Autonomy::manual().resolve("terminal").is_auto_mode());
        assert!(
            !Autonomy::new()
                .with("*", Mode::Deny)
                .resolve("terminal")
                .is_auto_mode()
        );
    }
}
