#!/usr/bin/env bash
# The bash completion (packaging/kernjit.bash-completion), driven as bash drives it: COMP_LINE,
# COMP_POINT, COMP_WORDS split at white space and at '=' (bash's COMP_WORDBREAKS) or at white space
# alone, then _kernjit; the words the line would hold after each reply are checked.
# Usage: test-completion.sh KERNJIT COMPLETION_FILE
set -u
K="$1"
# shellcheck disable=SC1090
source "$2"
failures=0

# complete SPLIT LINE: the words the line's last word would become, one per line (sorted). SPLIT is
# "=" to split words at '=' as bash does by default, "" not to.
complete_line() {
    local split="$1" line="$2"
    COMP_LINE="kernjit ${line#kernjit }"
    COMP_LINE="$K ${COMP_LINE#kernjit }"
    COMP_POINT=${#COMP_LINE}
    local spaced=$COMP_LINE
    [ -n "$split" ] && spaced=${spaced//=/ = }
    read -ra COMP_WORDS <<<"$spaced"
    [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
    [[ -n $split && $COMP_LINE == *= ]] && COMP_WORDS[${#COMP_WORDS[@]} - 1]="="
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _kernjit
    local cur=${COMP_WORDS[COMP_CWORD]} last=${COMP_LINE##* } r
    for r in "${COMPREPLY[@]}"; do echo "${last%"$cur"}$r"; done | sort
}

# expect LINE WORD...: each WORD is among the completions of LINE, both ways of splitting
expect() {
    local line="$1" split got w
    shift
    for split in "=" ""; do
        got=$(complete_line "$split" "$line")
        for w in "$@"; do
            if ! grep -qxF -- "$w" <<<"$got"; then
                echo "FAIL: '$line' (split at '$split'): no '$w' in: $(tr '\n' ' ' <<<"$got")"
                failures=$((failures + 1))
                continue 2
            fi
        done
        echo "ok: '$line' (split at '${split:-white space}'): $*"
    done
}
# expect_not LINE WORD...: no WORD is among them
expect_not() {
    local line="$1" split got w
    shift
    for split in "=" ""; do
        got=$(complete_line "$split" "$line")
        for w in "$@"; do
            if grep -qxF -- "$w" <<<"$got"; then
                echo "FAIL: '$line': '$w' is offered"; failures=$((failures + 1))
            fi
        done
    done
}

expect "kernjit " compile run bench --version
expect "kernjit run " reduce vector-add mandelbrot
expect "kernjit compile --e" --emit --entry
expect "kernjit compile " reduce vector_add
# targets from kernjit info
expect "kernjit compile reduce --arch sm_9" sm_90
expect_not "kernjit compile reduce --arch sm_9" sm_80
expect "kernjit compile reduce --arch comp" compute_90 compute_80
expect "kernjit compile reduce -arch=sm_8" -arch=sm_80 -arch=sm_86
expect "kernjit launch x.cu --arch=sm_10" --arch=sm_100
expect "kernjit run reduce --arch " sm_90
# -D NAME= from kernjit list, then its values
expect "kernjit compile reduce -D " OP= T= BLOCK_SIZE= COARSE_FACTOR=
expect "kernjit compile reduce -D OP=m" OP=max OP=min
expect_not "kernjit compile reduce -D OP=m" OP=sum
expect "kernjit compile reduce -D T=" T=f32 T=i32 T=f16
expect "kernjit compile reduce -DCOARSE_FACTOR=1" -DCOARSE_FACTOR=1 -DCOARSE_FACTOR=16
expect "kernjit compile vector-add -D " BLOCK_SIZE= UNROLL=
expect "kernjit compile reduce:reduce_simple --define-macro=O" --define-macro=OP=
expect "kernjit tune reduce -D BLOCK_SIZE=10" BLOCK_SIZE=1024
# --op, --type, --emit: from the command's help, else the reduction's
expect "kernjit run reduce --op " sum max min prod
expect "kernjit run reduce --type f" f16 f32 f64
expect "kernjit run vector-add --type " f32 f64
expect_not "kernjit run vector-add --type " i32
expect "kernjit tune reduce --op m" max min
expect "kernjit bench reduce --type f32,i" f32,i32
expect "kernjit compile reduce --emit " cubin ptx ltoir
expect "kernjit compile reduce --emit=p" --emit=ptx
# a value before the kernel is not the kernel
expect "kernjit compile -D OP=max reduce -D T=f6" T=f64

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all completion checks passed"
