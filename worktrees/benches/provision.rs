//! Provisioning cost: an agent repository + worktree for a repository of
//! 10,000 files / 50 MiB, against `git worktree add` on the same objects; the
//! disk an extra agent costs; and recycle time.
//!
//! `cargo bench -p berth-worktrees --bench provision` (release profile). The
//! git CLI builds the test repository and runs the baseline; berth itself uses
//! git2 only.
//!
//! Wall time on a shared machine swings 2–3×; instruction counts do not. For
//! those, the same binary prepares the repository once and provisions one
//! agent per process, so valgrind counts berth (and its `berth-helper`
//! child) against `git worktree add` (and its children) in one run:
//!
//! ```sh
//! B=$(ls target/release/deps/provision-* | grep -v '\.d$')
//! $B --bench --setup /tmp/pv        # prints the two commands to count
//! BERTH_HELPER=$B valgrind --tool=callgrind --trace-children=yes \
//!   --callgrind-out-file=/tmp/cg.%p $B --bench --once /tmp/pv a1
//! $B --bench --check /tmp/pv/state/berths/bench/a1/a1   # not counted
//! ```
//!
//! valgrind (3.19) does not know Landlock's system calls, and the real
//! `berth-helper` refuses to work unconfined; so for counting, this binary
//! stands in for it (`BERTH_HELPER=$B`): called as `git-refs` it runs the
//! same job code (`skip_rehash_for_checkout`, `run_refs_job`) without the confinement, whose cost is a
//! handful of system calls.

use std::error::Error;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use berth_worktrees::{AgentName, Owner, ProjectName, RecycleOptions, TaskName, Worktrees};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const FILES: usize = 10_000;
const TOTAL_BYTES: usize = 50 * 1024 * 1024;
const RUNS: usize = 5;

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let status = git_cmd(dir, args).status()?;
    if !status.success() {
        return Err(format!("git {args:?} failed in {}", dir.display()).into());
    }
    Ok(())
}

fn git_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(args);
    cmd
}

/// A deterministic text generator (xorshift over a small vocabulary), so the
/// content compresses about like source code.
struct Text(u64);

impl Text {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn fill(&mut self, len: usize, out: &mut Vec<u8>) {
        const WORDS: [&str; 32] = [
            "fn", "let", "mut", "self", "impl", "struct", "return", "match", "Some", "None", "Ok",
            "Err", "value", "index", "buffer", "config", "error", "result", "path", "agent",
            "worktree", "commit", "branch", "forge", "lock", "state", "=", "{", "}", "(", ");",
            "\n",
        ];
        out.clear();
        while out.len() < len {
            let w = WORDS[(self.next() % WORDS.len() as u64) as usize];
            out.extend_from_slice(w.as_bytes());
            out.push(if self.next().is_multiple_of(9) {
                b'\n'
            } else {
                b' '
            });
        }
        out.truncate(len);
    }
}

