#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A project's `devcontainer.json`, through the `berth` binary: read from
//! the base branch in the forge (never from an agent's worktree), its
//! Dockerfile built, its variables and user applied, its post commands
//! proposed by the agent through the policy — one held for a person, one
//! run — its mounts refused unless berth.toml declares them, and a broken
//! file said with its line and column without losing what was read before.
//!
//! The Docker test skips without an engine, except under `CI=true`.

use crate::cli::JsonDoc;
use crate::docker::{RemoveImage, docker_answers};
use crate::fixture::{Fixture, git};

use serde_json::Value;

/// The project's repository with `.devcontainer/` holding `json` (and a
/// Dockerfile), committed on `main`.
fn repo_with(f: &Fixture, json: &str, dockerfile: Option<&str>) {
    let src = f.source_repo();
    let dir = src.join(".devcontainer");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("devcontainer.json"), json).unwrap();
    if let Some(d) = dockerfile {
        std::fs::write(dir.join("Dockerfile"), d).unwrap();
        // Unique content: the image's tag is the context's hash.
        std::fs::write(dir.join("marker.txt"), format!("{}\n", std::process::id())).unwrap();
    }
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "devcontainer"]);
}

fn notes(v: &Value) -> String {
    v["applied"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

const ACCEPTANCE: &str = r#"// berth reads JSON with comments, as the format allows
{
  "name": "demo",
  /* the image: built from the Dockerfile beside this file */
  "build": { "dockerfile": "Dockerfile", "context": "." },
  "containerEnv": { "GREETING": "hello from the devcontainer", },
  "remoteEnv": { "REMOTE": "${containerEnv:GREETING} (remote)" },
  "remoteUser": "vscode",
  "postCreateCommand": {
    "held": "echo approved > /work/held.txt",
    "allowed": "touch /work/made-by-post-create"
  },
  "features": { "ghcr.io/devcontainers/features/node:1": {} },
  "forwardPorts": [3000],
}
"#;

#[test]
fn a_devcontainer_builds_the_image_sets_the_env_and_proposes_its_post_commands() {
    if !docker_answers() {
        return;
    }
    let project = format!("dc{}-a", std::process::id());
    let f = Fixture::named(&project);
    repo_with(
        &f,
        ACCEPTANCE,
        Some(
            "FROM berth-agent:latest\nCOPY marker.txt /etc/devcontainer-marker\nENV FROM_DOCKERFILE=yes\n",
        ),
    );
    f.ok(&["init"]);
    let src = f.source_repo();
    let doc = JsonDoc::load();
    let out = f.ok(&[
        "project",
        "add",
        &project,
        "--from",
        src.to_str().unwrap(),
        "--json",
    ]);
    doc.check("project add", &out);
    let added: Value = serde_json::from_str(&out).unwrap();
    let read = &added["devcontainer"];
    assert_eq!(read["status"], "read", "{added}");
    assert_eq!(read["applied"]["path"], ".devcontainer/devcontainer.json");
    assert_eq!(read["applied"]["image"]["kind"], "build", "{read}");
    assert_eq!(read["applied"]["image"]["built"], Value::Null);
    let said = notes(read);
    for want in [
        "remoteUser \"vscode\" is not used as a uid",
        "unsupported: features (ghcr.io/devcontainers/features/node:1)",
        "ignored: forwardPorts",
    ] {
        assert!(said.contains(want), "{want}: {said}");
    }
    f.edit_config(|t| t.replace("\nmode = \"auto\"\n", "\nmode = \"mounted\"\n"));
    // The policy allows `touch` in this project and nothing else new: the
    // other post command waits for a person.
    let rules = f.config().with_file_name("permissions.json");
    let text = std::fs::read_to_string(&rules).unwrap();
    std::fs::write(&rules, text.replace("\"ls\",", "\"ls\",\n    \"touch\",")).unwrap();

    // Not built yet: `up` says what to do.
    f.ok(&["agent", "activate", "dev-1", "--project", &project]);
    let (_, err) = f.err(&["up", "dev-1", "--project", &project]);
    assert!(
        err.contains(&format!("run `berth image build --project {project}`")),
        "{err}"
    );

    f.ok(&["image", "build"]);
    let out = f.ok(&["image", "build", "--project", &project, "--json"]);
    doc.check("image build", &out);
    let built: Value = serde_json::from_str(&out).unwrap();
    let tag = built["tag"].as_str().unwrap().to_string();
    let _image = RemoveImage(tag.clone());
    assert!(tag.starts_with("berth-build:"), "{built}");

    let out = f.ok(&["up", "dev-1", "--project", &project, "--json"]);
    doc.check("up", &out);
    let up: Value = serde_json::from_str(&out).unwrap();
    let runs = up["devcontainer"].as_array().unwrap();
    let by_name = |n: &str| {
        runs.iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {up}"))
    };
    let held = by_name("held");
    assert_eq!(held["status"], "pending", "{up}");
    assert_eq!(held["hook"], "postCreateCommand");
    let allowed = by_name("allowed");
    assert_eq!(allowed["status"], "executed", "{up}");
    assert_eq!(allowed["exit_code"], 0, "{up}");

    // The held one is a pending action of the agent, shown as such.
    let pending: Value = serde_json::from_str(&f.ok(&["actions", "--pending", "--json"])).unwrap();
    let id = held["action"].as_str().unwrap();
    let action = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("{id} not pending: {pending}"));
    assert_eq!(action["agent"], "dev-1", "{action}");
    let wt = std::path::PathBuf::from(up["worktree"].as_str().unwrap());
    assert!(wt.join("made-by-post-create").is_file());
    assert!(!wt.join("held.txt").exists());
    f.ok(&["approve", id]);
    assert_eq!(
        std::fs::read_to_string(wt.join("held.txt")).unwrap(),
        "approved\n"
    );

    // The image, the variables and the user, seen from inside.
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let exec = |line: &str| f.ok(&["exec", "dev-1", "--", line]);
    // A command's own environment (the image has no printenv).
    let env = exec("cat /proc/self/environ");
    let var = |name: &str| {
        env.split('\0')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{name} not in {env:?}"))
    };
    assert_eq!(
        exec("cat /etc/devcontainer-marker"),
        format!("{}\n", std::process::id())
    );
    assert_eq!(var("FROM_DOCKERFILE"), "yes");
    assert_eq!(var("GREETING"), "hello from the devcontainer");
    assert_eq!(var("REMOTE"), "hello from the devcontainer (remote)");
    assert_ne!(exec("id -u"), "0\n");
    assert_ne!(exec("id -un"), "vscode\n");
    assert_eq!(var("HOME"), "/home/agent");
    assert_eq!(
        exec("touch /home/agent/w && ls /home/agent/w"),
        "/home/agent/w\n"
    );

    // An agent's edit of devcontainer.json is held for a person (the file
    // names commands that run when a container is built); even approved
    // and committed on its own branch, it has no effect: berth reads the
    // forge's base branch.
    let held = f.run(&[
        "exec",
        "dev-1",
        "--",
        "printf '{\"image\": \"evil:latest\"}' > .devcontainer/devcontainer.json",
    ]);
    let stderr = String::from_utf8_lossy(&held.stderr);
    assert!(
        !held.status.success() && stderr.contains("never_auto") && stderr.contains(".devcontainer"),
        "{stderr}"
    );
    let id = stderr
        .split("berth approve ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no action id in {stderr}"));
    f.ok(&["approve", id]);
    exec("git commit -q -am 'take over the image'");
    let again = f.json(&["image", "build", "--project", &project, "--json"]);
    assert_eq!(again["tag"], tag.as_str(), "{again}");
    assert_eq!(again["up_to_date"], true);
    assert_eq!(
        again["devcontainer"]["applied"]["image"]["kind"], "build",
        "{again}"
    );
    let doctor = doctor_json(&f).to_string();
    assert!(!doctor.contains("evil"), "{doctor}");
    f.ok(&["down", "dev-1"]);
}

