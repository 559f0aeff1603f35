#!/usr/bin/env bash
# End-to-end figures of a runner `berth exec` through the `berth` binary
# (issue 17: runner `berth exec true` ≤ 5 ms, against the floor `sh -c true`),
# measured the ways that hold on a shared, loaded machine:
#
#   1. wall time in pairs: `berth exec dev-1 -- true` against `sh -c true`
#      with hyperfine, then interleaved (sh, berth, sh, berth …) for the
#      median of the pairs' ratios; with BERTH_BASELINE also that binary,
#      interleaved in the same rounds (berth / baseline per round).
#   2. instructions of berth's own process per exec (valgrind callgrind,
#      children not traced: the shim and the command are not counted), for
#      each binary.
#   3. system calls per exec, berth and its children (strace -f -c), for
#      each binary.
#
#   scripts/bench-runner.sh                 # release build; BENCH_RUNS=200
#   BERTH_BIN=target/release/berth scripts/bench-runner.sh
#   BERTH_BASELINE=/path/to/old/berth scripts/bench-runner.sh
#   BENCH_NETWORK=allowlist scripts/bench-runner.sh   # an allow-list berth
#   BENCH_SERVE=1 scripts/bench-runner.sh   # with `berth serve` running on the
#       state: `berth exec` hands its action to it; `berth exec --local`
#       (the same binary in its own process) is measured in the same rounds.
#       With BERTH_BASELINE too, the baseline gets a state and a `berth
#       serve` of its own, so the comparison covers the server's side of
#       the exec as well as the client's
#
# The state directory is made under $HOME (BENCH_DIR to choose): a state
# under /tmp or /var/tmp adds the skeleton of its own mounts to the berth's
# private /tmp, which real installs (~/.local/share/berth) do not have.
# The in-process figures (serve, MCP) are `cargo bench -p berth-engine
# --bench exec_overhead`; mounted mode is scripts/bench-mounted.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "bench-runner: needs hyperfine (apt-get install -y hyperfine)" >&2; exit 1; }
runs=${BENCH_RUNS:-200}

if [ -n "${BERTH_BIN:-}" ]; then
  BERTH=$(realpath "$BERTH_BIN")
else
  scripts/build-deps.sh
  cargo build -q --release --bin berth --bin berth-exec-shim
  target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  BERTH="$target_dir/release/berth"
fi
BASELINE=${BERTH_BASELINE:+$(realpath "$BERTH_BASELINE")}

