#!/usr/bin/env bash
# The remote cache tier against a real Redis (tests/redis-lib.sh: started here on a free loopback
# port, stopped at the end, also on failure; skipped with 77 where redis-server is missing).
# "Machines" are cache folders, each command a process:
#   - A compiles, B gets a remote hit with no compile; a launch on a third machine (the stub driver);
#   - 16 processes over 4 folders miss one key at once: exactly one compile fleet-wide, one entry;
#   - a unix socket; cache push and pull; compile --all --push; stats and info;
#   - the faults of docs/bad-input.md, "Remote cache faults" (blocks marked "# row R<n>"): the
#     command succeeds and the warning says why; only push and pull (and compile --push) fail when the
#     server cannot be reached, saying so.
# Usage: test-remote.sh path/to/kernjit path/to/libstub-cuda.so tests/kernels
set -u
K="$1"
STUB="$2"
KD="$3"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/redis-lib.sh"
redis_require
work="$(cd "$(mktemp -d)" && pwd -P)"
trap 'redis_stop; rm -rf "$work"' EXIT
trap 'exit 1' TERM INT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
export KERNJIT_PATH=
unset KERNJIT_REMOTE_SECRET KERNJIT_REMOTE_MODE
redis_start "$work/redis" || { cat "$work/redis/redis.log"; exit 1; }
export KERNJIT_REMOTE_CACHE="$REDIS_URL"

# A kernel no cache has seen: its text carries this run and the tag.
kernel() {
    printf 'extern "C" __global__ void k(float *x, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] = x[i] * 3.0f + 1.0f; // %s %s\n}\n' "$$" "$1" > "$work/$1.cu"
    echo "$work/$1.cu"
}

# compile DIR FILE [ARGS...]: kernjit compile into the cache folder DIR, JSON to out, warnings to err;
# the exit code in rc
compile() {
    local dir="$1"
    shift
    KERNJIT_CACHE_DIR="$work/$dir" "$K" compile "$@" --arch sm_90 --json > "$work/out" 2> "$work/err"
    rc=$?
}
from() { grep -o '"origin":"[a-z]*"' "$1" | cut -d'"' -f4 | sort | uniq -c | tr -s ' ' | sed 's/^ //' | tr '\n' ';'; }
key_of() { grep -o '"key":"[0-9a-f]*"' "$1" | head -1 | cut -d'"' -f4; }
entries() { find "$work/$1" -name '*.cubin' -type f 2>/dev/null | wc -l; }

# expect ROW CODE FROM WARNING: the last command's exit code, origin ("origin"; "" not checked) and a
# warning it must print ("": it must print none)
expect() {
    local row="$1" code="$2" want_from="$3" warning="$4"
    local got
    got=$(grep -o '"origin":"[a-z]*"' "$work/out" | head -1 | cut -d'"' -f4)
    if [ "$rc" != "$code" ]; then fail "$row: exit $rc, expected $code"; sed 's/^/    /' "$work/out" "$work/err"
    elif [ -n "$want_from" ] && [ "$got" != "$want_from" ]; then fail "$row: from '$got', expected '$want_from'"; sed 's/^/    /' "$work/err"
    elif [ -n "$warning" ] && ! grep -qF -- "$warning" "$work/err"; then fail "$row: no warning '$warning'"; sed 's/^/    /' "$work/err"
    elif [ -z "$warning" ] && grep -q "warning" "$work/err"; then fail "$row: unexpected warning"; sed 's/^/    /' "$work/err"
    else ok "$row: exit $rc${want_from:+, from $want_from}${warning:+, warned '$warning'}"; fi
}

# ---- two machines: A compiles, B fetches ------------------------------------------------------------
src=$(kernel two)
compile A "$src"
expect "A compiles" 0 compiled ""
key=$(key_of "$work/out")
compile B "$src"
expect "B fetches" 0 remote ""
[ "$(entries B)" = 1 ] && ok "B's disk cache holds the entry" || fail "B holds $(entries B) entries"
cmp -s "$(find "$work/A" -name "$key.cubin")" "$(find "$work/B" -name "$key.cubin")" \
    && ok "B's entry is A's, byte for byte" || fail "B's entry differs from A's"
