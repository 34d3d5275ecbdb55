#!/usr/bin/env bash
# The CLI's run and bench harnesses on the device: `kernjit run` for every family (small sizes, text
# and --json, the result checked against the CPU by the command itself), `kernjit demo`, a short
# `kernjit bench` of each family in every format, and a budgeted `kernjit tune`. Each command must exit
# 0 and its JSON must parse and say the result is right. Exits 77 (skipped) without a device.
# Usage: test-gpu-cli.sh path/to/kernjit
set -u
K="$1"
work="$(mktemp -d)"
export KERNJIT_CACHE_DIR="$work/cache"
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"

if ! "$K" info --json | grep -q '"devices":\[[^]]'; then
    echo "no CUDA device: skipping"
    exit 77
fi

# expect_json CHECK command...: exit 0, stdout one JSON document of docs/json.md's schema (an object
# with "schema" and "command", no "error") and the Python expression CHECK true of it (as d).
expect_json() {
    local check="$1"
    shift
    local out rc
    out=$("$@" 2>"$work/stderr")
    rc=$?
    if [ "$rc" != 0 ]; then
        echo "FAIL: '$*' exited $rc"; sed 's/^/    /' "$work/stderr"; echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    elif ! python3 -c "import json, sys; d = json.loads(sys.stdin.read()); sys.exit(0 if (d['schema'] == 1 and 'error' not in d and ($check)) else 1)" <<<"$out"; then
        echo "FAIL: '$*': its JSON is not valid or not ($check)"; echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok: $*"
    fi
}

# ---- kernjit run: every family, text and JSON --------------------------------------------------
for n in 1 31 1000003; do
    expect_json 'd["ok"] and d["n"] == '$n "$K" run reduce --n $n --repeat 3 --json
done
expect_json 'd["ok"] and d["op"] == "max" and d["type"] == "f64"' "$K" run reduce --op max --type f64 --n 1M --json
expect_json 'd["ok"] and d["type"] == "bf16"' "$K" run reduce --type bf16 --n 1000003 --json
expect_json 'd["ok"] and d["type"] == "bf16"' "$K" run reduce --type bf16 --op prod --n 31 --entry reduce_shared --json
expect_json 'd["ok"] and d["block_size"] == 128 and d["coarse_factor"] == 2' \
    "$K" run reduce --type i32 --n 100003 -D BLOCK_SIZE=128 -D COARSE_FACTOR=2 --json
expect_json 'd["ok"] and d["entry"] == "reduce_simple"' "$K" run reduce --entry reduce_simple --n 1000 --json
expect 0 "  error       " "$K" run reduce --n 1M --repeat 3
# --devices over every device there is (one on a machine of one GPU: a part of the whole n)
expect_json 'd["ok"] and sum(p["n"] for p in d["devices"]) == 1000003' \
    "$K" run reduce --devices all --n 1000003 --type f64 --op min --repeat 3 --json

for v in padded read-rows read-cols shared l1-8x32 l1-4x32 vec; do
    expect_json 'd["ok"] and d["wrong"] == 0 and d["variant"] == "'$v'"' \
        "$K" run transpose --rows 1000 --cols 1001 --variant $v --repeat 3 --json
done
expect_json 'd["ok"] and d["tile_rows"] == 64' "$K" run transpose --rows 777 --cols 4097 --type f16 -D TILE_DIM=64 -D BLOCK_ROWS=8 --json
expect 0 "check       ok (every element against the input, on the CPU)" "$K" run transpose --rows 1 --cols 4097 --type f64

expect_json 'd["ok"] and d["wrong"] == 0' "$K" run vector-add --n 1000003 --repeat 3 --json
expect_json 'd["ok"] and d["entry"] == "vector_add_scalar" and d["offset"] == 1' \
    "$K" run vector-add --n 31 --offset 1 --type f64 --json
expect 0 "check       ok (every element against the CPU's a + b, bit for bit)" \
    "$K" run vector-add --n 1 -D BLOCK_SIZE=64 -D UNROLL=2

