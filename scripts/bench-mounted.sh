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
#
#   scripts/bench-mounted.sh            # release build; BENCH_RUNS=50 by default
#   BERTH_BASELINE=/path/to/old/berth scripts/bench-mounted.sh
#                                       # also that binary's exec, in the same run
#                                       # (build it from another worktree)
#
# The in-process exec against a bare bollard exec, and 20 agents × 50
# commands at once, are in `cargo bench -p berth-sandbox --bench docker_exec`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "bench-mounted: needs hyperfine (apt-get install -y hyperfine)" >&2; exit 1; }
docker version >/dev/null 2>&1 || { echo "bench-mounted: the Docker engine does not answer" >&2; exit 1; }
runs=${BENCH_RUNS:-50}

# berth-helper too: it is the exec agent inside the container.
cargo build -q --release --bin berth --bin berth-helper
# Where cargo put it: CARGO_TARGET_DIR and .cargo/config.toml move it.
target_dir=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BERTH="$target_dir/release/berth"
"$BERTH" image build | tail -1

work=$(mktemp -d)
export BERTH_HOME="$work/state"
baseline=bench-baseline-$$
cleanup() {
  "$BERTH" down dev-1 >/dev/null 2>&1 || true
  docker rm -f "$baseline" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

src="$work/src"
mkdir -p "$src"
git -C "$src" init -q -b main
printf 'bench\n' > "$src/README.md"
git -C "$src" add README.md
git -C "$src" -c user.name=b -c user.email=b@x commit -q -m init
"$BERTH" init >/dev/null
"$BERTH" project add bench --from "$src" >/dev/null
"$BERTH" agent activate dev-1 --project bench >/dev/null
"$BERTH" autonomy set dev-1 terminal auto_approve >/dev/null
"$BERTH" up dev-1 --project bench --mode mounted >/dev/null
container=$("$BERTH" ls --json | python3 -c 'import json,sys; print(next(b["container"] for b in json.load(sys.stdin) if b["agent"] == "dev-1") or "")')
[ -n "$container" ] || { echo "bench-mounted: no container for dev-1" >&2; exit 1; }
[ "$("$BERTH" exec dev-1 -- true; echo $?)" = 0 ] || { echo "bench-mounted: berth exec true failed" >&2; exit 1; }

echo "== 1. exec of true, end to end (container $container)"
baseline_exec=()
if [ -n "${BERTH_BASELINE:-}" ]; then
  baseline_exec=(-n "berth exec true (baseline)" "$BERTH_BASELINE exec dev-1 -- true")
fi
hyperfine -N --warmup 5 --runs "$runs" \
  -n "docker exec true" "docker exec $container true" \
  -n "berth exec true" "$BERTH exec dev-1 -- true" \
  "${baseline_exec[@]}"

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