/// `berth doctor --json`, whatever its exit code (a check of this host may
/// fail).
fn doctor_json(f: &Fixture) -> Value {
    serde_json::from_slice(&f.run(&["doctor", "--json"]).stdout).unwrap()
}

#[test]
fn mounts_are_refused_unless_berth_toml_declares_them() {
    let f = Fixture::named("dcmounts");
    let cache = f.root().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let cache = cache.to_str().unwrap().to_string();
    repo_with(
        &f,
        &format!(
            r#"{{
  "image": "berth-agent:latest",
  "mounts": [
    "source={cache},target={cache},type=bind",
    {{ "source": "/etc", "target": "/host-etc", "type": "bind" }}
  ]
}}"#
        ),
        None,
    );
    f.ok(&["init"]);
    let src = f.source_repo();
    let added = f.json(&[
        "project",
        "add",
        "dcmounts",
        "--from",
        src.to_str().unwrap(),
        "--json",
    ]);
    let said = notes(&added["devcontainer"]);
    assert!(
        said.contains(&format!(
            "refused: mounts[0] (source={cache}, target={cache}, type=bind)"
        )),
        "{said}"
    );
    assert!(
        said.contains("refused: mounts[1] (source=/etc, target=/host-etc, type=bind)"),
        "{said}"
    );
    // The doctor warns while a mount is refused.
    let doctor = doctor_json(&f);
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["part"] == "devcontainer")
        .unwrap_or_else(|| panic!("{doctor}"))
        .clone();
    assert_eq!(check["status"], "warn", "{check}");

    // Declared in berth.toml, the same mount is berth.toml's; the other one
    // stays refused (applied at each load: berth.toml is the current one).
    f.edit_config(|t| t.replace("\ncaches = []\n", &format!("\ncaches = [\"{cache}\"]\n")));
    let doctor = doctor_json(&f).to_string();
    assert!(
        doctor.contains(&format!(
            "mounts[0] (source={cache}, target={cache}, type=bind): declared in berth.toml ([sandbox] caches, read-write)"
        )),
        "{doctor}"
    );
    assert!(doctor.contains("refused: mounts[1]"), "{doctor}");
}

