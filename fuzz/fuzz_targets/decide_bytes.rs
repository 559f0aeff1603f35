//! `decide` on arbitrary bytes: never a panic, never a stack overflow (run
//! with `ulimit -s 2048` to hold the stack to a test thread's), and a
//! command line that does not parse is never auto-approved — even when the
//! rules allow everything in auto mode.
#![no_main]

use berth_policy::Verdict;
use berth_policy::case::{Case, CaseRules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let analysis = berth_policy::segment::analyze(data, "/work", "/home/agent");
    let command = String::from_utf8_lossy(data).into_owned();
    let case = Case {
        command: Some(command.clone()),
        rules: Some(CaseRules {
            allow: vec!["Bash(*)".into()],
            ..CaseRules::default()
        }),
        mode: Some("auto".into()),
        frame: Some("container".into()),
        ..Case::default()
    };
    let Ok(inputs) = case.inputs() else {
        panic!("a well-formed case was refused");
    };
    let d = inputs.decide();
    // The lossy text parses like the bytes when they are valid UTF-8.
    if std::str::from_utf8(data).is_ok() && analysis.parse_error.is_some() {
        assert_ne!(
            d.verdict,
            Verdict::AutoApprove,
            "a command line that does not parse was auto-approved: {command:?}"
        );
    }
    if analysis.segments.iter().any(|s| s.opaque.is_some()) && std::str::from_utf8(data).is_ok() {
        assert_ne!(
            d.verdict,
            Verdict::AutoApprove,
            "an opaque segment was auto-approved: {command:?}"
        );
    }
});
