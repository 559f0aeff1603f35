//! `berth image build`: the default agent image, assembled from this host's
//! files by the recipe (`images/agent/recipe.toml`, compiled in) and built
//! through the Docker API — no registry is reachable. The tag is a hash of
//! the recipe and its resolved inputs, so a second build with nothing changed
//! does no work.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;
use berth_sandbox::docker::DockerBackend;
use berth_sandbox::image::{BuildEvent, Recipe};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Debug, clap::Subcommand)]
pub enum ImageCommand {
    /// Build the default agent image (only when its recipe or inputs changed).
    Build(BuildArgs),
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// A recipe file instead of the compiled-in default.
    #[arg(long, value_name = "FILE")]
    recipe: Option<PathBuf>,
    /// Print the engine's build output line by line.
    #[arg(long, short)]
    verbose: bool,
    /// Print one JSON object at the end (the progress goes to stderr).
    #[arg(long)]
    json: bool,
}

pub async fn run(cmd: ImageCommand) -> anyhow::Result<u8> {
    match cmd {
        ImageCommand::Build(a) => build(a).await,
    }
}

async fn build(a: BuildArgs) -> anyhow::Result<u8> {
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
    say!("berth image build: recipe {}", recipe.origin());
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
    let built = backend.build_image(&recipe, &mut progress).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let built = built.context("building the agent image")?;
    if json {
        super::print_json(&serde_json::json!({
            "tag": built.tag,
            "latest": built.latest,
            "id": built.id,
            "up_to_date": built.up_to_date,
            "entries": built.entries,
            "bytes": built.bytes,
        }))?;
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
