//! Building agent images from recipes through the real engine, and finding
//! them (never pulling).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::ImageGuard;

use berth_sandbox::docker::DockerBackend;
use berth_sandbox::image::{BuildEvent, DEFAULT_RECIPE, ImageRef, NoProgress, Recipe};

fn test_recipe(name: &str, motd: &str) -> Recipe {
    let text = DEFAULT_RECIPE.replacen("name = \"berth-agent\"", &format!("name = \"{name}\""), 1)
        + &format!("\n[[file]]\npath = \"/etc/motd\"\ncontent = \"{motd}\\n\"\n");
    Recipe::parse(&text, "test recipe").unwrap()
}

#[tokio::test]
async fn a_recipe_builds_once_and_again_only_when_it_changes() {
    let backend = engine_or_skip!();
    let name = format!("berth-test-image-{}", std::process::id());
    let _guard = ImageGuard(name.clone());

    let v1 = test_recipe(&name, "one");
    let mut events: Vec<String> = Vec::new();
    let built = backend
        .build_image(&v1, &mut |e: BuildEvent<'_>| {
            events.push(match e {
                BuildEvent::Resolved { .. } => "resolved".to_string(),
                BuildEvent::UpToDate { .. } => "up-to-date".to_string(),
                BuildEvent::ContextReady { bytes } => {
                    assert!(bytes > 1 << 20, "a context with busybox and git: {bytes}");
                    "context".to_string()
                }
                BuildEvent::Step { line } => {
                    format!("step {}", line.split(':').next().unwrap_or(""))
                }
                BuildEvent::Built { .. } => "built".to_string(),
            })
        })
        .await
        .unwrap();
    assert!(!built.up_to_date);
    assert!(built.tag.starts_with(&format!("{name}:")), "{}", built.tag);
    assert_eq!(built.latest, format!("{name}:latest"));
    assert_eq!(events.first().map(String::as_str), Some("resolved"));
    assert_eq!(events.get(1).map(String::as_str), Some("context"));
    assert!(
        events.iter().any(|e| e.starts_with("step Step 1/")),
        "{events:?}"
    );
    assert_eq!(events.last().map(String::as_str), Some("built"));

    // Nothing changed: no build at all.
    let mut events = Vec::new();
    let again = backend
        .build_image(&v1, &mut |e: BuildEvent<'_>| events.push(format!("{e:?}")))
        .await
        .unwrap();
    assert!(again.up_to_date);
    assert_eq!(
        (again.tag.as_str(), again.id.as_str()),
        (built.tag.as_str(), built.id.as_str())
    );
    assert_eq!(events.len(), 2, "{events:?}");

    // One generated file changed: a new tag, and `latest` follows it.
    let v2 = test_recipe(&name, "two");
    let rebuilt = backend.build_image(&v2, &mut NoProgress).await.unwrap();
    assert!(!rebuilt.up_to_date);
    assert_ne!(rebuilt.tag, built.tag);
    let found = backend.ensure_recipe_image(&v2).await.unwrap();
    assert_eq!(found.id, rebuilt.id);
    // The older recipe's `latest` is now someone else's: stale.
    let err = backend
        .ensure_recipe_image(&v1)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("berth image build") && err.contains("another recipe"),
        "{err}"
    );

    // What the image holds, seen from a container of it.
    let body = bollard::models::ContainerCreateBody {
        image: Some(rebuilt.tag.clone()),
        cmd: Some(vec![
            "/bin/sh".into(),
            "-c".into(),
            "cat /etc/motd; id; git --version; ls -ld /tmp /home/agent | cut -c1-10; grep agent /etc/passwd".into(),
        ]),
        host_config: Some(bollard::models::HostConfig {
            network_mode: Some("none".into()),
            ..Default::default()
        }),
        labels: Some(std::collections::HashMap::from([(
            "berth.test".to_string(),
            name.clone(),
        )])),
        ..Default::default()
    };
    let c = backend
        .docker()
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
        .unwrap();
    backend
        .docker()
        .start_container(
            &c.id,
            None::<bollard::query_parameters::StartContainerOptions>,
        )
        .await
        .unwrap();
    use futures_util::StreamExt;
    let mut wait = backend.docker().wait_container(
        &c.id,
        None::<bollard::query_parameters::WaitContainerOptions>,
    );
    while wait.next().await.is_some() {}
    let mut logs = backend.docker().logs(
        &c.id,
        Some(
            bollard::query_parameters::LogsOptionsBuilder::default()
                .stdout(true)
                .stderr(true)
                .build(),
        ),
    );
    let mut out = String::new();
    while let Some(Ok(l)) = logs.next().await {
        out.push_str(&l.to_string());
    }
    let _ = backend
        .docker()
        .remove_container(
            &c.id,
            Some(bollard::query_parameters::RemoveContainerOptions {
                force: true,
                v: true,
                ..Default::default()
            }),
        )
        .await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "two");
    assert_eq!(
        lines[1],
        "uid=1000(agent) gid=1000(agent) groups=1000(agent)"
    );
    assert!(lines[2].starts_with("git version "), "{out}");
    assert_eq!(&lines[3..5], ["drwxr-xr-x", "drwxrwxrwt"], "{out}");
    assert_eq!(lines[5], "agent:x:1000:1000:agent:/home/agent:/bin/sh");
}