compile B "$src"
expect "B again: its disk" 0 disk ""
hits=$(rcli HGET kernjit:stats hits)
[ "${hits:-0}" -ge 1 ] && ok "the fleet's counters: $hits hit(s)" || fail "the fleet's counters show no hit: $(rcli HGETALL kernjit:stats | tr '\n' ' ')"
KERNJIT_CACHE_DIR="$work/B" "$K" cache stats > "$work/stats" 2>&1
grep -q "remote cache: $REDIS_URL (readwrite): ok" "$work/stats" && grep -qE "fleet +[1-9][0-9]* hits" "$work/stats" \
    && ok "cache stats shows the remote and the fleet's hits" || { fail "cache stats"; cat "$work/stats"; }
KERNJIT_CACHE_DIR="$work/B" "$K" cache stats --json | grep -q '"reachable":true' && ok "cache stats --json" || fail "cache stats --json"
"$K" info | grep -q "remote cache: $REDIS_URL (readwrite): ok" && ok "info shows the remote's state" || fail "info: $("$K" info | grep remote)"

# a third machine launches it (the stub driver's device): loaded from the remote, no compile
KERNJIT_CACHE_DIR="$work/C" KERNJIT_LIBCUDA="$STUB" KJ_STUB_PARAMS=8,4 "$K" launch "$src" --grid 4 --block 256 --arg 'f32[1000]=iota' \
    --arg i32=1000 --print 0:999 --repeat 0 > "$work/out" 2> "$work/err"
rc=$?
[ $rc = 0 ] && grep -q "remote cache" "$work/out" && ! grep -q warning "$work/err" \
    && ok "a launch on machine C: the kernel from the remote cache" || { fail "launch on C (exit $rc)"; cat "$work/out" "$work/err"; }

# ---- 16 processes over 4 folders, one key ----------------------------------------------------------
src=$(kernel fleet)
rm -f go
pids=()
for i in $(seq 16); do
    (while [ ! -e go ]; do sleep 0.005; done
     KERNJIT_CACHE_DIR="$work/f$((i % 4))" "$K" compile "$src" --arch sm_90 --json > "fleet.$i" 2> "fleet-err.$i"
     echo $? > "fleet-rc.$i") &
    pids+=($!)
done
touch go
wait "${pids[@]}"
codes=$(cat fleet-rc.* | sort -u | tr '\n' ' ')
[ "$codes" = "0 " ] && ok "16 processes all succeeded" || { fail "16 processes: exit codes $codes"; head -5 fleet-err.*; }
compiled=$(cat fleet.* | grep -c '"origin":"compiled"')
[ "$compiled" = 1 ] && ok "exactly one compile fleet-wide ($(cat fleet.* | from /dev/stdin))" \
    || fail "$compiled compiles fleet-wide ($(cat fleet.* | from /dev/stdin))"
key=$(key_of fleet.1)
[ "$(rcli --scan --pattern "kernjit:entry:*$key" | wc -l)" = 1 ] && ok "one remote entry" || fail "remote entries: $(rcli --scan --pattern "kernjit:entry:*$key")"
for d in f0 f1 f2 f3; do [ "$(entries $d)" = 1 ] || fail "$d holds $(entries $d) entries"; done
grep -q warning fleet-err.* && fail "warnings: $(grep -h warning fleet-err.* | head -3)" || ok "no warnings"

# ---- a unix socket ------------------------------------------------------------------------------------
src=$(kernel socket)
KERNJIT_REMOTE_CACHE="unix://$REDIS_SOCK" compile S1 "$src"
expect "unix socket: compiles" 0 compiled ""
KERNJIT_REMOTE_CACHE="unix://$REDIS_SOCK?db=0&timeout=500" compile S2 "$src"
expect "unix socket: fetches" 0 remote ""

# ---- cache pull and push -----------------------------------------------------------------------------
KERNJIT_CACHE_DIR="$work/P" "$K" cache pull --json > "$work/out" 2> "$work/err"
pulled=$(grep -o '"moved":[0-9]*' "$work/out" | cut -d: -f2)
remote_entries=$(rcli --scan --pattern 'kernjit:entry:*' | wc -l)
[ "${pulled:-0}" = "$remote_entries" ] && [ "$(entries P)" = "$remote_entries" ] \
    && ok "cache pull: $pulled entries into an empty folder" || { fail "cache pull: $(cat "$work/out" "$work/err")"; }
bad=$(KERNJIT_CACHE_DIR="$work/P" "$K" cache list --json | grep -o '"valid":false' | wc -l)
[ "$bad" = 0 ] && ok "every pulled entry verifies" || fail "$bad pulled entries do not verify"
KERNJIT_CACHE_DIR="$work/P" "$K" cache pull > "$work/out" 2>&1
grep -q "^pulled 0 of $remote_entries entries.*$remote_entries already there" "$work/out" && ok "cache pull again: nothing to do" \
    || fail "cache pull again: $(cat "$work/out")"
