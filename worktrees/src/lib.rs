//! The forge, per-agent repositories and worktrees (git2 only).