#[test]
fn a_broken_file_names_line_and_column_and_keeps_what_was_read() {
    let f = Fixture::named("dcbroken");
    repo_with(&f, "{ \"image\": \"first:1\" }\n", None);
    f.ok(&["init"]);
    let src = f.source_repo();
    let out = f.ok(&[
        "project",
        "add",
        "dcbroken",
        "--from",
        src.to_str().unwrap(),
    ]);
    assert!(
        out.contains("devcontainer: .devcontainer/devcontainer.json read from main"),
        "{out}"
    );
    assert!(out.contains("image: first:1"), "{out}");

    // Broken on the base branch: read again, it fails naming the place.
    repo_with(
        &f,
        "{\n  \"image\": \"second:2\"\n  \"remoteUser\": \"x\"\n}\n",
        None,
    );
    f.ok(&["project", "sync", "dcbroken"]);
    let (_, err) = f.err(&["image", "build", "--project", "dcbroken"]);
    assert!(
        err.contains("main:.devcontainer/devcontainer.json:3:3: expected `,` or `}`"),
        "{err}"
    );
    assert!(err.contains("what berth read before is kept"), "{err}");
    // ... and what was read before is still what applies.
    let doctor = doctor_json(&f).to_string();
    assert!(
        doctor.contains("project dcbroken: .devcontainer/devcontainer.json read from main"),
        "{doctor}"
    );
    let snapshot = f
        .state()
        .join("projects/dcbroken/devcontainer.snapshot.json");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(snapshot).unwrap()).unwrap();
    assert!(kept["text"].as_str().unwrap().contains("first:1"), "{kept}");
    // A file berth.toml names must be on the branch.
    f.edit_config(|t| {
        t.replace(
            "\ndevcontainer = \"\"\n",
            "\ndevcontainer = \"ci/dc.json\"\n",
        )
    });
    let (_, err) = f.err(&["image", "build", "--project", "dcbroken"]);
    assert!(
        err.contains(
            "ci/dc.json is not on branch main, which berth.toml's `[sandbox] devcontainer` names"
        ),
        "{err}"
    );

    // A project added from a broken file is added all the same, and says so.
    let g = Fixture::named("dcbroken2");
    repo_with(&g, "{ \"image\": \"x\", /* never closed\n}\n", None);
    g.ok(&["init"]);
    let src = g.source_repo();
    let out = g.run(&[
        "project",
        "add",
        "dcbroken2",
        "--from",
        src.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("main:.devcontainer/devcontainer.json:1:17: a `/*` comment is never closed"),
        "{err}"
    );
    assert!(g.ok(&["project", "ls"]).contains("dcbroken2"));
}

#[test]
fn a_runner_berth_gets_the_variables_and_the_post_commands_too() {
    let f = Fixture::named("dcrunner");
    repo_with(
        &f,
        r#"{
  "containerEnv": { "GREETING": "hi" },
  "postCreateCommand": ["touch", "${containerWorkspaceFolder}/created"],
  "postStartCommand": "touch /work/started",
}"#,
        None,
    );
    f.ok(&["init"]);
    let src = f.source_repo();
    f.ok(&[
        "project",
        "add",
        "dcrunner",
        "--from",
        src.to_str().unwrap(),
    ]);
    f.edit_config(|t| t.replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n"));
    let rules = f.config().with_file_name("permissions.json");
    let text = std::fs::read_to_string(&rules).unwrap();
    std::fs::write(&rules, text.replace("\"ls\",", "\"ls\",\n    \"touch\",")).unwrap();
    f.ok(&["agent", "activate", "dev-1", "--project", "dcrunner"]);
    let up = f.json(&["up", "dev-1", "--project", "dcrunner", "--json"]);
    let runs: Vec<(String, String)> = up["devcontainer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["command"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("touch /work/created".to_string(), "executed".to_string()),
            ("touch /work/started".to_string(), "executed".to_string()),
        ],
        "{up}"
    );
    let wt = std::path::PathBuf::from(up["worktree"].as_str().unwrap());
    assert!(wt.join("created").is_file() && wt.join("started").is_file());
    // Up again while up: neither runs again.
    let again = f.json(&["up", "dev-1", "--project", "dcrunner", "--json"]);
    assert_eq!(again.get("devcontainer"), None, "{again}");
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    // The host's printenv, in the runner.
    assert_eq!(f.ok(&["exec", "dev-1", "--", "printenv GREETING"]), "hi\n");
    f.ok(&["down", "dev-1"]);
    // Brought up again, as a person reads it.
    let out = f.ok(&["up", "dev-1", "--project", "dcrunner"]);
    assert!(
        out.contains("postStartCommand: `touch /work/started` ran (exit 0)"),
        "{out}"
    );
    f.ok(&["down", "dev-1"]);
}
