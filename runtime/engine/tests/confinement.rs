#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Auto mode on a runner berth: refused while the runner's confinement is
//! not available and the project has not accepted it
//! (`[sandbox] allow_unconfined`), both when the switch is turned on and
//! when a berth already in auto mode comes up as a runner; once accepted,
//! the autonomy report says what is lifted on this machine.

mod common;

use berth_engine::{AgentImpl, BerthMode, EngineError};
use common::{Fixture, named, user};

fn set_config(f: &Fixture, from: &str, to: &str) {
    let path = f.state().project_config("demo");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[tokio::test]
async fn auto_mode_on_an_unconfined_runner_needs_allow_unconfined() {
    let f = Fixture::new().await;
    // The fixture accepts unconfined runners: this test does not.
    set_config(&f, "allow_unconfined = true", "allow_unconfined = false");
    set_config(&f, "\nmode = \"auto\"\n", "\nmode = \"runner\"\n");
    f.agent("dev-1", AgentImpl::Noop).await;

    // With the exec shim in place (the workspace builds it beside the tests),
    // the runner is confined: auto mode goes on without `allow_unconfined`,
    // and the report says what is lifted and what the confinement holds.
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    let confined = f.engine.autonomy_report("dev-1").await.unwrap();
    let note = confined.runner_host.unwrap_or_default();
    assert!(
        note.contains("lifts the path scope on this machine")
            && note.contains("What still holds: the runner's confinement"),
        "{note}"
    );
    f.engine
        .set_auto_mode("dev-1", false, &user())
        .await
        .unwrap();

    // The shim gone (named where nothing is): the runner cannot confine.
    // SAFETY: this binary holds this one test, and it runs on a
    // current-thread runtime: no other thread reads the environment now.
    unsafe { std::env::set_var("BERTH_EXEC_SHIM", "/nonexistent/berth-exec-shim") };
    set_config(&f, "\nmode = \"runner\"\n", "\nmode = \"mounted\"\n");

    // A berth that would be a container: auto mode goes on, nothing to say
    // about the host.
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    let report = f.engine.autonomy_report("dev-1").await.unwrap();
    assert!(report.auto_mode);
    assert_eq!(report.runner_host, None);

    // The same agent brought up as a runner: refused, nothing provisioned.
    let up = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap_err();
    assert!(matches!(up, EngineError::Unconfined { .. }), "{up}");
    assert!(up.to_string().contains("allow_unconfined = true"), "{up}");
    assert_eq!(f.engine.agent("dev-1").await.unwrap().berth, None);

    // Turning it on for a runner-configured agent: refused, nothing written.
    f.engine
        .set_auto_mode("dev-1", false, &user())
        .await
        .unwrap();
    set_config(&f, "\nmode = \"mounted\"\n", "\nmode = \"runner\"\n");
    let refused = f
        .engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap_err();
    assert!(
        matches!(refused, EngineError::Unconfined { .. }),
        "{refused}"
    );
    assert!(!f.engine.autonomy_report("dev-1").await.unwrap().auto_mode);
    let off = f.engine.autonomy_report("dev-1").await.unwrap();
    assert!(
        off.runner_host
            .as_deref()
            .is_some_and(|n| n.contains("lifts the path scope on this machine")),
        "a runner berth says it before the switch: {off:?}"
    );

    // Accepted: on, up as a runner, and the report says only the policy holds.
    set_config(&f, "allow_unconfined = false", "allow_unconfined = true");
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    f.engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    let on = f.engine.autonomy_report("dev-1").await.unwrap();
    assert!(on.auto_mode);
    let note = on.runner_host.unwrap();
    assert!(
        note.contains("not available here") && note.contains("only the policy"),
        "{note}"
    );
}
