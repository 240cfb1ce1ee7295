#!/bin/sh
# Checks braidrun's contract: the rank environment, exit status propagation, signal reports,
# teardown of the other ranks, --timeout, signal forwarding, --tag-output and --bind-to.
# Usage: braidrun_test.sh path/to/braidrun
set -u
BRAIDRUN=${1:?usage: braidrun_test.sh path/to/braidrun}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILURES=0

fail() {
  echo "FAIL: $*"
  FAILURES=$((FAILURES + 1))
}

# expect_rc NAME EXPECTED ACTUAL
expect_rc() {
  if [ "$3" -ne "$2" ]; then fail "$1: exit status $3, expected $2"; fi
}

# expect_grep NAME PATTERN FILE
expect_grep() {
  if ! grep -Eq "$2" "$3"; then
    fail "$1: no line matching '$2' in:"
    sed 's/^/    /' "$3"
  fi
}

# --- environment: every torchrun variable, ranks 0..N-1, one shared secret, inherited values
# replaced. RANK=99 in braidrun's own environment must not leak into the ranks.
RANK=99 BRAID_COMM_SECRET=stale "$BRAIDRUN" -n 3 sh -c \
  'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT $BRAID_COMM_SECRET"' \
  >"$WORK/env.out" 2>"$WORK/env.err"
expect_rc env 0 $?
[ "$(wc -l <"$WORK/env.out")" -eq 3 ] || fail "env: expected 3 lines, got $(cat "$WORK/env.out")"
[ "$(cut -d' ' -f1 "$WORK/env.out" | sort | tr '\n' ' ')" = "0 1 2 " ] || fail "env: RANK values"
while read -r rank local world localworld group addr port secret; do
  [ "$rank" = "$local" ] || fail "env: LOCAL_RANK $local != RANK $rank"
  [ "$world" = 3 ] && [ "$localworld" = 3 ] || fail "env: WORLD_SIZE/LOCAL_WORLD_SIZE $world/$localworld"
  [ "$group" = 0 ] || fail "env: GROUP_RANK $group"
  [ "$addr" = 127.0.0.1 ] || fail "env: MASTER_ADDR $addr"
  [ "$port" -gt 0 ] 2>/dev/null && [ "$port" -lt 65536 ] || fail "env: MASTER_PORT $port"
  echo "$secret" | grep -Eq '^[0-9a-f]{32}$' || fail "env: BRAID_COMM_SECRET '$secret'"
done <"$WORK/env.out"
[ "$(cut -d' ' -f8 "$WORK/env.out" | sort -u | wc -l)" -eq 1 ] || fail "env: ranks got different secrets"
"$BRAIDRUN" -n 1 sh -c 'echo $BRAID_COMM_SECRET' >"$WORK/secret2.out"
[ "$(cat "$WORK/secret2.out")" != "$(cut -d' ' -f8 "$WORK/env.out" | head -n1)" ] ||
  fail "env: the secret did not change between runs"
"$BRAIDRUN" -n 2 --master-port 23456 sh -c 'echo $MASTER_PORT' >"$WORK/port.out"
[ "$(sort -u "$WORK/port.out")" = 23456 ] || fail "env: --master-port not used"

# --- success of all ranks
"$BRAIDRUN" -n 4 true
expect_rc all-ok 0 $?

# --- a rank's exit status is reported and propagated; the others are stopped promptly
start=$(date +%s)
"$BRAIDRUN" -n 3 sh -c '[ "$RANK" = 2 ] && exit 3; sleep 30' 2>"$WORK/status.err"
expect_rc status 3 $?
expect_grep status 'braidrun: rank 2 \(pid [0-9]+\) exited with status 3' "$WORK/status.err"
[ $(($(date +%s) - start)) -lt 10 ] || fail "status: the other ranks were not stopped"

# --- death by signal: 128+signal and the signal's name
"$BRAIDRUN" -n 2 sh -c '[ "$RANK" = 1 ] && kill -9 $$; sleep 30' 2>"$WORK/signal.err"
expect_rc signal 137 $?
expect_grep signal 'braidrun: rank 1 \(pid [0-9]+\) killed by signal 9 \(Killed\)' "$WORK/signal.err"

