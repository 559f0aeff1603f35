//! A project's image from its Dockerfile, built by the real engine with no
//! network: `FROM` the recipe-built agent image, adding a file and an
//! environment variable; built once, then found by its content hash; a failed
//! step reports the end of the build log; a `FROM` that is not local is
//! refused before anything is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use berth_sandbox::image::{BuildEvent, DockerfileBuild, ImageRef, NoProgress};
use berth_sandbox::{ExecRequest, ExitStatus, Sandbox};
use common::{ImageGuard, Layout, text};

fn context(dir: &std::path::Path, dockerfile: &str) -> DockerfileBuild {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("Dockerfile"), dockerfile).unwrap();
    std::fs::write(dir.join("greeting.txt"), "hello from the context\n").unwrap();
    DockerfileBuild {
        name: format!("berth-test-df-{}", std::process::id()),
        context: dir.to_path_buf(),
        dockerfile: "Dockerfile".into(),
        args: BTreeMap::new(),
    }
}

#[tokio::test]
async fn a_dockerfile_from_the_agent_image_builds_once_and_hosts_a_berth() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    // The image goes after the berth's container (drops run in reverse).
    let _guard = ImageGuard(format!("berth-test-df-{}", std::process::id()));
    let layout = Layout::new("dockerfile");
    let build = context(
        &layout.root().join("ctx"),
        "FROM berth-agent:latest\nCOPY greeting.txt /etc/greeting.txt\nENV GREETING=from-the-dockerfile\n",
    );

    let mut steps = Vec::new();
    let built = backend
        .build_dockerfile(&build, &mut |e: BuildEvent<'_>| {
            if let BuildEvent::Step { line } = e {
                steps.push(line.to_string());
            }
        })
        .await
        .unwrap();
    assert!(!built.up_to_date);
    assert!(
        built.tag.starts_with(&format!("{}:", build.name)),
        "{built:?}"
    );
    assert!(
        steps.iter().any(|s| s.contains("COPY greeting.txt")),
        "{steps:?}"
    );
    // Nothing changed (a touched file is not a change): nothing is built.
    std::fs::write(
        build.context.join("greeting.txt"),
        "hello from the context\n",
    )
    .unwrap();
    let again = backend
        .build_dockerfile(&build, &mut NoProgress)
        .await
        .unwrap();
    assert!(again.up_to_date);
    assert_eq!(
        (again.tag.as_str(), again.id.as_str()),
        (built.tag.as_str(), built.id.as_str())
    );

    // A berth on it: the file, the variable, the image's own git.
    let mut spec = layout.spec("dev-1");
    spec.image = ImageRef::Dockerfile(build.clone());
    spec.tools_root = Some(layout.root().join("tools"));
    let berth = backend.up(spec).await.unwrap();
    let mut r = ExecRequest::shell(
        "cat /etc/greeting.txt; echo $GREETING; command -v git; git rev-parse --abbrev-ref HEAD",
    );
    r.timeout = Duration::from_secs(60);
    let out = berth.exec(r, None).await.unwrap();
    assert_eq!(
        out.status,
        ExitStatus::Exited(0),
        "{}",
        text(&out.stderr.bytes)
    );
    assert_eq!(
        text(&out.stdout.bytes),
        "hello from the context\nfrom-the-dockerfile\n/usr/bin/git\nagent/dev-1/t1\n"
    );
}

#[tokio::test]
async fn a_failed_step_reports_the_build_log_and_a_missing_base_is_not_pulled() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let dir = tempfile::tempdir().unwrap();
    let mut build = context(
        &dir.path().join("ctx"),
        "FROM berth-agent:latest\nRUN echo about-to-fail && false\n",
    );
    build.name = format!("berth-test-df-fail-{}", std::process::id());
    let _guard = ImageGuard(build.name.clone());
    let err = backend
        .build_dockerfile(&build, &mut NoProgress)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("build log") && err.contains("about-to-fail") && err.contains("RUN echo"),
        "{err}"
    );
    // forcerm: the failed step's container is gone.
    let leftovers = backend
        .docker()
        .list_containers(Some(
            bollard::query_parameters::ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&std::collections::HashMap::from([(
                    "ancestor".to_string(),
                    vec!["berth-agent:latest".to_string()],
                )]))
                .build(),
        ))
        .await
        .unwrap();
    assert!(
        leftovers.iter().all(|c| c
            .command
            .as_deref()
            .is_none_or(|cmd| !cmd.contains("about-to-fail"))),
        "{leftovers:?}"
    );

    std::fs::write(
        build.context.join("Dockerfile"),
        "FROM berth-no-such-base:1\nRUN true\n",
    )
    .unwrap();
    let err = backend
        .build_dockerfile(&build, &mut NoProgress)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("berth-no-such-base:1") && err.contains("nothing is pulled"),
        "{err}"
    );
}