KERNJIT_CACHE_DIR="$work/P" "$K" cache push > "$work/out" 2>&1
grep -q "^pushed 0 of $remote_entries entries.*$remote_entries already there" "$work/out" \
    && ok "cache push of what the remote has: nothing sent" || fail "cache push: $(cat "$work/out")"
rcli DEL "$(rcli --scan --pattern 'kernjit:entry:*' | head -1)" > /dev/null
KERNJIT_CACHE_DIR="$work/P" "$K" cache push > "$work/out" 2>&1
grep -q "^pushed 1 of $remote_entries entries" "$work/out" && ok "cache push: the missing one sent" || fail "cache push: $(cat "$work/out")"

# ---- compile --all --push (a builder) ----------------------------------------------------------------
printf '//@kernjit entry k\n//@kernjit tune V 1..4 = 1\nextern "C" __global__ void k(float *x) { x[threadIdx.x] += V; } // %s builder\n' "$$" > builder.cu
KERNJIT_CACHE_DIR="$work/builder" "$K" compile builder.cu --all --push --arch sm_90 > "$work/out" 2> "$work/err"
rc=$?
[ $rc = 0 ] && grep -q "push  .* of 4 entries of builder pushed to the remote cache" "$work/out" \
    && [ "$(rcli --scan --pattern 'kernjit:entry:*' | wc -l)" = $((remote_entries + 4)) ] \
    && ok "compile --all --push: 4 variants on the remote" || { fail "compile --all --push"; cat "$work/out" "$work/err"; }
KERNJIT_CACHE_DIR="$work/builder2" "$K" compile builder.cu --all --arch sm_90 --json > "$work/out" 2> "$work/err"
grep -q '"compiled":0,"cached":4' "$work/out" && ok "another machine's --all: 4 from the remote, none compiled" \
    || fail "--all on a second machine: $(cat "$work/out")"

# ---- faults: every command succeeds and the warning says why ------------------------------------------

# row R1: nothing listens at the address
src=$(kernel refused)
KERNJIT_REMOTE_CACHE="redis://127.0.0.1:$(redis_free_port)" compile R1 "$src"
expect R1 0 compiled "Connection refused; compiling here"

# row R2: the server is killed (kill -9) in the middle of a build of 12 variants
printf '//@kernjit entry k\n//@kernjit tune V 1..12 = 1\nextern "C" __global__ void k(float *x) { x[threadIdx.x] *= V; } // %s killed\n' "$$" > killed.cu
KERNJIT_CACHE_DIR="$work/R2" "$K" compile killed.cu --all --threads 1 --arch sm_90 > "$work/out" 2> "$work/err" &
build=$!
for _ in $(seq 200); do [ "$(rcli --scan --pattern 'kernjit:entry:*' | wc -l)" -gt $((remote_entries + 4)) ] && break; sleep 0.01; done
redis_kill
wait $build
rc=$?
grep -q "12 compiled" "$work/out" && [ "$(entries R2)" = 12 ] && ok "R2: all 12 variants compiled and stored" \
    || fail "R2: $(cat "$work/out")"
out_from=""
expect R2 0 "" "failures in a row"
grep -qE "the server closed the connection|Connection refused|Connection reset" "$work/err" && ok "R2: the warnings say the server went away" \
    || fail "R2: $(cat "$work/err")"
redis_start "$work/redis" "$REDIS_PORT" || fail "redis did not start again"

# row R3: the server is slow (DEBUG SLEEP): the operation timeout answers
src=$(kernel slow)
rcli DEBUG SLEEP 2 > /dev/null &
sleeper=$!
sleep 0.2
start=$(date +%s%N)
KERNJIT_REMOTE_CACHE="$REDIS_URL?timeout=100" compile R3 "$src"
took=$(( ($(date +%s%N) - start) / 1000000 ))
expect R3 0 compiled "no answer within 100 ms (the operation timeout)"
[ "$took" -lt 1700 ] && ok "R3: done in $took ms, before the server woke" || fail "R3: took $took ms"
wait $sleeper

