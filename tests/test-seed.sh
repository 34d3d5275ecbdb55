#!/usr/bin/env bash
# kernjit seed end to end (compile suite): a seed of two kernels for two targets, its manifest and
# modes; a program's compile served from it (nothing copied into its cache) and a toolkit that the
# seed was not built with (an NVRTC that says it is another version, tests/fake-nvrtc-version.c)
# compiling instead; the worker processes and one process giving the same entries; a second run
# compiling nothing; --all, -D lists and --tuned; signed seeds. The library's side is
# tests/test-seed.c; the refusals are docs/bad-input.md's rows.
# Usage: test-seed.sh path/to/kernjit path/to/libfake-nvrtc-version.so tests/kernels
set -u
K="$1"
FAKE_NVRTC="$2"
# the fake NVRTC is preloaded ahead of a sanitizer runtime in -Db_sanitize builds
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
KD="$3"
work="$(cd "$(mktemp -d)" && pwd -P)"
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
export KERNJIT_PATH= KERNJIT_SEED_PATH= KERNJIT_LIBCUDA=/nonexistent/libcuda.so.1
unset KERNJIT_SEED_SECRET KERNJIT_REMOTE_SECRET KERNJIT_REMOTE_CACHE KERNJIT_CACHE_DISABLE

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
check() { # check WHAT COMMAND...: the command must succeed
    local what="$1"
    shift
    if "$@" >"$work/out" 2>"$work/err"; then ok "$what"; else fail "$what: '$*' exited $?"; sed 's/^/    /' "$work/out" "$work/err"; fi
}
# The manifest's entries as "arch kernel entry key" lines, sorted.
entries() { python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
for e in m["entries"]: print(e["arch"], e["kernel"], e["entry"], e["key"])' "$1/manifest.json" | sort; }
origin() { # origin SEEDS CACHE KERNEL [kernjit compile options...]: where compile's binary came from
    local seeds="$1" cache="$2"
    shift 2
    KERNJIT_SEED_PATH="$seeds" KERNJIT_CACHE_DIR="$cache" "$K" compile "$@" --json 2>"$work/err" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["targets"][0]["origin"])'
}

cp "$KD/vadd.cu" "$work/vadd.cu"

# ---- a seed, its manifest, its modes ----------------------------------------------------------------
check "seed of two kernels for two targets" "$K" seed "$work/seed" "$work/vadd.cu:vadd" reduce:reduce_fast --arch sm_80,sm_90
grep -q "4 compiled, 0 already there" "$work/out" || fail "the first seed run should compile 4 entries: $(cat "$work/out")"
n=$(entries "$work/seed" | wc -l)
[ "$n" = 4 ] || fail "the manifest lists $n entries, expected 4"
[ "$(entries "$work/seed" | awk '{print $1}' | sort -u | tr '\n' ' ')" = "sm_80 sm_90 " ] || fail "the manifest's targets: $(entries "$work/seed")"
entries "$work/seed" | grep -q "^sm_90 reduce reduce_fast " || fail "reduce_fast for sm_90 is not in the manifest"
python3 - "$work/seed/manifest.json" <<'EOF' || fail "the manifest's fields"
import json, os, sys
m = json.load(open(sys.argv[1]))
assert m["schema"] == 1 and m["signed"] is False and m["kernjit_version"], m
for e in m["entries"]:
    assert set(e) >= {"kernel", "entry", "arch", "key", "size_bytes", "macros", "entry_path", "valid"}, e
    assert e["valid"] and e["size_bytes"] == os.path.getsize(os.path.join(os.path.dirname(sys.argv[1]), e["entry_path"])), e
    assert e["entry_path"] == "%s/%s.cubin" % (e["arch"], e["key"]), e
reduce = [e for e in m["entries"] if e["kernel"] == "reduce"]
assert reduce[0]["macros"] == {"BLOCK_SIZE": "256", "COARSE_FACTOR": "8", "OP": "sum", "T": "f32"}, reduce
EOF
modes=$(find "$work/seed" -printf '%m %y\n' | sort -u | tr '\n' ' ')
[ "$modes" = "644 f 755 d " ] || fail "the seed's modes are '$modes', expected files 644 and folders 755"
ok "manifest and modes"

# ---- served from the seed, by the key of the inputs now ---------------------------------------------
[ "$(origin "$work/seed" "$work/c1" reduce:reduce_fast --arch sm_90)" = seed ] || fail "reduce_fast for sm_90 is not a seed hit: $(cat "$work/err")"
[ -z "$(find "$work/c1" -name '*.cubin' 2>/dev/null)" ] || fail "a seed hit was copied into the disk cache"
[ "$(origin "$work/seed" "$work/c1" "$work/vadd.cu:vadd" --arch sm_80)" = seed ] || fail "vadd for sm_80 is not a seed hit"
[ "$(origin "$work/seed" "$work/c1" reduce:reduce_fast --arch sm_86)" = compiled ] || fail "a target the seed lacks must compile"
[ "$(origin "$work/seed" "$work/c1" reduce:reduce_fast --arch sm_90 -D OP=max)" = compiled ] || fail "other macros must compile"
[ "$(LD_PRELOAD="$FAKE_NVRTC" origin "$work/seed" "$work/c2" reduce:reduce_fast --arch sm_90)" = compiled ] ||
    fail "an NVRTC of another version must compile: $(cat "$work/err")"
[ "$(origin "$work/seed" "$work/c3" reduce:reduce_fast --arch sm_90)" = seed ] || fail "the real NVRTC is a seed hit again"
KERNJIT_SEED_PATH="$work/seed" KERNJIT_CACHE_DIR="$work/c1" "$K" -v compile reduce:reduce_fast --arch sm_90 >"$work/out" 2>&1
grep -q "seed hit $work/seed/sm_90/" "$work/out" || fail "-v does not say 'seed hit': $(cat "$work/out")"
grep -q "seed hit (built ahead of time" "$work/out" || fail "compile does not say 'seed hit': $(cat "$work/out")"
ok "seed hits for the inputs the seed was built from, compiles for others"

