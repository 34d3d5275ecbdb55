#!/usr/bin/env bash
# scripts/test's own flow, in a copy of it whose tools are fakes (meson, scripts/setup, check-embed,
# fuzz): a stage that fails does not end the run (every later stage runs, as CI needs), the last line
# names each stage's result, the total time and the CPU time, in the plain mode too, and the exit
# status says whether any failed; an unknown stage is a usage error before anything runs.
# usage: test-script-test.sh SOURCE_DIR
set -u
src="$1"
d=$(mktemp -d /tmp/kernjit-script-test-XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/scripts" "$d/bin"
cp "$src/scripts/test" "$d/scripts/test"
for s in setup check-embed fuzz; do
    printf '#!/bin/sh\necho "%s ran" >>"%s/ran"\n' "$s" "$d" >"$d/scripts/$s"
done
# meson: setup makes the folder; the unit and compile suites of build/ fail when FAIL_SUITES is set
cat >"$d/bin/meson" <<EOF
#!/bin/sh
echo "meson \$*" >>"$d/ran"
case "\$1" in
setup) mkdir -p "\$2" && touch "\$2/build.ninja" ;;
test) [ "\$3" = build ] && [ -n "\${FAIL_SUITES:-}" ] && { echo "a suite failed"; exit 1; } ;;
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

run env CI=true FAIL_SUITES=1 scripts/test
[ "$rc" = 1 ] || fail "a failed suite in CI: exit $rc, expected 1"
for want in "meson test -C build-asan" "meson test -C build-tsan" "fuzz ran" "check-embed ran"; do
    grep -qF "$want" <<<"$ran" && echo "ok: after a failed suite, '$want' still ran" || fail "after a failed suite, '$want' did not run"
done
grep -qE '^== scripts/test: setup [0-9]+ s; build [0-9]+ s; unit and compile suites [0-9]+ s FAILED \(exit 1\); check-embed [0-9]+ s; asan [0-9]+ s; tsan [0-9]+ s; fuzz [0-9]+ s; total [0-9]+ s, [0-9]+ s of CPU: FAILED$' <<<"$last" \
    && echo "ok: the last line names each stage, the failed one, the totals: $last" || fail "the last line: $last"

run env -u CI scripts/test
[ "$rc" = 0 ] || fail "the plain mode, everything passing: exit $rc"
grep -qE '^== scripts/test: setup [0-9]+ s; build [0-9]+ s; unit and compile suites [0-9]+ s; check-embed [0-9]+ s; total [0-9]+ s, [0-9]+ s of CPU: passed$' <<<"$last" \
    && echo "ok: the plain mode prints its total: $last" || fail "the plain mode's last line: $last"
grep -q "build-asan\|fuzz ran" <<<"$ran" && fail "the plain mode ran a reliability stage: $ran"

run env -u CI KJ_TEST_STAGES="asan bogus" scripts/test --full
[ "$rc" = 2 ] && grep -qF "unknown stage 'bogus' (stages: asan tsan fuzz)" <<<"$out" && [ -z "$ran" ] \
    && echo "ok: an unknown stage is a usage error before anything runs" || fail "an unknown stage: exit $rc, ran '$ran': $out"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all scripts/test flow checks passed"
