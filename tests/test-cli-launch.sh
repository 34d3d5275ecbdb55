#!/usr/bin/env bash
# kernjit launch without a GPU. First what needs no driver at all: every malformed spec and option is
# refused (exit 2, naming the offending text) before a device is looked for. Then the whole command
# against tests/stub-cuda.c (KERNJIT_LIBCUDA), a stand-in driver whose "device" memory is host memory
# and whose launches run the test kernels on the CPU: parameter checks, fills, --print, --save,
# --json, limits, the old-driver fallback. The gpu suite (test-gpu-launch) does the real thing.
# Usage: test-cli-launch.sh path/to/kernjit path/to/libstub-cuda.so path/to/libstub-cuda-old.so kernels/
set -u
K="$1"
STUB="$2"
STUB_OLD="$3"
KD="$4"
work="$(mktemp -d)"
export KERNJIT_CACHE_DIR="$work/cache"
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/cli-expect.sh"
cd "$work"

# ---- no driver needed: the command line is checked first -------------------------------------------
# KERNJIT_LIBCUDA names a library that does not exist: if any of these reached the driver, the message
# would be "no CUDA device" (exit 1) instead of the usage error expected.
export KERNJIT_LIBCUDA="$work/no-such-libcuda.so"
L="$K launch $KD/vadd.cu --grid 1 --block 32"
expect 0 "usage: kernjit launch" "$K" launch --help
expect 0 "launch" "$K" --help
expect 2 "which kernel" "$K" launch --grid 1 --block 1
expect 2 "'reduce' is not a .cu file: several sources are linked into one program" "$K" launch a.cu reduce --grid 1 --block 1
expect 2 "two entries ('x' and 'y')" "$K" launch a.cu:x b.cu:y --grid 1 --block 1
expect 2 "--grid is required" "$K" launch "$KD/vadd.cu" --block 1
expect 2 "--block is required" "$K" launch "$KD/vadd.cu" --grid 1
expect 2 "names no entry after ':'" "$K" launch "$KD/vadd.cu:" --grid 1 --block 1
expect 2 "--arg 0 'f33=1': unknown type 'f33'" $L --arg f33=1
expect 2 "--arg 1 'f32' has no '='" $L --arg i32=1 --arg f32
expect 2 "'x' is not an element count" $L --arg 'f32[x]=zeros'
expect 2 "'0' is not an element count" $L --arg 'f32[0]=zeros'
expect 2 "has '[' without ']'" $L --arg 'f32[10=zeros'
expect 2 "'lots' is not an i32 value" $L --arg i32=lots
expect 2 "'300' is out of range for u8 (0 to 255)" $L --arg u8=300
expect 2 "'-1' is negative" $L --arg u32=-1
expect 2 "'1e39' is out of range for f32" $L --arg f32=1e39
expect 2 "'random(1,2)' is not an f32 value" $L --arg 'f32[4]=random(1,2)'
expect 2 "'@' needs a file name" $L --arg 'f32[4]=@'
expect 2 "goes only with @FILE" $L --arg 'f32[]=zeros'
expect 2 "--grid '0': '0' is not a dimension" "$K" launch "$KD/vadd.cu" --grid 0 --block 1
expect 2 "--block '1,2,3,4' has more than 3 dimensions" "$K" launch "$KD/vadd.cu" --grid 1 --block 1,2,3,4
expect 2 "--shared 'big' is not a number from 0 to 2^32-1" $L --shared big
expect 2 "--repeat 'many' is not a number" $L --repeat many
expect 2 "--seed '-1' is not a non-negative integer" $L --seed -1
expect 2 "-D 'N=' has an empty value" $L -D N=
expect 2 "kernjit launch: unrecognized option '--frobnicate'" $L --frobnicate
expect 2 "--print 'x': 'x' is not an --arg index" $L --print x
expect 2 "--print 2: there are 2 --args" $L --arg 'f32[4]=zeros' --arg i32=4 --print 2
expect 2 "--print 1: --arg 1 is a scalar (i32)" $L --arg 'f32[4]=zeros' --arg i32=4 --print 1
expect 2 "element 4 is past the end of --arg 0 (4 elements)" $L --arg 'f32[4]=zeros' --print 0:4
expect 2 "range 2..9 goes past the end" $L --arg 'f32[4]=zeros' --print 0:2..9
expect 2 "--save '0' has no '='" $L --arg 'f32[4]=zeros' --save 0
expect 2 "--save 1: --arg 1 is a scalar" $L --arg 'f32[4]=zeros' --arg i32=4 --save 1=x.bin
expect 2 "cannot read '$work/missing.bin'" $L --arg "f32[4]=@$work/missing.bin"
head -c 12 /dev/zero > twelve.bin
expect 2 "has 12 bytes; 4 f32 elements are 16 bytes" $L --arg 'f32[4]=@twelve.bin'
expect 2 "not a whole number (1 or more) of 8-byte f64 elements" $L --arg 'f64[]=@twelve.bin'
expect 2 "is not a regular file" $L --arg "f32[]=@$work"
# T[]=@FILE takes its count from the file before --print ranges are checked
expect 2 "element 3 is past the end of --arg 0 (3 elements)" $L --arg 'f32[]=@twelve.bin' --print 0:3
devices=$(env -u KERNJIT_LIBCUDA "$K" info --json | grep -o '"devices":\[[^]]' || true)
if [ -z "$devices" ]; then
    expect 1 "no CUDA device" env -u KERNJIT_LIBCUDA $L --arg 'f32[4]=zeros' --arg 'f32[4]=zeros' --arg 'f32[4]=zeros' --arg i32=4
