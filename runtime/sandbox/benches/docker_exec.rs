//! Docker backend benchmarks against the real engine; prints tables.
//!
//! 1. exec of `true` in a warm container: berth's in-process path, through
//!    the exec agent and through Docker, against a bare bollard exec
//!    (create, start, drain, inspect) — goal ≤ 1.1×, the agent ≤ 5 ms;
//!    `docker exec <c> true` (the CLI) for reference.
//! 2. `up` against `docker run -d` and `git worktree add`.
//! 3. 20 berths running 50 commands each concurrently: throughput, peak RSS
//!    of this process, and nothing left behind.
//! 4. The agent image: a full build, and the up-to-date check.
//! 5. Any image (berth's tools injected at `/opt/berth`): assembling the tool
//!    set cold and warm, `up` of a named image against `docker run -d` +
//!    `git worktree add`, and the per-exec cost of the injected tools
//!    (`true`, and git started through the injected loader).
//!
//! `cargo bench -p berth-sandbox --bench docker_exec` (needs the engine;
//! `BERTH_BENCH_N` sets the exec samples, default 200).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_sandbox::docker::{ContainerSpec, DockerBackend, DockerBerth};
use berth_sandbox::image::{DEFAULT_RECIPE, NoProgress, Recipe};
use berth_sandbox::{ExecRequest, ExitStatus, Sandbox};
use bollard::exec::{CreateExecOptions, StartExecResults};
use futures_util::StreamExt;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A forge with one commit; agents get a bare repo borrowing its objects and
/// a linked worktree, chowned to 1000 (as the worktrees crate provisions).
struct Layout {
    root: PathBuf,
    forge: PathBuf,
    project: String,
}

impl Layout {
    fn new(root: &Path, project: &str) -> Layout {
        let seed = root.join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "-q", "-b", "main"]);
        std::fs::write(seed.join("README.md"), "bench\n").unwrap();
        git(&seed, &["add", "README.md"]);
        git(&seed, &["commit", "-q", "-m", "first"]);
        let forge = root.join(format!("forge/{project}.git"));
        std::fs::create_dir_all(forge.parent().unwrap()).unwrap();
        git(
            root,
            &[
                "clone",
                "-q",
                "--bare",
                seed.to_str().unwrap(),
                forge.to_str().unwrap(),
            ],
        );
        Layout {
            root: root.to_path_buf(),
            forge,
            project: project.to_string(),
        }
    }

    /// Provisions an agent; returns the spec and the time `git worktree add`
    /// took.
    fn spec(&self, agent: &str) -> (ContainerSpec, Duration) {
        let repo = self
            .root
            .join(format!("agents/{}/{agent}.git", self.project));
        std::fs::create_dir_all(repo.parent().unwrap()).unwrap();
        git(
            &self.root,
            &["init", "-q", "--bare", repo.to_str().unwrap()],
        );
        let objects = self.forge.join("objects");
        std::fs::write(
            repo.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )
        .unwrap();
        let main = git(&self.forge, &["rev-parse", "refs/heads/main"]);
        git(&repo, &["update-ref", "refs/heads/main", main.trim()]);
        let worktree = self
            .root
            .join(format!("worktrees/{}/{agent}", self.project));
        std::fs::create_dir_all(worktree.parent().unwrap()).unwrap();
        let t = Instant::now();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("agent/{agent}/t1"),
                worktree.to_str().unwrap(),
                "main",
            ],
        );
        let took = t.elapsed();
        for p in [&repo, &worktree] {
            assert!(
                Command::new("chown")
                    .args(["-R", "1000:1000"])
                    .arg(p)
                    .status()
                    .unwrap()
                    .success()
            );
        }
        (
            ContainerSpec::new(&self.project, agent, worktree, repo, objects),
            took,
        )
    }
}

struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
    fn new(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        Stats { samples }
    }
    fn pct(&self, p: f64) -> Duration {
        let i = ((self.samples.len() as f64 - 1.0) * p).round() as usize;
        self.samples[i]
    }
    fn mean(&self) -> Duration {
        self.samples.iter().sum::<Duration>() / self.samples.len() as u32
    }
    fn row(&self, name: &str) {
        println!(
            "| {name:<44} | {:>5} | {:>8.2} | {:>8.2} | {:>8.2} | {:>8.2} |",
            self.samples.len(),
            ms(self.mean()),
            ms(self.pct(0.5)),
            ms(self.pct(0.95)),
            ms(self.samples[0]),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn header() {
    println!(
        "| {:<44} | {:>5} | {:>8} | {:>8} | {:>8} | {:>8} |",
        "what", "n", "mean ms", "p50 ms", "p95 ms", "min ms"
    );
    println!(
        "|{:-<46}|{:->7}|{:->10}|{:->10}|{:->10}|{:->10}|",
        "", "", "", "", "", ""
    );
}

async fn bare_exec(docker: &bollard::Docker, container: &str) {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions::<String> {
                cmd: Some(vec!["true".to_string()]),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                tty: Some(false),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    if let StartExecResults::Attached { mut output, .. } =
        docker.start_exec(&created.id, None).await.unwrap()
    {
        while output.next().await.is_some() {}
    }
    loop {
        let i = docker.inspect_exec(&created.id).await.unwrap();
        if i.running != Some(true) {
            assert_eq!(i.exit_code, Some(0));
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn berth_exec(berth: &DockerBerth) {
    let out = berth.exec(ExecRequest::argv(["true"]), None).await.unwrap();
    assert_eq!(out.status, ExitStatus::Exited(0));
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

async fn stray_processes(berth: &DockerBerth) -> usize {
    let out = berth
        .exec(
            ExecRequest::shell("ps -o args= | grep -c '^sleep 100' || true"),
            None,
        )
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout.bytes)
        .trim()
        .parse()
        .unwrap_or(usize::MAX)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let n: usize = std::env::var("BERTH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let backend = DockerBackend::connect()
        .await
        .expect("the benchmarks need a Docker engine");
    let project = format!("bench{}", std::process::id());
    let dir = tempfile::Builder::new()
        .prefix("berth-bench-")
        .tempdir()
        .unwrap();
    let layout = Layout::new(dir.path(), &project);

    // 4 first: it also makes sure the default image is there.
    println!("\n## agent image\n");
    header();
    let bench_name = format!("berth-bench-image-{}", std::process::id());
    let text = DEFAULT_RECIPE.replacen(
        "name = \"berth-agent\"",
        &format!("name = \"{bench_name}\""),
        1,
    );
    let recipe = Recipe::parse(&text, "bench recipe").unwrap();
    let t = Instant::now();
    let built = backend.build_image(&recipe, &mut NoProgress).await.unwrap();
    let full_build = t.elapsed();
    assert!(!built.up_to_date);
    Stats::new(vec![full_build]).row(&format!(
        "build from scratch ({} entries, {} MB)",
        built.entries,
        built.bytes >> 20
    ));
    let mut checks = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        assert!(
            backend
                .build_image(&recipe, &mut NoProgress)
                .await
                .unwrap()
                .up_to_date
        );
        checks.push(t.elapsed());
    }
    Stats::new(checks).row("build when up to date (resolve + inspect)");
    let _ = backend
        .docker()
        .remove_image(
            &built.tag,
            Some(bollard::query_parameters::RemoveImageOptions {
                force: true,
                ..Default::default()
            }),
            None,
        )
        .await;
    let _ = backend
        .docker()
        .remove_image(
            &built.latest,
            Some(bollard::query_parameters::RemoveImageOptions {
                force: true,
                ..Default::default()
            }),
            None,
        )
        .await;
    backend
        .build_image(&Recipe::default_agent().unwrap(), &mut NoProgress)
        .await
        .unwrap();

    // 1. exec of `true`, interleaved so both paths see the same engine load.
    println!("\n## exec `true` in a warm container\n");
    let (spec, _) = layout.spec("warm");
    let berth = backend.up(spec).await.unwrap();
    // The same with its exec agent (what the engine's berths have).
    let (mut spec, _) = layout.spec("agent");
    spec.exec_socket_root = Some(dir.path().join("sockets"));
    let through_agent = backend.up(spec).await.unwrap();
    let docker = backend.docker().clone();
    for _ in 0..10 {
        berth_exec(&berth).await;
        berth_exec(&through_agent).await;
        bare_exec(&docker, berth.container_name()).await;
    }
    let (mut ours, mut agent, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        berth_exec(&berth).await;
        ours.push(t.elapsed());
        let t = Instant::now();
        berth_exec(&through_agent).await;
        agent.push(t.elapsed());
        let t = Instant::now();
        bare_exec(&docker, berth.container_name()).await;
        bare.push(t.elapsed());
    }
    let mut cli = Vec::new();
    for _ in 0..(n / 4).max(10) {
        let t = Instant::now();
        let st = Command::new("docker")
            .args(["exec", berth.container_name(), "true"])
            .status()
            .unwrap();
        cli.push(t.elapsed());
        assert!(st.success());
    }
    let (ours, agent, bare, cli) = (
        Stats::new(ours),
        Stats::new(agent),
        Stats::new(bare),
        Stats::new(cli),
    );
    header();
    agent.row("berth DockerBerth::exec through the exec agent");
    ours.row("berth DockerBerth::exec (wrapper, kill, trailer)");
    bare.row("bare bollard exec (create/start/drain/inspect)");
    cli.row("`docker exec <c> true` (CLI, end to end)");
    println!(
        "\nratio berth / bare bollard: mean {:.3}×, p50 {:.3}× (goal ≤ 1.1×)",
        ms(ours.mean()) / ms(bare.mean()),
        ms(ours.pct(0.5)) / ms(bare.pct(0.5))
    );
    println!(
        "ratio exec agent / bare bollard: mean {:.3}×, p50 {:.3}× (in-process goal ≤ 5 ms: p50 {:.2} ms)",
        ms(agent.mean()) / ms(bare.mean()),
        ms(agent.pct(0.5)) / ms(bare.pct(0.5)),
        ms(agent.pct(0.5))
    );

    // 2. up against docker run + git worktree add.
    println!("\n## bringing a berth up\n");
    let mut ups = Vec::new();
    let mut adopts = Vec::new();
    let mut worktree_adds = Vec::new();
    for i in 0..10 {
        let (spec, took) = layout.spec(&format!("up{i}"));
        worktree_adds.push(took);
        let t = Instant::now();
        let b = backend.up(spec.clone()).await.unwrap();
        ups.push(t.elapsed());
        let t = Instant::now();
        assert!(backend.up(spec).await.unwrap().adopted());
        adopts.push(t.elapsed());
        drop(b);
        backend.down(&project, &format!("up{i}")).await.unwrap();
    }
    let mut runs = Vec::new();
    for i in 0..10 {
        let name = format!("berth-bench-run-{}-{i}", std::process::id());
        let t = Instant::now();
        let st = Command::new("docker")
            .args([
                "run",
                "-d",
                "-q",
                "--name",
                &name,
                "--label",
                "berth.bench=1",
                "--network",
                "none",
                "--init",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                "--user",
                "1000:1000",
                "berth-agent:latest",
                "sleep",
                "infinity",
            ])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        runs.push(t.elapsed());
        assert!(st.success());
        Command::new("docker")
            .args(["rm", "-f", &name])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
    }
    let (ups, adopts, runs, wt) = (
        Stats::new(ups),
        Stats::new(adopts),
        Stats::new(runs),
        Stats::new(worktree_adds),
    );
    header();
    ups.row("berth up (validate, image check, create, start)");
    adopts.row("berth up of a running berth (adopt)");
    runs.row("`docker run -d` (CLI, same hardening)");
    wt.row("`git worktree add`");
    println!(
        "\nberth up {:.1} ms against docker run + git worktree add {:.1} ms (means)",
        ms(ups.mean()),
        ms(runs.mean()) + ms(wt.mean())
    );

    // 5. Any image: berth's tools injected at /opt/berth.
    any_image(&backend, &layout, &project, n, &runs, &wt).await;

    // 3. 20 berths × 50 commands, concurrently.
    println!("\n## 20 berths × 50 commands, concurrently\n");
    let mut berths = Vec::new();
    for i in 0..20 {
        let (spec, _) = layout.spec(&format!("c{i}"));
        berths.push(Arc::new(backend.up(spec).await.unwrap()));
    }
    // Reset the high-water mark (the image build above held its context in
    // memory), so the peak below is this run's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = peak_rss_kib();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for b in &berths {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            for j in 0..50 {
                // A mix: plain, output, and a background child left behind.
                let line = match j % 3 {
                    0 => "true".to_string(),
                    1 => "seq 1 2000".to_string(),
                    _ => "sleep 100 & echo started".to_string(),
                };
                let t = Instant::now();
                let out = b.exec(ExecRequest::shell(line), None).await.unwrap();
                worst = worst.max(t.elapsed());
                assert_eq!(out.status, ExitStatus::Exited(0));
            }
            worst
        }));
    }
    let mut worst = Duration::ZERO;
    for task in tasks {
        worst = worst.max(task.await.unwrap());
    }
    let wall = t.elapsed();
    let rss_after = peak_rss_kib();
    let mut strays = 0;
    for b in &berths {
        strays += stray_processes(b).await;
    }
    drop(berths);
    for i in 0..20 {
        backend.down(&project, &format!("c{i}")).await.unwrap();
    }
    backend.down(&project, "warm").await.unwrap();
    backend.down(&project, "agent").await.unwrap();
    let left = backend.list_berths(Some(&project)).await.unwrap().len();
    println!("| metric | value |\n|---|---|");
    println!("| commands | 1000 (20 berths × 50) |");
    println!("| wall time | {:.2} s |", wall.as_secs_f64());
    println!(
        "| throughput | {:.1} commands/s |",
        1000.0 / wall.as_secs_f64()
    );
    println!("| slowest single command | {:.0} ms |", ms(worst));
    println!(
        "| peak RSS of this process | {} MiB at the start of the run, {} MiB peak during it |",
        rss_before / 1024,
        rss_after / 1024
    );
    println!("| background `sleep 100` left in containers | {strays} |");
    println!("| berth containers left after down | {left} |");
    assert_eq!(strays, 0);
    assert_eq!(left, 0);
}

/// Section 5: a named image (the agent image, by name) gets berth's tools.
async fn any_image(
    backend: &DockerBackend,
    layout: &Layout,
    project: &str,
    n: usize,
    runs: &Stats,
    wt: &Stats,
) {
    use berth_sandbox::image::{ImageRef, ToolsSource, ensure_tools};
    println!("\n## any image: berth's tools injected at /opt/berth\n");
    let tools_root = layout.root.join("tools");
    let source = ToolsSource::host_default().unwrap();
    let t = Instant::now();
    let set = ensure_tools(&tools_root, &source).unwrap();
    let cold = t.elapsed();
    assert!(set.built);
    let mut warm = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        assert!(!ensure_tools(&tools_root, &source).unwrap().built);
        warm.push(t.elapsed());
    }
    let named = |agent: &str| {
        let (mut spec, took) = layout.spec(agent);
        spec.image = ImageRef::Named("berth-agent:latest".into());
        spec.tools_root = Some(tools_root.clone());
        (spec, took)
    };
    let mut ups = Vec::new();
    for i in 0..10 {
        let (spec, _) = named(&format!("any{i}"));
        let t = Instant::now();
        backend.up(spec).await.unwrap();
        ups.push(t.elapsed());
        backend.down(project, &format!("any{i}")).await.unwrap();
    }
    let (default_spec, _) = layout.spec("plain");
    let plain = backend.up(default_spec).await.unwrap();
    let (spec, _) = named("injected");
    let injected = backend.up(spec).await.unwrap();
    let mut true_plain = Vec::new();
    let mut true_injected = Vec::new();
    let mut git_plain = Vec::new();
    let mut git_injected = Vec::new();
    for i in 0..n {
        for (b, out) in [(&plain, &mut true_plain), (&injected, &mut true_injected)] {
            let t = Instant::now();
            let r = b.exec(ExecRequest::argv(["true"]), None).await.unwrap();
            out.push(t.elapsed());
            assert_eq!(r.status, ExitStatus::Exited(0));
        }
        if i % 4 == 0 {
            let cases = [
                (&plain, "git --version", &mut git_plain),
                (&injected, "/opt/berth/bin/git --version", &mut git_injected),
            ];
            for (b, line, out) in cases {
                let t = Instant::now();
                let r = b.exec(ExecRequest::shell(line), None).await.unwrap();
                out.push(t.elapsed());
                assert_eq!(r.status, ExitStatus::Exited(0));
            }
        }
    }
    header();
    Stats::new(vec![cold]).row("assemble the tool set (cold)");
    Stats::new(warm).row("find the tool set (warm: key + stat)");
    let ups = Stats::new(ups);
    ups.row("berth up of a named image (tools injected)");
    let (tp, ti) = (Stats::new(true_plain), Stats::new(true_injected));
    tp.row("exec `true`, default image");
    ti.row("exec `true`, named image with berth's tools");
    let (gp, gi) = (Stats::new(git_plain), Stats::new(git_injected));
    gp.row("exec `git --version`, the image's git");
    gi.row("exec `git --version`, through the injected loader");
    println!(
        "\nberth up (named image) {:.1} ms against docker run + git worktree add {:.1} ms: {:.2}× (goal ≤ 1.0×)",
        ms(ups.mean()),
        ms(runs.mean()) + ms(wt.mean()),
        ms(ups.mean()) / (ms(runs.mean()) + ms(wt.mean()))
    );
    println!(
        "injected tools per exec: `true` {:+.2} ms (p50), git through the loader {:+.2} ms (p50)",
        ms(ti.pct(0.5)) - ms(tp.pct(0.5)),
        ms(gi.pct(0.5)) - ms(gp.pct(0.5))
    );
    backend.down(project, "plain").await.unwrap();
    backend.down(project, "injected").await.unwrap();
}
