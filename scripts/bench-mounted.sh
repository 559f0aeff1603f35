#!/usr/bin/env bash
# End-to-end benchmarks of mounted mode through the `berth` binary, against
# the real Docker engine, with hyperfine (apt-get install hyperfine):
#
#   1. `berth exec dev-1 -- true` (a new berth process: open the store,
#      decide, record, exec in the warm container, record the outcome)
#      against `docker exec <container> true` (the CLI).
#   2. `berth up dev-1 --mode mounted` from down (provision the worktree
#      with git2, chown it, create and start the container) against
#      `docker run -d` of the same image plus `git worktree add`.
#   3. The same with a custom image (`[sandbox] image`, berth's tools
#      injected at /opt/berth): a local image built FROM the agent image,
#      or BENCH_IMAGE (it must have `sleep` for the baseline's container);
#      with hyperfine, then in pairs (baseline, berth, …) for the median of
#      the pairs' ratios, which holds on a loaded machine.
#   4. The injected tools' cost per exec: `berth exec` of `true` in a
#      berth of the custom image (tools mounted at /opt/berth) against the
#      same in a berth of the default image (none), and git through the
#      injected loader against the image's own git — with hyperfine, each
#      pair of commands in one run.
#
#   scripts/bench-mounted.sh            # release build; BENCH_RUNS=50 by default
#   BERTH_BIN=target/debug/berth scripts/bench-mounted.sh
#                                       # a berth already built instead
#   BERTH_BASELINE=/path/to/old/berth scripts/bench-mounted.sh
#                                       # also that binary's exec, in the same run
#                                       # (build it from another worktree)
#   BENCH_SERVE=1 scripts/bench-mounted.sh
#                                       # section 1 with `berth serve` running:
#                                       # `berth exec` hands its action to it;
#                                       # `berth exec --local` beside it
#
# The in-process exec against a bare bollard exec, and 20 agents × 50
# commands at once, are in `cargo bench -p berth-sandbox --bench docker_exec`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "bench-mounted: needs hyperfine (apt-get install -y hyperfine)" >&2; exit 1; }
docker version >/dev/null 2>&1 || { echo "bench-mounted: the Docker engine does not answer" >&2; exit 1; }
runs=${BENCH_RUNS:-50}

if [ -n "${BERTH_BIN:-}" ]; then
  # A berth already built (with berth-helper beside it), e.g. a debug one.
  BERTH=$BERTH_BIN
else
  # berth-helper too: it is the exec agent inside the container.
  scripts/build-deps.sh
  cargo build -q --release --bin berth --bin berth-helper
  # Where cargo put it: CARGO_TARGET_DIR and .cargo/config.toml move it.
  target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  BERTH="$target_dir/release/berth"
fi
"$BERTH" image build | tail -1