work=$(mktemp -d -p "${BENCH_DIR:-$HOME}" berth-bench-runner.XXXXXX)
export BERTH_HOME="$work/state"
serve_pid=
base_serve_pid=
base_args=()
cleanup() {
  for pid in "$serve_pid" "$base_serve_pid"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  "$BERTH" down dev-1 >/dev/null 2>&1 || true
  [ ${#base_args[@]} -gt 0 ] && "$BASELINE" "${base_args[@]}" down dev-1 >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Each binary runs as a copy made here, with the shim and helper found
# beside it: a binary as the linker wrote it took ~130 more page faults per
# exec than the same bytes written by cp (its page-cache folios), which
# moved the comparison by 5-10 %.
copy_bin() {
  mkdir -p "$2"
  cp "$1" "$2/berth"
  # (`berth-full`: a baseline from when berth was a front and the program.)
  for f in berth-full berth-exec-shim berth-helper; do
    if [ -e "$(dirname "$1")/$f" ]; then cp "$(dirname "$1")/$f" "$2/"; fi
  done
  echo "$2/berth"
}
for bin in "$BERTH" ${BASELINE:+"$BASELINE"}; do
  [ -x "$bin" ] || { echo "bench-runner: no berth binary at $bin" >&2; exit 1; }
done
BERTH=$(copy_bin "$BERTH" "$work/bin")
[ -n "$BASELINE" ] && BASELINE=$(copy_bin "$BASELINE" "$work/baseline")

. scripts/bench-lib.sh
bench_agent "$work" runner
[ -n "${BENCH_NETWORK:-}" ] && bench_network "$BENCH_NETWORK"
# start_serve BIN STATE LOG: `BIN serve` on STATE, once its socket answers;
# its pid in $started.
start_serve() {
  "$1" --state "$2" serve --no-agent-loops >/dev/null 2>"$3" &
  started=$!
  for _ in $(seq 100); do [ -S "$2/berth.sock" ] && break; sleep 0.1; done
  [ -S "$2/berth.sock" ] || { echo "bench-runner: berth serve did not start: $(cat "$3")" >&2; exit 1; }
}
if [ -n "${BENCH_SERVE:-}" ]; then
  start_serve "$BERTH" "$BERTH_HOME" "$work/serve.log"
  serve_pid=$started
  if [ -n "$BASELINE" ]; then
    # The baseline's own state and server: each binary's exec is measured
    # through its own server, not the new one's.
    base_args=(--state "$work/base/state")
    (BERTH="$BASELINE" BERTH_HOME="$work/base/state" bench_agent "$work/base" runner)
    if [ -n "${BENCH_NETWORK:-}" ]; then
      (BERTH_HOME="$work/base/state" bench_network "$BENCH_NETWORK")
    fi
    start_serve "$BASELINE" "$work/base/state" "$work/base-serve.log"
    base_serve_pid=$started
  fi
fi
[ "$("$BERTH" exec dev-1 -- true; echo $?)" = 0 ] || { echo "bench-runner: $BERTH exec true failed" >&2; exit 1; }
if [ -n "$BASELINE" ]; then
  [ "$("$BASELINE" "${base_args[@]}" exec dev-1 -- true; echo $?)" = 0 ] || { echo "bench-runner: $BASELINE exec true failed" >&2; exit 1; }
fi

echo "== 1. exec of true, end to end ($(nproc) cores; $(cut -d' ' -f1-3 /proc/loadavg) load)"
baseline_exec=()
[ -n "$BASELINE" ] && baseline_exec=(-n "berth exec true (baseline)" "$BASELINE ${base_args[*]} exec dev-1 -- true")
[ -n "${BENCH_SERVE:-}" ] && baseline_exec+=(-n "berth exec --local true" "$BERTH exec dev-1 --local -- true")
hyperfine -N --warmup 10 --runs "$runs" \
  -n "sh -c true" "sh -c true" \
  -n "berth exec true" "$BERTH exec dev-1 -- true" \
  "${baseline_exec[@]}"
BERTH="$BERTH" BASELINE="$BASELINE" BASE_ARGS="${base_args[*]}" SERVE="${BENCH_SERVE:-}" ROUNDS="$runs" python3 - <<'PY'
import os, statistics, subprocess, time
e = os.environ
def timed(*argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t
cmds = {"sh": ["sh", "-c", "true"], "berth": [e["BERTH"], "exec", "dev-1", "--", "true"]}
if e["BASELINE"]:
    cmds["baseline"] = [e["BASELINE"], *e["BASE_ARGS"].split(), "exec", "dev-1", "--", "true"]
if e["SERVE"]:
    cmds["local"] = [e["BERTH"], "exec", "dev-1", "--local", "--", "true"]
times = {k: [] for k in cmds}
for i in range(int(e["ROUNDS"]) + 5):
    # Each round in the other order, so neither always follows the other.
    for k in (list(cmds) if i % 2 else list(reversed(cmds))):
        t = timed(*cmds[k])
        if i >= 5:
            times[k].append(t)
ms = lambda xs: f"{statistics.median(xs) * 1000:.2f} ms (p10 {statistics.quantiles(xs, n=10)[0] * 1000:.2f}, p90 {statistics.quantiles(xs, n=10)[-1] * 1000:.2f})"
for k, xs in times.items():
    print(f"interleaved, {len(xs)} rounds: {k:<9} {ms(xs)}")
ratio = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))
print(f"berth exec true / sh -c true, median of the rounds' ratios: {ratio('berth', 'sh'):.2f}x")
print(f"berth exec true - sh -c true, median of the rounds' differences: "
      f"{statistics.median(x - y for x, y in zip(times['berth'], times['sh'])) * 1000:.2f} ms (goal: berth exec <= 5 ms)")
if "baseline" in times:
    print(f"berth / baseline, median of the rounds' ratios: {ratio('berth', 'baseline'):.3f}x")
if "local" in times:
    print(f"handed to berth serve / run in its own process (--local), median of the rounds' ratios: {ratio('berth', 'local'):.3f}x")
PY

# state_of BIN: the arguments that point BIN at its own state (the
# baseline's, when it has one; none for the binary measured).
state_of() {
  if [ "$1" = "$BASELINE" ] && [ ${#base_args[@]} -gt 0 ]; then echo "${base_args[@]}"; fi
}

echo "== 2. instructions of berth's own process per exec (callgrind, children not traced)"
if command -v valgrind >/dev/null; then
  for bin in "$BERTH" ${BASELINE:+"$BASELINE"}; do
    for i in 1 2 3; do
      # shellcheck disable=SC2046 # state_of gives whole words
      valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$bin" $(state_of "$bin") exec dev-1 -- true 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    done | sort -n | head -1 | xargs printf "%s: %'d instructions (least of 3)\n" "$bin"
  done
  if [ -n "${BENCH_SERVE:-}" ]; then
    # `--local` runs in berth's own process; a baseline's `berth-full`
    # (from when berth was a front that exec'd it: callgrind does not
    # follow an exec) is measured directly.
    full="$(dirname "$BERTH")/berth-full"
    [ -x "$full" ] || full=$BERTH
    for i in 1 2 3; do
      valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$full" exec dev-1 --local -- true 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    done | sort -n | head -1 | xargs printf "%s --local: %'d instructions (least of 3)\n" "$full"
  fi
else
  echo "(no valgrind: skipped)"
fi

echo "== 3. system calls per exec (strace -f -c; berth, the shim, PID 1 and the command)"
if command -v strace >/dev/null; then
  for bin in "$BERTH" ${BASELINE:+"$BASELINE"}; do
    # shellcheck disable=SC2046 # state_of gives whole words
    strace -f -c -o "$work/sc.txt" "$bin" $(state_of "$bin") exec dev-1 -- true
    printf '%s: %s calls; ' "$bin" "$(awk '$NF == "total" {print $4}' "$work/sc.txt")"
    awk 'NR > 2 && $NF != "total" && $1 !~ /^-/ {print $4, $NF}' "$work/sc.txt" \
      | sort -rn | head -8 | awk '{printf "%s %s, ", $2, $1} END {print ""}'
  done
else
  echo "(no strace: skipped)"
fi
