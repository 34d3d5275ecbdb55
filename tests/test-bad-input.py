#!/usr/bin/env python3
"""docs/bad-input.md is the test: every row of its tables is checked here.

Command-line rows (C): the command is run (placeholders expanded, leading NAME=VALUE words are its
environment); its exit code must be the row's, its output must contain the row's message, and the
work folder (the cache with one valid entry, the fixture files) must be exactly as it was: no file
added, removed or changed, which is what "Unchanged" promises.
Library rows (A), cache-fault rows (F) and remote-cache-fault rows (R) are tested by
tests/test-bad-input-api.c, tests/test-cache-faults.sh and tests/test-remote.sh (and, over TLS,
tests/test-remote-tls.sh: --remote-test may be given more than once): here each row must
name a test that exists, the test must use the row's status or warning, and every test there must be a
row, so that the table and the tests cannot drift.

usage: test-bad-input.py --doc docs/bad-input.md --kernjit build/cli/kernjit --stub libstub-cuda.so
                         --kernels tests/kernels --api-test tests/test-bad-input-api.c
                         --faults-test tests/test-cache-faults.sh --remote-test tests/test-remote.sh
                         [--remote-test tests/test-remote-tls.sh] [--only C12,C40]
(meson test test-bad-input passes all of them; --only runs just those command-line rows)
"""
import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROW = re.compile(r'^\|\s*([CAFR])(\d+)\s*\|')
ENV_WORD = re.compile(r'^[A-Z_][A-Z0-9_]*=')
CODE = re.compile(r'`([^`]*)`')


def cells(line):
    # cells never contain '|' (the document avoids it), so a plain split is exact
    return [c.strip() for c in line.strip().strip('|').split('|')]


def code(cell, row):
    m = CODE.search(cell)
    if not m:
        raise SystemExit('%s: expected `code` in the cell %r' % (row, cell))
    return m.group(1)