#[tokio::test]
async fn missing_images_are_errors_that_say_what_to_do() {
    let backend = engine_or_skip!();
    let err = backend
        .ensure_image(&ImageRef::Named("berth-absent-image:0".into()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("berth-absent-image:0") && err.contains("no registry"),
        "{err}"
    );
    let never_built = test_recipe("berth-never-built", "x");
    let err = backend
        .ensure_recipe_image(&never_built)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("berth-never-built:latest") && err.contains("berth image build"),
        "{err}"
    );

    common::default_image(&backend).await;
    let found = backend.ensure_image(&ImageRef::DefaultAgent).await.unwrap();
    assert_eq!(found.name, "berth-agent:latest");
    let by_name = backend
        .ensure_image(&ImageRef::Named(found.name.clone()))
        .await
        .unwrap();
    assert_eq!(by_name, found);
}

#[tokio::test]
async fn an_engine_that_does_not_answer_names_the_socket() {
    // A socket path with nothing behind it, in a process-local environment
    // change: run in a child so the other tests keep the real engine.
    if std::env::var("BERTH_TEST_DEAD_SOCKET").is_ok() {
        let err = DockerBackend::connect().await.unwrap_err().to_string();
        println!("ERROR: {err}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            common::test_path(
                module_path!(),
                "an_engine_that_does_not_answer_names_the_socket",
            )
            .as_str(),
            "--nocapture",
        ])
        .env("BERTH_TEST_DEAD_SOCKET", "1")
        .env("DOCKER_HOST", "unix:///nonexistent/berth-test.sock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("/nonexistent/berth-test.sock"), "{stdout}");
    assert!(stdout.contains("--mode runner"), "{stdout}");
}

#[tokio::test]
async fn a_named_image_without_the_wrappers_tools_runs_on_berths_injected_ones() {
    let backend = engine_or_skip!();
    let name = format!("berth-test-minimal-{}", std::process::id());
    let _guard = ImageGuard(name.clone());
    let text = format!(
        r#"name = "{name}"
[user]
name = "agent"
uid = 1000
gid = 1000
home = "/home/agent"
[busybox]
path = "/usr/bin/busybox"
dir = "/usr/bin"
applets = ["sleep"]
[[host]]
path = "/usr/bin/dash"
libraries = true
[links]
"/bin" = "usr/bin"
"/lib" = "usr/lib"
"/lib64" = "usr/lib64"
"/usr/bin/sh" = "dash"
"#
    );
    // dash as /bin/sh and busybox only for `sleep`: no `setsid`, no `tr` of
    // its own, which berth's exec wrapper needs.
    let recipe = Recipe::parse(&text, "minimal").unwrap();
    let built = backend.build_image(&recipe, &mut NoProgress).await.unwrap();

    let layout = common::Layout::new("minimal");
    let mut spec = layout.spec("a");
    spec.image = ImageRef::Named(built.tag.clone());
    spec.tools_root = Some(layout.root().join("tools"));
    let berth = backend.up(spec).await.unwrap();
    // The image's own programs first, berth's busybox for what it lacks.
    let mut r =
        berth_sandbox::ExecRequest::shell("command -v dash; command -v tr; echo a | tr a b");
    r.timeout = std::time::Duration::from_secs(60);
    let out = berth_sandbox::Sandbox::exec(&berth, r, None).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout.bytes),
        "/usr/bin/dash\n/opt/berth/bin/tr\nb\n",
        "{}",
        String::from_utf8_lossy(&out.stderr.bytes)
    );
}
