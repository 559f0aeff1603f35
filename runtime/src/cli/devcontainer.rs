//! How the CLI says what berth made of a project's `devcontainer.json`
//! (`berth project add`, `berth image build --project P`): where it was
//! read from, the image, what each key became, and every note — refused,
//! unsupported, ignored, overridden — so nothing in the file goes unsaid.

use berth_engine::devcontainer::{Applied, DevImage, DevcontainerRead};

/// The read as `--json` prints it: `status` `absent`, `read` (with
/// `applied`) or `error` (with `error`).
pub fn json(read: &Result<DevcontainerRead, berth_engine::EngineError>) -> serde_json::Value {
    match read {
        Ok(r) => serde_json::to_value(r).unwrap_or(serde_json::Value::Null),
        Err(e) => serde_json::json!({ "status": "error", "error": e.to_string() }),
    }
}

/// The read as lines for a person (stdout; an error to stderr).
pub fn print(project: &str, read: &Result<DevcontainerRead, berth_engine::EngineError>) {
    match read {
        Ok(DevcontainerRead::Absent { .. }) => {}
        Ok(DevcontainerRead::Read { applied }) => print_applied(project, applied),
        Err(e) => eprintln!("berth: devcontainer.json of project {project}: {e}"),
    }
}

fn print_applied(project: &str, a: &Applied) {
    println!(
        "devcontainer: {} read from {} at {} (berth.toml keys override its values)",
        a.path,
        a.branch,
        a.commit.get(..12).unwrap_or(&a.commit)
    );
    match &a.image {
        DevImage::None => {}
        DevImage::Named { name } => println!("  image: {name}"),
        DevImage::Build {
            context,
            dockerfile,
            built,
            ..
        } => println!(
            "  image: built from {dockerfile} in {}{}",
            if context.is_empty() { "/" } else { context },
            match built {
                Some(tag) => format!(" ({tag})"),
                None => format!(": run `berth image build --project {project}`"),
            }
        ),
        DevImage::Overridden => println!("  image: berth.toml's"),
    }
    if !a.container_env.is_empty() {
        let names: Vec<&str> = a.container_env.keys().map(String::as_str).collect();
        println!("  containerEnv: {}", names.join(", "));
    }
    if !a.remote_env.is_empty() {
        let names: Vec<&str> = a.remote_env.keys().map(String::as_str).collect();
        println!("  remoteEnv: {}", names.join(", "));
    }
    for c in &a.post_commands {
        println!(
            "  {}{}: {} (proposed by the agent through the policy at `berth up`)",
            c.hook,
            c.name
                .as_deref()
                .map(|n| format!(".{n}"))
                .unwrap_or_default(),
            c.command
        );
    }
    for n in &a.notes {
        println!("  {n}");
    }
}