# rows R4 to R8: values that must be refused
src=$(kernel values)
compile V0 "$src"
key=$(key_of "$work/out")
name="kernjit:entry:v1:sm_90:$key"
[ "$(rcli EXISTS "$name")" = 1 ] || fail "the entry $name was not pushed"
# row R4: a byte of the payload changed
rcli SETRANGE "$name" 300 "XYZ" > /dev/null
compile V4 "$src"
expect R4 0 compiled "damaged: its length, key or checksum does not verify"
compile V4b "$src"
expect "R4: pushed over by the recompile" 0 remote ""
# row R5: torn (the first 100 bytes)
rcli EVAL "redis.call('SET', KEYS[1], string.sub(redis.call('GET', KEYS[1]), 1, 100)) return 1" 1 "$name" > /dev/null
compile V5 "$src"
expect R5 0 compiled "damaged: its length, key or checksum does not verify (100 bytes)"
# row R6: another format version in the header
rcli EVAL "local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], string.sub(v, 1, 8) .. string.char(7) .. string.sub(v, 10)) return 1" 1 "$name" > /dev/null
compile V6 "$src"
expect R6 0 compiled "an entry of format version 7; this kernjit reads version 1"
# row R7: a value without a signature, where one is required
echo "kernjit test secret one: 32 bytes long" > "$work/secret1"
chmod 600 "$work/secret1"
KERNJIT_REMOTE_SECRET="$work/secret1" compile V7 "$src"
expect R7 0 compiled "not signed, and this process requires signatures"
KERNJIT_REMOTE_SECRET="$work/secret1" compile V7b "$src"
expect "R7: the signed push is used with the same secret" 0 remote ""
# row R8: signed with another secret
KERNJIT_REMOTE_SECRET="kernjit test secret two, a value" compile V8 "$src"
expect R8 0 compiled "signed with another secret, or changed after it was signed"
compile V8b "$src"
expect "R8: a process without a secret takes a signed value" 0 remote ""

# row R9: a read-only node: nothing is pushed, and cache push says why
src=$(kernel readonly)
KERNJIT_REMOTE_MODE=read compile RO "$src"
expect "R9: a read-only node compiles" 0 compiled ""
key=$(key_of "$work/out")
sleep 0.1
[ "$(rcli EXISTS "kernjit:entry:v1:sm_90:$key")" = 0 ] && ok "R9: and pushes nothing" || fail "R9: a read-only node pushed"
KERNJIT_REMOTE_MODE=read KERNJIT_CACHE_DIR="$work/RO" "$K" cache push > "$work/out" 2> "$work/err"
rc=$?
expect R9 0 "" "this process only reads the remote cache (KERNJIT_REMOTE_MODE=read)"
[ "$(rcli EXISTS "kernjit:entry:v1:sm_90:$key")" = 0 ] && ok "R9: cache push pushed nothing" || fail "R9: cache push pushed"

# row R10: the server is full (maxmemory with noeviction)
src=$(kernel full)
rcli CONFIG SET maxmemory-policy noeviction > /dev/null
rcli CONFIG SET maxmemory 1 > /dev/null
compile FULL "$src"
expect R10 0 compiled "refused the push of"
grep -q "the server refused the lookup script (OOM" "$work/err" && ok "R10: the lookup went on without a lease" \
    || fail "R10: $(cat "$work/err")"
rcli CONFIG SET maxmemory 0 > /dev/null
rcli CONFIG SET maxmemory-policy allkeys-lru > /dev/null

# row R11: the process holding the key's lease died: its lease lapses and this one compiles
src=$(kernel lease)
KERNJIT_REMOTE_CACHE= compile L0 "$src"
key=$(key_of "$work/out")
rcli SET "kernjit:lease:sm_90:$key" "deadhost:4242:1" PX 1200 > /dev/null
start=$(date +%s%N)
KERNJIT_CACHE_DIR="$work/L1" "$K" -v compile "$src" --arch sm_90 --json > "$work/out" 2> "$work/err"
rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "is being compiled by deadhost:4242:1; waiting for its push" "$work/err" && ok "R11: waited for the holder" \
    || fail "R11: did not wait: $(cat "$work/err")"
sed -i '/note:/d' "$work/err"
expect R11 0 compiled ""
[ "$took" -ge 900 ] && [ "$took" -lt 5000 ] && ok "R11: took over after $took ms" || fail "R11: took $took ms"
# a holder that gave up ("nopush") is not waited for
src=$(kernel nopush)
KERNJIT_REMOTE_CACHE= compile N0 "$src"
key=$(key_of "$work/out")
rcli SET "kernjit:lease:sm_90:$key" "nopush: the compile failed" PX 10000 > /dev/null
start=$(date +%s%N)
compile N1 "$src"
took=$(( ($(date +%s%N) - start) / 1000000 ))
expect "R11: a holder that pushed nothing" 0 compiled ""
# (waiting would take the lease's 10 s: a compile on a busy machine takes more than a second)
[ "$took" -lt 5000 ] && ok "R11: not waited for ($took ms)" || fail "R11: waited $took ms for nothing"