# --- ranks that ignore SIGTERM are SIGKILLed after the grace period
"$BRAIDRUN" -n 3 --grace-period 0.3 sh -c \
  'trap "" TERM; [ "$RANK" = 0 ] && { sleep 0.2; exit 5; }; sleep 30' 2>"$WORK/grace.err"
expect_rc grace 5 $?
expect_grep grace 'did not stop after SIGTERM; sending SIGKILL' "$WORK/grace.err"

# --- --timeout stops everything, names the ranks still running, exits 124
"$BRAIDRUN" -n 2 --timeout 0.5 sh -c '[ "$RANK" = 0 ] && exit 0; sleep 30' 2>"$WORK/timeout.err"
expect_rc timeout 124 $?
expect_grep timeout 'timeout after 0.5 s; still running: rank 1 \(pid [0-9]+\)$' "$WORK/timeout.err"

# --- SIGTERM sent to braidrun reaches every rank (exactly once) and braidrun exits 143
"$BRAIDRUN" -n 2 sh -c \
  "trap 'echo term-\$RANK >>$WORK/forward.log; exit 0' TERM; echo ready >>$WORK/ready.log; sleep 30 & wait" \
  2>"$WORK/forward.err" &
launcher=$!
tries=0
while [ "$(cat "$WORK/ready.log" 2>/dev/null | wc -l)" -lt 2 ] && [ $tries -lt 100 ]; do
  sleep 0.05
  tries=$((tries + 1))
done
kill -TERM $launcher
wait $launcher
expect_rc forward 143 $?
[ "$(sort "$WORK/forward.log" 2>/dev/null | tr '\n' ' ')" = "term-0 term-1 " ] ||
  fail "forward: ranks saw: $(cat "$WORK/forward.log" 2>/dev/null)"
expect_grep forward 'received signal 15' "$WORK/forward.err"

# --- --tag-output prefixes stdout and stderr lines with the rank
"$BRAIDRUN" -n 2 --tag-output sh -c 'echo out-$RANK; printf "partial-$RANK" >&2' \
  >"$WORK/tag.out" 2>"$WORK/tag.err"
expect_rc tag 0 $?
expect_grep tag '^\[rank0\]: out-0$' "$WORK/tag.out"
expect_grep tag '^\[rank1\]: out-1$' "$WORK/tag.out"
expect_grep tag '^\[rank1\]: partial-1$' "$WORK/tag.err"

# --- --bind-to core: rank i runs on the i-th allowed CPU; more ranks than CPUs is refused
CPUS=$(taskset -pc $$ | sed 's/.*: //')
FIRST=$(python3 -c "import os; print(sorted(os.sched_getaffinity(0))[0])")
"$BRAIDRUN" -n 1 --bind-to core sh -c 'taskset -pc $$' >"$WORK/bind.out" 2>&1
expect_rc bind 0 $?
expect_grep bind "current affinity list: $FIRST\$" "$WORK/bind.out"
"$BRAIDRUN" -n 1 --bind-to none sh -c 'taskset -pc $$' >"$WORK/unbound.out" 2>&1
expect_rc unbound 0 $?
expect_grep unbound "current affinity list: $CPUS\$" "$WORK/unbound.out"
NCPU=$(python3 -c "import os; print(len(os.sched_getaffinity(0)))")
"$BRAIDRUN" -n $((NCPU + 1)) --bind-to core true 2>"$WORK/bind-many.err"
expect_rc bind-many 2 $?
expect_grep bind-many "needs a CPU per rank: $((NCPU + 1)) ranks" "$WORK/bind-many.err"
"$BRAIDRUN" -n 1 --bind-to socket true 2>"$WORK/bind-bad.err"
expect_rc bind-bad 2 $?
expect_grep bind-bad '\-\-bind-to takes core or none' "$WORK/bind-bad.err"

# --- a program that cannot be started, and bad usage
"$BRAIDRUN" -n 2 /nonexistent/program 2>"$WORK/exec.err"
expect_rc exec 127 $?
expect_grep exec "cannot run '/nonexistent/program'" "$WORK/exec.err"
"$BRAIDRUN" true 2>/dev/null
expect_rc usage 2 $?

if [ $FAILURES -ne 0 ]; then
  echo "$FAILURES braidrun check(s) failed"
  exit 1
fi
echo "all braidrun checks passed"
