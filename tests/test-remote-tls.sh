#!/usr/bin/env bash
# The remote cache over TLS (rediss://) against a real Redis's TLS port (tests/redis-lib.sh: started
# here, on free loopback ports, with certificates this test makes with the openssl command: a CA, a
# server certificate for localhost and 127.0.0.1, a client certificate, and the wrong ones: another
# CA's, another name's). "Machines" are cache folders, each command a process:
#   - A compiles and pushes over TLS, B (by name, the CA from KERNJIT_REMOTE_TLS_CA) fetches with no
#     compile; cache stats, pull;
#   - the server's certificates are changed under the same server (CONFIG SET), and the faults of
#     docs/bad-input.md's "Remote cache faults" over TLS are made (blocks marked "# row R<n>"): a
#     certificate of another CA, of another name, a server requiring client certificates, no libssl
#     (tests/fault-inject.c), rediss:// to a port without TLS, a trickling TLS server and one that
#     closes kept connections (tests/fake-redis.py over TLS): each command succeeds, the warning says
#     why, and each is bounded in time.
# Skipped (77) where redis-server or openssl is missing, or redis-server has no TLS.
# Usage: test-remote-tls.sh path/to/kernjit path/to/libkj-fault-inject.so
set -u
K="$1"
SHIM="$2"
# the shim is preloaded ahead of a sanitizer runtime in -Db_sanitize builds
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/redis-lib.sh"
redis_require
if ! command -v openssl >/dev/null; then
    echo "SKIP: the openssl command is not installed (scripts/setup --test installs it)"
    exit 77
fi
work="$(cd "$(mktemp -d)" && pwd -P)"
trap 'redis_stop; rm -rf "$work"' EXIT
trap 'exit 1' TERM INT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
export KERNJIT_PATH=
unset KERNJIT_REMOTE_SECRET KERNJIT_REMOTE_MODE KERNJIT_REMOTE_TLS_CA

