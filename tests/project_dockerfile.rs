#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `[sandbox.build]` with its context on the project's base branch, through
//! the `berth` binary against the real Docker engine and real git: the
//! Dockerfile committed on the base branch is checked out of the forge and
//! built by `berth image build --project P`, which records the image `berth
//! up` runs; an agent's edit of the Dockerfile in its worktree changes
//! nothing; once the edit is merged into the base branch, `up` says the
//! image is older than the branch, and after a rebuild the new image is the
//! one a berth runs.
//!
//! Skips without a Docker engine, except under `CI=true`, where it fails.

use crate::cli::JsonDoc;
use crate::docker::{RemoveImage, docker_answers};
use crate::fixture::{Fixture, git, git_out};
use crate::mcp::Client;

use serde_json::{Value, json};

/// The Dockerfile of the project, with `marker` as its `MARKER`.
fn dockerfile(marker: &str) -> String {
    format!("FROM berth-agent:latest\nCOPY marker.txt /etc/marker.txt\nENV MARKER={marker}\n")
}

#[test]
fn a_dockerfile_on_the_base_branch_is_built_and_only_a_merged_change_reaches_the_image() {
    if !docker_answers() {
        return;
    }
    let project = format!("pd{}", std::process::id());
    let f = Fixture::named(&project);
    let src = f.source_repo();
    std::fs::create_dir_all(src.join("docker")).unwrap();
    std::fs::write(src.join("docker/Dockerfile"), dockerfile("one")).unwrap();
    // Unique content: the image's tag is the context's hash.
    std::fs::write(
        src.join("docker/marker.txt"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "the project's Dockerfile"]);
    f.ok(&["init"]);
    f.ok(&["project", "add", &project, "--from", src.to_str().unwrap()]);
    f.edit_config(|t| {
        let t = t.replace("\nmode = \"auto\"\n", "\nmode = \"mounted\"\n");
        let at = t.find("[sandbox.build]\n").unwrap();
        let (head, tail) = t.split_at(at);
        format!(
            "{head}{}",
            tail.replacen("context = \"\"", "context = \"docker\"", 1)
        )
    });
    let forge = f.state().join("forge").join(format!("{project}.git"));
    let forge_main = || git_out(&forge, &["rev-parse", "main"]).trim().to_string();
    let doc = JsonDoc::load();

    // Nothing built yet: `up` says what to do, and so does the doctor.
    f.ok(&["agent", "activate", "dev-1", "--project", &project]);
    let (_, err) = f.err(&["up", "dev-1", "--project", &project]);
    assert!(
        err.contains("docker/Dockerfile on its base branch) is not built")
            && err.contains(&format!("run `berth image build --project {project}`")),
        "{err}"
    );
    let doctor = String::from_utf8_lossy(&f.run(&["doctor"]).stdout).into_owned();
    assert!(doctor.contains("is not built"), "{doctor}");

    // Built from the base branch's tip, and recorded.
    f.ok(&["image", "build"]);
    let out = f.ok(&["image", "build", "--project", &project, "--json"]);
    doc.check("image build", &out);
    let first: Value = serde_json::from_str(&out).unwrap();
    let tag = first["tag"].as_str().unwrap().to_string();
    let _first_image = RemoveImage(tag.clone());
    assert!(tag.starts_with("berth-build:"), "{first}");
    assert_eq!(
        first["dockerfile"]["commit"].as_str(),
        Some(forge_main().as_str())
    );
    assert_eq!(first["dockerfile"]["context"], "docker");
    assert_eq!(
        first["dockerfile"]["tree"].as_str().unwrap(),
        git_out(&forge, &["rev-parse", "main:docker"]).trim()
    );
    // No checkout is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(f.state().join("projects").join(&project))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".dockerfile-build-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let up = f.json(&["up", "dev-1", "--project", &project, "--json"]);
    assert_eq!(up["note"], Value::Null, "{up}");
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let exec = |line: &str| f.ok(&["exec", "dev-1", "--", line]);
    let marker = || {
        exec("cat /proc/self/environ")
            .split('\0')
            .find_map(|kv| kv.strip_prefix("MARKER=").map(str::to_string))
            .unwrap_or_default()
    };
    assert_eq!(marker(), "one");
    assert_eq!(
        exec("cat /etc/marker.txt"),
        format!("{}\n", std::process::id())
    );

    // The agent edits the Dockerfile in its worktree and commits it on its
    // branch: neither a build nor `up` sees it.
    exec(&format!(
        "printf '{}' > docker/Dockerfile",
        dockerfile("two").replace('\n', "\\n")
    ));
    exec("git commit -q -am 'MARKER=two'");
    let again = f.json(&["image", "build", "--project", &project, "--json"]);
    assert_eq!(
        (again["tag"].as_str(), &again["up_to_date"]),
        (Some(tag.as_str()), &json!(true)),
        "{again}"
    );
    f.ok(&["down", "dev-1", "--keep-worktree"]);
    let up = f.json(&["up", "dev-1", "--project", &project, "--json"]);
    assert_eq!(up["note"], Value::Null, "{up}");
    assert_eq!(marker(), "one");

    // Pushed, proposed, merged by a person: the base branch moved.
    let mut agent = Client::start(&f.state(), "dev-1");
    let pushed = agent.call("push", json!({}));
    assert_eq!(pushed["structured"]["status"], "executed", "{pushed}");
    let pr = agent.call("open_pr", json!({"title": "MARKER=two"}));
    assert_eq!(pr["structured"]["result"]["kind"], "pr_open", "{pr}");
    drop(agent);
    let number = pr["structured"]["result"]["number"].to_string();
    assert_eq!(f.run(&["pr", "merge", &number]).status.code(), Some(3));
    let pending = f.json(&["actions", "--pending", "--json"]);
    f.ok(&["approve", pending[0]["id"].as_str().unwrap()]);
    // A PR an agent opened with no task behind it is settled by its merge too.
    let shown = f.json(&["pr", "show", &number, "--json"]);
    assert_eq!(shown["status"], "merged", "{shown}");
    let merged = forge_main();
    assert_ne!(merged, first["dockerfile"]["commit"].as_str().unwrap());

    // Until a person builds again, berths run the image built before, and
    // `up` says so.
    f.ok(&["down", "dev-1", "--keep-worktree"]);
    let up = f.json(&["up", "dev-1", "--project", &project, "--json"]);
    let note = up["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("context docker changed on main since its image was built")
            && note.contains(&format!("berth image build --project {project}")),
        "{up}"
    );
    assert_eq!(marker(), "one");
    // The doctor says so too, with the command.
    let doctor = String::from_utf8_lossy(&f.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains("context docker changed on main since its image was built")
            && doctor.contains(&format!("berth image build --project {project}")),
        "{doctor}"
    );

    // Built again: the merged Dockerfile is the image.
    let second = f.json(&["image", "build", "--project", &project, "--json"]);
    let new_tag = second["tag"].as_str().unwrap().to_string();
    let _second_image = RemoveImage(new_tag.clone());
    assert_ne!(new_tag, tag, "{second}");
    assert_eq!(
        second["dockerfile"]["commit"].as_str(),
        Some(merged.as_str())
    );
    f.ok(&["down", "dev-1", "--keep-worktree"]);
    let up = f.json(&["up", "dev-1", "--project", &project, "--json"]);
    assert_eq!(up["note"], Value::Null, "{up}");
    assert_eq!(marker(), "two");
    let doctor = String::from_utf8_lossy(&f.run(&["doctor"]).stdout).into_owned();
    assert!(!doctor.contains("changed on main"), "{doctor}");
    f.ok(&["down", "dev-1", "--keep-worktree"]);

    // The recorded image removed: `up` says to build it again.
    f.ok(&["image", "rm", &new_tag]);
    let (_, err) = f.err(&["up", "dev-1", "--project", &project]);
    assert!(
        err.contains(&format!(
            "image {new_tag}, built from its Dockerfile on the base branch, cannot be used"
        )) && err.contains(&format!("run `berth image build --project {project}`")),
        "{err}"
    );
}
