#!/usr/bin/env bash
# CLI argument errors of `kernjit run transpose|vector-add` and `kernjit bench transpose|vector-add`
# (exit 2 naming the bad value, before any device is needed), their help, and the new `info` and
# `list` lines. Usage: test-cli-transpose.sh path/to/kernjit
set -u
K="$1"
export KERNJIT_CACHE_DIR="$(mktemp -d)/cache"
trap 'rm -rf "$(dirname "$KERNJIT_CACHE_DIR")"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"

for c in "run transpose" "run vector-add" "bench transpose" "bench vector-add"; do
    expect 0 "usage: kernjit $c" "$K" $c --help
done
expect 0 "transpose" "$K" run --help
expect 0 "vector-add" "$K" run --help
expect 0 "transpose" "$K" bench --help
expect 2 "the kernels are reduce, transpose, vector-add" "$K" run nope
expect 2 "jit, reduce, transpose, vector-add" "$K" bench nope

# run transpose
expect 2 "unknown transpose variant 'diagonal': allowed are padded, read-rows, read-cols, shared, l1-8x32, l1-4x32, vec" \
    "$K" run transpose --variant diagonal
expect 2 "--rows '0' is not a number" "$K" run transpose --rows 0
expect 2 "--cols 'wide' is not a number" "$K" run transpose --cols wide
expect 2 "--rows '4294967296' is not a number from 1 to 2^31-1" "$K" run transpose --rows 4294967296
expect 2 "--rows '-3' is not a number" "$K" run transpose --rows -3
expect 2 "unknown type 'f8'" "$K" run transpose --type f8
expect 2 "-D FOO: run transpose takes -D TILE_DIM, -D BLOCK_ROWS and -D GROUP" "$K" run transpose -D FOO=1
expect 2 "-D TILE_DIM=0: the value must be an integer from 1 to 1024" "$K" run transpose -D TILE_DIM=0
expect 2 "-D BLOCK_ROWS=many" "$K" run transpose -D BLOCK_ROWS=many
expect 2 "has an empty value" "$K" run transpose -D TILE_DIM=
expect 2 "shared has a fixed tile" "$K" run transpose --variant shared -D TILE_DIM=64
expect 2 "l1-4x32 has a fixed tile" "$K" run transpose -D BLOCK_ROWS=4 --variant l1-4x32
expect 2 "vec has a fixed tile" "$K" run transpose -D TILE_DIM=16 --variant vec
expect 2 "vec has a fixed tile" "$K" run transpose -D GROUP=4 --variant vec
expect 2 "--repeat '0'" "$K" run transpose --repeat 0
expect 2 "--seed 'x'" "$K" run transpose --seed x
expect 2 "unexpected argument 'extra'" "$K" run transpose extra
expect 2 "kernjit run transpose: unrecognized option '--bogus'" "$K" run transpose --bogus

# run vector-add
expect 2 "--type i32: vector-add takes f32 or f64" "$K" run vector-add --type i32
expect 2 "unknown type 'f128'" "$K" run vector-add --type f128
expect 2 "--n '0' is not a number" "$K" run vector-add --n 0
expect 2 "--n 'lots' is not a number" "$K" run vector-add --n lots
expect 2 "-D T: run vector-add takes -D BLOCK_SIZE, -D UNROLL and -D WAVES" "$K" run vector-add -D T=f64
expect 2 "-D UNROLL=-1: the value must be an integer" "$K" run vector-add -D UNROLL=-1
expect 2 "--offset '5000' is not a number from 0 to 1024" "$K" run vector-add --offset 5000
expect 2 "unexpected argument" "$K" run vector-add 7

# bench
expect 2 "choose one of --json and --csv" "$K" bench transpose --json --csv
expect 2 "give both --rows and --cols" "$K" bench transpose --rows 64
expect 2 "--samples '0'" "$K" bench transpose --samples 0
expect 2 "choose one of --json and --csv" "$K" bench vector-add --csv --json
expect 2 "--type f16: vector-add takes f32 or f64" "$K" bench vector-add --type f16
expect 2 "--n 'x' is not a number" "$K" bench vector-add --n x

# the kernels are listed with their parameters; they compile for sm_90 without a GPU
expect 0 "transpose_padded transpose_read_rows" "$K" list transpose
expect 0 "-D UNROLL" "$K" list vector_add
expect 0 "compiled" "$K" compile transpose --arch sm_90 -D TILE_DIM=64 -D BLOCK_ROWS=16
expect 2 "breaks the kernel's requirement \`TILE_DIM % BLOCK_ROWS == 0\`" \
    "$K" compile transpose --arch sm_90 -D TILE_DIM=16 -D BLOCK_ROWS=32
expect 2 "breaks the kernel's requirement \`TILE_DIM * BLOCK_ROWS <= 1024\`" \
    "$K" compile transpose --arch sm_90 -D TILE_DIM=128 -D BLOCK_ROWS=16
expect 2 "T=i32 is not allowed for vector_add: allowed values are f32 f64" "$K" compile vector_add -D T=i32 --arch sm_90
d=$(mktemp -d)
printf '//@kernjit entry k\n//@kernjit param K 1 0 = 1\n//@kernjit shared-dynamic 64 / K\nextern "C" __global__ void k() {}\n' \
    > "$d/shm.cu"
expect 0 "compiled" "$K" compile "$d/shm.cu" --arch sm_90
expect 2 "shared-dynamic \`64 / K\` cannot be evaluated: division by zero" "$K" compile "$d/shm.cu" -D K=0 --arch sm_90
printf '//@kernjit entry k\n//@kernjit carveout k: most\nextern "C" __global__ void k() {}\n' > "$d/carve.cu"
expect 1 "carveout 'most' is not a percentage from 0 to 100, max-shared, max-l1 or default" \
    "$K" compile "$d/carve.cu" --arch sm_90
rm -rf "$d"

devices=$("$K" info --json | grep -o '"devices":\[[^]]' || true)
if [ -z "$devices" ]; then
    expect 1 "no CUDA device" "$K" run transpose --rows 64 --cols 64
    expect 1 "no CUDA device" "$K" run vector-add --n 1000
    expect 1 "no CUDA device" "$K" bench transpose
    expect 1 "no CUDA device" "$K" bench vector-add
else
    expect 0 "shared carveouts" "$K" info
    expect 0 '"shared_carveouts_bytes":[' "$K" info --json
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all transpose/vector-add CLI checks passed"
