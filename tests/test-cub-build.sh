#!/usr/bin/env bash
# `kernjit bench reduce` builds its CUB reference on first use when none is installed (compile suite:
# nvcc, about half a minute): with progress, kept in <cache>/cub under a name keyed by the source,
# nvcc's version, the flags and the architecture, loaded (and not built) the next time; with no nvcc,
# or KERNJIT_CUB_PLUGIN=off, the benchmark says why and runs without CUB. On the stub driver, which
# stands in for the device (the plugin's CUDA runtime finds no device there: the run itself then
# fails, after the plugin was built and loaded). nvcc builds it once: where it is built again (it was
# damaged), a stand-in for nvcc (the real one's --version, so the same name) notes the call and hands
# back the plugin built the first time: what that checks is kernjit building and loading it again.
# Usage: test-cub-build.sh KERNJIT STUB_LIBCUDA
set -u
K="$1" STUB="$2"
CUDA="${KERNJIT_CUDA_HOME:-${CUDA_HOME:-/usr/local/cuda}}"
NVCC="$CUDA/bin/nvcc"
[ -x "$NVCC" ] || { echo "no nvcc at $NVCC: skipping"; exit 77; }
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
export KERNJIT_CACHE_DIR="$W/cache" KERNJIT_PATH= KERNJIT_LIBCUDA="$STUB"
unset KERNJIT_CUB_PLUGIN KERNJIT_REMOTE_CACHE
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0)) s] $*"; }
B=(bench reduce --sizes 1K --op sum --type f32 --entry reduce_fast --samples 1)

# a build with -Dcub=enabled has the plugin beside kernjit, which is taken first
[ -e "$(dirname "$K")/libkernjit-cub.so" ] && { echo "a CUB plugin is beside $K: nothing to build; skipping"; exit 77; }

say "bench reduce, the cache empty: nvcc ($NVCC) builds the CUB reference, about a minute"
"$K" "${B[@]}" > "$W/first.out" 2> "$W/first.err"
plugin=$(ls "$W"/cache/cub/libkernjit-cub-sm_90-*.so 2>/dev/null)
[ -n "$plugin" ] || { fail "no plugin in $W/cache/cub"; cat "$W/first.err"; }
say "built: ${plugin:-nothing}"
grep -q "kernjit bench reduce: building the CUB reference with nvcc for sm_90 (once): [0-9]* s" "$W/first.err" \
    || fail "no progress while nvcc built it: $(head -3 "$W/first.err")"
grep -q "CUB: $plugin" "$W/first.out" || fail "the benchmark does not say it uses $plugin: $(head -1 "$W/first.out")"
[ -z "$(ls -A "$W/cache/cub" | grep -v '^libkernjit-cub-sm_90-[0-9a-f]*\.so$')" ] || fail "leftovers: $(ls -A "$W/cache/cub")"
before=$(stat -c %Y "$plugin")

say "the second time: loaded, not built"
sleep 1
"$K" "${B[@]}" > "$W/second.out" 2> "$W/second.err"
grep -q "building the CUB reference" "$W/second.err" && fail "built again"
grep -q "CUB: $plugin" "$W/second.out" || fail "the second run does not use $plugin"
[ "$(stat -c %Y "$plugin")" = "$before" ] || fail "the plugin was written again"

say "a plugin that does not load (damaged) is built again (by the stand-in for nvcc)"
# the toolkit as it is but for bin/nvcc, which notes its build calls and gives the first plugin back
mkdir -p "$W/toolkit/bin"
for e in "$CUDA"/*; do [ "$(basename "$e")" = bin ] || ln -s "$e" "$W/toolkit/"; done
for e in "$CUDA"/bin/*; do [ "$(basename "$e")" = nvcc ] || ln -s "$e" "$W/toolkit/bin/"; done
cp "$plugin" "$W/good.so"
printf '#!/bin/sh\n[ "$1" = --version ] && exec "%s" --version\necho "$*" >> "%s"\n' "$NVCC" "$W/nvcc-calls" \
    > "$W/toolkit/bin/nvcc"
printf 'while [ $# -gt 1 ] && [ "$1" != -o ]; do shift; done\ncp "%s" "$2"\n' "$W/good.so" >> "$W/toolkit/bin/nvcc"
chmod +x "$W/toolkit/bin/nvcc"
echo "not a library" > "$plugin"
KERNJIT_CUDA_HOME="$W/toolkit" "$K" "${B[@]}" > "$W/third.out" 2> "$W/third.err"
grep -q -- "-o [^ ]*/libkernjit-cub.so [^ ]*/cub_reference.cu$" "$W/nvcc-calls" 2>/dev/null \
    || fail "a damaged plugin: no build asked of nvcc ($(cat "$W/nvcc-calls" 2>/dev/null)): $(head -3 "$W/third.err")"
grep -q "CUB: $plugin" "$W/third.out" && cmp -s "$plugin" "$W/good.so" \
    || fail "a damaged plugin was not built again and loaded: $(head -3 "$W/third.out")"

say "none wanted, or no nvcc: one line that says why, and the benchmark goes on without CUB"
out=$(KERNJIT_CUB_PLUGIN=off "$K" "${B[@]}" 2>&1)
grep -q "CUB: none (KERNJIT_CUB_PLUGIN=off)" <<<"$out" || fail "KERNJIT_CUB_PLUGIN=off: $out"
out=$(KERNJIT_CACHE_DIR="$W/other" KERNJIT_CUDA_HOME="$W/nowhere" PATH=/usr/bin:/bin "$K" "${B[@]}" 2>&1)
rc=$?
# the benchmark goes on and checks against the CPU instead; the stub's reduction writes the element
# count, which that check refuses (exit 1): the run went on past the missing reference
[ "$rc" = 1 ] && grep -q "checked against the CPU reference" <<<"$out" || fail "without nvcc: exit $rc: $out"
grep -q "CUB: the CUB reference is absent, and there is no nvcc to build it (not at $W/nowhere/bin/nvcc" <<<"$out" \
    || fail "without nvcc: $out"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
say "the CUB reference: built on first use, then loaded, built again when damaged"
