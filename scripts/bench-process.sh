#!/usr/bin/env bash
# What one `berth` process costs before it does anything of its own: the
# instructions (valgrind callgrind: repeatable on a shared, loaded machine)
# of a few one-shot commands, for a binary and a baseline binary in the
# same run, with their ratio; and the page faults of each (the least of
# five runs, from the kernel's count of a child's minor faults): work the
# kernel does for the process that no instruction count shows (mimalloc 3
# set up its arena at start: 55 faults more in every process).
#
# Why: a cost paid at start-up is paid by every CLI command, hook call and
# exec, and no functional test sees it. Stop 33 landed git2's `https`
# feature, whose libgit2 init parsed the whole CA bundle in every process
# (257.6 M instructions for `berth actions` against 5.2 M) and passed every
# test. Run this before landing anything that adds a dependency, a global
# initialiser or a `Once` on a common path:
#
#   BERTH_BASELINE=/path/to/main/berth scripts/bench-process.sh
#   BERTH_BIN=target/release/berth BERTH_BASELINE=/tmp/old/berth scripts/bench-process.sh
#   BENCH_MAX_RATIO=1.05 …     # exit 1 when a command's ratio is above it (default 1.10)
#
# Without BERTH_BIN the release binary is built. Each command runs against
# one fresh state directory (init'ed by the baseline, so both read the same
# store); children are not traced.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "bench-process: needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
[ -n "${BERTH_BASELINE:-}" ] || { echo "bench-process: set BERTH_BASELINE to the berth binary to compare with" >&2; exit 1; }

if [ -n "${BERTH_BIN:-}" ]; then
  BERTH=$(realpath "$BERTH_BIN")
else
  scripts/build-deps.sh
  cargo build -q --release --bin berth
  target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  BERTH="$target_dir/release/berth"
fi
BASELINE=$(realpath "$BERTH_BASELINE")
max=${BENCH_MAX_RATIO:-1.10}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export BERTH_HOME="$work/state"
"$BASELINE" init >/dev/null

# Instructions of one run of "$@": the process, through any program it
# execs (a baseline from before berth was one binary replaced itself with
# `berth-full`), summed; these commands spawn no children.
instructions() {
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg.%p.%n" "$@" >/dev/null 2>"$work/vg.err" || true
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/vg.err" | awk '{ s += $1 } END { print s }'
}

# The page faults of "$@" (minor and major, least of five runs): the
# kernel's count for the process and any child it waited for (these
# commands start none).
faults() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
def one():
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt)
print(min(one() for _ in range(5)))
PY
}

status=0
printf '%-34s %14s %14s %8s %14s\n' command baseline berth ratio 'page faults'
for cmd in "--version" "actions" "decide -- git status" "project ls --json"; do
  # shellcheck disable=SC2086  # the command's words, split on purpose
  old=$(instructions "$BASELINE" $cmd)
  # shellcheck disable=SC2086
  new=$(instructions "$BERTH" $cmd)
  ratio=$(python3 -c "print(f'{$new/$old:.3f}')")
  # shellcheck disable=SC2086
  pf="$(faults "$BASELINE" $cmd) -> $(faults "$BERTH" $cmd)"
  printf '%-34s %14s %14s %8s %14s\n' "berth $cmd" "$old" "$new" "${ratio}x" "$pf"
  if python3 -c "import sys; sys.exit(0 if $new/$old <= $max else 1)"; then :; else
    echo "bench-process: berth $cmd costs ${ratio}x the baseline's instructions (limit ${max}x)" >&2
    status=1
  fi
done
exit $status
