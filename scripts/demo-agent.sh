#!/usr/bin/env bash
# A `command` agent end to end, checked by itself: berth runs an agent CLI
# for a task's prompt, and the agent works only through berth's MCP tools,
# served for the turn over streamable HTTP outside the program's
# confinement ({mcp_config}). The agent CLI is scripts/mcp-agent.py, a
# stand-in with no model: it reads its prompt, runs `cat README.md`, writes
# a file, commits, pushes and opens a pull request -- each one a proposed
# action decided by berth's policy and executed in the agent's berth.
#
#   scripts/demo-agent.sh
#
# The berth is mounted (a Docker container) when the Docker engine answers,
# else a runner berth (CI=true refuses that fallback). State: $BERTH_HOME if
# set (empty or absent; left in place), else a temporary directory removed
# at the end. Exits 0 with a summary, or 1 naming the check that failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

fail() { echo "demo-agent: FAILED: $*" >&2; exit 1; }
pass() { echo "  ok  $*"; }

# shellcheck source=scripts/demo-setup.sh
. scripts/demo-setup.sh
[ "$mode" = mounted ] || [ "${CI:-}" != true ] \
  || fail "CI=true and the Docker engine does not answer: this demo brings a mounted berth up"
downs() { "$BERTH" down dev-1 --keep-worktree >/dev/null 2>&1 || true; }
trap 'downs; unmount_temp; rm -rf "$work"' EXIT

b() { "$BERTH" "$@"; }
count() { grep -o "$1" | wc -l | tr -d ' '; }
field() { python3 -c "import json,sys; v=json.load(sys.stdin); print($1)"; }

echo "== a sample project: a README, and the agent CLI stand-in in scripts/"
src="$work/sample"
mkdir -p "$src/scripts"
git -C "$src" init -q -b main
printf '# sample\n\nA project an agent works on through berth.\n' > "$src/README.md"
cp "$repo/scripts/mcp-agent.py" "$src/scripts/mcp-agent.py"
git -C "$src" add README.md scripts
git -C "$src" -c user.name="Demo User" -c user.email=demo@example.com commit -q -m "readme and agent"
b project add demo --from "$src" >/dev/null
pass "project demo imported"

echo "== a command agent: python3 scripts/mcp-agent.py {prompt_file} {mcp_config}"
b agent activate dev-1 --project demo --impl command \
  --command 'python3 scripts/mcp-agent.py {prompt_file} {mcp_config}' | sed 's/^/    /'
# Commits, pushes, PRs and reads are seeded auto_approve; the demo lets
# commands and writes through too (berth's rules still decide each one).
b autonomy set dev-1 terminal auto_approve >/dev/null
b autonomy set dev-1 file_write auto_approve >/dev/null
task=$(b task create --project demo --title "Write notes about the README" --json | field 'v["id"]')
b up dev-1 --project demo >/dev/null
berth_mode=$(b ls --json | field '[x["mode"] for x in v if x["agent"] == "dev-1"][0]')
[ "$berth_mode" = "$mode" ] || fail "dev-1's berth is in '$berth_mode' mode, expected $mode"
if [ "$mode" = mounted ]; then
  container=$(docker ps --filter "label=berth.worktree=$state/berths/demo/dev-1/dev-1" --format '{{.Names}}')
  [ -n "$container" ] || fail "no container for dev-1's mounted berth"
  pass "dev-1 up in a mounted berth (container $container)"
else
  pass "dev-1 up in a runner berth"
fi

echo "== the task's prompt, delivered to the agent's session"
b sessions dev-1 --open "$task" >/dev/null
b prompt dev-1 --task "$task" "Write notes about the README, then commit, push and open a pull request." | sed 's/^/    /'
b agent turn dev-1 | sed 's/^/    /'
turn=$(b events --agent dev-1 --type session.turn_ended --json)
[ "$(field 'v[-1]["payload"]["exit_code"]' <<<"$turn")" = 0 ] \
  || fail "the agent's program did not exit 0: $(field 'v[-1]["payload"]["stderr_tail"]' <<<"$turn")"
echo "  the agent's program printed:"
field 'v[-1]["payload"]["stdout_tail"]' <<<"$turn" | sed 's/^/    | /'

prs=$(b pr list --json)
[ "$(count '"status":"open"' <<<"$prs")" = 1 ] || fail "expected one open PR, got: $prs"
branch=$(field 'v[0]["branch"]' <<<"$prs")
pass "PR #$(field 'v[0]["number"]' <<<"$prs") open from $branch: $(field 'v[0]["title"]' <<<"$prs")"
git --git-dir="$state/forge/demo.git" show "$branch:AGENT_NOTES.md" | grep -q "The README begins: # sample" \
  || fail "AGENT_NOTES.md on $branch does not hold what the agent read"
pass "AGENT_NOTES.md on $branch says what the agent read"

created=$(b events --type proposed_action.created --json)
kinds=$(field '" ".join(e["payload"]["action"]["type"] for e in v)' <<<"$created")
[ "$kinds" = "terminal file_write git_commit git_push pr_open" ] \
  || fail "expected the proposals terminal file_write git_commit git_push pr_open, got: $kinds"
actors=$(field '" ".join(sorted(set(e["actor"]["kind"] + ":" + e["actor"]["id"] for e in v)))' <<<"$created")
[ "$actors" = "agent:dev-1" ] || fail "the proposals' actors are '$actors', not agent:dev-1"
pass "5 proposed actions ($kinds), every one by agent:dev-1"

url=$(b events --type session.turn_started --json | field 'v[-1]["payload"]["tools"]')
port=${url#http://127.0.0.1:}; port=${port%/mcp}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  fail "the turn's endpoint $url still accepts connections after the turn"
fi
pass "the turn's endpoint $url is gone (connection refused)"

echo
downs
if [ "$mode" = mounted ]; then
  left=$(docker ps -a --filter "label=berth.worktree=$state/berths/demo/dev-1/dev-1" --format '{{.Names}}')
  [ -z "$left" ] || fail "dev-1's container is left after down: $left"
fi
if [ "$state" = "$work/state" ]; then where="a temporary state, removed"; else where="state left in $state"; fi
echo "demo-agent: passed ($mode mode; $where)"
echo "  dev-1 ran one turn of its program for task ${task:0:8}: README read, file written, committed, pushed, PR opened -- all through berth's MCP tools"
