#!/usr/bin/env bash
# `meson install` into a temporary staging folder (--destdir), then checks what a user gets: the
# files in place, `pkg-config --cflags --libs kernjit` (and --static), a program built only from
# pkg-config's answer against the shared and against the static library, and the installed CLI
# running from the install tree (its rpath finds libkernjit and NVRTC). The shared library has the
# soname given (the ABI's, docs/DESIGN.md) and no RUNPATH.
#
# usage: test-install.sh MESON BUILD_DIR SOURCE_DIR CC PKG_CONFIG DEFAULT_LIBRARY SONAME
set -u
meson="$1" build="$2" src="$3" cc="$4" pkgconfig="$5" default_library="$6" want_soname="$7"
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
for h in kernjit.h version.h ops.h tune.h; do expect_file "$includedir/kernjit/$h"; done
# the shims of 0.2.0's layout
expect_file "$includedir/kernjit.h"
expect_file "$includedir/kernjit-version.h"
expect_file "$prefix/bin/kernjit"
case "$default_library" in
shared | both)
    expect_file "$libdir/libkernjit.so"
    so=$(readlink -f "$libdir/libkernjit.so")
    soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    expect_file "$libdir/$soname"
    [ "$soname" = "$want_soname" ] && [ "$soname" != libkernjit.so.0 ] && ok "the soname is $soname" \
        || fail "the soname is '$soname', expected $want_soname (0.1's ABI was libkernjit.so.0)"
    paths=$(readelf -d "$so" | grep -E '\((RUNPATH|RPATH)\)')
    [ -z "$paths" ] && ok "the library carries no RUNPATH or RPATH" || fail "the installed library carries $paths"
    ;;
