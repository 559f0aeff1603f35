//! `berth image build`: the default agent image, assembled from this host's
//! files by the recipe (`images/agent/recipe.toml`, compiled in) and built
//! through the Docker API — no registry is reachable. The tag is a hash of
//! the recipe and its resolved inputs, so a second build with nothing changed
//! does no work. With `--project P`, the project's image instead: its
//! Dockerfile (`[sandbox.build]`) built the same way — its context checked
//! out of the base branch in the forge, and the image recorded for `berth
//! up` — or its named image found; else its `devcontainer.json`, read again
//! from the base branch in the forge, whose Dockerfile is built from that
//! commit's files. `berth image ls` and `berth image rm` list and remove the
//! images berth built (and only those).

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;
use berth_engine::Engine;
use berth_engine::devcontainer::{DevImage, DevcontainerBuild, DevcontainerRead};
use berth_engine::project_image::{BaseBranchBuild, context_problem, image_ref};
use berth_engine::state::StateDir;
use berth_sandbox::docker::DockerBackend;
use berth_sandbox::image::{BuildEvent, BuiltImage, ImageRef, Recipe};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum ImageCommand {
    /// Build the default agent image, or a project's (only when its recipe,
    /// inputs or build context changed).
    Build(BuildArgs),
    /// List the images berth built.
    Ls {
        /// One JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Remove an image berth built (by tag or id); never another one.
    Rm {
        /// `repo:tag` or an image id.
        image: String,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// A recipe file instead of the compiled-in default.
    #[arg(long, value_name = "FILE", conflicts_with = "project")]
    recipe: Option<PathBuf>,
    /// The image of this project's `[sandbox]` settings.
    #[arg(long, value_name = "P")]
    project: Option<String>,
    /// Print the engine's build output line by line.
    #[arg(long, short)]
    verbose: bool,
    /// Print one JSON object at the end (the progress goes to stderr).
    #[arg(long)]
    json: bool,
}

pub async fn run(state: Option<PathBuf>, cmd: ImageCommand) -> anyhow::Result<u8> {
    match cmd {
        ImageCommand::Build(a) => build(state, a).await,
        ImageCommand::Ls { json } => list(json).await,
        ImageCommand::Rm { image, json } => remove(&image, json).await,
    }
}

async fn list(json: bool) -> anyhow::Result<u8> {
    let backend = DockerBackend::connect().await?;
    let images = backend.list_berth_images().await?;
    if json {
        super::print_json(&images)?;
        return Ok(0);
    }
    if images.is_empty() {
        println!("no images built by berth (`berth image build`)");
        return Ok(0);
    }
    for i in &images {
        let tags = if i.tags.is_empty() {
            "(untagged)".to_string()
        } else {
            i.tags.join(", ")
        };
        println!(
            "{:<12} {:<10} {:>8.1} MiB  {tags}",
            i.id.trim_start_matches("sha256:")
                .get(..12)
                .unwrap_or(&i.id),
            i.source,
            i.bytes as f64 / (1u64 << 20) as f64
        );
    }
    Ok(0)
}

async fn remove(image: &str, json: bool) -> anyhow::Result<u8> {
    let backend = DockerBackend::connect().await?;
    let removed = backend.remove_berth_image(image).await?;
    if json {
        super::print_json(&serde_json::json!({ "image": image, "removed": removed }))?;
    } else {
        for r in &removed {
            println!("removed {r}");
        }
    }
    Ok(0)
}

/// A project's image, and what its devcontainer.json gave it.
struct ProjectTarget {
    image: ImageRef,
    /// The devcontainer's Dockerfile checked out of the forge (removed on
    /// drop), when that is what is built.
    devcontainer_build: Option<DevcontainerBuild>,
    /// `[sandbox.build]`'s context checked out of the base branch (removed
    /// on drop), when that is what is built.
    branch_build: Option<BaseBranchBuild>,
    /// What reading devcontainer.json found (`--json`'s `devcontainer`).
    devcontainer: Option<serde_json::Value>,
    engine: Engine,
}

/// The image of project `project`: its `[sandbox]` settings (once a build
/// context is known to lie outside berth's state), else its
/// devcontainer.json read again from the base branch. A broken file fails
/// here and what berth read before is kept.
async fn project_image(
    state: Option<PathBuf>,
    project: &str,
    json: bool,
) -> anyhow::Result<ProjectTarget> {
    let dir = StateDir::locate(state.as_deref())
        .context("no state directory: pass --state DIR or set BERTH_HOME")?;
    let engine = super::open_engine(dir.clone()).await?;
    let read = engine.read_devcontainer(project).await;
    if !json {
        super::devcontainer::print(project, &read);
    }
    let read = read?;
    let devcontainer = match &read {
        DevcontainerRead::Absent { .. } => None,
        r => serde_json::to_value(r).ok(),
    };
    let (config, _) = engine
        .load_project_files(project)
        .with_context(|| format!("reading project {project}'s configuration"))?;
    for w in &config.warnings {
        eprintln!("berth: warning: {w}");
    }
    if let Some(problem) = context_problem(&config, dir.root()) {
        anyhow::bail!("project {project}: {problem}");
    }
    let from_devcontainer = matches!(
        config.devcontainer.as_ref().map(|d| &d.image),
        Some(DevImage::Build { .. })
    );
    let devcontainer_build = if from_devcontainer {
        engine.devcontainer_build(project).await?
    } else {
        None
    };
    let branch_build = engine.base_branch_build(project).await?;
    let image = match (&devcontainer_build, &branch_build) {
        (Some(b), _) => ImageRef::Dockerfile(b.build.clone()),
        (None, Some(b)) => ImageRef::Dockerfile(b.build.clone()),
        (None, None) => image_ref(&config),
    };
    Ok(ProjectTarget {
        image,
        devcontainer_build,
        branch_build,
        devcontainer,
        engine,
    })
}

async fn build(state: Option<PathBuf>, a: BuildArgs) -> anyhow::Result<u8> {
    let project = match &a.project {
        Some(p) => Some(project_image(state, p, a.json).await?),
        None => None,
    };
    let code = build_target(&a, project.as_ref()).await;
    if let Some(p) = project {
        let ProjectTarget {
            engine,
            devcontainer_build,
            branch_build,
            ..
        } = p;
        drop((devcontainer_build, branch_build));
        engine.close().await;
    }
    code
}

async fn build_target(a: &BuildArgs, project: Option<&ProjectTarget>) -> anyhow::Result<u8> {
    let target = project
        .map(|p| p.image.clone())
        .unwrap_or(ImageRef::DefaultAgent);
    let devcontainer = project.and_then(|p| p.devcontainer.clone());
    let branch_build = project.and_then(|p| p.branch_build.as_ref());
    let recipe = match &a.recipe {
        Some(path) => Recipe::from_file(path)?,
        None => Recipe::default_agent()?,
    };
    let backend = DockerBackend::connect().await?;
    let json = a.json;
    // With `--json`, stdout holds only the final object: progress goes to stderr.
    macro_rules! say {
        ($($t:tt)*) => {
            if json { eprintln!($($t)*) } else { println!($($t)*) }
        };
    }
    match &target {
        ImageRef::DefaultAgent => say!("berth image build: recipe {}", recipe.origin()),
        ImageRef::Dockerfile(b) => match project.and_then(|p| p.devcontainer_build.as_ref()) {
            Some(d) => say!(
                "berth image build: devcontainer.json's {} at commit {}",
                b.dockerfile,
                d.commit.get(..12).unwrap_or(&d.commit)
            ),
            None => match branch_build {
                Some(r) => say!(
                    "berth image build: {} in {} on {} at commit {}",
                    b.dockerfile,
                    if r.record.context.is_empty() {
                        "."
                    } else {
                        &r.record.context
                    },
                    r.record.branch,
                    r.record.commit.get(..12).unwrap_or(&r.record.commit)
                ),
                None => say!(
                    "berth image build: {} in {} (a host path: deprecated, see the warning)",
                    b.dockerfile,
                    b.context.display()
                ),
            },
        },
        ImageRef::Named(name) => {
            // Nothing to build: say whether it is there.
            let found = backend.ensure_image(&target).await?;
            if json {
                // The fields of a build: nothing was built, nothing resolved.
                let mut out = serde_json::json!({
                    "tag": found.name,
                    "latest": found.name,
                    "id": found.id,
                    "up_to_date": true,
                    "entries": 0,
                    "bytes": 0,
                });
                if let Some(d) = devcontainer {
                    out["devcontainer"] = d;
                }
                super::print_json(&out)?;
            } else {
                println!("{name}: a local image the project names; nothing to build");
            }
            return Ok(0);
        }
    }
    let verbose = a.verbose;
    // On a terminal (and unless the engine's lines were asked for), the
    // build's steps drive one bar; elsewhere each step is a line a log keeps.
    let bar = (!json && !verbose && std::io::stdout().is_terminal()).then(|| {
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template("  [{bar:30}] {pos}/{len} {wide_msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    });
    let mut progress = |event: BuildEvent<'_>| {
        match event {
            BuildEvent::Resolved { tag, bytes, .. }
                if matches!(target, ImageRef::Dockerfile(_)) =>
            {
                say!(
                    "  build context of {:.1} MiB -> {tag}",
                    bytes as f64 / (1u64 << 20) as f64
                )
            }
            BuildEvent::Resolved {
                tag,
                entries,
                bytes,
            } => say!(
                "  resolved {entries} files ({:.1} MiB) from this host -> {tag}",
                bytes as f64 / (1u64 << 20) as f64
            ),
            BuildEvent::UpToDate { tag } => {
                say!("  {tag} is up to date: nothing to build")
            }
            BuildEvent::ContextReady { bytes } => say!(
                "  build context ready ({:.1} MiB); building",
                bytes as f64 / (1u64 << 20) as f64
            ),
            BuildEvent::Step { line } => match (&bar, step_of(line)) {
                (Some(bar), Some((at, of))) => {
                    bar.set_length(of);
                    bar.set_position(at);
                    bar.set_message(line.to_string());
                }
                (Some(_), None) => {}
                (None, Some(_)) => say!("  {line}"),
                (None, None) if verbose => say!("    {line}"),
                (None, None) => {}
            },
            BuildEvent::Built { tag, id, elapsed } => {
                if let Some(bar) = &bar {
                    bar.finish_and_clear();
                }
                say!(
                    "  built {tag} ({}) in {:.1} s",
                    id.trim_start_matches("sha256:").get(..12).unwrap_or(id),
                    elapsed.as_secs_f64()
                )
            }
        }
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
    };
    let built: Result<BuiltImage, _> = match &target {
        ImageRef::Dockerfile(b) => backend.build_dockerfile(b, &mut progress).await,
        _ => backend.build_image(&recipe, &mut progress).await,
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let built = built.context("building the image")?;
    if let Some(p) = project
        && let Some(b) = &p.devcontainer_build
        && let Some(name) = &a.project
    {
        // `up` runs this image from now on, until the file is read again.
        p.engine
            .record_devcontainer_image(name, &b.commit, &built.tag)?;
    }
    if let Some(p) = project
        && let Some(b) = &p.branch_build
        && let Some(name) = &a.project
    {
        // `up` runs this image from now on, until it is built again.
        p.engine.record_dockerfile_image(name, b, &built.tag)?;
    }
    if json {
        let mut out = serde_json::json!({
            "tag": built.tag,
            "latest": built.latest,
            "id": built.id,
            "up_to_date": built.up_to_date,
            "entries": built.entries,
            "bytes": built.bytes,
        });
        if let Some(d) = devcontainer {
            out["devcontainer"] = d;
        }
        if let Some(b) = branch_build {
            out["dockerfile"] = serde_json::json!({
                "branch": b.record.branch,
                "commit": b.record.commit,
                "context": b.record.context,
                "tree": b.record.tree,
            });
        }
        super::print_json(&out)?;
        return Ok(0);
    }
    println!(
        "{} -> {}{}",
        built.latest,
        built.tag,
        if built.up_to_date { " (unchanged)" } else { "" }
    );
    Ok(0)
}

/// `(k, n)` of the engine's `Step k/n : …` line.
fn step_of(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("Step ")?;
    let (k, rest) = rest.split_once('/')?;
    let n = rest.split_whitespace().next()?;
    Some((k.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::step_of;

    #[test]
    fn steps_are_read_from_the_engines_lines() {
        for (line, want) in [
            ("Step 3/7 : COPY rootfs/ /", Some((3, 7))),
            ("Step 12/12 : LABEL x=y", Some((12, 12))),
            (" ---> Running in 1234", None),
            ("Step x/7 : COPY", None),
            ("Step 3/ : COPY", None),
            ("Successfully built abc", None),
        ] {
            assert_eq!(step_of(line), want, "{line}");
        }
    }
}