# ---- again: nothing compiled; one process: the same entries -----------------------------------------
check "seed again" "$K" seed "$work/seed" "$work/vadd.cu:vadd" reduce:reduce_fast --arch sm_80,sm_90
grep -q "0 compiled, 4 already there" "$work/out" || fail "the second seed run compiled again: $(cat "$work/out")"
check "seed in one process" "$K" seed "$work/one" "$work/vadd.cu:vadd" reduce:reduce_fast --arch sm_80 --arch sm_90 --threads 1
grep -q "in 1 process" "$work/out" || fail "--threads 1 should compile in the process: $(cat "$work/out")"
[ "$(entries "$work/one")" = "$(entries "$work/seed")" ] || fail "one process and the workers made different seeds"
check "the same seed again, in workers" "$K" seed "$work/two" "$work/vadd.cu:vadd" reduce:reduce_fast --arch sm_80,sm_90 --threads 2
grep -q "in 2 processes" "$work/out" || fail "--threads 2 should start two workers: $(cat "$work/out")"
[ "$(entries "$work/two")" = "$(entries "$work/seed")" ] || fail "two workers made another seed"

# ---- which variants: -D lists, --all, --tuned ---------------------------------------------------------
check "a -D list" "$K" seed "$work/list" reduce:reduce_fast -D BLOCK_SIZE=256,512 -D OP=sum,max --arch sm_90
[ "$(entries "$work/list" | wc -l)" = 4 ] || fail "-D BLOCK_SIZE=256,512 -D OP=sum,max should give 4 entries"
check "--all" "$K" seed "$work/all" vector_add:vector_add -D T=f32 --all --arch sm_90
want=$("$K" list vector_add --json | python3 -c '
import json, sys
k = json.load(sys.stdin)["kernels"][0]
n = 1
for p in k["params"]:
    if p["tunable"] and not p["launch"]: n *= len(p["values"])
print(n)')
[ "$(entries "$work/all" | wc -l)" = "$want" ] || fail "--all gave $(entries "$work/all" | wc -l) entries, expected the $want variants"
mkdir -p "$work/tuned-cache"
# two winners: one tuned for the device's own target, one for sm_90a (which serves sm_90a alone)
{ printf 'reduce\treduce_fast\tOP=max T=f32\t20\tNVIDIA H100 80GB HBM3\t9.0\t0.2.0\tBLOCK_SIZE=512 COARSE_FACTOR=2\t3000.0\t4.3\t1048576\t1735689600\n'
  printf 'reduce\treduce_fast\tOP=min T=f32\t20\tNVIDIA H100 80GB HBM3\t9.0/sm_90a\t0.2.0\tBLOCK_SIZE=128 COARSE_FACTOR=2\t3000.0\t4.3\t1048576\t1735689600\n'
} >"$work/tuned-cache/tuning.db"
KERNJIT_CACHE_DIR="$work/tuned-cache" check "--tuned" "$K" seed "$work/tuned" reduce:reduce_fast --tuned --arch sm_90
grep -q "2 winners of the tuning database" "$work/out" || fail "--tuned should add the database's winners: $(cat "$work/out")"
[ "$(origin "$work/tuned" "$work/c4" reduce:reduce_fast -D OP=max -D BLOCK_SIZE=512 -D COARSE_FACTOR=2 --arch sm_90)" = seed ] ||
    fail "the tuned winner is not in the seed"
[ "$(entries "$work/tuned" | wc -l)" = 2 ] || fail "--tuned for sm_90: the default and one winner, not $(entries "$work/tuned")"
KERNJIT_CACHE_DIR="$work/tuned-cache" check "--tuned for sm_90a" "$K" seed "$work/tuned-a" reduce:reduce_fast --tuned --arch sm_90a
[ "$(origin "$work/tuned-a" "$work/c4" reduce:reduce_fast -D OP=min -D BLOCK_SIZE=128 -D COARSE_FACTOR=2 --arch sm_90a)" = seed ] ||
    fail "the winner tuned for sm_90a is not in its seed"

# ---- signed ------------------------------------------------------------------------------------------
export KERNJIT_SEED_SECRET="the tests' seed secret, long enough"
check "a signed seed" "$K" seed "$work/signed" reduce:reduce_fast --arch sm_90 --json
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["signed"] and d["signed_now"] == 1, d' "$work/out" ||
    fail "the seed was not signed: $(cat "$work/out")"
grep -q '"signed": true' "$work/signed/manifest.json" || fail "the manifest does not say signed"
[ "$(origin "$work/signed" "$work/c5" reduce:reduce_fast --arch sm_90)" = seed ] || fail "a signed seed, with its secret, is not a hit"
[ "$(origin "$work/seed" "$work/c5" "$work/vadd.cu:vadd" --arch sm_90)" = compiled ] || fail "an unsigned seed must not serve where a secret is set"
grep -q "not signed, and this process requires signatures" "$work/err" || fail "no warning for the unsigned entry: $(cat "$work/err")"
[ "$(KERNJIT_SEED_SECRET="another secret, long enough too" origin "$work/signed" "$work/c6" reduce:reduce_fast --arch sm_90)" = compiled ] ||
    fail "another secret must refuse the seed"
unset KERNJIT_SEED_SECRET
[ "$(origin "$work/signed" "$work/c7" reduce:reduce_fast --arch sm_90)" = seed ] || fail "without a secret a signed seed serves"
ok "signed seeds"

if [ "$failures" != 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all passed"
