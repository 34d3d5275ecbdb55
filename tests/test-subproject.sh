#!/usr/bin/env bash
# kernjit as a Meson subproject: a parent project with kernjit under subprojects/ gets it from
# dependency('kernjit') (kernjit's meson.override_dependency), chooses the static library through
# default_options, and does not build kernjit's tests. The parent's program uses only
# kernjit/kernjit.h. The parent's `meson install` puts nothing of kernjit into its prefix, unless it
# asks with -Dkernjit:install=enabled.
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
executable('parent', 'parent.c', dependencies : kernjit, install : true)
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

# what the parent's install holds: its program, nothing of kernjit's (headers, library, kernels,
# pkg-config and CMake files) unless asked
installed() {
    rm -rf "$d/dest"
    "$meson" install -C "$d/build" --no-rebuild --destdir "$d/dest" >"$d/install.log" 2>&1 \
        || { cat "$d/install.log"; echo "FAIL: meson install of the parent project"; failures=1; }
    (cd "$d/dest" && find . -type f | sort)
}
files=$(installed)
if [ "$(grep -c . <<<"$files")" = 1 ] && grep -q '/bin/parent$' <<<"$files"; then
    echo "ok: the parent's install holds its program alone"
else
    echo "FAIL: the parent's install holds more than its program:"; sed 's/^/    /' <<<"$files"; failures=1
fi
if "$meson" configure "$d/build" -Dkernjit:install=enabled >"$d/configure.log" 2>&1 \
    && "$meson" compile -C "$d/build" >>"$d/configure.log" 2>&1; then
    files=$(installed)
    for want in /include/kernjit/kernjit.h /include/kernjit.h /libkernjit.a /kernjit.pc /share/kernjit/kernels/reduce.cu; do
        grep -q -- "$want\$" <<<"$files" && echo "ok: -Dkernjit:install=enabled installs ...$want" \
            || { echo "FAIL: -Dkernjit:install=enabled did not install ...$want"; failures=1; }
    done
else
    cat "$d/configure.log"; echo "FAIL: meson configure -Dkernjit:install=enabled"; failures=1
fi
exit $failures
