#!/usr/bin/env bash
# Several devices through the stub driver (KJ_STUB_DEVICES): `kernjit info` lists each, and --device N
# takes the run, bench and launch commands to device N (the stub names device N "kernjit stub device
# N", which the reports show). Usage: test-cli-devices.sh path/to/kernjit path/to/libstub-cuda.so
# tests/kernels
set -u
K="$1"
export KERNJIT_LIBCUDA="$2" KJ_STUB_DEVICES=3 KERNJIT_CUB_PLUGIN=off
KERNELS="$3"
export KERNJIT_CACHE_DIR="$(mktemp -d)/cache"
trap 'rm -rf "$(dirname "$KERNJIT_CACHE_DIR")"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"

expect 0 "device 2: kernjit stub device 2" "$K" info
expect 0 '"ordinal":2,"name":"kernjit stub device 2"' "$K" info --json

# The stub runs none of the built-in kernels: the results are wrong (exit 1), the report says where.
expect 1 '"device":"kernjit stub device 2"' "$K" run vector-add --n 1000 --device 2 --json
expect 1 '"device":"kernjit stub device 1"' "$K" bench vector-add --n 1000 --samples 1 --device 1 --json
expect 1 '"device":"kernjit stub device"' "$K" run vector-add --n 1000 --json # device 0 by default
expect 0 "[3] 6" "$K" launch "$KERNELS/vadd.cu" --grid 1 --block 32 --arg 'f32[4]=iota' --arg 'f32[4]=iota' \
    --arg 'f32[4]=zeros' --arg i32=4 --print 2 --device 2
for c in "run reduce" "run mandelbrot" "bench reduce" "bench transpose" "launch"; do
    expect 0 "--device N" "$K" $c --help
done
expect 2 "--device 3 does not exist: the devices are 0 (kernjit stub device), 1 (kernjit stub device 1), 2 (kernjit stub device 2)" \
    "$K" run transpose --device 3
expect 2 "--device '' is not a device ordinal" "$K" bench nested --device ''

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
