# Sourced by the CLI test scripts: `expect CODE NEEDLE command...` runs the command and checks its
# exit code and that NEEDLE (may be empty) appears in its stdout+stderr; failures are counted in
# $failures and printed with the output, which stays in $expected_output for further checks.
failures=0

expect() {
    local code="$1" needle="$2"
    shift 2
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    expected_output=$out
    if [ "$rc" != "$code" ]; then
        echo "FAIL: '$*' exited $rc, expected $code"; echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    elif [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
        echo "FAIL: '$*' output lacks '$needle'"; echo "$out" | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok: $*"
    fi
}