# ---- certificates (P-256 keys: a second for all of them) ---------------------------------------------
T="$work/tls"
mkdir -p "$T"
ca() { openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$T/$1.key" \
    -out "$T/$1.crt" -days 2 -subj "/CN=kernjit test $1" 2>> "$T/openssl.log"; }
# cert NAME CA SUBJECT_ALT_NAMES
cert() {
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$T/$1.key" -out "$T/$1.csr" \
        -subj "/CN=kernjit test $1" 2>> "$T/openssl.log" &&
        printf 'subjectAltName=%s\n' "$3" > "$T/$1.ext" &&
        openssl x509 -req -in "$T/$1.csr" -CA "$T/$2.crt" -CAkey "$T/$2.key" -CAcreateserial -out "$T/$1.crt" \
            -days 2 -extfile "$T/$1.ext" 2>> "$T/openssl.log"
}
if ! { ca ca && ca other && cert server ca "DNS:localhost,IP:127.0.0.1" && cert client ca "DNS:kernjit-client" &&
       cert stranger other "DNS:localhost,IP:127.0.0.1" && cert elsewhere ca "DNS:elsewhere.example"; }; then
    echo "FAIL: openssl could not make the test's certificates"
    cat "$T/openssl.log"
    exit 1
fi
chmod 600 "$T"/*.key

TLS_PORT=$(redis_free_port)
if ! redis_start "$work/redis" "" --tls-port "$TLS_PORT" --tls-cert-file "$T/server.crt" --tls-key-file "$T/server.key" \
        --tls-ca-cert-file "$T/ca.crt" --tls-auth-clients no; then
    if grep -qiE "tls.*(not|support)|bad directive" "$work/redis/redis.log"; then
        echo "SKIP: this redis-server has no TLS: $(grep -iE "tls|directive" "$work/redis/redis.log" | head -2)"
        exit 77
    fi
    echo "FAIL: redis-server did not start with --tls-port"
    cat "$work/redis/redis.log"
    exit 1
fi
URL="rediss://127.0.0.1:$TLS_PORT?tls_ca=$T/ca.crt"
BYNAME="rediss://localhost:$TLS_PORT"
CLIENT="tls_cert=$T/client.crt&tls_key=$T/client.key"
# the server's certificate, or whether it requires the client's: changed in place, on its plain port
serve() { rcli CONFIG SET tls-cert-file "$T/$1.crt" tls-key-file "$T/$1.key" tls-auth-clients "${2:-no}" > /dev/null; }

# A kernel no cache has seen: its text carries this run and the tag.
kernel() {
    printf 'extern "C" __global__ void k(float *x, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] = x[i] * 5.0f + 2.0f; // %s %s\n}\n' "$$" "$1" > "$work/$1.cu"
    echo "$work/$1.cu"
}
# compile DIR URL FILE [ARGS...]: kernjit compile into the cache folder DIR with the remote URL, bounded
# (a hang fails); JSON to out, warnings to err; rc its exit code, took its milliseconds
compile() {
    local dir="$1" url="$2" start=$(date +%s%N)
    shift 2
    KERNJIT_CACHE_DIR="$work/$dir" KERNJIT_REMOTE_CACHE="$url" timeout 60 "$K" compile "$@" --arch sm_90 --json \
        > "$work/out" 2> "$work/err"
    rc=$?
    took=$(( ($(date +%s%N) - start) / 1000000 ))
}
key_of() { grep -o '"key":"[0-9a-f]*"' "$1" | head -1 | cut -d'"' -f4; }
# expect ROW CODE FROM WARNING: as test-remote.sh's ("" FROM: not checked; "" WARNING: none allowed)
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
within() { [ "$took" -lt "$1" ] && ok "$2: done in $took ms" || fail "$2: took $took ms (bound: $1 ms)"; }

# ---- two machines over TLS: A compiles and pushes, B fetches ---------------------------------------------
src=$(kernel two)
compile A "$URL" "$src"
expect "A compiles over TLS" 0 compiled ""
key=$(key_of "$work/out")
[ "$(rcli EXISTS "kernjit:entry:v1:sm_90:$key")" = 1 ] && ok "A pushed the entry over TLS" || fail "A pushed nothing"
KERNJIT_REMOTE_TLS_CA="$T/ca.crt" compile B "$BYNAME" "$src"
expect "B fetches over TLS, by name, the CA from KERNJIT_REMOTE_TLS_CA" 0 remote ""
cmp -s "$(find "$work/A" -name "$key.cubin")" "$(find "$work/B" -name "$key.cubin")" \
    && ok "B's entry is A's, byte for byte" || fail "B's entry differs from A's"
KERNJIT_CACHE_DIR="$work/B" KERNJIT_REMOTE_CACHE="$URL" "$K" cache stats > "$work/stats" 2>&1
grep -qF "remote cache: $URL (readwrite): ok" "$work/stats" && ok "cache stats: the server over TLS answers" \
    || { fail "cache stats"; cat "$work/stats"; }
KERNJIT_CACHE_DIR="$work/P" KERNJIT_REMOTE_CACHE="$URL" "$K" cache pull > "$work/out" 2> "$work/err"
rc=$?
[ $rc = 0 ] && grep -q "^pulled 1 of 1 entr" "$work/out" && ok "cache pull over TLS" \
    || fail "cache pull: exit $rc: $(cat "$work/out" "$work/err")"

# ---- the server's certificate does not verify: refused, whatever the checks refuse ----------------------

# row R29: a certificate another CA signed (for the right names): refused, naming the verification's
# failure; push and pull say so and exit 1; tls_verify=no takes it, with a warning every time
serve stranger
src=$(kernel stranger)
compile S1 "$URL" "$src"
expect R29 0 compiled "TLS: the server's certificate does not verify: unable to get local issuer certificate (it must name 127.0.0.1 and come from a CA in $T/ca.crt)"
KERNJIT_CACHE_DIR="$work/A" KERNJIT_REMOTE_CACHE="$URL" "$K" cache push > "$work/out" 2> "$work/err"
rc=$?
expect "R29 (cache push)" 1 "" "could not be reached: TLS: the server's certificate does not verify"
compile S2 "$BYNAME" "$src"
expect "R29 (the system's CAs)" 0 compiled "does not verify: unable to get local issuer certificate (it must name localhost and come from a CA of the system's store)"
compile S3 "$BYNAME?tls_verify=no" "$(kernel two)"
expect "R29 (tls_verify=no)" 0 remote "tls_verify=no: the server's certificate is not checked"

# row R30: a certificate of the right CA for another name: refused, by name and by address
serve elsewhere
src=$(kernel elsewhere)
compile N1 "$URL" "$src"
expect "R30 (by address)" 0 compiled "the server's certificate does not verify: IP address mismatch (it must name 127.0.0.1"
compile N2 "$BYNAME?tls_ca=$T/ca.crt" "$src"
expect R30 0 compiled "the server's certificate does not verify: hostname mismatch (it must name localhost"

# row R31: a server that requires client certificates (tls-auth-clients yes, Redis's default):
# refused without one, naming why; served with tls_cert and tls_key
serve server yes
src=$(kernel clients)
compile C1 "$URL" "$src"
expect R31 0 compiled "TLS: tlsv13 alert certificate required (the server requires a client certificate: give tls_cert=FILE and tls_key=FILE)"
compile C2 "$URL&$CLIENT" "$src"
expect "R31: with a client certificate" 0 compiled ""
compile C3 "$URL&$CLIENT" "$src"
expect "R31: another machine with one fetches" 0 remote ""

# row R32: files that hold no usable certificate or key: the tier is not used, and why (a key with a
# passphrase too: refused, never asked for, as OpenSSL's own prompt would on a terminal)
compile K1 "$URL&tls_cert=$T/client.crt&tls_key=$T/server.key" "$src"
expect R32 0 compiled "is not used: tls_key=$T/server.key is not the key of tls_cert=$T/client.crt"
compile K2 "rediss://127.0.0.1:$TLS_PORT?tls_ca=$T/client.csr&$CLIENT" "$src"
expect "R32 (a CA file without a certificate)" 0 compiled "is not used: the CA file $T/client.csr holds no PEM certificate"
openssl pkey -in "$T/client.key" -aes256 -passout pass:kernjit -out "$T/locked.key" 2>> "$T/openssl.log"
chmod 600 "$T/locked.key"
compile K3 "$URL&tls_cert=$T/client.crt&tls_key=$T/locked.key" "$src" < /dev/null
expect "R32 (a key with a passphrase)" 0 compiled "is not used: tls_key=$T/locked.key holds no PEM private key without a passphrase"
serve server no

# row R33: no libssl on the machine: a warning and no tier; push and pull say so and exit 1
src=$(kernel nolibssl)
LD_PRELOAD="$SHIM" KJ_FAULT_NO_LIBRARY=libssl compile L1 "$URL" "$src"
expect R33 0 compiled "is not used: TLS (rediss://) needs OpenSSL's libssl (libssl.so.3 or libssl.so.1.1), which cannot be loaded"
LD_PRELOAD="$SHIM" KJ_FAULT_NO_LIBRARY=libssl KERNJIT_CACHE_DIR="$work/L1" KERNJIT_REMOTE_CACHE="$URL" "$K" cache push \
    > "$work/out" 2> "$work/err"
rc=$?
expect "R33 (cache push)" 1 "" "cannot be used here: TLS (rediss://) needs OpenSSL's libssl"

# ---- time: the handshake and every exchange under the one deadline ------------------------------------

# row R34: rediss:// to a port without TLS, which waits for a line that never comes: the handshake is
# given up at the operation timeout
src=$(kernel plainport)
compile H1 "rediss://127.0.0.1:$REDIS_PORT?timeout=100" "$src"
expect R34 0 compiled "the TLS handshake was not done within 100 ms (the operation timeout)"
within 3000 R34

fake_start "$work/fake" "$T/server.crt" "$T/server.key" || { fail "the fake server did not start"; exit 1; }
FAKE_TLS="$FAKE_URL?tls_ca=$T/ca.crt"

# row R35: a TLS server that trickles its answer, a byte a record every 100 ms: bounded as a plain one
fake_answer EVAL "+$(head -c 600 /dev/zero | tr '\0' x)\r\n" trickle
compile F1 "$FAKE_TLS" "$(kernel trickle)"
expect R35 0 compiled "no whole answer within 200 ms (the operation timeout)"
within 3000 R35
fake_reset

# row R36: a TLS server that closes a kept connection without TLS's close_notify: OpenSSL answers the
# end with an alert, written to a closed connection, which raises SIGPIPE (once it killed the
# process: exit 141); the call is retried on a new connection
fake_answer EVAL '*1\r\n:2\r\n' close
fake_answer SET '+OK\r\n'
compile F2 "$FAKE_TLS" "$(kernel hangup)"
expect R36 0 compiled ""
# (the SET written to the closed connection never reached the server)
[ "$(fake_commands SET)" = 1 ] && ok "R36: the push went through on a new connection" \
    || fail "R36: $(fake_commands SET) SETs"
# the same without the checks (the server's CA is not the system's): the end of the connection is
# not taken for a certificate that does not verify (once "a push failed: ... does not verify")
compile F3 "$FAKE_URL?tls_verify=no" "$(kernel hangup-unchecked)"
expect "R36 (tls_verify=no)" 0 compiled "tls_verify=no: the server's certificate is not checked"
[ "$(grep -c warning "$work/err")" = 1 ] && ok "R36 (tls_verify=no): no other warning" || fail "R36: $(cat "$work/err")"
fake_reset
fake_stop

echo "$failures failure(s)"
[ "$failures" = 0 ]
