#!/bin/sh
# berth's fence for a forge server: refuses a push from an agent's stale
# lease holder. Install this one file as BOTH hooks of the server's bare
# repository, and let receive-pack take push options:
#
#   cp berth-fence-hook.sh  REPO.git/hooks/pre-receive
#   cp berth-fence-hook.sh  REPO.git/hooks/reference-transaction
#   chmod +x REPO.git/hooks/pre-receive REPO.git/hooks/reference-transaction
#   git -C REPO.git config receive.advertisePushOptions true
#
# Needs flock(1) (util-linux). Keeps its state in REPO.git/berth-fence/. A
# dispatcher running it among other hooks must `exec` it, or export
# BERTH_FENCE_RECEIVE_PACK=$PPID (the receive-pack) before running it.
#
# A berth worker sends `-o berth-fence=<agent>:<token>` with every push of an
# agent's work (the token grows at every takeover of the agent's lease), and a
# takeover pushes `refs/berth/fence/<agent>` with the new token before it
# reads the server's refs (the "raise").
#
# What guarantees it (git >= 2.28, which runs reference-transaction):
#  - pre-receive (no argument) records the push's token under
#    berth-fence/inflight/<receive-pack pid>, refuses at once a token below
#    the highest seen for the agent, and says `berth-fence: ok` (berth
#    requires that line from a raise: a server without this hook fails the
#    takeover instead of letting it go on unfenced);
#  - reference-transaction `prepared` runs once receive-pack holds the ref's
#    lock and before the ref moves. Under flock on berth-fence/<agent>.lock it
#    compares the token with the highest (refused below it: the transaction is
#    aborted and the ref stays), raises the highest when the token is above
#    it, and marks the push prepared. A raise then waits, outside the lock,
#    until every prepared push of the agent with a lower token has committed
#    or aborted (or its receive-pack died), its mark saying `waiting`
#    meanwhile, and only then lets its own ref move, so its push returns to
#    berth only after them;
#  - `committed` / `aborted` remove the mark.
# So a stale push either was prepared before the raise (then the raise, and
# the takeover's read after it, come after its ref moved) or is checked after
# the raise (then it is refused): never a stale write after the new holder's
# read.
set -u

dir=$(git rev-parse --absolute-git-dir) || exit 1
state="$dir/berth-fence"
hooks=$(dirname "$0")
# The receive-pack running both hooks: this script's parent, or what a hook
# dispatcher that runs it as its own child exports (its own $PPID).
rp=${BERTH_FENCE_RECEIVE_PACK:-$PPID}
# How long a raise waits for older prepared pushes (seconds) before failing.
wait_max=${BERTH_FENCE_WAIT_SECS:-600}

say() { printf 'berth-fence: %s\n' "$*" >&2; }

alive() { kill -0 "$1" 2>/dev/null || [ -d "/proc/$1" ]; }

highest() { cat "$state/$1.token" 2>/dev/null || echo 0; }

# Marks of receive-packs that died without `committed`/`aborted`.
sweep() {
    for f in "$state"/inflight/*; do
        [ -f "$f" ] || continue
        pid=${f##*/}
        alive "$pid" || rm -f "$f"
    done
}

pre_receive() {
    mkdir -p "$state/inflight" || exit 1
    rm -f "$state/inflight/$rp"
    sweep
    fence=""
    i=0
    while [ "$i" -lt "${GIT_PUSH_OPTION_COUNT:-0}" ]; do
        eval "opt=\${GIT_PUSH_OPTION_$i}"
        case $opt in berth-fence=*) fence=${opt#berth-fence=} ;; esac
        i=$((i + 1))
    done
    updates=$(wc -l)
    [ -n "$fence" ] || exit 0
    agent=${fence%%:*}
    token=${fence#*:}
    case $agent in '' | *[!a-z0-9_-]*)
        say "refused: bad agent name in berth-fence=$fence"
        exit 1
        ;;
    esac
    case $token in '' | *[!0-9]*)
        say "refused: bad token in berth-fence=$fence"
        exit 1
        ;;
    esac
    if ! grep -q 'berth-fence' "$hooks/reference-transaction" 2>/dev/null ||
        [ ! -x "$hooks/reference-transaction" ]; then
        say "refused: this repository's reference-transaction hook is not berth's fence (install berth-fence-hook.sh as it too)"
        exit 1
    fi
    # One transaction per ref: a mark serves one.
    if [ "$updates" -ne 1 ]; then
        say "refused: a fenced push updates exactly one ref ($updates here)"
        exit 1
    fi
    cur=$(highest "$agent")
    if [ "$token" -lt "$cur" ]; then
        say "stale $agent $token $cur"
        exit 1
    fi
    printf '%s %s pending\n' "$agent" "$token" >"$state/inflight/$rp" || exit 1
    say "ok $agent $token"
}

prepared() {
    mark="$state/inflight/$rp"
    [ -f "$mark" ] || exit 0 # not a fenced push
    read -r agent token _ <"$mark" || exit 1
    cat >/dev/null
    exec 9>"$state/$agent.lock" || exit 1
    flock 9 || exit 1
    cur=$(highest "$agent")
    if [ "$token" -lt "$cur" ]; then
        say "stale $agent $token $cur"
        exit 1
    fi
    raise=0
    if [ "$token" -gt "$cur" ]; then
        printf '%s\n' "$token" >"$state/$agent.token.tmp" &&
            mv "$state/$agent.token.tmp" "$state/$agent.token" || exit 1
        raise=1
    fi
    printf '%s %s prepared\n' "$agent" "$token" >"$mark" || exit 1
    exec 9>&-
    [ "$raise" = 1 ] || exit 0
    waited=0
    while :; do
        older=0
        for f in "$state"/inflight/*; do
            [ -f "$f" ] && [ "$f" != "$mark" ] || continue
            read -r a t s <"$f" 2>/dev/null || continue
            if [ "$a" = "$agent" ] && [ "$s" != pending ] && [ "$t" -lt "$token" ]; then
                if alive "${f##*/}"; then older=1; else rm -f "$f"; fi
            fi
        done
        [ "$older" = 0 ] && exit 0
        # Shown to whoever looks (and to berth's tests): this raise waits.
        [ "$waited" = 0 ] && printf '%s %s waiting\n' "$agent" "$token" >"$mark"
        if [ "$waited" -ge $((wait_max * 10)) ]; then
            say "refused: an older push of $agent is still in flight after ${wait_max}s"
            exit 1
        fi
        # Tenths of a second where sleep takes fractions (GNU, BusyBox).
        sleep 0.1 2>/dev/null || sleep 1
        waited=$((waited + 1))
    done
}

case ${1:-} in
'') pre_receive ;;
prepared) prepared ;;
committed | aborted)
    cat >/dev/null
    rm -f "$state/inflight/$rp"
    ;;
*) cat >/dev/null ;; # a state this script does not know (e.g. `preparing`)
esac
exit 0