work=$(mktemp -d)
export BERTH_HOME="$work/state"
baseline=bench-baseline-$$
custom_tag=bench-custom-$$:1
serve_pid=
stop_serve() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null || true; serve_pid=; fi
}
cleanup() {
  stop_serve
  "$BERTH" down dev-1 >/dev/null 2>&1 || true
  "$BERTH" down dev-2 >/dev/null 2>&1 || true
  docker rm -f "$baseline" >/dev/null 2>&1 || true
  [ -n "${BENCH_IMAGE:-}" ] || docker rmi -f "$custom_tag" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

. scripts/bench-lib.sh
bench_agent "$work" mounted
src="$work/src"
container=$("$BERTH" ls --json | python3 -c 'import json,sys; print(next(b["container"] for b in json.load(sys.stdin) if b["agent"] == "dev-1") or "")')
[ -n "$container" ] || { echo "bench-mounted: no container for dev-1" >&2; exit 1; }
[ "$("$BERTH" exec dev-1 -- true; echo $?)" = 0 ] || { echo "bench-mounted: berth exec true failed" >&2; exit 1; }

echo "== 1. exec of true, end to end (container $container)"
baseline_exec=()
if [ -n "${BERTH_BASELINE:-}" ]; then
  baseline_exec=(-n "berth exec true (baseline)" "$BERTH_BASELINE exec dev-1 -- true")
fi
if [ -n "${BENCH_SERVE:-}" ]; then
  "$BERTH" serve --no-agent-loops >/dev/null 2>"$work/serve.log" &
  serve_pid=$!
  for _ in $(seq 100); do [ -S "$BERTH_HOME/berth.sock" ] && break; sleep 0.1; done
  [ -S "$BERTH_HOME/berth.sock" ] || { echo "bench-mounted: berth serve did not start: $(cat "$work/serve.log")" >&2; exit 1; }
  baseline_exec+=(-n "berth exec --local true" "$BERTH exec dev-1 --local -- true")
fi
hyperfine -N --warmup 5 --runs "$runs" \
  -n "docker exec true" "docker exec $container true" \
  -n "berth exec true" "$BERTH exec dev-1 -- true" \
  "${baseline_exec[@]}"
stop_serve

echo "== 2. up from down"
# The baseline: the same image, hardening and mounts a berth has, and a
# worktree made by the git CLI in a bare clone of the same forge.
forge="$BERTH_HOME/forge/bench.git"
base_repo="$work/baseline.git"
git clone -q --bare "$forge" "$base_repo"
base_wt="$work/baseline-wt"
hyperfine -N --warmup 2 --runs "$((runs / 2 > 5 ? runs / 2 : 5))" \
  --prepare "sh -c 'docker rm -f $baseline >/dev/null 2>&1; git -C $base_repo worktree remove --force $base_wt >/dev/null 2>&1; git -C $base_repo branch -D wt >/dev/null 2>&1; true'" \
  -n "docker run + git worktree add" \
  "sh -c 'git -C $base_repo worktree add -q -b wt $base_wt main && docker run -d -q --name $baseline --network none --cap-drop ALL --security-opt no-new-privileges --init --memory 2g --memory-swap 2g --pids-limit 512 --user 1000:1000 --mount type=bind,source=$base_wt,target=/work -w /work berth-agent:latest sleep infinity >/dev/null'" \
  --prepare "$BERTH down dev-1" \
  -n "berth up (mounted)" \
  "$BERTH up dev-1 --project bench --mode mounted"

echo "== 3. up from down, a custom image (berth's tools injected at /opt/berth)"
image=${BENCH_IMAGE:-}
if [ -z "$image" ]; then
  image=$custom_tag
  mkdir -p "$work/custom"
  printf 'custom\n' > "$work/custom/custom.txt"
  printf 'FROM berth-agent:latest\nCOPY custom.txt /etc/custom\nENV CUSTOM=1\n' > "$work/custom/Dockerfile"
  docker build -q --network none -t "$image" "$work/custom" >/dev/null
fi
"$BERTH" project add custom --from "$src" >/dev/null
sed -i "0,/^image = \"\"/s||image = \"$image\"|" "$BERTH_HOME/projects/custom/berth.toml"
grep -q "^image = \"$image\"" "$BERTH_HOME/projects/custom/berth.toml" || { echo "bench-mounted: could not set the custom image" >&2; exit 1; }
"$BERTH" agent activate dev-2 --project custom >/dev/null
"$BERTH" autonomy set dev-2 terminal auto_approve >/dev/null
"$BERTH" up dev-2 --project custom --mode mounted >/dev/null
[ "$("$BERTH" exec dev-2 -- 'test -x /opt/berth/bin/git && echo injected')" = injected ] || { echo "bench-mounted: no tools at /opt/berth in dev-2" >&2; exit 1; }
"$BERTH" down dev-1 >/dev/null
docker rm -f "$baseline" >/dev/null 2>&1 || true
hyperfine -N --warmup 2 --runs "$((runs / 2 > 5 ? runs / 2 : 5))" \
  --prepare "sh -c 'docker rm -f $baseline >/dev/null 2>&1; git -C $base_repo worktree remove --force $base_wt >/dev/null 2>&1; git -C $base_repo branch -D wt >/dev/null 2>&1; true'" \
  -n "docker run + git worktree add (custom image)" \
  "sh -c 'git -C $base_repo worktree add -q -b wt $base_wt main && docker run -d -q --name $baseline --network none --cap-drop ALL --security-opt no-new-privileges --init --memory 2g --memory-swap 2g --pids-limit 512 --user 1000:1000 --mount type=bind,source=$base_wt,target=/work -w /work $image sleep infinity >/dev/null'" \
  --prepare "$BERTH down dev-2" \
  -n "berth up (mounted, custom image)" \
  "$BERTH up dev-2 --project custom --mode mounted"
docker rm -f "$baseline" >/dev/null 2>&1 || true
# The same in pairs (baseline, berth, baseline, berth …), each timed without
# its set-up: the ratio of each pair, so a load that drifts cancels out.
BERTH="$BERTH" IMAGE="$image" BASE_REPO="$base_repo" BASE_WT="$base_wt" BASELINE="$baseline" \
  PAIRS="$((runs / 2 > 5 ? runs / 2 : 5))" python3 - <<'PY'
import os, statistics, subprocess, time
e = os.environ
def run(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def quiet(*argv):
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def timed(*argv):
    t = time.perf_counter(); run(*argv); return time.perf_counter() - t
base, ours, ratios = [], [], []
for i in range(int(e["PAIRS"]) + 2):
    quiet("docker", "rm", "-f", e["BASELINE"])
    quiet("git", "-C", e["BASE_REPO"], "worktree", "remove", "--force", e["BASE_WT"])
    quiet("git", "-C", e["BASE_REPO"], "branch", "-D", "wt")
    t = time.perf_counter()
    run("git", "-C", e["BASE_REPO"], "worktree", "add", "-q", "-b", "wt", e["BASE_WT"], "main")
    run("docker", "run", "-d", "-q", "--name", e["BASELINE"], "--network", "none", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", "--init", "--memory", "2g", "--memory-swap", "2g",
        "--pids-limit", "512", "--user", "1000:1000", "--mount",
        f"type=bind,source={e['BASE_WT']},target=/work", "-w", "/work", e["IMAGE"], "sleep", "infinity")
    b = time.perf_counter() - t
    quiet(e["BERTH"], "down", "dev-2")
    o = timed(e["BERTH"], "up", "dev-2", "--project", "custom", "--mode", "mounted")
    if i >= 2:  # two warm-up pairs
        base.append(b); ours.append(o); ratios.append(o / b)
quiet("docker", "rm", "-f", e["BASELINE"])
ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"
print(f"paired, {len(ratios)} pairs: docker run + git worktree add {ms(base)}; berth up {ms(ours)}")
print(f"berth up / (docker run + git worktree add), median of the pairs' ratios: {statistics.median(ratios):.2f}x "
      f"(quartiles {statistics.quantiles(ratios, n=4)[0]:.2f}-{statistics.quantiles(ratios, n=4)[2]:.2f}; goal <= 1.0x)")
PY

echo "== 4. the injected tools' cost per exec (custom image, tools at /opt/berth; default image)"
"$BERTH" up dev-1 --project bench --mode mounted >/dev/null
"$BERTH" up dev-2 --project custom --mode mounted >/dev/null
uptime
hyperfine -N --warmup 5 --runs "$((runs > 100 ? 100 : runs))" \
  -n "true, default image" "$BERTH exec dev-1 -- true" \
  -n "true, custom image" "$BERTH exec dev-2 -- true"
echo "-- git --version: through the injected loader (/opt/berth/bin/git), and the image's own git"
hyperfine -N --warmup 5 --runs "$((runs > 100 ? 100 : runs))" \
  -n "the image's git" "$BERTH exec dev-1 -- git --version" \
  -n "the injected git" "$BERTH exec dev-2 -- /opt/berth/bin/git --version"
uptime
