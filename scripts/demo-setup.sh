# shellcheck shell=bash
# What the demos (demo-noop.sh, demo-agent.sh) share, sourced from the
# repository's root after they define `fail`: build berth, pick the mode,
# make the state. Sets BERTH (the binary), mode (mounted or runner), work (a
# temporary directory) and state (exported as BERTH_HOME), and defines
# unmount_temp. The caller sets its EXIT trap.

scripts/build-deps.sh || fail "the build's tools are missing (above)"
echo "== building berth"
cargo build -q --bin berth --bin berth-helper --bin berth-exec-shim
# Where cargo put it: CARGO_TARGET_DIR and .cargo/config.toml move it.
target_dir=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BERTH="$target_dir/debug/berth"

# sandbox.mode is "auto": mounted when the engine answers. Under CI=true a
# missing engine fails the demo (berth itself refuses to fall back there).
if docker version >/dev/null 2>&1; then
  mode=mounted
  echo "== the Docker engine answers: mounted mode; the agent image"
  "$BERTH" image build | tail -1
else
  mode=runner
  echo "== no Docker engine: runner mode"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${BERTH_HOME:-}" ]; then
  state="$BERTH_HOME"
  if [ -e "$state" ] && [ -n "$(ls -A "$state" 2>/dev/null)" ]; then
    fail "BERTH_HOME=$state is not empty: point it at a fresh directory"
  fi
else
  state="$work/state"
fi
export BERTH_HOME="$state"
unset BERTH_STATE || true

# A berth's own disk (berth as root) stays mounted while its worktree is
# kept: a temporary state is unmounted before it is removed.
unmount_temp() {
  [ "$state" = "$work/state" ] || return 0
  awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