esac
case "$default_library" in static | both) expect_file "$libdir/libkernjit.a" ;; esac
for k in "$src"/kernels_src/*.cu "$src"/kernels_src/*.cuh; do
    expect_file "$kernelsdir/$(basename "$k")"
done
# nothing internal leaks into the include folder
extra=$(ls "$includedir" | grep -vx -e kernjit.h -e kernjit-version.h -e kernjit;
        ls "$includedir/kernjit" | grep -vx -e kernjit.h -e version.h -e ops.h -e tune.h | sed 's|^|kernjit/|')
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
[ "$("$pkgconfig" --modversion kernjit)" = "$(sed -n 's/#define KJ_VERSION_STRING "\(.*\)"/\1/p' "$includedir/kernjit/version.h")" ] \
    && ok "kernjit.pc's version is the header's" || fail "kernjit.pc's version differs from kernjit/version.h"

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
    # kernjit-static.pc names the archive itself and what it needs. LIBRARY_PATH:
    # where the environment makes libraries loadable only through LD_LIBRARY_PATH (the GPU machine's
    # unpacked packages, libxxhash among them), -lxxhash must be found there as well.
    if LIBRARY_PATH="${LD_LIBRARY_PATH:-}${LIBRARY_PATH:+:$LIBRARY_PATH}" \
        "$cc" -std=c99 $probe_flags -o "$stage/probe-static" "$probe" $("$pkgconfig" --cflags kernjit) \
        $("$pkgconfig" --libs kernjit-static); then
        if readelf -d "$stage/probe-static" | grep -q 'libkernjit'; then
            fail "the static probe still needs libkernjit.so"
        fi
        out=$("$stage/probe-static" 2>&1) && ok "static: $out" || fail "the static-library probe: $out"
    else
        fail "building a program against the installed static library with pkg-config --libs kernjit-static"
    fi
fi

# ---- CMake: find_package(kernjit) and its imported targets, from a tiny project (tests/cmake) ----
if command -v cmake >/dev/null; then
    cmake_prefix=$(dirname "$(dirname "$(dirname "$(find "$stage" -name kernjitConfig.cmake)")")")
    variants=()
    [ "$default_library" != static ] && variants+=(OFF)
    [ "$default_library" != shared ] && variants+=(ON)
    for static in "${variants[@]}"; do
        b="$stage/cmake-$static"
        # a sanitizer build's flags reach the probe as they do for pkg-config (KJ_PROBE_CFLAGS)
        if LIBRARY_PATH="${LD_LIBRARY_PATH:-}${LIBRARY_PATH:+:$LIBRARY_PATH}" \
            cmake -S "$src/tests/cmake" -B "$b" -DCMAKE_PREFIX_PATH="$prefix" -DKJ_STATIC="$static" -DKJ_WANT_VERSION="$("$pkgconfig" --modversion kernjit)" \
            -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$probe_flags" -DCMAKE_EXE_LINKER_FLAGS="$probe_flags" \
            >"$b.log" 2>&1 && LIBRARY_PATH="${LD_LIBRARY_PATH:-}${LIBRARY_PATH:+:$LIBRARY_PATH}" \
            cmake --build "$b" >>"$b.log" 2>&1; then
            # LD_LIBRARY_PATH the toolkit's alone (NVRTC, as the system would find it): CMake's build
            # rpath must find the staged library
            [ "$static" = ON ] && readelf -d "$b/probe" | grep -q libkernjit && fail "kernjit::kernjit_static needs libkernjit.so"
            out=$(LD_LIBRARY_PATH="$(pcv cuda_home)/lib64" "$b/probe" 2>&1) && ok "cmake (static=$static): $out" \
                || fail "the CMake-built probe (static=$static): $out"
        else
            cat "$b.log"
            fail "building tests/cmake with find_package(kernjit) (static=$static, prefix $cmake_prefix)"
        fi
    done
    # the version file: the same minor is compatible, the next minor is not (before 1.0 it may break)
    v=$("$pkgconfig" --modversion kernjit)
    next="${v%%.*}.$(( $(cut -d. -f2 <<<"$v") + 1 ))"
    if cmake -S "$src/tests/cmake" -B "$stage/cmake-next" -DCMAKE_PREFIX_PATH="$prefix" -DKJ_WANT_VERSION="$next" \
        -DCMAKE_C_COMPILER="$cc" >"$stage/cmake-next.log" 2>&1; then
        fail "find_package(kernjit $next) accepted version $v"
    else
        grep -q "$v" "$stage/cmake-next.log" && ok "find_package(kernjit $next) refuses $v" \
            || fail "find_package(kernjit $next) failed without naming $v: $(tail -5 "$stage/cmake-next.log")"
    fi
else
    echo "skip: cmake is not installed (scripts/setup installs it)"
fi

# ---- the man page and bash completion ----
man_page=$(find "$stage" -name kernjit.1)
if [ -n "$man_page" ]; then
    page=$(MANWIDTH=100 man -l "$man_page" 2>/dev/null)
    for want in "kernjit compile" "kernjit launch" "KERNJIT_CACHE_DIR"; do
        grep -qF "$want" <<<"$page" && ok "man page: $want" || fail "the man page lacks '$want'"
    done
elif command -v help2man >/dev/null; then
    fail "no man page installed, though help2man is there"
else
    echo "skip: no help2man here, so no man page (scripts/setup installs it)"
fi
completion=$(find "$stage" -path '*bash-completion/completions/kernjit')
if [ -n "$completion" ]; then
    got=$(PATH="$prefix/bin:$PATH" bash -c '
        source "$1" && complete -p kernjit >/dev/null || exit 1
        COMP_WORDS=(kernjit com); COMP_CWORD=1; _kernjit; echo "${COMPREPLY[*]}"
        COMP_WORDS=(kernjit compile --ar); COMP_CWORD=2; _kernjit; echo "${COMPREPLY[*]}"
        COMP_WORDS=(kernjit run vec); COMP_CWORD=2; _kernjit; echo "${COMPREPLY[*]}"
        COMP_WORDS=(kernjit compile red); COMP_CWORD=2; _kernjit; echo "${COMPREPLY[*]}"' _ "$completion" 2>&1)
    [ "$got" = "$(printf 'compile\n--arch\nvector-add\nreduce')" ] && ok "bash completion: commands, options, kernels" \
        || fail "bash completion gave: $got"
else
    fail "no bash completion installed"
fi

# ---- the installed CLI runs from the install tree: its $ORIGIN rpath finds the staged library ----
if [ "$default_library" != static ]; then
    ldd "$prefix/bin/kernjit" | grep -qF "$prefix/bin/../" && ok "the installed CLI loads libkernjit from the install tree" \
        || fail "the installed CLI does not find libkernjit through its rpath: $(ldd "$prefix/bin/kernjit" | grep kernjit)"
    # the library has no RUNPATH: the program's own finds the toolkit's libraries for it
    for need in libnvrtc libnvJitLink; do
        env -u LD_LIBRARY_PATH ldd "$prefix/bin/kernjit" | grep -qE "$need\.so\.[0-9.]+ => $(pcv cuda_home)/lib64/" \
            && ok "the installed CLI loads $need through its own rpath" \
            || fail "the installed CLI does not load $need through its rpath: $(ldd "$prefix/bin/kernjit" | grep "$need")"
    done
fi
out=$(KERNJIT_CACHE_DIR="$stage/cache" "$prefix/bin/kernjit" --version 2>&1) \
    && grep -q "kernjit $("$pkgconfig" --modversion kernjit)" <<<"$out" && ok "installed CLI: $out" \
    || fail "the installed CLI does not run: $out"
out=$(KERNJIT_CACHE_DIR="$stage/cache" "$prefix/bin/kernjit" list 2>&1) \
    && ok "installed CLI lists the kernels" || fail "installed kernjit list: $out"

# ---- the installed seed: a build of the library and the CLI with -Dseed_archs, installed ----
# (its own small build: the library and the program alone, a seed for one target)
seed_build="$stage/seed-build" seed_stage="$stage/seed-stage"
if "$meson" setup "$seed_build" "$src" -Dseed_archs=sm_90 -Dtests=false -Dman=disabled -Dcub=disabled \
        --prefix=/opt/kernjit >"$stage/seed.log" 2>&1 &&
    "$meson" compile -C "$seed_build" >>"$stage/seed.log" 2>&1 &&
    "$meson" install -C "$seed_build" --no-rebuild --destdir "$seed_stage" --quiet >>"$stage/seed.log" 2>&1; then
    seed_prefix="$seed_stage/opt/kernjit"
    seeddir=$(PKG_CONFIG_PATH="$(dirname "$(find "$seed_stage" -name kernjit.pc)")" "$pkgconfig" --variable=seeddir kernjit)
    [ "$(cd "$seeddir" 2>/dev/null && pwd)" = "$seed_prefix/share/kernjit/seed" ] && ok "pkg-config's seeddir names the seed" \
        || fail "pkg-config's seeddir is '$seeddir', not $seed_prefix/share/kernjit/seed"
    grep -q 'kernjit_SEED_DIR' "$(find "$seed_stage" -name kernjitConfig.cmake)" && ok "the CMake package names the seed" \
        || fail "kernjitConfig.cmake lacks kernjit_SEED_DIR"
    manifest="$seed_prefix/share/kernjit/seed/manifest.json"
    if python3 - "$manifest" <<'EOF2'; then ok "the installed seed: every built-in kernel's entries for sm_90"; else fail "the installed seed's manifest"; fi
import json, sys
m = json.load(open(sys.argv[1]))
kernels = {e["kernel"] for e in m["entries"]}
assert {e["arch"] for e in m["entries"]} == {"sm_90"}, m
assert {"reduce", "transpose", "vector_add", "nested", "mandelbrot"} <= kernels, kernels
assert any(e["kernel"] == "reduce" and e["entry"] == "reduce_fast" for e in m["entries"])
EOF2
    modes=$(find "$seed_prefix/share/kernjit/seed" -printf '%m %y\n' | sort -u | tr '\n' ' ')
    [ "$modes" = "644 f 755 d " ] && ok "the installed seed is readable by all" || fail "the installed seed's modes: $modes"
    # the installed program (and its library) find the seed beside themselves: a seed hit, no compile
    out=$(env -u KERNJIT_SEED_PATH KERNJIT_CACHE_DIR="$stage/seed-cache" KERNJIT_LIBCUDA=/nonexistent \
          "$seed_prefix/bin/kernjit" compile reduce:reduce_fast --arch sm_90 --json 2>&1)
    grep -q '"origin":"seed"' <<<"$out" && grep -qF "$seed_prefix/share/kernjit/seed/sm_90/" <<<"$out" \
        && ok "the installed kernjit loads reduce_fast from the installed seed" || fail "no seed hit from the install: $out"
    out=$(env -u KERNJIT_SEED_PATH KERNJIT_CACHE_DIR="$stage/seed-cache" KERNJIT_LIBCUDA=/nonexistent \
          "$seed_prefix/bin/kernjit" compile reduce:reduce_fast --arch sm_80 --json 2>&1)
    grep -q '"origin":"compiled"' <<<"$out" && ok "a target the seed lacks compiles" || fail "sm_80 from the install: $out"
    out=$(KERNJIT_SEED_PATH= KERNJIT_CACHE_DIR="$stage/seed-cache2" KERNJIT_LIBCUDA=/nonexistent \
          "$seed_prefix/bin/kernjit" compile reduce:reduce_fast --arch sm_90 --json 2>&1)
    grep -q '"origin":"compiled"' <<<"$out" && ok "KERNJIT_SEED_PATH= turns the installed seed off" \
        || fail "KERNJIT_SEED_PATH= did not turn the installed seed off: $out"
else
    tail -30 "$stage/seed.log"
    fail "building and installing with -Dseed_archs=sm_90"
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all install checks passed"
