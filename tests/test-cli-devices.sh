#!/usr/bin/env bash
# Several devices through the stub driver (KJ_STUB_DEVICES): `kernjit info` lists each, and --device N
# takes the run, bench and launch commands to device N (the stub names device N "kernjit stub device
# N", which the reports show), and --devices spreads run and bench reduce over several. Usage:
# test-cli-devices.sh path/to/kernjit path/to/libstub-cuda.so tests/kernels path/to/libfake-nccl.so
set -u
K="$1"
export KERNJIT_LIBCUDA="$2" KJ_STUB_DEVICES=3 KERNJIT_CUB_PLUGIN=off
KERNELS="$3"
FAKE_NCCL="$4"
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
# --devices: the stub's reduce_fast "reduces" a part to its element count, so a u32 sum over the
# devices is the total n (each device got its share; the host combined them), and a max the largest
# share; the reference over the data differs (exit 1), and the report names every device and its part.
expect 1 "devices     0 (kernjit stub device): 334 elements" "$K" run reduce --devices all --n 1001 --type u32
expect 1 "2 (kernjit stub device 2): 333 elements" "$K" run reduce --devices all --n 1001 --type u32
expect 1 "result      1001 (the devices' results combined on the host" "$K" run reduce --devices all --n 1001 --type u32
expect 1 '"result":501,' "$K" run reduce --devices 2,0 --n 1001 --type i64 --op max --json
# bf16's partials are f32 (here 1001 units of the smallest subnormal: the parts' counts, added exactly)
expect 1 "result      1.4026997627891419e-42 (the devices' results combined" "$K" run reduce --devices all --n 1001 --type bf16
expect 1 '"devices":[{"ordinal":2,"device":"kernjit stub device 2","n":501' "$K" run reduce --devices 2,0 --n 1001 --type i64 --op max --json
# bench reduce --devices checks each device's kj_reduce against the CPU too: the stub's counts are no
# sums (exit 1, after the rows)
expect 1 '"device_count":3,' "$K" bench reduce --devices all --sizes 1K --samples 3 --json
# what each device past the first adds, and the parts collected one after the other, beside the call
expect 1 '"per_device_us":' "$K" bench reduce --devices all --sizes 1 --samples 3 --json
expect 1 '"sequential_median_us":' "$K" bench reduce --devices all --sizes 1 --samples 3 --json
expect 1 "multi - local <= 10 us at every size" "$K" bench reduce --devices 0,2 --sizes 1K --samples 3
expect 1 "all at once (1 compile" "$K" bench reduce --devices all --sizes 1K --samples 1
expect 1 '"first_launch":{"device_count":3,' "$K" bench reduce --devices all --sizes 1K --samples 1 --json
# NCCL through tests/fake-nccl.c (its communicators stand for 3 equal ranks): the NCCL columns are there
KERNJIT_NCCL="$FAKE_NCCL" expect 1 "NCCL all-reduce of the whole data: $FAKE_NCCL" \
    "$K" bench reduce --devices 0,1 --sizes 1K --samples 1
KERNJIT_NCCL="$FAKE_NCCL" expect 1 '"nccl_median_us":' "$K" bench reduce --devices 0,1 --sizes 1K --samples 1 --json
expect 2 "--devices 0,0: device 0 is listed twice" "$K" run reduce --devices 0,0
expect 2 "--device 1 and --devices: give one" "$K" bench reduce --device 1 --devices 0,1
expect 2 "--entry and -D do not go with --devices" "$K" run reduce --devices all -D BLOCK_SIZE=128
for c in "run reduce" "bench reduce"; do
    expect 0 "--devices all" "$K" $c --help
done
# --device on bench jit (its child processes too: the disk hit is timed in one), bench cache and tune
expect 0 '"device":"kernjit stub device 2"' "$K" bench jit --device 2 --repeat 1 --json
# ... and the driver-alone child, which loads the same cubin on that device without kernjit
if ! grep -qE '"driver_alone_load_ms":[0-9]' <<<"$expected_output"; then
    echo "FAIL: bench jit --device 2 measured no driver-alone load"; failures=$((failures + 1))
fi
expect 0 '"device":"kernjit stub device 1"' "$K" bench cache --device 1 --repeat 1 --json
expect 2 "--device 3 does not exist: the devices are 0 (kernjit stub device)" "$K" tune reduce --device 3
expect 2 "--cc and --device NAME are filters for --forget; tuning takes --device N" "$K" tune reduce --cc 9.0
for c in "run reduce" "run mandelbrot" "bench reduce" "bench transpose" "bench jit" "bench cache" "tune" "launch"; do
    expect 0 "--device N" "$K" $c --help
done
expect 2 "--device 3 does not exist: the devices are 0 (kernjit stub device), 1 (kernjit stub device 1), 2 (kernjit stub device 2)" \
    "$K" run transpose --device 3
expect 2 "--device '' is not a device ordinal" "$K" bench nested --device ''

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
