#!/usr/bin/env bash
# The exe_wrapper of `meson test --setup valgrind` (tests/meson.build): runs each test program of the
# build under memcheck, failing it (exit 99) on any memory error or definite leak.
#
# Test scripts (bash, python) are run as they are: memcheck on an interpreter says nothing about
# kernjit. With KJ_VALGRIND_CLI=1 the programs of this build that a test is given as arguments (the
# kernjit CLI, a test's helper) are swapped for wrappers that run them under memcheck too, so that
# test-cli.sh and the bad-input table check the CLI's every path; that costs about 6 s a process
# (loading NVRTC's debug information), an hour for the cli suite.
#
# Suppressions: tests/valgrind.supp (see there for why each is needed).
set -u
build="${KJ_VALGRIND_BUILD:?set by the valgrind test setup}"
vg=(valgrind --tool=memcheck --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --num-callers=40 --suppressions="$(dirname "$0")/valgrind.supp")

is_build_program() {
    case "$1" in "$build"/*) ;; *) return 1 ;; esac
    case "$1" in *.so | *.so.*) return 1 ;; esac
    [ -f "$1" ] && [ -x "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]
}

prog="$1"
shift
args=("$@")
if [ "${KJ_VALGRIND_CLI:-0}" = 1 ]; then
    shims=$(mktemp -d)
    trap 'rm -rf "$shims"' EXIT
    for i in "${!args[@]}"; do
        a="${args[$i]}"
        if is_build_program "$a"; then
            mkdir -p "$shims/$i"
            printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$(printf '%q ' "${vg[@]}")" "$a" > "$shims/$i/$(basename "$a")"
            chmod +x "$shims/$i/$(basename "$a")"
            args[$i]="$shims/$i/$(basename "$a")"
        fi
    done
fi
if is_build_program "$prog"; then
    "${vg[@]}" "$prog" "${args[@]}"
else
    "$prog" "${args[@]}"
fi
