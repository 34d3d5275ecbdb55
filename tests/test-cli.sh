#!/usr/bin/env bash
# CLI behaviour that needs no GPU: help, version, exit codes (0 ok, 1 failure, 2 usage) and the
# messages that name the bad value. Usage: test-cli.sh path/to/kernjit
set -u
K="$1"
export KERNJIT_CACHE_DIR="$(mktemp -d)/cache"
trap 'rm -rf "$(dirname "$KERNJIT_CACHE_DIR")"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"

expect 0 "usage: kernjit" "$K" --help
# --version: the version alone, touching nothing (help2man writes it into the man page while building)
rm -rf "$KERNJIT_CACHE_DIR"
expect 0 "kernjit 0." "$K" --version
[ ! -e "$KERNJIT_CACHE_DIR" ] || { echo "FAIL: --version made the cache folder"; failures=$((failures + 1)); }
[ "$expected_output" = "kernjit $("$K" --version --json | sed -n 's/.*"kernjit_version":"\([^"]*\)".*/\1/p')" ] \
    || { echo "FAIL: --version printed more than the version: $expected_output"; failures=$((failures + 1)); }
expect 0 '"cache_dir":"'"$KERNJIT_CACHE_DIR"'"' "$K" --version --json
expect 0 '"nvrtc_version":"13.' "$K" --version --json
expect 0 "toolchain: NVRTC 13" "$K" info
expect 2 "unknown command 'frobnicate'" "$K" frobnicate
expect 2 "usage: kernjit" "$K"
for c in info list compile cache demo run bench tune; do expect 0 "usage:" "$K" $c --help; done
expect 0 "reduce" "$K" list
expect 0 '"name":"reduce"' "$K" list --json
expect 0 "requires TILE_DIM % BLOCK_ROWS == 0" "$K" list transpose
expect 0 "transpose_padded: dynamic shared memory TILE_DIM * (TILE_DIM + 1) * ELEM_BYTES bytes" "$K" list transpose
expect 0 "transpose_l1_8x32: carveout 0% shared" "$K" list transpose
expect 0 "reduce_fast: early launch (pdl" "$K" list reduce
expect 0 '{"entry":"reduce_fast","pdl":true,"shared_dynamic_bytes_expression":null,"carveout_percent":null,"carveout_by_driver":false}' "$K" list reduce --json
expect 0 '"carveout_percent":0' "$K" list transpose --json
expect 2 "unknown kernel 'nosuch'" "$K" list nosuch
expect 0 "NVRTC" "$K" info
expect 0 '"toolchain"' "$K" info --json
expect 2 "unexpected argument" "$K" info extra
# one option parser (cli_getopt) for every command: the same messages, exit 2; a letter that is no
# short option of the command (launch's --save is not -o) is refused as one
for c in info list compile cache demo launch seed tune "bench jit" "bench cache" "bench reduce" "run reduce"; do
    expect 2 "kernjit $c: unrecognized option '--bogus'" "$K" $c --bogus
    expect 2 "kernjit $c: option '--json' takes no value" "$K" $c --json=1
    expect 2 "kernjit $c: unrecognized option '-Z'" "$K" $c -Z
done
for c in compile tune; do expect 2 "kernjit $c: option '--entry' needs a value" "$K" $c --entry; done
expect 2 "kernjit launch: unrecognized option '-o'" "$K" launch -o x.bin k.cu
expect 2 "kernjit tune: unrecognized option '-o'" "$K" tune -o sum reduce
expect 2 "kernjit bench jit: unexpected argument 'extra'" "$K" bench jit extra
expect 2 "kernjit tune: one kernel at a time (got 'b' too)" "$K" tune a b

# compile: every bad value named, exit 2; failures exit 1
expect 0 "compiled" "$K" compile reduce --arch sm_90
expect 0 "cache hit" "$K" compile reduce --arch sm_90
expect 0 '"cache_hit":true' "$K" compile reduce --arch sm_90 --json
# NVRTC's warnings: shown when compiled, again on a hit (as stored with the entry), not with -q
W=$(dirname "$KERNJIT_CACHE_DIR")
printf '#define BLOCK_ROWS 16\nextern "C" __global__ void k(int *o) { o[0] = BLOCK_ROWS; }\n' > "$W/redefined.cu"
expect 0 'incompatible redefinition of macro "BLOCK_ROWS"' "$K" compile "$W/redefined.cu" -D BLOCK_ROWS=8 --arch sm_90
expect 0 "warnings when it compiled this kernel (now from the cache)" "$K" compile "$W/redefined.cu" -D BLOCK_ROWS=8 --arch sm_90
expect 0 '"warnings":"' "$K" compile "$W/redefined.cu" -D BLOCK_ROWS=8 --arch sm_90 --json
out=$("$K" -q compile "$W/redefined.cu" -D BLOCK_ROWS=8 --arch sm_90 2>&1)
if grep -q warning <<<"$out"; then echo "FAIL: -q still shows NVRTC's warnings: $out"; failures=$((failures + 1)); fi
# each kernel's resources, known without a GPU, in text and JSON; ptxas's report is no warning
KD="$(dirname "$0")/kernels"
expect 0 "entry  shared_tile: " "$K" compile "$KD/resources.cu:shared_tile" --arch sm_90
expect 0 "B stack, 256 B static shared, no spills" "$K" compile "$KD/resources.cu:shared_tile" --arch sm_90
expect 0 '"resources":[{"symbol":"' "$K" compile "$KD/resources.cu:shared_tile" --arch sm_90 --json
expect 0 '"spill_store_bytes":0,"spill_load_bytes":0,"stack_bytes":0,"shared_static_bytes":256}' "$K" compile \
    "$KD/resources.cu:shared_tile" --arch sm_90 --json
expect 0 '"warnings":"",' "$K" compile "$KD/resources.cu:shared_tile" --arch sm_90 --json
expect 0 "SPILLS" "$K" compile "$KD/resources.cu:many_live" --arch sm_90 --option=-maxrregcount=24
# the toolkit's headers are keyed by a fingerprint of its folder: a new process sees an edit
mkdir -p "$W/toolkit/include"
printf '#define TK 1\n' > "$W/toolkit/include/tk_version.h"
printf '#include <tk_version.h>\nextern "C" __global__ void k(int *o) { o[0] = TK; }\n' > "$W/usestk.cu"
tk_key() { KERNJIT_CUDA_HOME="$W/toolkit" "$K" compile "$W/usestk.cu" --arch sm_90 --json | grep -o '"key":"[0-9a-f]*"'; }
before=$(tk_key)
printf '#define TK 22\n' > "$W/toolkit/include/tk_version.h"
if [ -z "$before" ] || [ "$before" = "$(tk_key)" ]; then
    echo "FAIL: editing a toolkit header left the key as it was ($before)"; failures=$((failures + 1))
fi
# a program of several sources, linked by nvJitLink
expect 0 "(2 sources linked)" "$K" compile "$KD/link_main.cu" "$KD/link_lib.cu:blend" --arch sm_90
expect 0 '"sources":["' "$K" compile "$KD/link_main.cu" "$KD/link_lib.cu" --entry tile_sums --arch sm_90 --json
expect 2 "--all compiles the variants of one kernel file" "$K" compile "$KD/link_main.cu" "$KD/link_lib.cu" --all
expect 2 "two entries ('blend' and 'tile_sums')" "$K" compile "$KD/link_main.cu:blend" "$KD/link_lib.cu:tile_sums"
# --json is valid UTF-8 whatever the bytes of a path; numbers at full precision
mkdir -p "$W/bad"$'\xff'
cp "$(dirname "$0")/kernels/vadd.cu" "$W/bad"$'\xff/'
out=$(KERNJIT_CACHE_DIR="$W/bad"$'\xff/c' "$K" compile "$W/bad"$'\xff/vadd.cu' --json)
if ! python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <<<"$out"; then
    echo "FAIL: --json with a non-UTF-8 path is not valid UTF-8 JSON: $out"; failures=$((failures + 1))
fi
grep -qF 'bad\u00ff' <<<"$out" || { echo "FAIL: the stray byte is not \u00ff: $out"; failures=$((failures + 1)); }
# ... and so is the whole cache's list, with that entry in it
out=$(KERNJIT_CACHE_DIR="$W/bad"$'\xff/c' "$K" cache list --json)
if ! python3 -c 'import json,sys; assert json.loads(sys.stdin.buffer.read().decode("utf-8"))' <<<"$out"; then
    echo "FAIL: cache list --json with a non-UTF-8 path is not valid UTF-8 JSON: $out"; failures=$((failures + 1))
fi
# a terminal escape sequence in a name reaches the terminal as text
out=$("$K" compile "$W/"$'\e[31mred.cu' --arch sm_90 2>&1)
if grep -q $'\e' <<<"$out" || ! grep -qF '\x1b[31mred.cu' <<<"$out"; then
    echo "FAIL: an escape sequence was echoed raw: $out"; failures=$((failures + 1))
fi
# one name per kernel: '-' and '_' alike wherever a built-in kernel, a family or a benchmark is named
expect 0 "vector_add for sm_90:" "$K" compile vector-add --arch sm_90
expect 0 "vector_add for sm_90:" "$K" compile vector-add:vector_add --arch sm_90
expect 0 "vector_add  (built-in)" "$K" list vector-add
expect 0 "usage: kernjit run vector-add" "$K" run vector_add --help
expect 0 "usage: kernjit run nested-reduce" "$K" run nested_reduce --help
expect 0 "usage: kernjit bench vector-add" "$K" bench vector_add --help
expect 0 "entries in" "$K" tune vector-add --show
expect 2 "unknown kernel 'vector-sub'" "$K" compile vector-sub
# a built-in's entry as NAME:ENTRY, as launch takes it
expect 0 "reduce for sm_90:" "$K" compile reduce:reduce_simple --arch sm_90
expect 2 "unknown entry 'nope' for reduce" "$K" compile reduce:nope --arch sm_90
# a path variable with white space at an end ($(cat file) ends in a newline; a paste may start with a
# space) is used without it, with a warning that shows it
expect 0 "KERNJIT_CACHE_DIR='$W/nl\\n' has white space at an end: kernjit uses '$W/nl'" \
    env KERNJIT_CACHE_DIR="$W/nl"$'\n' "$K" cache path
[ -d "$W/nl" ] && [ ! -e "$W/nl"$'\n' ] && echo "ok: the folder is named without the newline" \
    || { echo "FAIL: $(ls "$W")"; failures=$((failures + 1)); }
mkdir -p "$W/path" && cp "$W/redefined.cu" "$W/path/onpath.cu"
expect 0 "onpath for sm_90:" env KERNJIT_PATH=$'\t'"$W/path"$'\n' "$K" compile onpath --arch sm_90
expect 0 "linked with the device runtime" env KERNJIT_CUDA_HOME=" ${KERNJIT_CUDA_HOME:-${CUDA_HOME:-/usr/local/cuda}} " \
    "$K" compile nested --arch sm_90 -D T=f64
# several targets in one run, each its own entry
expect 0 "reduce for sm_80: compiled" "$K" compile reduce --arch sm_80,sm_90
expect 0 '"kernel":"reduce","targets":[{"arch":"sm_80","key":' "$K" compile reduce --arch sm_80 --arch sm_90 --json
expect 0 '"cache_hit":true' "$K" compile reduce --arch sm_80 --arch sm_90 --json
# --emit: the compiler's output in files that the toolkit's tools take, or on stdout
E="$(dirname "$KERNJIT_CACHE_DIR")/emit"
mkdir -p "$E"
echo "an older file" > "$E/reduce.cubin"
expect 0 "bytes to $E/reduce.cubin" "$K" compile reduce --arch sm_90 --emit cubin -o "$E/reduce.cubin"
if [ "$(head -c 4 "$E/reduce.cubin" | od -An -c | tr -d ' ')" != '177ELF' ]; then
    echo "FAIL: --emit cubin wrote no ELF file"; failures=$((failures + 1))
fi
entry=$(ls "$KERNJIT_CACHE_DIR"/sm_90/*.cubin | while read -r f; do
    cmp -s <(tail -c "$(stat -c %s "$E/reduce.cubin")" "$f") "$E/reduce.cubin" && echo "$f"; done)
[ -n "$entry" ] || { echo "FAIL: the emitted cubin is not the binary of any cache entry"; failures=$((failures + 1)); }
if command -v readelf >/dev/null; then
    expect 0 "NVIDIA CUDA" readelf -h "$E/reduce.cubin"
fi
CUOBJDUMP="${KERNJIT_CUDA_HOME:-${CUDA_HOME:-/usr/local/cuda}}/bin/cuobjdump"
if [ -x "$CUOBJDUMP" ]; then
    expect 0 "Function : reduce_fast" "$CUOBJDUMP" -sass "$E/reduce.cubin"
    if "$CUOBJDUMP" -sass "$entry" >/dev/null 2>&1; then # a cache entry is kernjit's container, not a cubin
        echo "FAIL: cuobjdump took a cache entry: docs say it is not a cubin"; failures=$((failures + 1))
    fi
else
    echo "skip: no cuobjdump in the toolkit (the ELF checks above stand for it)"
fi
expect 0 "ptx   " "$K" compile reduce --arch sm_90 --emit ptx -o "$E/reduce.ptx"
expect 0 ".target sm_90" cat "$E/reduce.ptx"
expect 0 '"emitted":{"format":"ltoir","file_path":"'"$E/reduce.ltoir"'","size_bytes":' \
    "$K" compile reduce --arch sm_90 --emit ltoir -o "$E/reduce.ltoir" --json
out=$("$K" compile "$KD/vadd.cu" --emit ptx -o - 2>/dev/null)
grep -q "^.visible .entry _Z4vaddPKfS0_Pfi(" <<<"$out" || { echo "FAIL: --emit ptx -o - wrote no PTX to stdout"; failures=$((failures + 1)); }
expect 0 "ptx   1" "$K" compile "$KD/vadd.cu" --emit ptx -o - # the report, on stderr
# a fat binary of two targets: each target reported, then packed; the toolkit's tools read it
expect 0 "fatbin " "$K" compile "$KD/vadd.cu" --arch sm_80,sm_90 --emit fatbin -o "$E/vadd.fatbin"
expect 0 "vadd.cu for sm_80: cache hit" "$K" compile "$KD/vadd.cu" --arch sm_80,sm_90 --emit fatbin -o "$E/vadd.fatbin"
expect 0 '"emitted":{"format":"fatbin","file_path":"'"$E/vadd.fatbin"'","size_bytes":' \
    "$K" compile "$KD/vadd.cu" --arch sm_80,sm_90 --emit fatbin -o "$E/vadd.fatbin" --json
if [ "$(head -c 4 "$E/vadd.fatbin" | od -An -tx1 | tr -d ' ')" != '50ed55ba' ]; then
    echo "FAIL: --emit fatbin wrote no fat binary"; failures=$((failures + 1))
fi
if [ -x "$CUOBJDUMP" ]; then
    expect 0 "sm_80" "$CUOBJDUMP" --list-elf "$E/vadd.fatbin"
    expect 0 "sm_90" "$CUOBJDUMP" --list-elf "$E/vadd.fatbin"
fi
# the global flags: -v shows the library's notes, --no-cache (KERNJIT_CACHE_DISABLE) compiles again
expect 0 "note: reduce: disk hit $KERNJIT_CACHE_DIR/sm_90/" "$K" -v compile reduce --arch sm_90
expect 0 "note: reduce: disk hit" "$K" compile reduce --arch sm_90 --verbose
out=$("$K" -v compile reduce --arch sm_90 -q 2>&1 >/dev/null)
if [ -n "$out" ]; then echo "FAIL: -q after -v: the last one wins, got '$out'"; failures=$((failures + 1)); fi
expect 0 "compiled in" "$K" --no-cache compile reduce --arch sm_90
expect 0 "compiled in" env KERNJIT_CACHE_DISABLE=1 "$K" compile reduce --arch sm_90
expect 0 "cache hit" env KERNJIT_CACHE_DISABLE=0 "$K" compile reduce --arch sm_90
expect 0 "KERNJIT_CACHE_DISABLE='maybe' is not 1 or 0" env KERNJIT_CACHE_DISABLE=maybe "$K" compile reduce --arch sm_90
expect 2 "BLOCK_SIZE=300" "$K" compile reduce -D BLOCK_SIZE=300 --arch sm_90
expect 2 "power of two" "$K" compile reduce -D BLOCK_SIZE=2048 --arch sm_90
expect 2 "power of two" "$K" compile reduce -D BLOCK_SIZE=0 --arch sm_90
expect 2 "power of two" "$K" compile reduce -D BLOCK_SIZE=-32 --arch sm_90
expect 2 "power of two" "$K" compile reduce -D BLOCK_SIZE=999999999999999999999999 --arch sm_90
expect 2 "allowed values are sum max min prod" "$K" compile reduce -D OP=avg --arch sm_90
expect 2 "unknown macro FOO" "$K" compile reduce -D FOO=1 --arch sm_90
expect 2 "OP=1 is not allowed for reduce" "$K" compile reduce -D OP --arch sm_90
expect 2 "has no macro name" "$K" compile reduce -D =1 --arch sm_90
expect 2 "unknown entry 'nope'" "$K" compile reduce --entry nope --arch sm_90
expect 2 "is not a target's name: give sm_XY" "$K" compile reduce --arch 90
expect 2 "is not a target's name: give sm_XY" "$K" compile reduce --arch sm_9a
expect 2 "unknown kernel 'nosuch'" "$K" compile nosuch --arch sm_90
expect 2 "which kernel" "$K" compile --arch sm_90
d=$(mktemp -d)
printf 'extern "C" __global__ void k(int *x) {\n  x[0] = oops;\n}\n' > "$d/bad.cu"
expect 1 "bad.cu(2): error" "$K" compile "$d/bad.cu" --arch sm_90
: > "$d/empty.cu"
expect 1 "is empty" "$K" compile "$d/empty.cu" --arch sm_90
expect 1 "No such file" "$K" compile "$d/missing.cu" --arch sm_90
mkdir "$d/dir.cu"
expect 1 "a folder" "$K" compile "$d/dir.cu" --arch sm_90
printf 'extern "C" __global__ void k(int *x) { *x = V; }\n' > "$d/ok.cu"
expect 0 "compiled" "$K" compile "$d/ok.cu:k" -D V=3 --arch sm_90
expect 2 "either as FILE.cu:ENTRY or with --entry" "$K" compile "$d/ok.cu:k" --entry k --arch sm_90
rm -rf "$d"

# compile --all: a restricted space, then the same again from the cache
expect 0 "4 variants (BLOCK_SIZE x COARSE_FACTOR): 4 compiled, 0 already in the cache" \
    "$K" compile reduce --all --arch sm_90 -D BLOCK_SIZE=256,512 -D COARSE_FACTOR=2,4
expect 0 "0 compiled, 4 already in the cache" "$K" compile reduce --all --arch sm_90 -D BLOCK_SIZE=256,512 -D COARSE_FACTOR=2,4
expect 0 '"cached":4' "$K" compile reduce --all --arch sm_90 -D BLOCK_SIZE=256,512 -D COARSE_FACTOR=2,4 --json
expect 2 "BLOCK_SIZE=300 is not allowed" "$K" compile reduce --all --arch sm_90 -D BLOCK_SIZE=256,300
expect 2 "--option is not taken with --all" "$K" compile reduce --all --option -lineinfo
expect 2 "--threads goes with --all" "$K" compile reduce --threads 2

# tune: argument errors need no device; --show and --forget work anywhere, and survive a damaged file
expect 2 "which kernel" "$K" tune
expect 2 "10 to 100000" "$K" tune reduce --samples 5
expect 2 "unknown operator 'avg'" "$K" tune reduce --op avg
expect 2 "unknown type 'f8'" "$K" tune reduce --type f8
expect 2 "OP is given twice" "$K" tune reduce --op sum -D OP=max
expect 2 "is not a number" "$K" tune reduce --n lots
expect 2 "--budget" "$K" tune reduce --budget 0
expect 2 "filters for --forget" "$K" tune reduce --cc 9.0
expect 0 "Kernels that can be tuned: reduce, transpose, vector_add" "$K" tune transpose --help
expect 2 "which kernel? (kernels that can be tuned: reduce, transpose, vector_add)" "$K" tune --n 1000
expect 2 "is not a number" "$K" tune transpose --n lots
expect 2 "is not a number" "$K" tune vector_add --n 0
expect 2 "10 to 100000" "$K" tune vector-add --samples 5
expect 2 "unknown type 'f8'" "$K" tune transpose --type f8
expect 2 "ELEM_BYTES is given twice" "$K" tune transpose --type f32 -D ELEM_BYTES=4
expect 2 "T is given twice" "$K" tune vector_add -D T=f64 --type f32
expect 2 "--type is given twice" "$K" tune vector_add --type f32 --type f64
expect 2 "not both" "$K" tune --show --forget
expect 2 "is not a compute capability" "$K" tune --forget --cc 9
expect 0 "0 entries" "$K" tune --show
expect 0 "removed 0 entries" "$K" tune --forget
db="$KERNJIT_CACHE_DIR/tuning.db"
# forgetting nothing writes nothing: no database is made where there was none
[ ! -e "$db" ] && echo "ok: --forget of nothing made no database" \
    || { echo "FAIL: --forget of nothing made $db"; failures=$((failures + 1)); }
{
    printf '# a comment\n'
    printf 'reduce\treduce_fast\tOP=sum T=f32\t20\tNVIDIA H100 80GB HBM3\t9.0\t0.1.0\tBLOCK_SIZE=256 COARSE_FACTOR=8\t100.0\t1.0\t1048576\t1\n'
    printf 'this line is garbage\n'
    printf 'reduce\treduce_fast\tOP=max T=i32\t24\tNVIDIA A100-SXM4-80GB\t8.0\t0.1.0\tBLOCK_SIZE=512 COARSE_FACTOR=4\t90.0\t2.0\t16777216\t1\n'
    printf 'reduce\treduce_fast\tOP=sum T=f32\t20\tNVIDIA H100 80GB HBM3\t9.0/sm_90a\t0.1.0\tBLOCK_SIZE=128 COARSE_FACTOR=8\t99.0\t1.0\t1048576\t1\n'
    printf 'reduce\ttrunc'
} > "$db"
expect 0 "3 entries" "$K" tune --show
expect 0 "line 3" "$K" tune --show
expect 0 "(sm_90, built for sm_90a)" "$K" tune --show
expect 0 '"macros":{"BLOCK_SIZE":"512","COARSE_FACTOR":"4"}' "$K" tune --show --json
expect 0 '"target":"sm_90a"' "$K" tune --show --json
expect 0 '"target":null' "$K" tune --show --json
expect 0 "removed 1 entry" "$K" tune --forget reduce --cc 8.0
expect 0 "removed 0 entries" "$K" tune --forget reduce --n 2^21
expect 0 "removed 2 entries" "$K" tune --forget reduce -D OP=sum --n 1048577   # for every target
expect 0 "0 entries" "$K" tune --show

# cache
expect 0 "$KERNJIT_CACHE_DIR" "$K" cache path
expect 0 "entries" "$K" cache stats
# several entries in one compile: a template's two instances, one NVRTC compile, one cache entry
printf 'template <typename T> __global__ void twice(T *x) { x[threadIdx.x] *= 2; }\n' > "$W/twice.cu"
expect 0 "instances twice<float> is _Z5twiceIfEvPT_" "$K" compile "$W/twice.cu" --entry 'twice<float>' --entry 'twice<int>' --arch sm_90
expect 0 "            twice<int> is _Z5twiceIiEvPT_" "$K" compile "$W/twice.cu" --entry 'twice<float>' --entry 'twice<int>' --arch sm_90
expect 0 "cache hit" "$K" compile "$W/twice.cu" --entry 'twice<float>' --entry 'twice<int>' --arch sm_90
expect 0 '"entries":[{"entry":"twice<float>","symbol":"_Z5twiceIfEvPT_"},{"entry":"twice<int>","symbol":"_Z5twiceIiEvPT_"}]' \
    "$K" compile "$W/twice.cu" --entry 'twice<float>' --entry 'twice<int>' --arch sm_90 --json
expect 0 "entry  _Z5twiceIiEvPT_: " "$K" compile "$W/twice.cu" --entry 'twice<float>' --entry 'twice<int>' --arch sm_90
expect 2 "--entry 'twice<int>' is given twice" "$K" compile "$W/twice.cu" --entry 'twice<int>' --entry 'twice<int>'
# compiled code among a program's sources (PTX and LTO-IR from --emit), and -dlto across .cu files
printf '__device__ float lib_blend(float x);\nextern "C" __global__ void blend(float *x) { x[0] = lib_blend(x[0]); }\n' > "$W/lmain.cu"
printf '__device__ float lib_blend(float x) { return 3.0f * x; }\n' > "$W/llib.cu"
expect 0 "ptx   " "$K" compile "$W/lmain.cu" --emit ptx -o "$W/lmain.ptx" --option -rdc=true --arch sm_90
expect 0 "ltoir " "$K" compile "$W/lmain.cu" --emit ltoir -o "$W/lmain.ltoir" --arch sm_90
expect 0 " ms (2 sources linked)" "$K" compile "$W/llib.cu" "$W/lmain.ptx" --entry blend --arch sm_90
expect 0 "entry  blend: " "$K" compile "$W/llib.cu" "$W/lmain.ltoir" --entry blend --arch sm_90
expect 0 "entry  blend: " "$K" compile "$W/llib.cu" "$W/lmain.cu" --entry blend --arch sm_90 --option -dlto
expect 0 "cache hit (2 sources linked)" "$K" compile "$W/llib.cu" "$W/lmain.cu" --entry blend --arch sm_90 --option -dlto
expect 0 "entr" "$K" cache list
expect 0 '"valid":true' "$K" cache list --json
expect 0 '"macros":{"BLOCK_SIZE":"256","COARSE_FACTOR":"8","OP":"sum","T":"f32"}' "$K" cache list --json
expect 0 "reduce:reduce_fast  BLOCK_SIZE=256 COARSE_FACTOR=8 OP=sum T=f32" "$K" cache list
expect 0 '"entry":"reduce_fast"' "$K" cache list --json
expect 2 "unknown action 'purge'" "$K" cache purge
expect 0 "removed" "$K" cache clear
expect 0 "entries 0" "$K" cache stats

# run: argument errors are found before any device is needed
expect 2 "unknown operator 'avg'" "$K" run reduce --op avg
expect 2 "unknown type 'f8'" "$K" run reduce --type f8
expect 2 "allowed are i32, u32, i64, f16, bf16, f32, f64" "$K" run reduce --type f8
# bf16: native from sm_80; the reduction's conversion is a shift, so that sm_75 builds it too
expect 0 "compiled" "$K" compile reduce -D T=bf16 -D OP=max --arch sm_75
expect 0 "reduce:reduce_fast  BLOCK_SIZE=256 COARSE_FACTOR=8 OP=max T=bf16" "$K" cache list
expect 2 "--type bf16: vector-add takes f32 or f64" "$K" run vector-add --type bf16
expect 2 "is not a number" "$K" run reduce --n lots
expect 2 "is not a number" "$K" run reduce --n -5
expect 2 "is not a number" "$K" run reduce --n 99999999999999999999999
expect 2 "unknown kernel 'nope'" "$K" run nope

# dynamic parallelism: nested-reduce, nested-hello, mandelbrot, bench nested
for r in nested-reduce nested-hello mandelbrot; do expect 0 "usage: kernjit run $r" "$K" run $r --help; done
expect 0 "usage: kernjit bench nested" "$K" bench nested --help
expect 0 "nested" "$K" list
expect 0 "mandelbrot" "$K" list
expect 2 "unknown nested-reduce variant 'fast': allowed are sync, nosync, reduce2" "$K" run nested-reduce --variant fast
expect 2 "--block '300': a power of two from 2 to 1024" "$K" run nested-reduce --block 300
expect 2 "--block '1': a power of two from 2 to 1024" "$K" run nested-reduce --block 1
expect 2 "--block '2048'" "$K" run nested-reduce --block 2048
expect 2 "--type f16: allowed are i32, u32, i64, f32, f64" "$K" run nested-reduce --type f16
expect 2 "--type bf16: allowed are i32, u32, i64, f32, f64" "$K" run nested-reduce --type bf16
expect 2 "unknown type 'f8'" "$K" run nested-reduce --type f8
expect 2 "is not a number" "$K" run nested-reduce --n lots
expect 2 "--pending '0'" "$K" run nested-reduce --pending 0
expect 2 "unexpected argument 'extra'" "$K" run nested-reduce extra
expect 2 "--block '3': a power of two from 1 to 1024" "$K" run nested-hello --block 3
expect 2 "--grid '0'" "$K" run nested-hello --grid 0
expect 2 "at most 8192" "$K" run nested-hello --grid 8 --block 1024
expect 2 "unknown Mandelbrot algorithm 'fast': allowed are escape, ms" "$K" run mandelbrot --algo fast
expect 2 "--dwell 500: allowed are 16 32 64" "$K" run mandelbrot --dwell 500
expect 2 "--max-depth 30: allowed are 1 2 3 4 5 6 7 8" "$K" run mandelbrot --max-depth 30
expect 2 "--subdiv 3: allowed are 2 4 8" "$K" run mandelbrot --subdiv 3
expect 2 "--size '0'" "$K" run mandelbrot --size 0
expect 2 "--size '40000'" "$K" run mandelbrot --size 40000
expect 2 "--window '1,0,0,1'" "$K" run mandelbrot --window 1,0,0,1
expect 2 "--window 'a,b'" "$K" run mandelbrot --window a,b
expect 2 "--only 'foo': allowed are reduce, mandelbrot" "$K" bench nested --only foo
expect 2 "--dwell '500'" "$K" bench nested --dwell 500
expect 2 "unknown benchmark 'nope'" "$K" bench nope
expect 0 "linked with the device runtime" "$K" compile nested --arch sm_90
expect 0 "linked with the device runtime" "$K" compile mandelbrot --arch sm_90

# the project's targets (goal ... met or MISSED) are for --goals alone: scripts/gpu-check passes it
if command -v redis-server >/dev/null; then
    expect 0 "remote hit against the cold compile" env KERNJIT_LIBCUDA=/nonexistent "$K" bench cache --repeat 1
    if grep -qE "goal|MISSED" <<<"$expected_output"; then
        echo "FAIL: bench cache without --goals shows goals"; failures=$((failures + 1))
    fi
    expect 0 "goal >= 50x: " env KERNJIT_LIBCUDA=/nonexistent "$K" bench cache --repeat 1 --goals
else
    echo "skip: bench cache's goals (no redis-server on PATH)"
fi
devices=$("$K" info --json | grep -o '"devices":\[[^]]' || true)
if [ -z "$devices" ]; then
    expect 1 "no CUDA device" "$K" run reduce --n 1000
    expect 1 '"command":"run vector-add"' "$K" run vector_add --json
    expect 1 "no CUDA device" "$K" run nested-reduce --n 1000
    expect 1 "no CUDA device" "$K" run nested-hello --block 8 --grid 2
    expect 1 "no CUDA device" "$K" run mandelbrot --size 64 --algo escape
    expect 1 "no CUDA device" "$K" bench nested
    expect 1 "no CUDA device" "$K" tune reduce --n 1000
    expect 1 "no CUDA device" "$K" tune transpose --n 2^20
    expect 1 "no CUDA device" "$K" tune vector_add --n 2^20
    expect 0 "nothing was launched" "$K" demo
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all CLI checks passed"
