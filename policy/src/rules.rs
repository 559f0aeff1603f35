//! Rules files: berth's `permissions.json` and Claude Code's `settings.json`.

use crate::decision::SourceLoc;

/// A loaded rules file.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub allow: Vec<(String, Option<SourceLoc>)>,
    pub ask: Vec<(String, Option<SourceLoc>)>,
    pub deny: Vec<(String, Option<SourceLoc>)>,
}

/// A rules file berth cannot use.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("{loc}: {message}")]
    Syntax { loc: SourceLoc, message: String },
}