/// A bare repository with one commit of `FILES` files totalling `TOTAL_BYTES`.
fn generate(dir: &Path) -> Result<PathBuf> {
    let repo = dir.join("source.git");
    git(dir, &["init", "-q", "--bare", "source.git"])?;
    let mut child = git_cmd(&repo, &["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()?;
    let stdin = child.stdin.take().ok_or("no stdin for fast-import")?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
    let mut text = Text(0x9E37_79B9_7F4A_7C15);
    let avg = TOTAL_BYTES / FILES;
    let mut buf = Vec::new();
    let mut jitter = 0;
    for i in 0..FILES {
        // Sizes spread around the average in pairs that sum to twice it; the
        // last file takes the remainder, so the total is exact.
        let mut len = if i.is_multiple_of(2) {
            jitter = (text.next() % (avg as u64 / 2)) as usize;
            avg + jitter
        } else {
            avg - jitter
        };
        if i + 1 == FILES {
            len += TOTAL_BYTES - avg * FILES;
        }
        text.fill(len, &mut buf);
        write!(w, "blob\nmark :{}\ndata {}\n", i + 1, buf.len())?;
        w.write_all(&buf)?;
        w.write_all(b"\n")?;
    }
    write!(
        w,
        "commit refs/heads/main\nauthor Bench <bench@berth.local> 1700000000 +0000\n\
         committer Bench <bench@berth.local> 1700000000 +0000\ndata 6\nbench\n"
    )?;
    for i in 0..FILES {
        writeln!(w, "M 100644 :{} src/d{:03}/f{:05}.rs", i + 1, i / 100, i)?;
    }
    w.write_all(b"\n")?;
    w.flush()?;
    drop(w);
    if !child.wait()?.success() {
        return Err("git fast-import failed".into());
    }
    git(&repo, &["symbolic-ref", "HEAD", "refs/heads/main"])?;
    Ok(repo)
}

/// Bytes on disk (allocated blocks) under `path`, symlinks not followed.
fn disk_usage(path: &Path) -> Result<u64> {
    let meta = std::fs::symlink_metadata(path)?;
    let mut total = meta.blocks() * 512;
    if meta.is_dir() {
        for e in std::fs::read_dir(path)? {
            total += disk_usage(&e?.path())?;
        }
    }
    Ok(total)
}

/// Bytes of file content under `path`.
fn content_size(path: &Path) -> Result<u64> {
    let meta = std::fs::symlink_metadata(path)?;
    let mut total = if meta.is_file() { meta.len() } else { 0 };
    if meta.is_dir() {
        for e in std::fs::read_dir(path)? {
            total += content_size(&e?.path())?;
        }
    }
    Ok(total)
}

/// CPU time (user + system) of this process and of its waited-for children,
/// from /proc/self/stat (USER_HZ ticks: 10 ms on Linux).
fn cpu_time() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').ok_or("bad /proc/self/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime, stime, cutime, cstime are fields 14-17 (1-based), i.e. 11-14 here.
    let ticks: u64 = fields[11..15]
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Ok(Duration::from_millis(ticks * 10))
}

thread_local! {
    static LAST_CPU: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

fn time<T>(f: impl FnOnce() -> Result<T>) -> Result<(Duration, T)> {
    let cpu = cpu_time()?;
    let start = Instant::now();
    let out = f()?;
    let wall = start.elapsed();
    LAST_CPU.with(|c| c.set(cpu_time().unwrap_or(cpu).saturating_sub(cpu)));
    Ok((wall, out))
}

/// CPU time of the last `time` call.
fn last_cpu() -> Duration {
    LAST_CPU.with(|c| c.get())
}

/// Wall and CPU times of the counted runs (run 0 is a warm-up).
#[derive(Default)]
struct Samples {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Samples {
    fn push(&mut self, run: usize, wall: Duration) {
        if run > 0 {
            self.wall.push(wall);
            self.cpu.push(last_cpu());
        }
    }

    fn is_empty(&self) -> bool {
        self.wall.is_empty()
    }

    fn median(v: &[Duration]) -> Duration {
        let mut v = v.to_vec();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }

    fn wall_median(&self) -> Duration {
        Self::median(&self.wall)
    }

    fn wall_min(&self) -> Duration {
        self.wall.iter().min().copied().unwrap_or_default()
    }

    fn cpu_median(&self) -> Duration {
        Self::median(&self.cpu)
    }

    fn row(&self, name: &str) {
        println!(
            "| {name} | {} | {} | {} |",
            ms(self.wall_median()),
            ms(self.wall_min()),
            ms(self.cpu_median())
        );
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn mib(bytes: u64) -> String {
    if bytes < 1024 * 1024 {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// `berth-helper git-refs` without its confinement, for counting only (see
/// the module doc).
fn refs_job_unconfined() -> Result<()> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut body)?;
    let job: berth_worktrees::RefsJob = serde_json::from_slice(&body)?;
    berth_worktrees::skip_rehash_for_checkout(&job);
    let answer = berth_worktrees::run_refs_job(&job);
    berth_worktrees::write_answer(&mut std::io::stdout().lock(), &answer)?;
    Ok(())
}

/// The source repository, the forge imported from it (project `bench` in
/// `dir/state`) and the baseline's copy of the forge (`dir/baseline.git`):
/// the times of generation and import, and the project.
fn prepare(dir: &Path) -> Result<(Duration, Duration, berth_worktrees::ProjectInfo)> {
    let (t_generate, source) = time(|| generate(dir))?;
    let wt = Worktrees::open(dir.join("state"))?;
    let project = ProjectName::new("bench")?;
    let (t_import, info) = time(|| Ok(wt.import_project(&project, &source, None)?))?;
    // The baseline runs on a copy of the forge: the same pack, the same objects.
    let status = Command::new("cp")
        .arg("-a")
        .arg(&info.forge)
        .arg(dir.join("baseline.git"))
        .status()?;
    if !status.success() {
        return Err("cp -a of the forge failed".into());
    }
    Ok((t_generate, t_import, info))
}

fn main() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("git-refs") {
        return refs_job_unconfined();
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and a
    // test run should not spend minutes here.
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "provision benchmark: run it with `cargo bench -p berth-worktrees --bench provision`"
        );
        return Ok(());
    }
    let args: Vec<String> = std::env::args().collect();
    let after = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .map(|i| args[i + 1..].to_vec())
    };
    if let Some(rest) = after("--setup") {
        let dir = PathBuf::from(rest.first().ok_or("--setup DIR")?);
        std::fs::create_dir(&dir)?;
        let (_, _, info) = prepare(&dir)?;
        let baseline = dir.join("baseline.git");
        println!(
            "prepared {}; count one provisioning with `--once {} AGENT` and the baseline with\n  git -C {} worktree add -q -b BRANCH {} main",
            dir.display(),
            dir.display(),
            baseline.display(),
            Worktrees::open(dir.join("state"))?
                .layout()
                .berths_dir(&info.name)
                .join("git-wt-BRANCH")
                .display()
        );
        return Ok(());
    }
    if let Some(rest) = after("--once") {
        let [dir, agent, ..] = rest.as_slice() else {
            return Err("--once DIR AGENT".into());
        };
        let wt = Worktrees::open(Path::new(dir).join("state"))?;
        let prov = wt.provision(
            &ProjectName::new("bench")?,
            &AgentName::new(agent.as_str())?,
            &TaskName::new("t")?,
            None,
        )?;
        // Checked by `--check` in a process of its own: not counted.
        if !prov.created {
            return Err("provisioning found a live worktree".into());
        }
        return Ok(());
    }
    if let Some(rest) = after("--check") {
        let dir = Path::new(rest.first().ok_or("--check WORKTREE")?);
        let size = content_size(dir)?;
        if size < TOTAL_BYTES as u64 {
            return Err(format!(
                "{} holds {size} bytes of files, under {TOTAL_BYTES}",
                dir.display()
            )
            .into());
        }
        println!("{}: the whole tree ({size} bytes)", dir.display());
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    let (t_generate, t_import, info) = prepare(dir)?;
    let wt = Worktrees::open(dir.join("state"))?;
    let project = info.name.clone();
    let baseline = dir.join("baseline.git");
    let task = TaskName::new("t")?;
    let options = RecycleOptions::default();

    // Creation first, removal after: on ext4 without a journal (this CI
    // machine), creating files right after deleting thousands is several times
    // slower (inode allocation skips recently deleted inodes), which would
    // measure the previous run's cleanup. git and berth alternate who goes
    // first; run 0 warms the page cache and is not counted.
    let mut git_add = Samples::default();
    let mut berth_provision = Samples::default();
    let mut git_paths = Vec::new();
    let mut agents = Vec::new();
    for run in 0..=RUNS {
        // Beside berth's worktrees: same filesystem, same directory depth.
        let path = wt
            .layout()
            .berths_dir(&project)
            .join(format!("git-wt-{run}"));
        let path_s = path.to_str().ok_or("non-UTF-8 temp path")?.to_owned();
        let branch = format!("bench/{run}");
        let agent = AgentName::new(format!("agent-{run}"))?;
        for turn in 0..2 {
            if (run + turn).is_multiple_of(2) {
                let t = time(|| {
                    git(
                        &baseline,
                        &["worktree", "add", "-q", "-b", &branch, &path_s, "main"],
                    )
                })?;
                git_add.push(run, t.0);
            } else {
                let (t, prov) = time(|| Ok(wt.provision(&project, &agent, &task, None)?))?;
                if !prov.created || content_size(&prov.path)? < TOTAL_BYTES as u64 {
                    return Err("provisioning did not check out the whole tree".into());
                }
                berth_provision.push(run, t);
            }
        }
        git_paths.push(path_s);
        agents.push(agent);
    }

    // Disk used by one more agent: the last one provisioned, against the last
    // git worktree.
    let last = agents.last().ok_or("no runs")?;
    let extra_repo = disk_usage(&wt.layout().agent_repo(&project, last))?;
    let extra_wt = disk_usage(&wt.layout().worktree(&project, last))?;
    let forge_objects = disk_usage(&info.forge.join("objects"))?;
    let git_last = Path::new(git_paths.last().ok_or("no runs")?);
    let git_admin = baseline
        .join("worktrees")
        .join(git_last.file_name().ok_or("no name")?);
    let git_wt_usage = disk_usage(git_last)? + disk_usage(&git_admin)?;

    let mut git_remove = Samples::default();
    let mut berth_recycle = Samples::default();
    for (run, (path, agent)) in git_paths.iter().zip(&agents).enumerate() {
        for turn in 0..2 {
            if (run + turn).is_multiple_of(2) {
                let t = time(|| git(&baseline, &["worktree", "remove", path]))?;
                git_remove.push(run, t.0);
            } else {
                let (t, report) = time(|| Ok(wt.recycle(&project, agent, options)?))?;
                if !report.worktree_removed {
                    return Err("recycle removed nothing".into());
                }
                berth_recycle.push(run, t);
            }
        }
    }

    // Mounted mode: the same, chowned to uid 1000 (root only).
    let mut owned = Samples::default();
    if running_as_root() {
        let owner = Owner {
            uid: 1000,
            gid: 1000,
        };
        let mut made = Vec::new();
        for run in 0..=RUNS {
            let agent = AgentName::new(format!("owned-{run}"))?;
            let (t, _) = time(|| Ok(wt.provision(&project, &agent, &task, Some(owner))?))?;
            owned.push(run, t);
            made.push(agent);
        }
        for agent in &made {
            wt.recycle(&project, agent, options)?;
        }
    }

    println!();
    println!(
        "berth-worktrees provision benchmark: {FILES} files, {} of content, {RUNS} runs after a warm-up",
        mib(TOTAL_BYTES as u64)
    );
    println!(
        "  setup: generate with git fast-import {}, import into the forge (git2) {}; load average now {}",
        ms(t_generate),
        ms(t_import),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!();
    println!("| operation | wall median | wall min | CPU median (user+sys) |");
    println!("|---|---:|---:|---:|");
    git_add.row("`git worktree add -b` (baseline, same objects)");
    berth_provision.row("berth provision (agent repo + alternates + branch + worktree + lock)");
    println!(
        "| **ratio berth / git** | **{:.2}** | {:.2} | {:.2} |",
        berth_provision.wall_median().as_secs_f64() / git_add.wall_median().as_secs_f64(),
        berth_provision.wall_min().as_secs_f64() / git_add.wall_min().as_secs_f64(),
        berth_provision.cpu_median().as_secs_f64() / git_add.cpu_median().as_secs_f64().max(1e-9),
    );
    if !owned.is_empty() {
        owned.row("berth provision with owner 1000 (+ chown)");
    }
    git_remove.row("`git worktree remove` (baseline)");
    berth_recycle.row("berth recycle (status check + removal)");
    println!();
    println!("| disk per extra agent | on disk |");
    println!("|---|---:|");
    println!(
        "| agent repository (alternates → forge objects; holds the worktree index) | {} |",
        mib(extra_repo)
    );
    println!(
        "| worktree (checked-out files + .git file) | {} |",
        mib(extra_wt)
    );
    println!(
        "| **total per extra agent** | **{}** |",
        mib(extra_repo + extra_wt)
    );
    println!(
        "| `git worktree add` worktree + admin dir, for comparison | {} |",
        mib(git_wt_usage)
    );
    println!(
        "| forge objects, shared by all agents (not copied) | {} |",
        mib(forge_objects)
    );
    Ok(())
}
