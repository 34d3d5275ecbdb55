#!/usr/bin/env bash
# Progress on long work (compile --all, tune and every bench), on stderr: on a terminal one live line
# "[PHASE n/N] detail", rewritten in place and cleared before anything else is printed (a table's
# row, a warning), so that no row shares a line with it; in a log (no terminal), a plain
# "kernjit CMD: PHASE n/N: detail" line every few seconds, and the last one. The terminal is a
# pseudo-terminal from script(1); benches that need a device run on the stub driver.
# Usage: test-progress.sh KERNJIT STUB_LIBCUDA
set -u
K="$1" STUB="$2"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
export KERNJIT_CACHE_DIR="$W/cache" KERNJIT_PATH= KERNJIT_CUB_PLUGIN=off # test-cub-build builds it
unset KERNJIT_REMOTE_CACHE
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# on_terminal NAME DRIVER ARGS...: the command's output on a pseudo-terminal, in $W/NAME.tty
on_terminal() {
    local name="$1" driver="$2"
    shift 2
    KERNJIT_LIBCUDA="$driver" script -qec "$(printf '%q ' "$K" "$@")" /dev/null > "$W/$name.tty" 2>&1
}

# live LINE_PATTERN FILE: the live line was drawn ("\r\e[K[...]") and every drawing was cleared before
# the next output: after the line's text comes only another \r (a redraw or the clearing)
live() {
    local pattern="$1" file="$2"
    grep -qaP "\r\e\[K\[$pattern" "$file" || { fail "$file: no live line [$pattern"; return; }
    if grep -aP "\e\[K\[[a-z][^\r\n]*\] [^\r\n]*\n" "$file" | grep -vqaP "stub-cuda: "; then
        fail "$file: a live line is followed by other output on its line:"
        grep -aP "\e\[K\[[a-z][^\r\n]*\] [^\r\n]*\n" "$file" | grep -vaP "stub-cuda: " | head -3 | cat -A
    fi
}

if command -v script >/dev/null; then
    on_terminal reduce "$STUB" bench reduce --sizes 1K,4K --op sum,max --type f32 --entry reduce_fast --samples 1
    live 'measure 1/4\] sum f32 2\^10' "$W/reduce.tty"
    live 'measure 4/4\] max f32 2\^12' "$W/reduce.tty"
    grep -qaP "\r\e\[Kmax  f32  2\^12 " "$W/reduce.tty" || fail "bench reduce: the row after a live line does not clear it"
    on_terminal transpose "$STUB" bench transpose --rows 64 --cols 64 --samples 1
    live 'measure 1/[0-9]+\] 64 x 64 ' "$W/transpose.tty"
    on_terminal vector-add "$STUB" bench vector-add --n 1K --samples 1
    live 'measure 1/[0-9]+\] f32 n=1024, its default configuration' "$W/vector-add.tty"
    on_terminal nested "$STUB" bench nested --n 1K --size 64 --repeat 1
    live 'measure 6/6\] mandelbrot, ms' "$W/nested.tty"
    # (bench jit, whose cold compiles take most of a minute here, is checked in a log below: its live
    # line is drawn as these are)
    on_terminal cache /nonexistent/libcuda.so.1 bench cache --repeat 1
    live 'cold compiles 2/2\]' "$W/cache.tty"
    on_terminal all /nonexistent/libcuda.so.1 compile reduce --all --arch sm_80 -D COARSE_FACTOR=1
    live 'compile [0-9]+/6\]' "$W/all.tty"
    grep -qaP "\r\e\[Kreduce for sm_80: 6 variants" "$W/all.tty" || fail "compile --all: the summary does not clear the live line"
else
    echo "skip: no script(1) for a pseudo-terminal"
fi

# In a log the display reads its own clock, which the test hook KJ_TEST_PROGRESS_STEP=S sets
# (cli/progress.c): every reading advances it S seconds and nothing else does, so that what a log shows
# follows the steps of the work, the same on every host. S=3 (the interval): every state after the first
# of a run is said, and a run's last state at its end; S=0: no work is long, and a log says nothing.
# in_log NAME STEP DRIVER ARGS...: the command's stdout in $W/NAME.out, its stderr in $W/NAME.err
in_log() {
    local name="$1" step="$2" driver="$3"
    shift 3
    KJ_TEST_PROGRESS_STEP="$step" KERNJIT_LIBCUDA="$driver" "$K" "$@" > "$W/$name.out" 2> "$W/$name.err"
}
# progress_lines CMD FILE: FILE's lines that are CMD's progress lines ("kernjit CMD: PHASE n/N")
progress_lines() { grep -E "^kernjit $1: [a-z0-9 ,-]+ [0-9]+/[0-9]+$" "$2"; }

