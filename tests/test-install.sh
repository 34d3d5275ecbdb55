#!/usr/bin/env bash
# `meson install` into a temporary staging folder (--destdir), then checks what a user gets: the
# files in place, `pkg-config --cflags --libs kernjit` (and --static), a program built only from
# pkg-config's answer against the shared and against the static library, and the installed CLI
# running from the install tree (its rpath finds libkernjit and NVRTC).
#
# usage: test-install.sh MESON BUILD_DIR SOURCE_DIR CC PKG_CONFIG DEFAULT_LIBRARY
set -u
meson="$1" build="$2" src="$3" cc="$4" pkgconfig="$5" default_library="$6"
stage=$(mktemp -d /tmp/kernjit-install-XXXXXX)
trap 'rm -rf "$stage"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# --no-rebuild: meson test has built everything, and a second ninja in the same build folder at once
# would race with it
if ! "$meson" install -C "$build" --no-rebuild --destdir "$stage" --quiet >"$stage.log" 2>&1; then
    cat "$stage.log"; rm -f "$stage.log"
    echo "FAIL: meson install"; exit 1
fi
rm -f "$stage.log"

pc=$(find "$stage" -name kernjit.pc)
[ -n "$pc" ] || { echo "FAIL: no kernjit.pc installed"; find "$stage"; exit 1; }
# A staged pkg-config module must say where it lies now: kernjit.pc is relocatable
# (pkgconfig.relocatable), so its prefix follows the file. A sysroot would be prepended to that.
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
unset PKG_CONFIG_SYSROOT_DIR
pcv() { "$pkgconfig" --variable="$1" kernjit; }
prefix=$(cd "$(pcv prefix)" && pwd) || { echo "FAIL: kernjit.pc's prefix does not exist"; exit 1; }
libdir=$(cd "$(pcv libdir)" && pwd)
includedir=$(cd "$(pcv includedir)" && pwd)
kernelsdir=$(cd "$(pcv kernelsdir)" && pwd)
echo "installed under $prefix"

# ---- the layout ----
expect_file() { if [ -e "$1" ]; then ok "installed ${1#"$stage"}"; else fail "missing ${1#"$stage"}"; fi; }
expect_file "$includedir/kernjit.h"
expect_file "$includedir/kernjit-version.h"
expect_file "$prefix/bin/kernjit"
case "$default_library" in
shared | both)
    expect_file "$libdir/libkernjit.so"
    so=$(readlink -f "$libdir/libkernjit.so")
    soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    expect_file "$libdir/$soname"
    ;;
esac
case "$default_library" in static | both) expect_file "$libdir/libkernjit.a" ;; esac
for k in "$src"/kernels_src/*.cu "$src"/kernels_src/*.cuh; do
    expect_file "$kernelsdir/$(basename "$k")"
done
# nothing internal leaks into the include folder
extra=$(ls "$includedir" | grep -vx -e kernjit.h -e kernjit-version.h)
[ -z "$extra" ] && ok "include/ holds only the public headers" || fail "include/ holds more: $extra"

# ---- pkg-config ----
flags=$("$pkgconfig" --cflags --libs kernjit) || fail "pkg-config --cflags --libs kernjit"
echo "pkg-config --cflags --libs kernjit: $flags"
grep -qF -- "-I$(pcv includedir)" <<<"$flags" && ok "Cflags name the include folder" || fail "Cflags lack -I$(pcv includedir)"
grep -qw -- "-lkernjit" <<<"$flags" && ok "Libs has -lkernjit" || fail "Libs lacks -lkernjit"
grep -qF -- "$(pcv cuda_home)" <<<"$("$pkgconfig" --cflags kernjit)" && fail "Cflags name the CUDA toolkit: the public header needs none"
static_flags=$("$pkgconfig" --static --libs kernjit) || fail "pkg-config --static --libs kernjit"
echo "pkg-config --static --libs kernjit: $static_flags"
for need in nvrtc nvJitLink xxhash; do
    grep -q "$need" <<<"$static_flags" && ok "--static names $need" || fail "--static --libs lacks $need"
done
[ "$("$pkgconfig" --modversion kernjit)" = "$(sed -n 's/#define KJ_VERSION_STRING "\(.*\)"/\1/p' "$includedir/kernjit-version.h")" ] \
    && ok "kernjit.pc's version is the header's" || fail "kernjit.pc's version differs from kernjit-version.h"

# ---- a program built from pkg-config alone: the headers must need nothing else ----
probe="$src/tests/install-probe.c"
# A sanitizer build (-Db_sanitize) instruments the library: a program linking it needs the same
# -fsanitize flags, which tests/meson.build passes here.
probe_flags="${KJ_PROBE_CFLAGS:-}"
# shellcheck disable=SC2046
if [ "$default_library" != static ]; then
    if "$cc" -std=c99 -Wall -Wextra -pedantic -Werror $probe_flags -o "$stage/probe-shared" "$probe" \
        $("$pkgconfig" --cflags --libs kernjit) -Wl,-rpath,"$libdir"; then
        # the staging folder is on no search path: the rpath given here must be what finds it
        ldd "$stage/probe-shared" | grep -qF "$libdir/libkernjit.so" || fail "the probe does not load the staged libkernjit"
        out=$("$stage/probe-shared" 2>&1) && ok "shared: $out" || fail "the shared-library probe: $out"
    else
        fail "building a program against the installed shared library"
    fi
fi
if [ "$default_library" != shared ]; then
    # -l:libkernjit.a picks the archive over the .so beside it; the rest is Libs.private. LIBRARY_PATH:
    # where the environment makes libraries loadable only through LD_LIBRARY_PATH (the GPU machine's
    # unpacked packages, libxxhash among them), -lxxhash must be found there as well.
    if LIBRARY_PATH="${LD_LIBRARY_PATH:-}${LIBRARY_PATH:+:$LIBRARY_PATH}" \
        "$cc" -std=c99 $probe_flags -o "$stage/probe-static" "$probe" $("$pkgconfig" --cflags kernjit) \
        $("$pkgconfig" --static --libs kernjit | sed 's/-lkernjit\b/-l:libkernjit.a/'); then
        if readelf -d "$stage/probe-static" | grep -q 'libkernjit'; then
            fail "the static probe still needs libkernjit.so"
        fi
        out=$("$stage/probe-static" 2>&1) && ok "static: $out" || fail "the static-library probe: $out"
    else
        fail "building a program against the installed static library with pkg-config --static"
    fi
fi

# ---- the installed CLI runs from the install tree: its $ORIGIN rpath finds the staged library ----
if [ "$default_library" != static ]; then
    ldd "$prefix/bin/kernjit" | grep -qF "$prefix/bin/../" && ok "the installed CLI loads libkernjit from the install tree" \
        || fail "the installed CLI does not find libkernjit through its rpath: $(ldd "$prefix/bin/kernjit" | grep kernjit)"
fi
out=$(KERNJIT_CACHE_DIR="$stage/cache" "$prefix/bin/kernjit" --version 2>&1) \
    && grep -q "kernjit $("$pkgconfig" --modversion kernjit)" <<<"$out" && ok "installed CLI: $out" \
    || fail "the installed CLI does not run: $out"
out=$(KERNJIT_CACHE_DIR="$stage/cache" "$prefix/bin/kernjit" list 2>&1) \
    && ok "installed CLI lists the kernels" || fail "installed kernjit list: $out"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all install checks passed"
