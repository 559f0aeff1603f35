# Shared by the exec benchmarks (bench-mounted.sh, bench-runner.sh); sourced,
# not run. Needs BERTH (the binary) and BERTH_HOME (an empty state directory).

# bench_agent WORK MODE: a one-commit repository at WORK/src, the state, a
# project `bench` from it and agent dev-1 whose terminal commands are
# auto-approved, up in MODE (runner or mounted).
bench_agent() {
  local src="$1/src"
  mkdir -p "$src"
  git -C "$src" init -q -b main
  printf 'bench\n' > "$src/README.md"
  git -C "$src" add README.md
  git -C "$src" -c user.name=b -c user.email=b@x commit -q -m init
  "$BERTH" init >/dev/null
  "$BERTH" project add bench --from "$src" >/dev/null
  "$BERTH" agent activate dev-1 --project bench >/dev/null
  "$BERTH" autonomy set dev-1 terminal auto_approve >/dev/null
  "$BERTH" up dev-1 --project bench --mode "$2" >/dev/null 2>&1
}

# bench_network MODE: the bench project's [sandbox.network] mode (none, open
# or allowlist: no route out but berth's egress proxy on the exec's loopback).
bench_network() {
  python3 - "$BERTH_HOME/projects/bench/berth.toml" "$1" <<'PY'
import sys
path, mode = sys.argv[1], sys.argv[2]
text = open(path).read()
at = text.index("[sandbox.network]")
key = text.index("mode = ", at)
end = text.index("\n", key)
open(path, "w").write(text[:key] + f'mode = "{mode}"' + text[end:])
PY
}
