#!/usr/bin/env bash
# scripts/test's own flow, in a copy of it whose tools are fakes (meson, scripts/setup, check-embed,
# fuzz, check-format): a stage that fails does not end the run (every later stage runs, as CI needs), the stages run
# beside the main lane, the suites each mode runs, the last line names each stage's result, the total
# time and the CPU time (the stages' lane's too), in the plain mode too, and the exit status says whether any
# failed; an unknown stage is a usage error before anything runs.
# usage: test-script-test.sh SOURCE_DIR
set -u
src="$1"
d=$(mktemp -d /tmp/kernjit-script-test-XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/scripts" "$d/bin"
cp "$src/scripts/test" "$d/scripts/test"
# BURN=1: fuzz (in the stages' lane) spends two or three seconds of CPU; FAIL_FUZZ=1: fuzz fails;
# FAIL_FORMAT=1: check-format fails
for s in setup check-format check-embed fuzz; do
    cat >"$d/scripts/$s" <<EOF
#!/bin/sh
echo "$s ran" >>"$d/ran"
[ "$s" = fuzz ] && [ -n "\${BURN:-}" ] && awk 'BEGIN { for (i = 0; i < 9e7; i++) s += i }'
[ "$s" = fuzz ] && [ -n "\${FAIL_FUZZ:-}" ] && exit 1
[ "$s" = check-format ] && [ -n "\${FAIL_FORMAT:-}" ] && exit 1
exit 0
EOF
done
# meson: setup makes the folder; the suites of build/ fail when FAIL_SUITES is set and, with WAIT_ASAN
# set, wait (30 s at most) for the ASan stage's tests to start, noting whether they saw them: the lanes
# overlap
cat >"$d/bin/meson" <<EOF
#!/bin/sh
echo "meson \$*" >>"$d/ran"
case "\$1" in
setup) mkdir -p "\$2" && touch "\$2/build.ninja" ;;
test)
    if [ "\$3" = build ] && [ -n "\${WAIT_ASAN:-}" ]; then
        i=0
        while [ \$i -lt 300 ] && ! grep -q "meson test -C build-asan" "$d/ran"; do sleep 0.1; i=\$((i + 1)); done
        grep -q "meson test -C build-asan" "$d/ran" && echo "the main suites saw the ASan stage running" >>"$d/ran"
    fi
    [ "\$3" = build ] && [ -n "\${FAIL_SUITES:-}" ] && { echo "a suite failed"; exit 1; } ;;
esac
exit 0
EOF
chmod +x "$d/scripts/"* "$d/bin/meson"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run: scripts/test with the fakes first on PATH; sets out, rc, last (the last line) and ran
run() {
    rm -f "$d/ran"
    out=$(cd "$d" && env PATH="$d/bin:$PATH" "$@" 2>&1)
    rc=$?
    last=$(tail -1 <<<"$out")
    ran=$(cat "$d/ran" 2>/dev/null)
}

run env CI=true FAIL_SUITES=1 BURN=1 WAIT_ASAN=1 scripts/test
[ "$rc" = 1 ] || fail "a failed suite in CI: exit $rc, expected 1"
for want in "meson test -C build-asan --suite asan" "meson test -C build-tsan" "fuzz ran" "check-embed ran" \
    "meson test -C build --suite unit --suite cli --suite slow --suite compile"; do
    grep -qF -- "$want" <<<"$ran" && echo "ok: after a failed suite, '$want' still ran" || fail "after a failed suite, '$want' did not run"
done
grep -qF "the main suites saw the ASan stage running" <<<"$ran" \
    && echo "ok: the stages run beside the main lane" || fail "the ASan stage did not run beside the main suites: $ran"
grep -qE '^== scripts/test: setup [0-9]+ s; format [0-9]+ s; build [0-9]+ s; unit, cli, slow and compile suites [0-9]+ s FAILED \(exit 1\); check-embed [0-9]+ s; asan [0-9]+ s; tsan [0-9]+ s; fuzz [0-9]+ s; total [0-9]+ s, [0-9]+ s of CPU: FAILED$' <<<"$last" \
    && echo "ok: the last line names each stage, the failed one, the totals: $last" || fail "the last line: $last"
# the fakes spend next to nothing but the stages' lane's two or three seconds
cpu=$(grep -oE '[0-9]+ s of CPU' <<<"$last" | grep -oE '^[0-9]+')
[ "${cpu:-0}" -ge 1 ] && echo "ok: the CPU time counts the stages' lane ($cpu s)" || fail "the CPU time: ${cpu:-none} s, expected 1 or more"
grep -qF "== scripts/test: asan" <<<"$out" && echo "ok: the stages' output is shown" || fail "the stages' output is not shown: $out"

run env CI=true FAIL_FUZZ=1 scripts/test
[ "$rc" = 1 ] && grep -qE '^== scripts/test: setup [0-9]+ s; format [0-9]+ s; build [0-9]+ s; unit, cli, slow and compile suites [0-9]+ s; check-embed [0-9]+ s; asan [0-9]+ s; tsan [0-9]+ s; fuzz [0-9]+ s FAILED \(exit 1\); total [0-9]+ s, [0-9]+ s of CPU: FAILED$' <<<"$last" \
    && echo "ok: a failed stage in the stages' lane fails the run: $last" || fail "a failed fuzz stage: exit $rc: $last"

run env -u CI scripts/test
[ "$rc" = 0 ] || fail "the plain mode, everything passing: exit $rc"
grep -qE '^== scripts/test: setup [0-9]+ s; format [0-9]+ s; build [0-9]+ s; unit and cli suites [0-9]+ s; check-embed [0-9]+ s; total [0-9]+ s, [0-9]+ s of CPU: passed$' <<<"$last" \
    && echo "ok: the plain mode prints its total: $last" || fail "the plain mode's last line: $last"
grep -q "build-asan\|build-tsan\|fuzz ran" <<<"$ran" && fail "the plain mode ran a reliability stage: $ran"
grep -qx "meson test -C build --suite unit --suite cli --print-errorlogs" <<<"$ran" \
    && echo "ok: the plain mode runs the unit and cli suites" || fail "the plain mode's suites: $ran"

# sources that do not follow .clang-format fail the run, and the build and suites still run
run env -u CI FAIL_FORMAT=1 scripts/test
[ "$rc" = 1 ] && grep -qE '; format [0-9]+ s FAILED \(exit 1\); build [0-9]+ s; unit and cli suites' <<<"$last" \
    && grep -qF "meson test -C build --suite unit --suite cli" <<<"$ran" \
    && echo "ok: a format check that fails fails the run, and the suites still run" \
    || fail "a failed format check: exit $rc: $last"

run env -u CI KJ_TEST_STAGES="asan bogus" scripts/test --full
[ "$rc" = 2 ] && grep -qF "unknown stage 'bogus' (stages: asan tsan fuzz)" <<<"$out" && [ -z "$ran" ] \
    && echo "ok: an unknown stage is a usage error before anything runs" || fail "an unknown stage: exit $rc, ran '$ran': $out"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all scripts/test flow checks passed"