# ---- a hostile server (tests/fake-redis.py): slow, huge, odd and wrong answers ------------------------
# Every command here runs under a hard bound (a hang is a failure, never a stuck test) and a 2 GB
# address-space limit (an answer that makes the client allocate what it announces fails, rather
# than swapping the machine), but in a sanitizer's build (KJ_PROBE_CFLAGS), whose shadow memory
# reserves terabytes of address space.

limit_memory() { [ -n "${KJ_PROBE_CFLAGS:-}" ] || ulimit -v 2000000; }

# bounded DIR FILE [ARGS...]: compile as compile does, bounded; took: its milliseconds
bounded() {
    local dir="$1"
    shift
    local start=$(date +%s%N)
    (limit_memory; KERNJIT_CACHE_DIR="$work/$dir" exec timeout 20 "$K" compile "$@" --arch sm_90 --json) \
        > "$work/out" 2> "$work/err"
    rc=$?
    took=$(( ($(date +%s%N) - start) / 1000000 ))
}
# within MS ROW: the last bounded command took less than MS
within() { [ "$took" -lt "$1" ] && ok "$2: done in $took ms" || fail "$2: took $took ms (bound: $1 ms)"; }
long=$(head -c 600 /dev/zero | tr '\0' x) # 600 bytes: a minute, trickled

fake_start "$work/fake" || { fail "the fake server did not start"; exit 1; }

# row R20: the server trickles its answer, one byte every 100 ms: the operation timeout bounds the
# whole answer, not each read
fake_answer EVAL "+$long\r\n" trickle
KERNJIT_REMOTE_CACHE="$FAKE_URL" bounded T1 "$(kernel trickle)"
expect R20 0 compiled "no whole answer within 200 ms (the operation timeout)"
within 3000 R20
fake_reset

# row R21: the push trickles: closing the runtime gives its pushes 2 s, whatever the operation timeout
fake_answer EVAL '*1\r\n:2\r\n'
fake_answer SET "+$long\r\n" trickle
KERNJIT_REMOTE_CACHE="$FAKE_URL?timeout=8000" bounded T2 "$(kernel trickle-push)"
expect R21 0 compiled "within 2 s of closing the runtime"
within 6000 "R21 (the compile and 2 s, not the 8 s of a call)"
fake_reset

# row R22: AUTH trickles (a password in the URL)
fake_answer AUTH "+$long\r\n" trickle
start=$(date +%s%N)
KERNJIT_CACHE_DIR="$work/T3" KERNJIT_REMOTE_CACHE="redis://:a-password@127.0.0.1:$FAKE_PORT" timeout 20 "$K" cache stats \
    > "$work/out" 2> "$work/err"
rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc = 0 ] && grep -q "unreachable: no whole answer within 200 ms (the operation timeout)" "$work/out" \
    && ok "R22: cache stats says why" || { fail "R22: exit $rc"; cat "$work/out" "$work/err"; }
within 3000 R22
fake_reset

# row R23: an answer whose header announces 2^31-1 elements: refused before anything is allocated;
# an answer with more elements than kernjit reads, refused whole
fake_answer EVAL '*2147483647\r\n'
KERNJIT_REMOTE_CACHE="$FAKE_URL" bounded H1 "$(kernel huge-array)"
expect R23 0 compiled "an array of 2147483647 elements: more than the answer to EVAL may take"
within 3000 R23
# more tuning results than kernjit reads, where HLEN said one (a run on the stub device merges them)
fake_answer HLEN ':1\r\n'
fake_answer HGETALL "*8194\r\n$(printf '$1\\r\\nx\\r\\n%.0s' $(seq 8194))"
KERNJIT_CACHE_DIR="$work/H3" KERNJIT_REMOTE_CACHE="$FAKE_URL" KERNJIT_LIBCUDA="$STUB" timeout 20 "$K" run reduce --n 1000 \
    > "$work/out" 2> "$work/err"
grep -q "holds 4097 tuning results, more than the 4096 kernjit reads; none is used" "$work/err" \
    && ok "R23: the tuning results past 4096 refused" || { fail "R23: tuning results"; cat "$work/err"; }
fake_reset

