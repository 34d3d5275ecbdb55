#!/usr/bin/env bash
# Writes kernjit.1 from the program's own help: help2man for the page; a COMMANDS section that holds
# each command's `--help`; EXIT STATUS and ENVIRONMENT from the sections of `kernjit --help` that
# bear those names (so the page says what the program says, and cannot drift from it); EXAMPLES,
# FILES and SEE ALSO from INCLUDE (kernjit.h2m). Runs only `--help` and `--version`, which touch no
# cache folder and no device.
# usage: make-man.sh KERNJIT HELP2MAN INCLUDE OUTPUT
set -euo pipefail
kernjit="$1" help2man="$2" include="$3" out="$4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# roff: a leading dot or quote would be read as a request, and backslashes as escapes
roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
# The lines of `kernjit --help`'s section HEADER (up to a blank line).
section() { "$kernjit" --help | awk -v h="$1" '$0 == h { on = 1; next } on && /^$/ { exit } on'; }
# A section's entries ("  NAME  text", continued on lines indented further) as roff's tagged paragraphs.
entries() {
    section "$1" | roff | awk '/^  [^ ]/ { sub(/^  /, ""); name = $1; sub(/^[^ ]+ +/, "");
                                           printf ".TP\n.B %s\n%s\n", name, $0; next }
                               { sub(/^ +/, ""); print }'
}

{
    echo "[COMMANDS]"
    for cmd in $(section commands: | awk '{ print $1 }'); do
        echo ".SS kernjit $cmd"
        echo ".nf"
        "$kernjit" "$cmd" --help | roff
        echo ".fi"
    done
    echo "[EXIT STATUS]"
    entries "exit status:"
    echo "[ENVIRONMENT]"
    entries "environment:"
    cat "$include"
} > "$tmp/include.h2m"

# help2man reads the description from `--help`: through a stand-in whose help leaves out the sections
# that the page has under their own headings
cat > "$tmp/kernjit" <<WRAPPER
#!/bin/sh
if [ "\$1" = --help ]; then
    "$kernjit" --help | awk '\$0 == "exit status:" || \$0 == "environment:" { skip = 1; next } skip && /^\$/ { skip = 0; next } !skip'
else
    exec "$kernjit" "\$@"
fi
WRAPPER
chmod +x "$tmp/kernjit"
# -N: no pointer to a texinfo manual (there is none)
"$help2man" -N --no-info --name "runtime-compiled CUDA kernels: NVRTC JIT, a disk cache, the Driver API" \
    --include "$tmp/include.h2m" --output "$out" "$tmp/kernjit"
