#!/usr/bin/env bash
# compile --all in worker processes (cli/compile_workers.h), no GPU: J workers compile the 36 reduce
# variants once each; shards of a fleet add up to the space; a variant that does not compile gives the
# failure once with its exit code; a worker killed is named, with no hang; the parent killed, its
# workers stop; --threads 1 compiles in the process; a warning every worker has is said once; a
# worker run by hand reports in its protocol.
# Usage: test-cli-workers.sh path/to/kernjit
set -u
K="$1"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export KERNJIT_CACHE_DIR="$W/cache"
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"
entries() { find "$1" -name '*.cubin' | wc -l; }
check() { # check WHAT CONDITION...
    local what="$1"
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

# ---- the 36 reduce variants in 4 workers: each compiled once, then all cached --------------------
expect 0 "36 variants (BLOCK_SIZE x COARSE_FACTOR): 36 compiled, 0 already in the cache; " \
    "$K" compile reduce --all --arch sm_90 -D OP=max --threads 4
check "in 4 processes" grep -qF "s in 4 processes" <<<"$expected_output"
check "36 entries in the cache" [ "$(entries "$KERNJIT_CACHE_DIR")" = 36 ]
expect 0 '"compiled":0,"cached":36,"skipped":0,"failed":0,"threads":1,"processes":4,' \
    "$K" compile reduce --all --arch sm_90 -D OP=max --threads 4 --json
# the count of processes is at most the variants'
expect 0 "2 variants (BLOCK_SIZE): 0 compiled, 2 already in the cache; " \
    "$K" compile reduce --all --arch sm_90 -D OP=max -D BLOCK_SIZE=256,512 -D COARSE_FACTOR=8 --threads 16
check "2 processes for 2 variants" grep -qF "s in 2 processes" <<<"$expected_output"

# ---- --threads 1: in this process --------------------------------------------------------------
expect 0 "36 compiled, 0 already in the cache; " "$K" compile reduce --all --arch sm_90 -D OP=min --threads 1
check "--threads 1 on 1 thread" grep -qF "s on 1 thread" <<<"$expected_output"
expect 0 '"cached":36,"skipped":0,"failed":0,"threads":1,"processes":1,' \
    "$K" compile reduce --all --arch sm_90 -D OP=min --threads 1 --json

# ---- shards of a fleet: 3 machines (cache folders), each with its workers; together the space ---
for k in 0 1 2; do
    expect 0 "reduce for sm_90, shard $k of 3: 12 variants (BLOCK_SIZE x COARSE_FACTOR): 12 compiled" \
        env KERNJIT_CACHE_DIR="$W/fleet$k" "$K" compile reduce --all --arch sm_90 -D OP=prod --shard $k/3 --threads 2
done
check "the shards are disjoint and cover the space" \
    [ "$(cd "$W" && find fleet0 fleet1 fleet2 -name '*.cubin' -printf '%f\n' | sort -u | wc -l)" = 36 ]
mkdir "$W/fleet"
for k in 0 1 2; do cp -r "$W/fleet$k/." "$W/fleet/"; done
expect 0 "36 variants (BLOCK_SIZE x COARSE_FACTOR): 0 compiled, 36 already in the cache" \
    env KERNJIT_CACHE_DIR="$W/fleet" "$K" compile reduce --all --arch sm_90 -D OP=prod
expect 0 '"shard":1,"shards":3,"variants":12,"compiled":0,"cached":12' \
    env KERNJIT_CACHE_DIR="$W/fleet" "$K" compile reduce --all --arch sm_90 -D OP=prod --shard 1/3 --json
expect 0 "shard 40 of 100: 0 variants" env KERNJIT_CACHE_DIR="$W/fleet" "$K" compile reduce --all --arch sm_90 --shard 40/100

# ---- a variant that does not compile: the failure once, exit 1, the counts ---------------------
cat > "$W/req.cu" <<'EOF'
//@kernjit entry k
//@kernjit tune TILE 8 16 32 = 16
//@kernjit tune ROWS 1 2 4 8 16 = 4
//@kernjit require TILE % ROWS == 0 && TILE * ROWS <= 256
#if TILE == 32 && ROWS == 1
#error this variant does not build
#endif
extern "C" __global__ void k(float *x) { x[threadIdx.x] = TILE * ROWS; }
EOF
expect 1 "kernjit compile: 1 of 13 variants of $W/req.cu failed to compile; the first, TILE=32 ROWS=1: compiling" \
    "$K" compile "$W/req.cu" --all --arch sm_90 --threads 3
check "the counts" grep -qF "12 compiled, 0 already in the cache, 2 skipped by the metadata's requirements, 1 FAILED; " <<<"$expected_output"
check "the compiler's message, once" [ "$(grep -c "#error directive: this variant does not build" <<<"$expected_output")" = 1 ]
check "the failure, once" [ "$(grep -c "failed to compile" <<<"$expected_output")" = 1 ]
expect 1 '"failed":1,"threads":1,"processes":3,' "$K" compile "$W/req.cu" --all --arch sm_90 --threads 3 --json
check "JSON: the error, its status" grep -qF '"error":{"status":"KJ_ERR_COMPILE","class":1,"message":"1 of 13 variants' <<<"$expected_output"
# in this process, the same message
expect 1 "kernjit compile: 1 of 13 variants of $W/req.cu failed to compile; the first, TILE=32 ROWS=1: compiling" \
    "$K" compile "$W/req.cu" --all --arch sm_90 --threads 1

# ---- a warning every worker's runtime gives: said once ----------------------------------------
expect 0 "0 compiled, 36 already in the cache" env KERNJIT_PATH="$W " "$K" compile reduce --all --arch sm_90 -D OP=max --threads 4
check "the warning, once" [ "$(grep -c "KERNJIT_PATH='$W ' has white space" <<<"$expected_output")" = 1 ]

# ---- a worker killed: named, the others finish, exit 1, no hang --------------------------------
export KERNJIT_CACHE_DIR="$W/killed"
"$K" compile reduce --all --arch sm_90 -D OP=sum --threads 2 > "$W/out" 2>&1 &
parent=$!
child=""
for _ in $(seq 500); do
    child=$(pgrep -P $parent | head -1)
    [ -n "$child" ] && break
    sleep 0.01
done
sleep 0.5 # into its compiles
kill -9 "$child"
for _ in $(seq 1200); do kill -0 $parent 2> /dev/null || break; sleep 0.1; done
if kill -0 $parent 2> /dev/null; then
    check "the parent ends after a worker is killed" false
    kill $parent
fi
wait $parent
rc=$?
expected_output=$(cat "$W/out")
check "killed: exit 1" [ "$rc" = 1 ]
check "killed: the worker named" grep -qE "worker [12] of 2 \(pid $child, shard [01]/2\) was killed by signal 9 \(Killed\): [0-9]+ of its 18 variants were not compiled" <<<"$expected_output"
check "killed: the others' variants compiled" grep -qE "36 variants \(BLOCK_SIZE x COARSE_FACTOR\): (1[89]|2[0-9]|3[0-5]) compiled" <<<"$expected_output"
check "killed: no worker left" [ -z "$(pgrep -P $parent)" ]

# ---- the parent killed: its workers stop (nothing compiles for no one) ---------------------------
export KERNJIT_CACHE_DIR="$W/orphans"
"$K" compile reduce --all --arch sm_90 -D OP=sum --threads 2 > /dev/null 2>&1 &
parent=$!
for _ in $(seq 500); do [ -n "$(pgrep -P $parent)" ] && break; sleep 0.01; done
sleep 0.5
kill -9 $parent
wait $parent 2> /dev/null
sleep 0.3
before=$(entries "$KERNJIT_CACHE_DIR")
sleep 2
check "the parent killed: its workers stopped ($before entries, then $(entries "$KERNJIT_CACHE_DIR"))" \
    [ "$(entries "$KERNJIT_CACHE_DIR")" = "$before" ]

# ---- a worker whose parent died before the worker asked to follow it: another parent, it stops ---
export KERNJIT_CACHE_DIR="$W/late"
KJ_WORKERS_PARENT=1 "$K" compile reduce --all --arch sm_90 -D OP=min --shard 0/36 --threads 1 --worker \
    > /dev/null 2>&1
rc=$?
check "a worker of a parent gone: stopped by SIGTERM (exit $rc), nothing compiled ($(entries "$W/late") entries)" \
    test "$rc" = 143 -a "$(entries "$W/late")" = 0

# ---- a worker by hand: its protocol on stdout ------------------------------------------------
export KERNJIT_CACHE_DIR="$W/cache"
expect 0 "v 1 cached" "$K" compile reduce --all --arch sm_90 -D OP=max --shard 1/36 --threads 1 --worker
check "then its last line" [ "$(tail -1 <<<"$expected_output")" = "end 0" ]
expect 1 "e KJ_ERR_SOURCE 1 cannot open '$W/nothere.cu'" "$K" compile "$W/nothere.cu" --all --arch sm_90 --worker

[ "$failures" = 0 ] && echo "all passed" || echo "$failures FAILED"
[ "$failures" = 0 ]
