#!/usr/bin/env bash
# examples/python/vadd.py, the ctypes route into kernjit's C ABI: compile-only where there is no
# driver (without numpy, which only the launch needs), a launch end to end against the stub driver,
# whose "device" runs vadd on the CPU, checked against numpy by the example itself; one line, exit 1,
# for a library that cannot be found and for a launch without numpy; and, with no library named, the
# checkout's own build found when the system has no libkernjit.so.2.
# usage: test-python-example.sh SOURCE_DIR LIBKERNJIT_SO STUB_CUDA_SO
set -u
src="$1" lib="$2" stub="$3"
ex="$src/examples/python/vadd.py"
py=$(command -v /usr/bin/python3 python3 | head -1)
[ -n "$py" ] || { echo "skip: no python3"; exit 77; }
tmp=$(mktemp -d /tmp/kernjit-py-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cache="$tmp/cache"
# a numpy that cannot be imported, first on the path
mkdir -p "$tmp/no-numpy/numpy"
echo 'raise ImportError("numpy hidden by the test")' >"$tmp/no-numpy/numpy/__init__.py"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check NAME CODE REGEX command...: the exit code, and a line of the output matching REGEX; a failure
# (CODE 1) is one line
check() {
    local name="$1" code="$2" want="$3" out rc
    shift 3
    out=$("$@" 2>&1)
    rc=$?
    echo "$out" | sed "s/^/[$name] /"
    if [ "$rc" != "$code" ]; then fail "$name: exit $rc, expected $code"
    elif ! grep -qE -- "$want" <<<"$out"; then fail "$name: no line matches '$want'"
    elif [ "$code" = 1 ] && [ "$(grep -c . <<<"$out")" != 1 ]; then fail "$name: more than one line"
    else echo "ok: $name"; fi
}

nodriver=(env KERNJIT_CACHE_DIR="$cache" KERNJIT_LIBCUDA=/nonexistent/libcuda.so.1)
withstub=(env KERNJIT_CACHE_DIR="$cache" KERNJIT_LIBCUDA="$stub")
check "compile-only, without numpy" 0 "^kernjit .*: no GPU here; compiled vadd for sm_[0-9]+" \
    "${nodriver[@]}" PYTHONPATH="$tmp/no-numpy" "$py" "$ex" "$lib"
check "a launch without numpy" 1 "^vadd.py: numpy is needed to launch" \
    "${withstub[@]}" PYTHONPATH="$tmp/no-numpy" "$py" "$ex" "$lib"
check "a library that is not there" 1 "^vadd.py: cannot load kernjit: tried $tmp/none/libkernjit.so.2 \(no such file\)" \
    "${nodriver[@]}" "$py" "$ex" "$tmp/none/libkernjit.so.2"
check "KERNJIT_LIB that is not there" 1 "^vadd.py: cannot load kernjit: tried $tmp/none.so \(no such file\)" \
    "${nodriver[@]}" KERNJIT_LIB="$tmp/none.so" "$py" "$ex"
if ldconfig -p 2>/dev/null | grep -q 'libkernjit\.so\.2 '; then
    echo "skip: libkernjit.so.2 is installed on this system: the search's fallbacks are not reached"
else
    # a copy of the example outside any checkout: the soname, then a build/ that is not there
    mkdir -p "$tmp/elsewhere/examples/python" && cp "$ex" "$tmp/elsewhere/examples/python/"
    check "no library anywhere" 1 "^vadd.py: cannot load kernjit: tried libkernjit\.so\.2 \(.*\); $tmp/elsewhere/build/src/libkernjit\.so\.2 \(no such file\)\. Build it" \
        "${nodriver[@]}" KERNJIT_LIB= LD_LIBRARY_PATH= "$py" "$tmp/elsewhere/examples/python/vadd.py"
    if [ "$(cd "$(dirname "$lib")" && pwd -P)" = "$(cd "$src" && pwd -P)/build/src" ]; then
        check "the checkout's build" 0 "^kernjit .* \(.*/build/src/libkernjit\.so\.2\): no GPU here" \
            "${nodriver[@]}" KERNJIT_LIB= LD_LIBRARY_PATH= "$py" "$ex"
    else
        echo "skip: this build is not the checkout's build/, where the example looks"
    fi
fi

if "$py" -c 'import numpy' 2>/dev/null; then
    for n in 1 31 1000003; do
        check "the stub's launch of $n" 0 "^ok: c = a \+ b on sm_90 for $n elements" \
            "${withstub[@]}" "$py" "$ex" "$lib" --n $n
    done
else
    echo "skip: the launches (no numpy for $py: scripts/setup installs python3-numpy)"
fi
[ "$failures" = 0 ] || { echo "FAIL: $failures check(s) of the Python example"; exit 1; }
echo "all Python example checks passed"