fi

# ---- with the stub driver -----------------------------------------------------------------------
export KERNJIT_LIBCUDA="$STUB"
export KJ_STUB_PARAMS=8,8,8,4
V="$K launch $KD/vadd.cu --grid 4 --block 256"
VARGS=(--arg 'f32[1000]=iota' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg i32=1000)
expect 0 "vadd (_Z4vaddPKfS0_Pfi)" $V "${VARGS[@]}"
expect 0 "checked against the compiled kernel" $V "${VARGS[@]}"
expect 0 "vadd (_Z4vaddPKfS0_Pfi) for sm_90, disk cache" $V "${VARGS[@]}"    # cached like any other kernel
# another target the device runs: the request's, in its own folder; PTX loads too
expect 0 "vadd (_Z4vaddPKfS0_Pfi) for sm_90a, compiled now" $V "${VARGS[@]}" --arch sm_90a
expect 0 "vadd (_Z4vaddPKfS0_Pfi) for compute_75, compiled now" $V "${VARGS[@]}" --arch compute_75
expect 0 "[999] 1001" $V "${VARGS[@]}" --arch compute_75 --print 2:995.. --repeat 0
expect 0 "[999] 1001" $V "${VARGS[@]}" --print 2:995.. --repeat 0
expect 0 "[0] 2" $V "${VARGS[@]}" --print 2
expect 0 '"values":[2,3,4]' $V "${VARGS[@]}" --print 2:0..3 --json
expect 0 '"params_checked_by":"driver"' $V "${VARGS[@]}" --json
expect 0 "saved --arg 2 (4000 bytes) to c.bin" $V "${VARGS[@]}" --save 2=c.bin
expect 0 "" test "$(od -An -tf4 -j 3996 c.bin | tr -d ' ')" = 1001
expect 0 "" test "$(stat -c %s c.bin)" = 4000
# the file round-trips as an input, its count taken from its size
expect 0 "[1] 5" $V --arg 'f32[]=@c.bin' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg i32=1000 --print 2:0..2
expect 2 "the folder '$work/no/such/dir' does not exist" $V "${VARGS[@]}" --save "2=$work/no/such/dir/c.bin"
# a function attribute the driver cannot give fails the load, named, rather than reading as zero
KJ_STUB_ATTR_FAIL=1 expect 1 "kernjit launch: cuFuncGetAttribute(NUM_REGS): CUDA_ERROR" $V "${VARGS[@]}"