in_log jit 3 /nonexistent/libcuda.so.1 bench jit --repeat 1 || fail "bench jit failed: $(tail -3 "$W/jit.err")"
if grep -qaP "\r|\e\[" "$W/jit.err"; then fail "bench jit in a log: terminal control codes on stderr"; fi
# (the first state, its cold compiles, is not said: at that point the work has not lasted 3 s)
progress_lines "bench jit" "$W/jit.err" | grep -q "^kernjit bench jit: disk hits, new process 1/1$" \
    || fail "bench jit in a log: no line for its second step: $(cat "$W/jit.err")"
if grep -q "^kernjit bench jit: cold compiles" "$W/jit.err"; then
    fail "bench jit in a log: its first step is said before the work lasted 3 s"
fi
tail -1 "$W/jit.err" | grep -qE "^kernjit bench jit: compile reduce --all, new process 1/1$" \
    || fail "bench jit in a log: the last progress line is not 1/1: $(tail -1 "$W/jit.err")"
# the project's targets are for --goals alone (scripts/gpu-check): a user's report has none
grep -q "kernjit cold compile" "$W/jit.out" || fail "bench jit printed no report: $(cat "$W/jit.out")"
if grep -qE "goal|MISSED" "$W/jit.out"; then fail "bench jit without --goals shows goals: $(cat "$W/jit.out")"; fi

# Work shorter than the interval says nothing in a log; the same work, long, says its steps and its last.
in_log short 0 /nonexistent/libcuda.so.1 bench cache --repeat 1 || fail "bench cache failed: $(tail -3 "$W/short.err")"
if grep -q "kernjit bench cache: " "$W/short.err"; then
    fail "bench cache: progress in a log for work shorter than 3 s: $(grep "kernjit bench cache: " "$W/short.err")"
fi
in_log long 3 /nonexistent/libcuda.so.1 bench cache --repeat 1 || fail "bench cache failed: $(tail -3 "$W/long.err")"
progress_lines "bench cache" "$W/long.err" | grep -q "^kernjit bench cache: cold compiles 2/2$" \
    || fail "bench cache: long work in a log said no step 2/2: $(cat "$W/long.err")"
if grep -v "^kernjit bench cache: [a-z0-9 ,-]* [0-9]*/[0-9]*$" "$W/long.err" | grep -q .; then
    fail "bench cache in a log: a line that is not a progress line: $(grep -v "^kernjit bench cache: " "$W/long.err" | head -3)"
fi
# two seconds a step: a line every 3 s, not one a step, and the last state said, whenever it came
in_log slow 2 /nonexistent/libcuda.so.1 bench cache --repeat 1 || fail "bench cache failed: $(tail -3 "$W/slow.err")"
[ "$(progress_lines "bench cache" "$W/slow.err" | wc -l)" -lt "$(progress_lines "bench cache" "$W/long.err" | wc -l)" ] \
    || fail "bench cache in a log, 2 s a step: a line a step: $(cat "$W/slow.err")"
tail -1 "$W/slow.err" | grep -q "^kernjit bench cache: remote hits 2/2$" \
    || fail "bench cache in a log, 2 s a step: the last line is not the last state: $(cat "$W/slow.err")"

# One log of both streams (> log 2>&1): each progress line after the rows of every measure before it,
# on a line of its own (stdout, buffered, is flushed first).
KJ_TEST_PROGRESS_STEP=3 KERNJIT_LIBCUDA="$STUB" "$K" bench reduce --sizes 1K,4K --op sum,max --type f32 \
    --entry reduce_fast --samples 1 > "$W/both.log" 2>&1
grep -qE "^(sum|max) +f32 +2\^12 " "$W/both.log" || fail "bench reduce on the stub: $(tail -3 "$W/both.log")"
grep -q "^kernjit bench reduce: measure 4/4" "$W/both.log" || fail "bench reduce in a log: no progress line 4/4"
awk '/^(sum|max|min|prod) +[a-z0-9]+ +2\^/ { rows++ }
     /kernjit bench reduce: measure / {
         if (index($0, "kernjit") != 1) { print "FAIL: a progress line inside a row: " $0; bad++ }
         split($0, m, /measure |\/|:/); k[++n] = m[3]; of = m[4]; before[n] = rows }
     END { per = rows / of
           for (i = 1; i <= n; i++) if (before[i] != (k[i] - 1) * per) {
               print "FAIL: measure " k[i] " of " of " began after " before[i] " rows in the log, not " (k[i] - 1) * per; bad++ }
           exit bad > 0 }' "$W/both.log" || failures=$((failures + 1))

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "progress: all checks passed"
