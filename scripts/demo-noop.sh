#!/usr/bin/env bash
# The noop agent end to end, checked by itself: in mounted mode (a Docker
# container per agent) when the Docker engine answers, else in runner mode.
#
#   scripts/demo-noop.sh
#
# State: $BERTH_HOME if set (it must be empty or absent; it is left in place
# for you to look at), else a new temporary directory removed at the end.
# Part 1: noop agent dev-1 with its activation seeds delivers a task to
# review with no human approval. Part 2: dev-2, whose seeds ask a person,
# stops at each step until it is approved through the CLI, and the gate opens
# only after its PR executes. Exits 0 with a summary, or 1 naming the check
# that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "demo-noop: FAILED: $*" >&2; exit 1; }
pass() { echo "  ok  $*"; }

# shellcheck source=scripts/demo-setup.sh
. scripts/demo-setup.sh
# The agents' containers go with the demo, whatever happens (worktrees stay).
downs() {
  for a in dev-1 dev-2; do "$BERTH" down "$a" --keep-worktree >/dev/null 2>&1 || true; done
}
trap 'downs; unmount_temp; rm -rf "$work"' EXIT

b() { "$BERTH" "$@"; }
# The first "KEY":"VALUE" of a JSON text (berth prints the id first).
json_field() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | sed "s/^\"$1\":\"//; s/\"\$//"; }
count() { grep -o "$1" | wc -l | tr -d ' '; }

echo "== a sample project from a generated repository"
src="$work/sample"
mkdir -p "$src"
git -C "$src" init -q -b main
git -C "$src" -c user.name="Demo User" -c user.email=demo@example.com commit -q --allow-empty -m "initial commit"
printf '# sample\n' > "$src/README.md"
git -C "$src" add README.md
git -C "$src" -c user.name="Demo User" -c user.email=demo@example.com commit -q -m "readme"

b init >/dev/null
b project add demo --from "$src" >/dev/null
forge="$state/forge/demo.git"
[ -d "$forge" ] || fail "project add: no forge at $forge"
pass "project demo imported into $forge"

echo "== part 1: noop agent dev-1, activation seeds (auto_approve for the git chain)"
b agent activate dev-1 --project demo --impl noop >/dev/null
task1=$(b task create --project demo --title "Add a file" --json | json_field id)
[ -n "$task1" ] || fail "task create printed no id"
short1=${task1:0:8}
b agent run dev-1 --until-idle

branch1="agent/dev-1/$short1"
git --git-dir="$forge" rev-parse -q --verify "refs/heads/$branch1" >/dev/null \
  || fail "branch $branch1 is not in the forge (dev-1 did not push)"
pass "branch $branch1 in the forge"

berth_mode=$(b ls --json | grep -o '"agent":"dev-1"[^}]*"mode":"[a-z]*"' | sed 's/.*"mode":"//; s/"$//')
[ "$berth_mode" = "$mode" ] || fail "dev-1's berth is in '$berth_mode' mode, expected $mode"
if [ "$mode" = mounted ]; then
  container=$(docker ps --filter "label=berth.worktree=$state/berths/demo/dev-1/dev-1" --format '{{.Names}}')
  [ -n "$container" ] || fail "no container for dev-1's mounted berth"
  owner=$(stat -c %u "$state/berths/demo/dev-1/dev-1/noop/$short1.md")
  [ "$owner" = 1000 ] || fail "the noop agent's file belongs to uid $owner, not the container's uid 1000"
  pass "dev-1 worked in a mounted berth (container $container, files owned by uid 1000)"
else
  pass "dev-1 worked in a runner berth"
fi

author=$(git --git-dir="$forge" log -1 --format=%an "$branch1")
[ "$author" = "dev-1[bot]" ] || fail "commit author is '$author', not dev-1[bot]"
body=$(git --git-dir="$forge" log -1 --format=%B "$branch1")
grep -q '^Berth-Action: [0-9a-f]\{32\}$' <<<"$body" || fail "commit has no Berth-Action trailer: $body"
grep -q '^Co-authored-by: .* <.*>$' <<<"$body" || fail "commit has no Co-authored-by trailer: $body"
pass "commit by dev-1[bot] with the Co-authored-by and Berth-Action trailers"