# an entry marked `pdl` goes through cuLaunchKernelEx with programmatic stream serialization (the
# stub says so once per function and refuses any other attribute); an unmarked one does not
cat > early.cu <<'EOF_CU'
//@kernjit entry vadd_early
//@kernjit pdl
extern "C" __global__ void vadd_early(const float *a, const float *b, float *c, int n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
EOF_CU
expect 0 "stub-cuda: programmatic dependent launch of vadd_early" "$K" launch early.cu --grid 4 --block 256 \
    "${VARGS[@]}" --print 2:999
expect 0 "[999] 1001" "$K" launch early.cu --grid 4 --block 256 "${VARGS[@]}" --print 2:999
expect 0 "" bash -c "! $V ${VARGS[*]@Q} 2>&1 | grep -q 'programmatic dependent launch'"

# the count and the sizes, each mismatch named
expect 2 "vadd takes 4 parameters; 3 were given with --arg: parameter 3 'int n' (4 bytes) has none" \
    $V --arg 'f32[1000]=iota' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros'
expect 2 "5 were given with --arg: --arg 4 'i32=6' has no parameter" $V "${VARGS[@]}" --arg i32=6
expect 2 "--arg 3 'i64=5' is an i64 (8 bytes) but parameter 3 'int n' of vadd takes 4 bytes" \
    $V --arg 'f32[1000]=iota' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg i64=5
expect 2 "--arg 1 'f32=2' is an f32 (4 bytes) but parameter 1 'const float *b' of vadd takes 8 bytes: give a buffer" \
    $V --arg 'f32[1000]=iota' --arg f32=2 --arg 'f32[1000]=zeros' --arg i32=5
expect 2 "--arg 3 'u8[4]=zeros' is a buffer (an 8-byte pointer) but parameter 3 'int n'" \
    $V --arg 'f32[1000]=iota' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg 'u8[4]=zeros'

# device limits and memory, before anything is allocated
expect 2 "--block x = 2048 exceeds the device's limit of 1024" "$K" launch "$KD/vadd.cu" --grid 1 --block 2048 "${VARGS[@]}"
expect 2 "--grid y = 100000 exceeds the device's limit of 65535" "$K" launch "$KD/vadd.cu" --grid 1,100000 --block 1 "${VARGS[@]}"
expect 2 "is 2048 threads; vadd allows at most 1024" "$K" launch "$KD/vadd.cu" --grid 1 --block 32,32,2 "${VARGS[@]}"
expect 2 "--shared 307200 exceeds" $V --shared 300K "${VARGS[@]}"
expect 1 "--arg 0 'f32[2^40]=zeros' needs 4398046511104 bytes of device memory, more than the" \
    $V --arg 'f32[2^40]=zeros' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg i32=1000
expect 1 "the sum of the buffers needs 1677725600 bytes of device memory, more than the" \
    $V --arg 'f32[200M]=zeros' --arg 'f32[200M]=zeros' --arg 'f32[1000]=zeros' --arg i32=1000

# entries: C++ names, templates (explicit or by name expression), the only instance of a template
KJ_STUB_PARAMS=8,4,4 expect 0 "scale<float,256> (_Z5scaleIfLi256EEvPT_S0_i)" \
    "$K" launch "$KD/scale.cu:scale<float,256>" --grid 1 --block 256 --arg 'f32[8]=1' --arg f32=2 --arg i32=8
KJ_STUB_PARAMS=8,8,4 expect 2 "parameter 1 'T a' of scale<double,64> takes 8 bytes" \
    "$K" launch "$KD/scale.cu:scale<double,64>" --grid 1 --block 64 --arg 'f64[8]=1' --arg f32=2 --arg i32=8
expect 2 "kernel scale is a template: name an instance" "$K" launch "$KD/scale.cu" --grid 1 --block 1
expect 2 "no kernel 'scale'" "$K" launch "$KD/scale.cu:scale" --grid 1 --block 1
expect 2 "no kernel 'nosuch'" "$K" launch "$KD/vadd.cu:nosuch" --grid 1 --block 1
expect 0 "axpy<double>" "$K" launch "$KD/axpy_instance.cu" --grid 1 --block 32 --arg 'f64[8]=1' --arg 'f64[8]=iota' \
    --arg f64=2 --arg i32=8
printf 'extern "C" __global__ void k(int *x) {\n  x[0] = oops;\n}\n' > bad.cu
expect 1 "bad.cu(2): error" "$K" launch bad.cu --grid 1 --block 1 --arg 'i32[1]=zeros'

# scalars of every size reach the kernel as the bytes the driver expects
KJ_STUB_PARAMS=1,2,8,8 expect 0 "[1] -3" "$K" launch "$KD/scalars.cu" --grid 1 --block 1 --arg u8=200 --arg i16=-3 \
    --arg f64=7.9 --arg 'i64[3]=zeros' --print 3
KJ_STUB_PARAMS=1,2,8,8 expect 0 '"values":[200,-3,7]' "$K" launch "$KD/scalars.cu" --grid 1 --block 1 --arg u8=200 \
    --arg i16=-3 --arg f64=7.9 --arg 'i64[3]=zeros' --print 3 --json
# a bf16 scalar is the high half of the f32: -2 is 0xc000, which the kernel's short reads as -16384
KJ_STUB_PARAMS=1,2,8,8 expect 0 "[1] -16384" "$K" launch "$KD/scalars.cu" --grid 1 --block 1 --arg u8=200 --arg bf16=-2 \
    --arg f64=7.9 --arg 'i64[3]=zeros' --print 3

# y += x: what is printed and saved is the first launch's result, whatever --repeat adds after it
KJ_STUB_PARAMS=8,8,4 expect 0 "[7] 8" "$K" launch "$KD/accumulate.cu" --grid 1 --block 256 --arg 'f32[8]=iota' \
    --arg 'f32[8]=1' --arg i32=8 --print 0 --repeat 7 --save 0=acc.bin
expect 0 "" test "$(od -An -tf4 acc.bin | tr -s ' \n' ' ' | sed 's/^ //;s/ $//')" = "1 2 3 4 5 6 7 8"
KJ_STUB_PARAMS=8,8,4 expect 0 "12.50 us median of 7 launches" "$K" launch "$KD/accumulate.cu" --grid 1 --block 256 \
    --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg i32=8 --repeat 7
KJ_STUB_PARAMS=8,8,4 expect 0 "not measured (--repeat 0)" "$K" launch "$KD/accumulate.cu" --grid 1 --block 256 \
    --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg i32=8 --repeat 0

# a pointer into a buffer (&I+OFF): vadd's a is buffer 0 moved on by one element, so c[i] = i + (i + 1)
expect 0 "[7] 15" "$K" launch "$KD/vadd.cu" --grid 1 --block 32 --arg 'f32[9]=iota' --arg '&0+4' \
    --arg 'f32[8]=zeros' --arg i32=8 --print 2:0..8 --repeat 0
expect 2 "offset 36 is past buffer --arg 0, which has 36 bytes" "$K" launch "$KD/vadd.cu" --grid 1 --block 32 \
    --arg 'f32[9]=iota' --arg '&0+36' --arg 'f32[8]=zeros' --arg i32=8 --repeat 0
expect 2 "points into --arg 3, which is not a buffer" "$K" launch "$KD/vadd.cu" --grid 1 --block 32 \
    --arg 'f32[9]=iota' --arg '&3' --arg 'f32[8]=zeros' --arg i32=8
# a struct by value as raw bytes: scalars' first parameter is one byte
printf '\x07' > one.bin
KJ_STUB_PARAMS=1,2,8,8 expect 0 "[2] 3" "$K" launch "$KD/scalars.cu" --grid 1 --block 1 --arg 'bytes[1]=0x07' --arg i16=-2 \
    --arg f64=3.5 --arg 'i64[3]=zeros' --print 3 --repeat 0
KJ_STUB_PARAMS=1,2,8,8 expect 0 "[2] 3" "$K" launch "$KD/scalars.cu" --grid 1 --block 1 --arg 'bytes[1]=@one.bin' --arg i16=-2 \
    --arg f64=3.5 --arg 'i64[3]=zeros' --print 3 --repeat 0
KJ_STUB_PARAMS=1,2,8,8 expect 2 "is 2 bytes but parameter 0" "$K" launch "$KD/scalars.cu" --grid 1 --block 1 --arg 'bytes[2]=0x0700' \
    --arg i16=-2 --arg f64=3.5 --arg 'i64[3]=zeros'
# cooperative launches and clusters: checked, then launched with their attributes
expect 0 "stub-cuda: cooperative launch of" "$K" launch "$KD/vadd.cu" --grid 264 --block 1024 --cooperative \
    --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' --arg i32=8 --repeat 0
expect 2 "a cooperative grid of 265 blocks does not fit: vadd runs at most 2 blocks of 1024 threads" "$K" launch \
    "$KD/vadd.cu" --grid 265 --block 1024 --cooperative --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' \
    --arg i32=8 --repeat 0
expect 0 "clusters of 2x1x1" "$K" launch "$KD/vadd.cu" --grid 4 --block 32 --cluster 2 \
    --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' --arg i32=8 --repeat 0
expect 2 "grid x = 3 is not a multiple of the cluster's x = 2" "$K" launch "$KD/vadd.cu" --grid 3 --block 32 \
    --cluster 2 --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' --arg i32=8 --repeat 0
expect 2 "a cluster of 3 x 3 x 1 blocks of 32 threads cannot be placed" "$K" launch "$KD/vadd.cu" --grid 9,9 \
    --block 32 --cluster 3,3 --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' --arg i32=8 --repeat 0
KJ_STUB_CC=80 expect 1 "thread-block clusters need compute capability 9.0 or later; this device is 8.0" "$K" launch \
    "$KD/vadd.cu" --grid 4 --block 32 --cluster 2 --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' \
    --arg i32=8 --repeat 0
expect 2 "--pending '0' is not a number" "$K" launch "$KD/vadd.cu" --grid 1 --block 32 --pending 0 \
    --arg 'f32[8]=iota' --arg 'f32[8]=1' --arg 'f32[8]=zeros' --arg i32=8
# a program of two sources, the entry named on either
expect 0 "[3] 4" "$K" launch "$KD/link_main.cu" "$KD/link_lib.cu:blend" --grid 1 --block 32 --arg 'f32[4]=iota' \
    --arg 'f32[4]=1' --arg 'f32[4]=zeros' --arg i32=4 --print 2 --repeat 0
expect 0 "[1] 1" "$K" launch "$KD/link_lib.cu" "$KD/link_main.cu:blend" --grid 1 --block 32 --arg 'f32[4]=iota' \
    --arg 'f32[4]=1' --arg 'f32[4]=zeros' --arg i32=4 --print 2 --repeat 0
expect 2 "have several kernels (blend, tile_sums)" "$K" launch "$KD/link_main.cu" "$KD/link_lib.cu" --grid 1 \
    --block 32 --arg 'f32[4]=iota'

# a driver without cuFuncGetParamInfo: the count comes from the source, sizes are not checked
export KERNJIT_LIBCUDA="$STUB_OLD"
expect 0 "counting vadd's parameters in the source instead (4)" $V "${VARGS[@]}"
expect 0 "checked against the source (count only)" $V "${VARGS[@]}"
expect 2 "parameter 3 'int n' has none" $V --arg 'f32[1000]=iota' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros'
printf '#define ARGS int *x, int n\n__global__ void m(ARGS) { x[0] = n; }\n' > macro.cu
expect 0 "is not checked against it" "$K" launch macro.cu --grid 1 --block 1 --arg 'i32[1]=zeros' --arg i32=4
printf '#define KERNEL(name) __global__ void name(int *x) { x[0] = 1; }\nKERNEL(gen)\n' > generated.cu
expect 0 "gen's declaration was not found in the source either" "$K" launch generated.cu:gen --grid 1 --block 1 \
    --arg 'i32[1]=zeros'

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all kernjit launch CLI checks passed"
