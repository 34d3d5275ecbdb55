#!/usr/bin/env bash
# examples/python/vadd.py, the ctypes route into kernjit's C ABI: compile-only where there is no
# driver (a GPU launches it for real), and a launch end to end against the stub driver, whose
# "device" runs vadd on the CPU, checked against numpy by the example itself.
# usage: test-python-example.sh SOURCE_DIR LIBKERNJIT_SO STUB_CUDA_SO
set -u
src="$1" lib="$2" stub="$3"
py=""
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then py="$p"; break; fi
done
[ -n "$py" ] || { echo "skip: no python3 with numpy (scripts/setup installs python3-numpy)"; exit 77; }
cache=$(mktemp -d /tmp/kernjit-py-XXXXXX)
trap 'rm -rf "$cache"' EXIT
failures=0
out=$(KERNJIT_CACHE_DIR="$cache" "$py" "$src/examples/python/vadd.py" "$lib" 2>&1)
echo "$out"
grep -qE '^(kernjit .*: no GPU here; compiled vadd for sm_[0-9]+|ok: c = a \+ b on )' <<<"$out" || failures=$((failures + 1))
for n in 1 31 1000003; do
    out=$(KERNJIT_LIBCUDA="$stub" KERNJIT_CACHE_DIR="$cache" "$py" "$src/examples/python/vadd.py" "$lib" --n $n 2>&1)
    echo "$out"
    grep -q "^ok: c = a + b on sm_90 for $n elements" <<<"$out" || failures=$((failures + 1))
done
[ "$failures" = 0 ] || { echo "FAIL: $failures run(s) of the Python example"; exit 1; }
