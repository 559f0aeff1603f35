//! The harness the class tables share (classes, options, shell, paths): a
//! row is a command line, the rules file (allow, ask, deny), auto mode or
//! manual, the frame, and the verdict POLICY.md gives; a table fails with
//! every row that disagrees, each with the stage and reason decided.
#![allow(dead_code)]

use berth_policy::case::{Case, CaseRules};
use berth_policy::{Decision, Verdict};

/// Auto mode or manual.
#[derive(Clone, Copy, Debug)]
pub enum M {
    Manual,
    Auto,
}

/// The frame a command is decided in.
#[derive(Clone, Copy, Debug)]
pub enum F {
    Host,
    Container,
}

pub const DENY: Verdict = Verdict::Deny;
pub const ASK: Verdict = Verdict::RequireApproval;
pub const AUTO: Verdict = Verdict::AutoApprove;

/// `(command, allow, ask, deny, mode, frame, verdict)`.
pub type Row = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    M,
    F,
    Verdict,
);

/// The case a row describes.
pub fn case(cmd: &str, allow: &[&str], ask: &[&str], deny: &[&str], mode: M, frame: F) -> Case {
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Case {
        command: Some(cmd.to_string()),
        rules: Some(CaseRules {
            allow: list(allow),
            ask: list(ask),
            deny: list(deny),
        }),
        mode: Some(
            match mode {
                M::Auto => "auto",
                M::Manual => "manual",
            }
            .to_string(),
        ),
        frame: Some(
            match frame {
                F::Host => "host",
                F::Container => "container",
            }
            .to_string(),
        ),
        ..Case::default()
    }
}

/// The decision of a row.
pub fn decide(row: &Row) -> Decision {
    let (cmd, allow, ask, deny, mode, frame, _) = *row;
    case(cmd, allow, ask, deny, mode, frame)
        .inputs()
        .unwrap()
        .decide()
}

/// Every row's verdict; fails with all the rows that disagree.
pub fn check(table: &[Row]) {
    check_by(
        table,
        decide,
        |r| r.6,
        |r| format!("{:?} ({:?}, {:?})", r.0, r.4, r.5),
    );
}

/// [`check`] for a table of another row shape: how to decide a row, the
/// verdict it wants, and how to name it in a failure.
pub fn check_by<R>(
    table: &[R],
    decide: impl Fn(&R) -> Decision,
    want: impl Fn(&R) -> Verdict,
    name: impl Fn(&R) -> String,
) {
    let mut failures = Vec::new();
    for row in table {
        let d = decide(row);
        if d.verdict != want(row) {
            failures.push(format!(
                "{}: want {}, got {} [{}] {}",
                name(row),
                want(row).as_str(),
                d.verdict.as_str(),
                d.stage.as_str(),
                d.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
