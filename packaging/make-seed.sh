#!/usr/bin/env bash
# Builds the installed seed: the built-in kernels' default variants for the targets of -Dseed_archs,
# by the freshly built program, into OUTPUT (made anew: entries of an earlier build would have other
# keys). The kernels are the ones embedded in the program (no KERNJIT_PATH), none come from another
# seed, and the build's own cache is left alone.
# usage: make-seed.sh KERNJIT OUTPUT ARCHS
set -euo pipefail
kernjit="$1" out="$2" archs="$3"
rm -rf "$out"
env -u KERNJIT_CACHE_DISABLE KERNJIT_PATH= KERNJIT_SEED_PATH= KERNJIT_LIBCUDA=/nonexistent/libcuda.so.1 \
    "$kernjit" -q seed "$out" --arch "$archs" >/dev/null
