#!/usr/bin/env bash
# Writes kernjit.1 from the program's own help: help2man for the page, with a COMMANDS section that
# holds each command's `--help` (so the page says what the program says, and cannot drift from it).
# usage: make-man.sh KERNJIT HELP2MAN OUTPUT
set -euo pipefail
kernjit="$1" help2man="$2" out="$3"
inc=$(mktemp)
trap 'rm -f "$inc"' EXIT
{
    echo "[COMMANDS]"
    for cmd in $("$kernjit" --help | awk '$0 == "commands:" { on = 1; next } on && /^$/ { exit } on { print $1 }'); do
        echo ".SS kernjit $cmd"
        echo ".nf"
        # roff: a leading dot or quote would be read as a request, and backslashes as escapes
        "$kernjit" "$cmd" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
        echo ".fi"
    done
    echo "[FILES]"
    echo "The cache: \$KERNJIT_CACHE_DIR, else \$XDG_CACHE_HOME/kernjit, else ~/.cache/kernjit (see kernjit cache path)."
    echo ".br"
    echo "Seeds (kernels built ahead of time, read only): the folders of \$KERNJIT_SEED_PATH, then the install's share/kernjit/seed (see kernjit seed)."
    echo "[SEE ALSO]"
    echo "The README and docs/ of the kernjit sources; kernjit.h for the C library."
} > "$inc"
# --no-discard-stderr: nothing; -N: no pointer to a texinfo manual (there is none)
"$help2man" -N --no-info --name "runtime-compiled CUDA kernels: NVRTC JIT, a disk cache, the Driver API" \
    --include "$inc" --output "$out" "$kernjit"