for v in sync nosync reduce2; do
    expect_json 'd["ok"] and d["device_launches"] == d["expected_launches"]' \
        "$K" run nested-reduce --variant $v --n 100003 --repeat 2 --json
done
expect_json 'd["ok"] and d["type"] == "f64"' "$K" run nested-reduce --type f64 --n 0 --json
expect 0 "  launches    " "$K" run nested-reduce --n 1M --block 64 --repeat 2
expect 0 "Hello World from thread" "$K" run nested-hello --block 8 --grid 2
expect_json 'len(d["device_output"]) == 2 * 15 and d["device_launches"] == d["expected_launches"]' \
    "$K" run nested-hello --block 8 --grid 2 --json

expect_json 'd["spot_wrong"] == 0 and d["spot_checked"] == 1000' "$K" run mandelbrot --size 1024 --algo escape --repeat 2 --json
# Mariani-Silver equals escape time pixel for pixel at the default configuration (test-gpu-mandelbrot)
expect_json 'd["spot_wrong"] == 0 and d["pixels_differ"] == 0 and d["compared_with"] == "escape"' \
    "$K" run mandelbrot --size 16384 --repeat 1 --compare --json
expect 0 "check       1000 of 1000 random pixels equal the CPU's dwells" \
    "$K" run mandelbrot --width 640 --height 480 --algo escape --out "$work/m.pgm"
if ! head -c 2 "$work/m.pgm" | grep -q P5; then echo "FAIL: run mandelbrot --out wrote no PGM"; failures=$((failures + 1)); fi

expect_json 'd["ok"] and d["n"] == 1048576' "$K" demo --n 1M --json

# ---- kernjit bench: short runs of each family, every format --------------------------------------
expect_json 'all(r["ok"] for r in d["results"]) and len(d["results"]) >= 10 and d["best"]' \
    "$K" bench transpose --rows 1024 --cols 1024 --samples 3 --json
expect 0 "rows,cols,type,variant" "$K" bench transpose --rows 1024 --cols 1024 --samples 3 --csv
expect 0 "best at 1024 x 1024" "$K" bench transpose --rows 1024 --cols 1024 --samples 3
# the default and its 9 variations, for f32 and f64
expect_json 'all(r["ok"] for r in d["results"]) and len(d["results"]) == 20' \
    "$K" bench vector-add --n 1M --samples 3 --json
expect 0 "type,n,entry,block_size" "$K" bench vector-add --n 1M --type f32 --samples 3 --csv
expect 0 "best f64 at n = 2^20" "$K" bench vector-add --n 1M --type f64 --samples 3
expect_json 'len(d["rows"]) == 3 and all(r.get("agrees_with_cub", True) for r in d["rows"])' \
    "$K" bench reduce --sizes 2^20 --op sum --type f32 --samples 3 --json
expect_json 'all(r["same_as_parts"] for r in d["rows"]) and len(d["rows"]) == 2' \
    "$K" bench reduce --devices all --sizes 2^16,2^20 --samples 3 --json
expect 0 "op,type,n,entry" "$K" bench reduce --sizes 2^16 --op max --type i32 --entry reduce_fast --samples 3 --csv
expect 0 "max,bf16,65536,reduce_fast" "$K" bench reduce --sizes 2^16 --op max --type bf16 --entry reduce_fast --samples 3 --csv
expect 0 "reduce_fast" "$K" bench reduce --sizes 2^16,2^20 --op min --type f64 --entry reduce_fast --block 128,256 --samples 3
expect_json 'all(r.get("ok", True) for r in d["reduce"]["rows"]) and d["mandelbrot"]["pixels_differ"] == 0' \
    "$K" bench nested --n 1M --size 16384 --repeat 2 --json
expect 0 "vs flat" "$K" bench nested --n 100003 --repeat 2 --only reduce

# ---- kernjit tune: a budgeted sweep, not stored --------------------------------------------------
expect_json 'd["winner"]["macros"] and not d["stored"] and any(v["status"] == "measured" for v in d["variants"])' \
    "$K" tune vector_add --n 1M --budget 4 --dry-run --json
expect 0 "winner" "$K" tune transpose --n 1M --budget 3 --dry-run

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all GPU CLI checks passed"
