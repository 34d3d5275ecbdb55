#!/usr/bin/env bash
# The README as a test:
# - its C example (the first ```c block) must compile against the public header and link;
# - every command line of "## The CLI" must run as written (from a copy of the checkout's root): the
#   lines that need no GPU must succeed, with the stub driver standing in for one where they launch
#   (tests/stub-cuda.c runs tests/kernels' vadd and scale on the CPU); the lines that time or check
#   the built-in kernels on a real GPU (run, bench but bench jit and cache, tune, demo) must get as far as asking for one:
#   exit 1 naming the missing device, never a usage error.
#   A benchmark line that runs here (bench jit, bench cache) gets --repeat 1 unless it names a count:
#   its samples run one path again and again (seven by default, minutes), and one sample checks the
#   line, every word of it parsed and run, as well as seven.
# Usage: test-readme.sh README.md include-dir lib-dir generated-include-dir KERNJIT STUB_CUDA
set -euo pipefail
readme="$1" inc="$2" lib="$3" geninc="$4" kernjit="$5" stub="$6"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk '/^```c$/{on=1; next} /^```$/{on=0} on' "$readme" > "$d/example.c"
[ -s "$d/example.c" ] || { echo "no C example in $readme"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror -I"$inc" ${geninc:+-I"$geninc"} "$d/example.c" -L"$lib" -lkernjit -Wl,-rpath,"$lib" -o "$d/example"
echo "README example compiles and links ($(wc -l < "$d/example.c") lines)"

# the CLI lines: indented "kernjit ..." lines of the CLI section, less their trailing comments
awk '/^## The CLI/{on=1; next} /^## /{on=0} on && /^    kernjit /' "$readme" \
    | sed -E 's/^    //; s/ {2,}#.*$//' > "$d/lines"
[ -s "$d/lines" ] || { echo "no command lines in the CLI section of $readme"; exit 1; }
src=$(cd "$(dirname "$readme")" && pwd)
mkdir "$d/root" "$d/cache"
ln -s "$src/tests" "$d/root/tests"
ln -s "$src/examples" "$d/root/examples"
failures=0 n=0
while IFS= read -r line; do
    n=$((n + 1))
    words=($line)
    needs_gpu=0
    case "${words[1]}" in
    run | demo) needs_gpu=1 ;;
    bench) [ "${words[2]}" = jit ] || [ "${words[2]}" = cache ] || needs_gpu=1 ;; # compiles and hits: no GPU needed
    tune) [[ " $line " == *" --show "* || " $line " == *" --forget "* ]] || needs_gpu=1 ;;
    esac
    if [ $needs_gpu = 1 ]; then
        env="KERNJIT_LIBCUDA=/nonexistent/libcuda.so.1"
    else
        env="KERNJIT_LIBCUDA=$stub"
    fi
    args="${line#kernjit }" note=""
    if [ "${words[1]}" = bench ] && [ $needs_gpu = 0 ] && [[ " $line " != *" --repeat "* ]]; then
        args="$args --repeat 1" note=", with --repeat 1"
    fi
    t0=$(date +%s)
    set +e
    out=$(cd "$d/root" && eval "env KERNJIT_CACHE_DIR=$d/cache $env $(printf '%q' "$kernjit") $args" 2>&1)
    rc=$?
    set -e
    took="$(($(date +%s) - t0)) s$note"
    if [ $needs_gpu = 1 ]; then
        if [ $rc = 1 ] && grep -qiE 'no (CUDA )?(device|driver)' <<<"$out"; then
            echo "ok (asks for a GPU, $took): $line"
        else
            echo "FAIL (exit $rc, expected 1 for want of a GPU): $line"; echo "$out" | head -5; failures=$((failures + 1))
        fi
    elif [ $rc = 0 ]; then
        echo "ok ($took): $line"
    else
        echo "FAIL (exit $rc): $line"; echo "$out" | head -5; failures=$((failures + 1))
    fi
done < "$d/lines"
[ "$failures" = 0 ] || { echo "$failures of $n README command lines failed"; exit 1; }
echo "all $n README command lines run as written"

# the metadata example: each line, less its note in parentheses and a trailing "...", begins a line
# of a built-in kernel (kernels_src), spaces aside
meta=0
kernels=$(sed -E 's/ +/ /g' "$src"/kernels_src/*.cu)
while IFS= read -r line; do
    meta=$((meta + 1))
    want=$(sed -E 's/ {2,}\(.*\)$//; s/ \.\.\.$//; s/ +/ /g; s/ +$//' <<<"$line")
    if ! grep -qF -- "$want" <<<"$kernels"; then
        echo "FAIL: the README's metadata line '$want' is in no built-in kernel"; failures=$((failures + 1))
    fi
done < <(grep -E '^    //@kernjit ' "$readme" | sed 's/^    //')
[ "$meta" -gt 5 ] || { echo "FAIL: the README's metadata example has $meta lines"; failures=$((failures + 1)); }
[ "$failures" = 0 ] || exit 1
echo "all $meta metadata lines of the README are the built-in kernels' own"
