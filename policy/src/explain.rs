//! `explain`: a decision rendered for a person — the verdict and the stage
//! that set it, each segment with the rule it met (file:line), each path and
//! where it lies, and what auto mode lifts and what still asks (ADR 0167 D5:
//! the screen says before the click what the switch changes).

use std::fmt::Write;

use crate::decision::{Decision, Finding, Location, RuleMatch, Stage, Verdict};

/// Findings auto mode lifts, and findings that hold in every mode.
pub fn auto_mode_split(d: &Decision) -> (Vec<&Finding>, Vec<&Finding>) {
    let all = d.findings.iter().chain(d.lifted.iter());
    let (mut lifts, mut holds) = (Vec::new(), Vec::new());
    for f in all {
        if matches!(f.stage, Stage::Scope | Stage::PartialAllow) {
            lifts.push(f);
        } else if f.stage != Stage::AllowRule && f.stage != Stage::Autonomy {
            holds.push(f);
        }
    }
    (lifts, holds)
}

/// Renders a decision as text.
pub fn render(d: &Decision) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "verdict: {} (stage: {})",
        d.verdict.as_str(),
        d.stage.as_str()
    );
    let _ = writeln!(out, "reason:  {}", d.reason);
    let _ = writeln!(
        out,
        "autonomy: {} ({}){}",
        d.autonomy.mode.as_str(),
        d.autonomy.origin.as_str(),
        if d.autonomy.is_auto_mode() {
            " — auto mode is on"
        } else {
            ""
        }
    );
    if !d.segments.is_empty() {
        let _ = writeln!(out, "\nsegments:");
        for (i, s) in d.segments.iter().enumerate() {
            let mut line = s.wrappers.join(" ⟶ ");
            if s.argv.is_empty() && !line.is_empty() {
                // A wrapper's own part (`sh -c … > f`, `PATH=… sh -c …`):
                // its redirections and assignments, judged apart from
                // the script it runs (the segments after it).
                line.push_str(" (its own redirections and assignments)");
            } else {
                if !line.is_empty() {
                    line.push_str(" ⟶ ");
                }
                line.push_str(&if s.argv.is_empty() {
                    "(no program)".to_string()
                } else {
                    s.argv.join(" ")
                });
            }
            let _ = writeln!(out, "  {}. {line}", i + 1);
            let rule = match &s.matched {
                RuleMatch::None => "no rule".to_string(),
                RuleMatch::NotACommand => "not a command (no rule applies)".to_string(),
                RuleMatch::Allow { rule } | RuleMatch::Ask { rule } | RuleMatch::Deny { rule } => {
                    rule.to_string()
                }
            };
            let _ = writeln!(out, "     rule: {rule}");
            if let Some(o) = &s.opaque {
                let _ = writeln!(out, "     opaque: {o}");
            }
            if let Some(p) = &s.privileged {
                let _ = writeln!(out, "     external effect: {p}");
            }
            if let Some(t) = &s.template {
                let _ = writeln!(out, "     deny template: {t}");
            }
            for p in &s.paths {
                let at = p.resolved.as_deref().unwrap_or("?");
                let where_ = match p.location {
                    Location::Outside => "OUTSIDE the scope",
                    Location::Unknown => "not provable",
                    l => l.as_str(),
                };
                let _ = writeln!(out, "     path: {} → {at} ({where_})", p.written);
            }
        }
    }
    if !d.findings.is_empty() {
        let _ = writeln!(out, "\nlimits that hold:");
        for f in &d.findings {
            let _ = writeln!(
                out,
                "  - [{}] {}: {}",
                f.stage.as_str(),
                f.verdict.as_str(),
                f.reason
            );
        }
    }
    if !d.lifted.is_empty() {
        let _ = writeln!(out, "\nlifted by auto mode:");
        for f in &d.lifted {
            let _ = writeln!(out, "  - [{}] {}", f.stage.as_str(), f.reason);
        }
    }
    let (lifts, holds) = auto_mode_split(d);
    let _ = writeln!(out, "\nauto mode (the agent's `*` set to auto_approve):");
    if lifts.is_empty() {
        let _ = writeln!(out, "  lifts: nothing for this command");
    } else {
        for f in &lifts {
            let _ = writeln!(out, "  lifts: [{}] {}", f.stage.as_str(), f.reason);
        }
    }
    if holds.is_empty() {
        let _ = writeln!(out, "  still asks: nothing for this command");
    } else {
        for f in &holds {
            let word = if f.verdict == Verdict::Deny {
                "still denies"
            } else {
                "still asks"
            };
            let _ = writeln!(out, "  {word}: [{}] {}", f.stage.as_str(), f.reason);
        }
    }
    out
}
