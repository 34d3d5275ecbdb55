#!/usr/bin/env bash
# The README's embedding example must compile against the public header and link with the library.
# Usage: test-readme.sh README.md include-dir lib-dir [generated-include-dir]
# (the build folder's include/ holds the generated kernjit-version.h that kernjit.h includes)
set -euo pipefail
readme="$1" inc="$2" lib="$3" geninc="${4:-}"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk '/^```c$/{on=1; next} /^```$/{on=0} on' "$readme" > "$d/example.c"
[ -s "$d/example.c" ] || { echo "no C example in $readme"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror -I"$inc" ${geninc:+-I"$geninc"} "$d/example.c" -L"$lib" -lkernjit -Wl,-rpath,"$lib" -o "$d/example"
echo "README example compiles and links ($(wc -l < "$d/example.c") lines)"