def read_rows(doc):
    rows = []
    with open(doc, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            m = ROW.match(line)
            if m:
                rows.append((m.group(1) + m.group(2), cells(line), n))
    ids = [r[0] for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SystemExit('rows listed twice: ' + ', '.join(dup))
    return rows


def make_fixtures(w, kernjit, kernels):
    open(os.path.join(w, 'empty.cu'), 'w').close()
    with open(os.path.join(w, 'binary.cu'), 'wb') as f:
        f.write(b'\x7fELF\x00\x01\x02 __global__ void k() {}\n')
    with open(os.path.join(w, 'notakernel.cu'), 'w') as f:
        f.write('int main(void) { return 0; }\n')
    with open(os.path.join(w, 'two.cu'), 'w') as f:
        f.write('extern "C" __global__ void a(int *x) { *x = 1; }\nextern "C" __global__ void b(int *x) { *x = 2; }\n')
    with open(os.path.join(w, 'bad.cu'), 'w') as f:
        f.write('extern "C" __global__ void k(int *x) {\n  x[0] = oops;\n}\n')
    with open(os.path.join(w, 'file'), 'w') as f:
        f.write('a file, not a folder\n')
    os.mkdir(os.path.join(w, 'dir.cu'))
    # includes: a header found nowhere, a header that is a FIFO (opening it must not wait), a macro
    # include kernjit cannot follow, and a file whose kernel lies in what it includes
    with open(os.path.join(w, 'noheader.cu'), 'w') as f:
        f.write('#include "nothere.h"\nextern "C" __global__ void k(int *x) { *x = 1; }\n')
    os.mkfifo(os.path.join(w, 'fifo.h'))
    with open(os.path.join(w, 'usesfifo.cu'), 'w') as f:
        f.write('#include "fifo.h"\nextern "C" __global__ void k(int *x) { *x = 1; }\n')
    # a folder for KERNJIT_PATH holding a looping link where NAME.cu belongs, and a FIFO
    os.mkdir(os.path.join(w, 'links'))
    os.symlink('loop.cu', os.path.join(w, 'links', 'loop.cu'))
    os.mkfifo(os.path.join(w, 'links', 'pipe.cu'))
    os.symlink(os.path.join(w, 'nowhere.cu'), os.path.join(w, 'links', 'dangling.cu'))
    with open(os.path.join(w, 'requires.cu'), 'w') as f:
        f.write('//@kernjit entry k\n//@kernjit param A 0 1 2 = 1\n//@kernjit require 10 / A > 0\n'
                'extern "C" __global__ void k(int *o) { o[0] = A; }\n')
    with open(os.path.join(w, 'macroinc.cu'), 'w') as f:
        f.write('#include CONFIG_HEADER\nextern "C" __global__ void k(int *x) { *x = 1; }\n')
    shutil.copy(os.path.join(kernels, 'vadd.cu'), os.path.join(w, 'vadd.cu'))
    # a program of two sources, and sources that leave a symbol undefined or define one twice
    shutil.copy(os.path.join(kernels, 'link_main.cu'), os.path.join(w, 'linkmain.cu'))
    shutil.copy(os.path.join(kernels, 'link_lib.cu'), os.path.join(w, 'linklib.cu'))
    shutil.copy(os.path.join(kernels, 'link_lib.cuh'), os.path.join(w, 'link_lib.cuh'))
    shutil.copy(os.path.join(kernels, 'link_lib.cu'), os.path.join(w, 'linklib2.cu'))
    # the first files of a user: a C library header, a header of host functions
    with open(os.path.join(w, 'stdio.cu'), 'w') as f:
        f.write('#include <stdio.h>\nextern "C" __global__ void k(int *x) { printf("%d\\n", *x); }\n')
    with open(os.path.join(w, 'hostdecl.h'), 'w') as f:
        f.write('int twice(int x) { return 2 * x; }\n')
    with open(os.path.join(w, 'hostdecl.cu'), 'w') as f:
        f.write('#include "hostdecl.h"\nextern "C" __global__ void k(int *x) { *x = twice(*x); }\n')
    # __has_include operands kernjit cannot resolve; all of CUB (host code)
    with open(os.path.join(w, 'hasinc.cu'), 'w') as f:
        f.write('#define CONFIG_HEADER PICK(config)\n#if __has_include(CONFIG_HEADER)\n#endif\n'
                'extern "C" __global__ void k(int *x) { *x = 1; }\n')
    with open(os.path.join(w, 'hasodd.cu'), 'w') as f:
        f.write('#if __has_include(dir/x.h)\n#endif\nextern "C" __global__ void k(int *x) { *x = 1; }\n')
    with open(os.path.join(w, 'hasopen.cu'), 'w') as f:
        f.write('#if __has_include("x.h"\n#endif\nextern "C" __global__ void k(int *x) { *x = 1; }\n')
    with open(os.path.join(w, 'cub.cu'), 'w') as f:
        f.write('#include <cub/cub.cuh>\nextern "C" __global__ void k(int *x) { *x = 1; }\n')
    with open(os.path.join(w, 'emptylib.cu'), 'w') as f:
        f.write('// defines nothing the other source needs\n')
    # a cache holding one valid entry (vadd, as `kernjit launch` on the stub device builds it)
    env = dict(os.environ, KERNJIT_CACHE_DIR=os.path.join(w, 'cache'), KERNJIT_PATH='')
    subprocess.run([kernjit, 'compile', os.path.join(w, 'vadd.cu'), '--arch', 'sm_90'], env=env, check=True,
                   stdout=subprocess.DEVNULL)


def snapshot(w):
    """Every path under w with its kind and contents. Times are left out: a cache hit refreshes an
    entry's time (least-recently-used eviction), which is use, not change."""
    seen = {}
    for root, dirs, files in os.walk(w):
        for name in dirs + files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, w)
            if os.path.islink(p):
                seen[rel] = 'link ' + os.readlink(p)
            elif os.path.isdir(p):
                seen[rel] = 'dir %o' % (os.stat(p).st_mode & 0o7777)
            elif not os.path.isfile(p):  # a FIFO: reading it would wait for a writer
                seen[rel] = 'special %o' % os.stat(p).st_mode
            else:
                with open(p, 'rb') as f:
                    seen[rel] = 'file ' + hashlib.sha256(f.read()).hexdigest()
    return seen


def expand(text, values):
    for name in sorted(values, key=len, reverse=True):
        text = text.replace('$' + name, values[name])
    return text


def nested(w, length):
    """A path under w of about length characters, in folders of 200 (none of them exists)."""
    path = w
    while len(path) < length - 201:
        path += '/' + 'd' * 200
    return path


# A message is at most 2047 bytes (src/base/message.c): a long path loses its middle, never the reason
# after it. With the command's name or the level before it ("kernjit run mandelbrot: "), no line of
# a row's output may be longer.
LONGEST_LINE = 2047 + 40


def run_command_rows(rows, args, only):
    w = os.path.realpath(tempfile.mkdtemp(prefix='kernjit-bad-input-'))
    failures = 0
    ran = 0
    try:
        make_fixtures(w, args.kernjit, args.kernels)
        values = {
            'W': w,
            'STUB': args.stub,
            'LONGNAME': 'k' * 65,                                   # a built-in name: at most 64
            'LONGPATH': os.path.join(w, 'p' * 5000 + '.cu'),         # beyond PATH_MAX (4096)
            'LONGENTRY': 'e' * 600,                                  # an entry: at most 512
            'LONGMACRO': 'M' * 65,                                   # a macro name: at most 64
            'LONGVALUE': 'v' * 300,                                  # a macro value: at most 256
            'LONGFILE': 'f' * 300,                                   # a file name: at most 255
            'DEEPPATH': nested(w, 4000) + '/x.cu',                   # within PATH_MAX, beyond a message
            'DEEPDIR': nested(w, 5000),                              # beyond PATH_MAX
        }
        base = dict(os.environ)
        for k in ('KJ_STUB_FREE', 'KJ_STUB_PARAMS', 'KERNJIT_CACHE_MAX', 'KERNJIT_REMOTE_CACHE', 'KERNJIT_REMOTE_SECRET',
                  'KERNJIT_REMOTE_MODE'):
            base.pop(k, None)
        # no driver unless a row asks for the stub's device: the same answers on a machine with a GPU
        base.update(KERNJIT_CACHE_DIR=os.path.join(w, 'cache'), KERNJIT_PATH='',
                    KERNJIT_LIBCUDA='/nonexistent/libcuda.so.1')
        for rid, c, line in rows:
            if only and rid not in only:
                continue
            if len(c) != 6:
                print('FAIL %s (line %d): expected 6 cells, found %d' % (rid, line, len(c)))
                failures += 1
                continue
            command = expand(code(c[2], rid), values)
            want_exit = int(c[3])
            needle = expand(code(c[4], rid), values)
            words = shlex.split(command)
            env = dict(base)
            while words and ENV_WORD.match(words[0]):
                k, v = words.pop(0).split('=', 1)
                env[k] = v
            if not words or words[0] != 'kernjit':
                print('FAIL %s (line %d): the command must start with kernjit: %r' % (rid, line, command))
                failures += 1
                continue
            words[0] = args.kernjit
            before = snapshot(w)
            try:
                p = subprocess.run(words, env=env, cwd=w, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=120)
                out, rc = p.stdout.decode('utf-8', 'replace'), p.returncode
            except subprocess.TimeoutExpired:
                out, rc = '(timed out after 120 s)', 'timeout'
            after = snapshot(w)
            ran += 1
            problems = []
            if rc != want_exit:
                problems.append('exited %s, expected %d' % (rc, want_exit))
            if needle not in out:
                problems.append('the output lacks %r' % needle)
            longest = max(len(line.encode('utf-8')) for line in out.split('\n'))
            if longest > LONGEST_LINE:
                problems.append('a line of %d bytes: messages are at most %d' % (longest, LONGEST_LINE))
            if before != after:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                problems.append('changed: ' + ', '.join(changed[:5]))
            short = command if len(command) < 160 else command[:157] + '...'
            if problems:
                failures += 1
                print('FAIL %s (line %d): %s\n    %s' % (rid, line, short, '; '.join(problems)))
                print('    ' + out.strip().replace('\n', '\n    ')[:2000])
            else:
                print('ok %s: %s' % (rid, short))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    return ran, failures


def functions(path):
    """The test functions of a C file: name -> body."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    found = {}
    for m in re.finditer(r'^static void (test_\w+)\(void \*\*state\) \{\n(.*?)^\}', text, re.S | re.M):
        found[m.group(1)] = m.group(2)
    return found


def check_library_rows(rows, api_test):
    tests = functions(api_test)
    failures = 0
    named = set()
    for rid, c, line in rows:
        if len(c) != 6:
            print('FAIL %s (line %d): expected 6 cells, found %d' % (rid, line, len(c)))
            failures += 1
            continue
        status, needle, test = code(c[2], rid), code(c[3], rid), code(c[5], rid)
        named.add(test)
        body = tests.get(test)
        if body is None:
            print('FAIL %s (line %d): no test %s in %s' % (rid, line, test, api_test))
            failures += 1
        elif status not in body or needle not in body:
            print('FAIL %s (line %d): %s does not check %s with %r' % (rid, line, test, status, needle))
            failures += 1
        else:
            print('ok %s: %s checks %s, %r' % (rid, test, status, needle))
    for t in sorted(set(tests) - named):
        print('FAIL: %s in %s is not a row of the table' % (t, api_test))
        failures += 1
    return failures


def check_fault_rows(rows, faults_tests, kind='F'):
    """faults_tests: the scripts that hold the blocks, together."""
    text = ''
    for path in faults_tests:
        with open(path, encoding='utf-8') as f:
            text += f.read()
    faults_test = ' and '.join(faults_tests)
    markers = set(re.findall(r'# row (%s\d+)\b' % kind, text))
    failures = 0
    for rid, c, line in rows:
        if len(c) != 6:
            print('FAIL %s (line %d): expected 6 cells, found %d' % (rid, line, len(c)))
            failures += 1
            continue
        warning = code(c[3], rid)
        if rid not in markers:
            print('FAIL %s (line %d): %s has no block marked "# row %s"' % (rid, line, faults_test, rid))
            failures += 1
        elif warning and warning not in text:
            print('FAIL %s (line %d): %s never expects the warning %r' % (rid, line, faults_test, warning))
            failures += 1
        else:
            print('ok %s: tested in %s' % (rid, ' or '.join(os.path.basename(t) for t in faults_tests)))
    for m in sorted(markers - {r[0] for r in rows}):
        print('FAIL: %s marks row %s, which the table lacks' % (faults_test, m))
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    for a in ('--doc', '--kernjit', '--stub', '--kernels', '--api-test', '--faults-test'):
        ap.add_argument(a, required=True)
    ap.add_argument('--remote-test', required=True, action='append')
    ap.add_argument('--only', default='')
    args = ap.parse_args()
    only = set(filter(None, args.only.split(',')))
    rows = read_rows(args.doc)
    by_kind = {k: [r for r in rows if r[0][0] == k] for k in 'CAFR'}
    ran, failures = run_command_rows(by_kind['C'], args, only)
    if not only:
        failures += check_library_rows(by_kind['A'], args.api_test)
        failures += check_fault_rows(by_kind['F'], [args.faults_test])
        failures += check_fault_rows(by_kind['R'], args.remote_test, 'R')
    print('%d rows: %d command-line (%d run), %d library, %d cache faults, %d remote cache faults; %d failure(s)' %
          (len(rows), len(by_kind['C']), ran, len(by_kind['A']), len(by_kind['F']), len(by_kind['R']), failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
