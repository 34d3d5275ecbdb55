#!/usr/bin/env bash
# kernjit as a Meson subproject: a parent project with kernjit under subprojects/ gets it from
# dependency('kernjit') (kernjit's meson.override_dependency), chooses the static library through
# default_options, and does not build kernjit's tests. The parent's program uses only
# kernjit/kernjit.h.
#
# usage: test-subproject.sh MESON SOURCE_DIR
set -u
meson="$1" src="$2"
d=$(mktemp -d /tmp/kernjit-subproject-XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/subprojects"
ln -s "$src" "$d/subprojects/kernjit"
cat >"$d/meson.build" <<'MESON'
project('parent', 'c', meson_version : '>=1.0.1')
kernjit = dependency('kernjit', version : '>=0.1', fallback : 'kernjit',
                     default_options : ['default_library=static'])
executable('parent', 'parent.c', dependencies : kernjit)
MESON
cat >"$d/parent.c" <<'C'
#include <kernjit/kernjit.h>
#include <stdio.h>
int main(void) {
    printf("parent: kernjit %s (header 0x%06x), %zu built-in kernel(s)\n", kj_version_string(),
           (unsigned)KJ_VERSION_HEX, kj_builtin_count());
    return kj_builtin_count() > 0 ? 0 : 1;
}
C
# --force-fallback-for: use the subproject even where a kernjit.pc is installed. A fallback given
# as the subproject's name alone fails unless the subproject overrides the dependency.
# no options: as a subproject kernjit builds neither its program nor the CUB plugin unless asked
if ! "$meson" setup "$d/build" "$d" --force-fallback-for=kernjit >"$d/setup.log" 2>&1; then
    cat "$d/setup.log"; echo "FAIL: meson setup of a parent project with kernjit as a subproject"; exit 1
fi
if ! "$meson" compile -C "$d/build" >"$d/build.log" 2>&1; then
    cat "$d/build.log"; echo "FAIL: building the parent project"; exit 1
fi
failures=0
[ ! -e "$d/build/subprojects/kernjit/tests" ] && echo "ok: kernjit's tests are not built in a parent project" \
    || { echo "FAIL: kernjit's tests were configured inside the parent project"; failures=1; }
if readelf -d "$d/build/parent" | grep -q libkernjit; then
    echo "FAIL: default_library=static from the parent, yet the program needs libkernjit.so"; failures=1
else
    echo "ok: the parent chose the static library"
fi
[ ! -e "$d/build/subprojects/kernjit/cli/kernjit" ] && echo "ok: kernjit's program is not built for a parent project" \
    || { echo "FAIL: the kernjit program was built inside the parent project (-Dkernjit:cli=enabled asks for it)"; failures=1; }
out=$("$d/build/parent" 2>&1) && echo "ok: $out" || { echo "FAIL: the parent's program: $out"; failures=1; }
exit $failures
