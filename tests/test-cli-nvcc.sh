#!/usr/bin/env bash
# nvcc's spellings of the compiler's options, as compile, launch and run take them (cli/nvcc_options.h):
# each is the same compile, and the same cache key, as kernjit's own spelling; a value that belongs to
# the option before it stays as it is; -D NAME is NAME=1; a -std takes the place of kernjit's c++17.
# Usage: test-cli-nvcc.sh KERNJIT STUB_LIBCUDA KERNELS_DIR
set -u
K="$1" STUB="$2" KD="$3"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
export KERNJIT_CACHE_DIR="$W/cache" KERNJIT_PATH=
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# key ARGS...: the cache key of `kernjit compile ARGS --json`, or what went wrong
key() {
    local out
    out=$("$K" compile "$@" --json 2>&1) || { echo "exit $?: $out"; return; }
    grep -o '"key":"[0-9a-f]*"' <<<"$out" || echo "no key: $out"
}
# same "WHAT" REFERENCE-ARGS -- ARGS... [-- ARGS...]...: each spelling's key is the reference's
same() {
    local what="$1" ref=() k want
    shift
    while [ "$1" != -- ]; do ref+=("$1"); shift; done
    want=$(key "${ref[@]}")
    [[ $want == '"key"'* ]] || { fail "$what: the reference ${ref[*]}: $want"; return; }
    while [ $# -gt 0 ] && [ "$1" = -- ]; do
        shift
        local args=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
        k=$(key "${args[@]}")
        if [ "$k" = "$want" ]; then echo "ok: $what: ${args[*]}"; else fail "$what: ${args[*]}: $k, expected $want"; fi
    done
}

V="$KD/vadd.cu"
same "the target" "$V" --arch sm_80 -- "$V" -arch=sm_80 -- "$V" -arch sm_80 -- "$V" --gpu-architecture=sm_80 \
    -- "$V" --gpu-architecture sm_80
expect 0 '"arch":"sm_80"' "$K" compile "$V" -arch=sm_80 --json
same "-D NAME is NAME=1" "$V" --arch sm_90 -D NDEBUG=1 -- "$V" --arch sm_90 -DNDEBUG -- "$V" --arch sm_90 -D NDEBUG \
    -- "$V" --arch sm_90 --define-macro NDEBUG -- "$V" --arch sm_90 --define-macro=NDEBUG
same "--define-macro" "$V" --arch sm_90 -D N=4 -- "$V" --arch sm_90 --define-macro=N=4 -- "$V" --arch sm_90 --define-macro N=4
same "a -std" "$V" --arch sm_90 --option=-std=c++20 -- "$V" --arch sm_90 -std=c++20 -- "$V" --arch sm_90 -std c++20 \
    -- "$V" --arch sm_90 --std=c++20
same "-std=c++17, kernjit's own" "$V" --arch sm_90 -- "$V" --arch sm_90 -std=c++17
same "fast math" "$V" --arch sm_90 --option=--use_fast_math -- "$V" --arch sm_90 --use_fast_math \
    -- "$V" --arch sm_90 -use_fast_math
same "-G" "$V" --arch sm_90 --option=--device-debug -- "$V" --arch sm_90 -G -- "$V" --arch sm_90 --device-debug
same "-lineinfo" "$V" --arch sm_90 --option=--generate-line-info -- "$V" --arch sm_90 -lineinfo \
    -- "$V" --arch sm_90 --generate-line-info
same "-Xptxas" "$V" --arch sm_90 --option=--ptxas-options=-O2 -- "$V" --arch sm_90 -Xptxas -O2 \
    -- "$V" --arch sm_90 -Xptxas=-O2 -- "$V" --arch sm_90 --ptxas-options=-O2 -- "$V" --arch sm_90 --ptxas-options -O2
# the spellings make different compiles: none is dropped on the way
for a in -G -lineinfo --use_fast_math -std=c++20 "-Xptxas -O2" -DNDEBUG; do
    # shellcheck disable=SC2086
    [ "$(key "$V" --arch sm_90 $a)" != "$(key "$V" --arch sm_90)" ] && echo "ok: $a is in the key" \
        || fail "$a gives the key of no option"
done
# a user's -std is the only one NVRTC gets: no warning of a second
expect 0 '"warnings":"",' "$K" compile "$V" --arch sm_90 -std=c++20 --json
# a value of the option before it is the option's, as written (here NVRTC's own -G)
same "--option's value" "$V" --arch sm_90 --option=-G -- "$V" --arch sm_90 --option -G
[ "$(key "$V" --arch sm_90 --option -G)" != "$(key "$V" --arch sm_90 -G)" ] && echo "ok: --option -G is not rewritten" \
    || fail "--option -G was rewritten"
# -I: the folder is searched for the kernel's headers
mkdir -p "$W/inc"
printf '#define SCALE 3\n' > "$W/inc/scale.h"
printf '#include "scale.h"\nextern "C" __global__ void k(int *o) { o[0] = SCALE; }\n' > "$W/k.cu"
expect 1 "scale.h" "$K" compile "$W/k.cu" --arch sm_90
same "-I" "$W/k.cu" --arch sm_90 --option=--include-path="$W/inc" -- "$W/k.cu" --arch sm_90 -I "$W/inc" \
    -- "$W/k.cu" --arch sm_90 -I"$W/inc" -- "$W/k.cu" --arch sm_90 --include-path "$W/inc" \
    -- "$W/k.cu" --arch sm_90 --include-path="$W/inc"
# after "--", nothing is rewritten; a spelling without its value is named as typed
expect 2 "option '-arch' needs a value" "$K" compile "$V" -arch
expect 2 "option '-Xptxas' needs a value" "$K" compile "$V" --arch sm_90 -Xptxas
expect 2 "'-G' is not a .cu file" "$K" compile "$V" --arch sm_90 -- -G
# -D NAME for a built-in is NAME=1, checked as any value
expect 2 "OP=1 is not allowed for reduce: allowed values are sum max min prod" "$K" compile reduce -D OP

# launch: the same spellings, on the stub driver
VARGS=(--grid 1 --block 32 --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' --arg i32=8 --print 2)
expect 0 "  [7] 8" env KERNJIT_LIBCUDA="$STUB" "$K" launch "$V" -arch=sm_90a -lineinfo -DNDEBUG "${VARGS[@]}"
ls "$KERNJIT_CACHE_DIR"/sm_90a/*.cubin >/dev/null 2>&1 && echo "ok: launch -arch=sm_90a built for sm_90a" \
    || fail "launch -arch=sm_90a: no sm_90a entry"
expect 2 "option '-arch' needs a value" env KERNJIT_LIBCUDA="$STUB" "$K" launch "$V" "${VARGS[@]}" -arch

# run: the target (a runtime's --arch) and -D
expect 2 "arch sm_80: its code runs on compute capability 8.0 to 8.9" \
    env KERNJIT_LIBCUDA="$STUB" "$K" run reduce --n 1000 -arch=sm_80
rm -rf "$KERNJIT_CACHE_DIR/sm_90a"
env KERNJIT_LIBCUDA="$STUB" "$K" run reduce --n 1000 --arch sm_90a --repeat 1 >/dev/null 2>&1
ls "$KERNJIT_CACHE_DIR"/sm_90a/*.cubin >/dev/null 2>&1 && echo "ok: run --arch sm_90a built for sm_90a" \
    || fail "run --arch sm_90a: no sm_90a entry"
expect 2 "BLOCK_SIZE=1 is not allowed for reduce" env KERNJIT_LIBCUDA="$STUB" "$K" run reduce --n 1000 -D BLOCK_SIZE
# run builds its kernels as they are: the compiler's spellings are named as such (getopt would read
# -std=c++20 as --seed td=c++20), but a letter of the command's own stays its own
expect 2 "'-std=c++20' is an option of the compiler: kernjit run reduce builds its kernels as they are" \
    "$K" run reduce -std=c++20
expect 2 "'-lineinfo' is an option of the compiler" "$K" run vector-add -lineinfo
expect 2 "'-Xptxas' is an option of the compiler" "$K" run transpose -Xptxas -v
expect 2 "--init-subdiv 3: allowed are" "$K" run mandelbrot -I 3
# (the stub runs no vector add: the check fails, after the configuration is shown)
expect 1 "BLOCK_SIZE=64 UNROLL=2 (explicit)" env KERNJIT_LIBCUDA="$STUB" "$K" run vector-add --n 1000 \
    --define-macro BLOCK_SIZE=64 -DUNROLL=2 --repeat 1

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all nvcc spelling checks passed"