# row R24: an answer that announces a 512 MiB string (and sends it): refused at its header, to a
# lookup and to INFO
fake_answer EVAL '$536870912\r\n' flood
KERNJIT_REMOTE_CACHE="$FAKE_URL" bounded H2 "$(kernel huge-string)"
expect R24 0 compiled "a string of 536870912 bytes: more than the answer to EVAL may take"
within 3000 R24
fake_answer INFO '$536870912\r\n' flood
start=$(date +%s%N)
(limit_memory; KERNJIT_CACHE_DIR="$work/H2" KERNJIT_REMOTE_CACHE="$FAKE_URL" exec timeout 20 "$K" cache stats) \
    > "$work/out" 2> "$work/err"
took=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "a string of 536870912 bytes: more than the answer to INFO may take" "$work/out" \
    && ok "R24: INFO's answer refused too" || { fail "R24: INFO"; cat "$work/out" "$work/err"; }
within 3000 "R24 (INFO)"
fake_reset

# row R25: lookup answers that are not the script's: a failed lookup each, no busy wait
for answer in '*2\r\n:1\r\n:42\r\n' '*2\r\n:1\r\n*0\r\n' '*1\r\n:1\r\n' '*2\r\n:3\r\n:7\r\n' ':5\r\n'; do
    fake_answer EVAL "$answer"
    KERNJIT_REMOTE_CACHE="$FAKE_URL" bounded O1 "$(kernel "odd$RANDOM")"
    expect "R25 ($answer)" 0 compiled "an answer that is not the lookup script's"
    within 3000 "R25 ($answer)"
    evals=$(fake_commands EVAL)
    [ "$evals" -le 2 ] && ok "R25 ($answer): $evals scripts" || fail "R25 ($answer): $evals scripts run"
    fake_reset
done
fake_stop

# row R26: a lease that holds no process's token ("" or any other text, with no expiry): nobody
# compiles the key, so this process does, at once
src=$(kernel badlease)
KERNJIT_REMOTE_CACHE= compile B0 "$src"
key=$(key_of "$work/out")
for holder in "" "garbage"; do
    rcli DEL "kernjit:entry:v1:sm_90:$key" > /dev/null
    rcli SET "kernjit:lease:sm_90:$key" "$holder" > /dev/null
    KERNJIT_REMOTE_MODE=read bounded "B1$holder" "$src"
    expect "R26 ('$holder', read-only)" 0 compiled "which is not a compiling process's token"
    within 3000 "R26 ('$holder', read-only)"
    bounded "B2$holder" "$src"
    expect "R26 ('$holder')" 0 compiled "which is not a compiling process's token"
    within 3000 "R26 ('$holder')"
done
rcli DEL "kernjit:lease:sm_90:$key" > /dev/null

# row R27: a key of the wrong type (a hash where the lease is, a list where the entry is): a failed
# lookup of that key, with the server's error; leases stay on
src=$(kernel wrongtype)
KERNJIT_REMOTE_CACHE= compile W0 "$src"
key=$(key_of "$work/out")
rcli HSET "kernjit:lease:sm_90:$key" a b > /dev/null
KERNJIT_REMOTE_MODE=read bounded W1 "$src"
expect "R27 (read-only)" 0 compiled "WRONGTYPE"
within 3000 "R27 (read-only)"
bounded W2 "$src"
expect R27 0 compiled "WRONGTYPE"
within 3000 R27
rcli DEL "kernjit:lease:sm_90:$key" > /dev/null
src=$(kernel wrongentry)
KERNJIT_REMOTE_CACHE= compile W3 "$src"
key=$(key_of "$work/out")
rcli RPUSH "kernjit:entry:v1:sm_90:$key" x > /dev/null
KERNJIT_REMOTE_MODE=read bounded W4 "$src"
expect "R27 (the entry, read-only)" 0 compiled "WRONGTYPE"
bounded W5 "$src"
expect "R27 (the entry)" 0 compiled "WRONGTYPE"
! grep -q "without compile leases" "$work/err" && ok "R27: leases stay on" || fail "R27: leases turned off: $(cat "$work/err")"
[ "$(rcli TYPE "kernjit:entry:v1:sm_90:$key")" = string ] && ok "R27: the entry pushed over the list" \
    || fail "R27: the entry is a $(rcli TYPE "kernjit:entry:v1:sm_90:$key")"

