#!/usr/bin/env bash
# PR automation end to end with the noop agent, checked by itself: a PR
# whose check fails -> one auto-fix prompt -> the agent's fix commit ->
# checks green -> auto-merge proposed -> approved by a person (main is
# protected) -> merged -> one terminal prompt. Mounted mode when the Docker
# engine answers, else runner mode (CI=true refuses that fallback).
#
#   scripts/demo-pr-automation.sh
#
# State: $BERTH_HOME if set (it must be empty or absent; it is left in place
# for you to look at), else a new temporary directory removed at the end.
# Exits 0 with a summary, or 1 naming the check that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "demo-pr-automation: FAILED: $*" >&2; exit 1; }
pass() { echo "  ok  $*"; }

if [ "${CI:-}" = true ] && ! docker version >/dev/null 2>&1; then
  fail "CI=true and the Docker engine does not answer: this demo brings a mounted berth up"
fi
# shellcheck source=scripts/demo-setup.sh
. scripts/demo-setup.sh
downs() { "$BERTH" down dev-1 --keep-worktree >/dev/null 2>&1 || true; }
trap 'downs; unmount_temp; rm -rf "$work"' EXIT

b() { "$BERTH" "$@"; }
field() { python3 -c "import json,sys; v=json.load(sys.stdin); print($1)"; }
queued() { b events --type prompt.queued --json | field "len([e for e in v if e['payload']['kind'] == '$1'])"; }

echo "== a sample project whose check fails until the agent fixes it"
src="$work/sample"
mkdir -p "$src"
git -C "$src" init -q -b main
printf '# sample\n' > "$src/README.md"
git -C "$src" add README.md
git -C "$src" -c user.name="Demo User" -c user.email=demo@example.com commit -q -m "readme"
b project add demo --from "$src" >/dev/null
config="$state/projects/demo/berth.toml"
# The check: the noop agent's fix file must be on the PR's head.
printf '\n[[checks]]\nname = "fixed"\ncommand = "cat noop/*.fix.md"\ntimeout_secs = 60\n' >> "$config"
pass "project demo with check 'fixed' (cat noop/*.fix.md)"

echo "== the noop agent opens PR #1"
b agent activate dev-1 --project demo --impl noop >/dev/null
b task create --project demo --title "Add a file" >/dev/null
b agent run dev-1 --until-idle >/dev/null
[ "$(b pr show 1 --json | field 'v["status"]')" = open ] || fail "PR #1 is not open"
pass "PR #1 open, its task in review"

echo "== automation on: auto-fix, auto-merge, and a prompt when merged"
b pr auto 1 --fix on --merge on --on-terminal merged | sed 's/^/    /'

echo "== the watcher: the check fails, one auto-fix prompt"
b pr watch --once >/dev/null
b pr watch --once >/dev/null
[ "$(b pr checks 1 --json | field '[c["status"] for c in v["checks"]][0]')" = failure ] \
  || fail "the check did not fail on the PR's first head"
[ "$(queued auto_fix)" = 1 ] || fail "expected exactly one auto-fix prompt, got $(queued auto_fix)"
pass "check 'fixed' failed; one auto-fix prompt queued (a second pass sent none)"
b pr auto 1 | sed 's/^/    /'

echo "== the noop agent answers the prompt with a fix commit"
b agent run dev-1 --until-idle >/dev/null
b pr watch --once >/dev/null
[ "$(b pr checks 1 --json | field 'v["ready"]')" = True ] || fail "PR #1 is not ready after the fix"
pass "the fix is on the PR's head; checks green; the PR is ready"

echo "== auto-merge proposed the merge; main is protected: a person approves"
action=$(b pr auto 1 --json | field 'v["merge_action"]')
[ -n "$action" ] && [ "$action" != None ] || fail "auto-merge proposed nothing"
[ "$(b actions --pending --json | field "len([a for a in v if a['id'] == '$action'])")" = 1 ] \
  || fail "the merge $action does not wait for a person"
pass "merge ${action:0:8} waits for a person (ADR 0167: never automatic into a protected branch)"
b approve "${action:0:8}" >/dev/null
[ "$(b pr show 1 --json | field 'v["status"]')" = merged ] || fail "PR #1 was not merged"
pass "approved: PR #1 merged"

echo "== the terminal prompt, once"
b pr watch --once >/dev/null
b pr watch --once >/dev/null
[ "$(queued lifecycle)" = 1 ] || fail "expected one terminal prompt, got $(queued lifecycle)"
pass "one 'merged' prompt queued for the task's session"

echo
downs
echo "demo-pr-automation: passed ($mode mode)"
echo "  failing check -> 1 auto-fix prompt -> fix commit -> green -> merge proposed -> approved -> merged -> terminal prompt"