prs=$(b pr list --json)
[ "$(count '"status":"open"' <<<"$prs")" = 1 ] || fail "expected one open PR, got: $prs"
grep -q "\"branch\":\"$branch1\"" <<<"$prs" || fail "the open PR is not from $branch1: $prs"
pass "one open PR from $branch1"

tasks=$(b task ls --json)
grep -q "\"id\":\"$task1\",\"project\":\"demo\",\"title\":\"Add a file\",\"status\":\"in_review\"" <<<"$tasks" \
  || fail "task $short1 is not in review: $tasks"
pass "task $short1 in review"

created=$(b events --agent dev-1 --type proposed_action.created --json)
n_created=$(count '"type":"proposed_action.created"' <<<"$created")
n_auto=$(count '"status":"auto_approved"' <<<"$created")
for kind in git_commit git_push pr_open; do
  grep -q "\"action\":{[^}]*\"type\":\"$kind\"" <<<"$created" || fail "no proposed_action.created for $kind"
done
[ "$n_created" = 3 ] && [ "$n_auto" = 3 ] \
  || fail "expected 3 proposed_action.created (commit, push, PR) all auto_approved; got $n_created created, $n_auto auto_approved"
metrics=$(b metrics --agent dev-1 --json)
grep -q '"human_approvals":0' <<<"$metrics" || fail "dev-1 needed human approvals: $metrics"
pass "3 proposed_action.created (commit, push, PR), all auto_approved; 0 human approvals"

echo "== part 2: dev-2, its seeds set to require_approval"
b agent activate dev-2 --project demo --impl noop >/dev/null
for kind in git_commit git_push pr_open; do
  b autonomy set dev-2 "$kind" require_approval >/dev/null
done
task2=$(b task create --project demo --title "Another file" --json | json_field id)
short2=${task2:0:8}

task_status() { b task ls --json | sed -n "s/.*\"id\":\"$task2\",\"project\":\"demo\",\"title\":\"[^\"]*\",\"status\":\"\([a-z_]*\)\".*/\1/p"; }
for step in git_commit git_push pr_open; do
  b agent run dev-2 --until-idle >/dev/null
  pending=$(b actions --pending --json)
  [ "$(count '"status":"pending"' <<<"$pending")" = 1 ] || fail "expected exactly one pending action before $step: $pending"
  grep -q "\"action\":{[^}]*\"type\":\"$step\"" <<<"$pending" || fail "the pending action is not $step: $pending"
  [ "$(task_status)" = awaiting_approval ] || fail "task $short2 is '$(task_status)' while $step waits (the gate must stay shut)"
  id=$(json_field id <<<"$pending")
  b approve "$id" >/dev/null || fail "approving $step ($id) failed"
  pass "$step waited for a person; approved through the CLI"
done
[ "$(task_status)" = in_review ] || fail "task $short2 is '$(task_status)' after its PR executed, not in_review"
b agent run dev-2 --until-idle >/dev/null
[ "$(b actions --pending --json)" = "[]" ] || fail "dev-2 proposed more after its PR"
metrics2=$(b metrics --agent dev-2 --json)
grep -q '"human_approvals":3' <<<"$metrics2" || fail "expected 3 human approvals for dev-2: $metrics2"
pass "the gate opened only after the PR executed (3 human approvals)"

echo
if [ "$state" = "$work/state" ]; then where="a temporary state, removed"; else where="state left in $state"; fi
downs
if [ "$mode" = mounted ]; then
  for a in dev-1 dev-2; do
    left=$(docker ps -a --filter "label=berth.worktree=$state/berths/demo/$a/$a" --format '{{.Names}}')
    [ -z "$left" ] || fail "$a's container is left after down: $left"
  done
  pass "no container left after down"
fi
echo "demo-noop: passed ($mode mode; $where)"
echo "  dev-1: task $short1 delivered to review with 3 automatic approvals and 0 human ones"
echo "  dev-2: task $short2 delivered one approved step at a time: commit, push, PR, then the gate"