# row R28: a read-only node writes nothing, not even the fleet's counters: as a user whose ACL has
# no write command, it meets no refusal
rcli ACL SETUSER kjreader on '>a-reader-password' '~*' '+@read' > /dev/null
rcli ACL LOG RESET > /dev/null
src=$(kernel reader)
compile RD0 "$src"
reader="redis://kjreader:a-reader-password@127.0.0.1:$REDIS_PORT"
KERNJIT_REMOTE_MODE=read KERNJIT_REMOTE_CACHE="$reader" compile RD1 "$src"
expect "R28: a read-only node fetches" 0 remote ""
KERNJIT_REMOTE_MODE=read KERNJIT_REMOTE_CACHE="$reader" compile RD2 "$(kernel reader-miss)"
expect "R28: a read-only node compiles" 0 compiled ""
denied=$(rcli ACL LOG | grep -A1 -x object | grep -v -x 'object\|--' | sort -u | tr '\n' ' ')
[ -z "$denied" ] && ok "R28: no write was tried" || fail "R28: the server refused: $denied"

# row R13: names that no kernjit writes, each holding a valid entry (a folder that leaves the cache, a
# folder that is not a target's name, a key in upper case): cache pull refuses them, and writes nothing
# outside the cache (once "pulled 1 of 1", and <cache>/../../x/ made)
good=$(rcli --scan --pattern 'kernjit:entry:v1:sm_90:*' | head -1)
hex=${good##*:}
for bad in "kernjit:entry:v1:../../x:$hex" "kernjit:entry:v1:sm_9x:$hex" "kernjit:entry:v1:sm_90:${hex^^}"; do
    rcli EVAL "return redis.call('SET', KEYS[2], redis.call('GET', KEYS[1]))" 2 "$good" "$bad" > /dev/null
done
mkdir -p "$work/deep/a"
KERNJIT_CACHE_DIR="$work/deep/a/b" "$K" cache pull > "$work/out" 2> "$work/err"
rc=$?
expect R13 0 "" "refused the name kernjit:entry:v1:../../x:$hex: its folder is not one kernjit writes (a target's name"
grep -q "3 refused" "$work/out" && grep -q "kernjit:entry:v1:sm_9x:$hex: its folder is not one kernjit writes" "$work/err" \
    && grep -q "its key is not 32 lower-case hex digits" "$work/err" && ok "R13: all three refused" \
    || fail "R13: $(cat "$work/out" "$work/err")"
[ "$(ls -A "$work/deep")" = a ] && [ "$(ls -A "$work/deep/a/b")" = sm_90 ] \
    && ok "R13: nothing written outside the cache's sm_90 folder" || fail "R13: $(find "$work/deep")"
rcli DEL "kernjit:entry:v1:../../x:$hex" "kernjit:entry:v1:sm_9x:$hex" "kernjit:entry:v1:sm_90:${hex^^}" > /dev/null

# row R14: values there that do not verify under this process's secret, though exactly as long as its
# own: after a secret rotation the builder's push replaces every one (once "4 already there", and the
# read-only nodes refused them for good), and a value damaged in place is pushed over
printf '//@kernjit entry k\n//@kernjit tune V 1..4 = 1\nextern "C" __global__ void k(float *x) { x[threadIdx.x] -= V; } // %s rotate\n' "$$" > rotate.cu
echo "kernjit test secret two: 32 bytes long" > "$work/secret2"
chmod 600 "$work/secret2"
KERNJIT_REMOTE_SECRET="$work/secret1" KERNJIT_CACHE_DIR="$work/rot" "$K" compile rotate.cu --all --push --arch sm_90 > "$work/out" 2> "$work/err"
# (in the background while it compiled, or by --push when a lookup had no answer in time)
grep -qE "push  [0-4] of 4 entries of rotate pushed to the remote cache, [0-4] already there$" "$work/out" \
    && ok "R14: the builder pushed all 4, signed with the first secret" || fail "R14: $(cat "$work/out" "$work/err")"
KERNJIT_REMOTE_SECRET="$work/secret2" KERNJIT_CACHE_DIR="$work/rot" "$K" -v compile rotate.cu --all --push --arch sm_90 > "$work/out" 2> "$work/err"
rc=$?
expect R14 0 "" "pushing over kernjit:entry:v1:sm_90:"
grep -q "push  4 of 4 entries of rotate pushed to the remote cache, 0 already there" "$work/out" \
    && grep -q "signed with another secret, or changed after it was signed" "$work/err" \
    && ok "R14: the secret rotated, the builder's push replaced all 4" || fail "R14: $(cat "$work/out" "$work/err")"
KERNJIT_REMOTE_MODE=read KERNJIT_REMOTE_SECRET="$work/secret2" KERNJIT_CACHE_DIR="$work/rot-reader" "$K" compile rotate.cu --all --arch sm_90 --json > "$work/out" 2> "$work/err"
grep -q '"compiled":0,"cached":4' "$work/out" && ! grep -q warning "$work/err" \
    && ok "R14: a read-only node with the new secret takes all 4" || fail "R14: $(cat "$work/out" "$work/err")"
damaged=$(rcli --scan --pattern 'kernjit:entry:v1:sm_90:*' | while read -r n; do
    KERNJIT_CACHE_DIR="$work/rot" "$K" cache list | grep -q "${n##*:}" && echo "$n" && break; done)
rcli SETRANGE "$damaged" 300 "XYZ" > /dev/null
KERNJIT_REMOTE_SECRET="$work/secret2" KERNJIT_CACHE_DIR="$work/rot" "$K" -v cache push > "$work/out" 2> "$work/err"
grep -q "^pushed 1 of 4 entries.*3 already there" "$work/out" && grep -q "pushing over $damaged: signed with another secret" "$work/err" \
    && [ "$(rcli GETRANGE "$damaged" 300 302)" != XYZ ] && ok "R14: the value damaged in place was pushed over" \
    || fail "R14: $(cat "$work/out" "$work/err")"

# row R15: the server is down when the command's work is the server's: cache push, cache pull and
# compile --all --push exit 1 and say so (once exit 0: "pushed 0 of 4", "4 failed")
down="redis://127.0.0.1:$(redis_free_port)"
for command in "cache push" "cache pull" "compile rotate.cu --all --push --arch sm_90"; do
    KERNJIT_REMOTE_CACHE="$down" KERNJIT_CACHE_DIR="$work/rot" "$K" $command > "$work/out" 2> "$work/err"
    rc=$?
    moved=pushed
    [ "$command" = "cache pull" ] && moved=pulled
    expect "R15 ($command)" 1 "" "could not be reached: cannot connect to 127.0.0.1 port ${down##*:}: Connection refused; nothing $moved"
done
grep -q "^rotate.cu for sm_90: 4 variants" "$work/out" && ok "R15: compile --all reported its variants before the push failed" \
    || fail "R15: $(cat "$work/out")"

# row R16: tune --forget where the server holds a matching shared result: a read-only node leaves it
# and says it comes back and how to remove it; a read-write one removes it (once "removed 1 entry",
# and the next run merged the server's back)
hash="kernjit:tune:v1:NVIDIA H100 80GB HBM3|9.0|0.2.0|nvrtc13000"
field=$(printf 'reduce\treduce_fast\tOP=sum T=f32\t20')
# the value: the database's line, then an empty signature line (no secret); -x keeps its new lines
printf 'reduce\treduce_fast\tOP=sum T=f32\t20\tNVIDIA H100 80GB HBM3\t9.0\t0.2.0\tBLOCK_SIZE=32 COARSE_FACTOR=1\t99999.0\t0.1\t1048576\t1700000000\n\n' \
    | rcli -x HSET "$hash" "$field" > /dev/null
rcli HSET "$hash" "$(printf 'transpose\ttranspose_padded\tT=f32\t20')" "kept: not a match" > /dev/null
KERNJIT_REMOTE_MODE=read KERNJIT_CACHE_DIR="$work/forget" "$K" tune --forget reduce > "$work/out" 2> "$work/err"
rc=$?
expect R16 0 "" "1 shared tuning result matches, and stays on the server: this process only reads it (KERNJIT_REMOTE_MODE=read), so it comes back"
[ "$(rcli HEXISTS "$hash" "$field")" = 1 ] && ok "R16: a read-only node left it" || fail "R16: a read-only node removed it"
KERNJIT_CACHE_DIR="$work/forget" "$K" tune --forget reduce > "$work/out" 2> "$work/err"
rc=$?
[ $rc = 0 ] && grep -q "^removed 0 entries from" "$work/out" && grep -q "note: remote cache $REDIS_URL: removed 1 shared tuning result" "$work/err" \
    && [ "$(rcli HEXISTS "$hash" "$field")" = 0 ] && [ "$(rcli HLEN "$hash")" = 1 ] \
    && ok "R16: a read-write node removed the shared result, and only it" || fail "R16: exit $rc: $(cat "$work/out" "$work/err")"
rcli DEL "$hash" > /dev/null

echo "$failures failure(s)"
[ "$failures" = 0 ]
