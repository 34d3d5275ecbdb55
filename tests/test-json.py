#!/usr/bin/env python3
"""Every command's --json output follows docs/json.md: run each command and subcommand with --json
(against the stub driver where a device is needed, with no driver where none is), and check that

- stdout is exactly one JSON document, valid UTF-8, an object with "schema" (the version) and
  "command" (the words that name the command);
- a failure is in it as "error": {"status", "class", "message"}, class equal to the exit code, and the
  exit code is the one the command gives without --json; a success has no "error";
- keys are lower_snake_case (but macro names, inside "macros" and "fixed"), none of the names the
  schema retired, units in the names (_ms, _us, _bytes, _gbps ... hold numbers or null), every
  compute capability written "sm_XY" (a target also "sm_XYa", "sm_XYf", "compute_XY");
- every command that `kernjit --help`, `kernjit run --help` and `kernjit bench --help` list (and each
  `cache` action and `tune` mode) has a case here, so that a new command cannot go untested.

usage: test-json.py KERNJIT STUB_LIBCUDA KERNELS_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCHEMA = 1
KEY = re.compile(r'^[a-z][a-z0-9_]*$')
MACRO_OBJECTS = {'macros', 'fixed'}
# names one concept had before the schema gave each one name (docs/json.md, "One name per concept")
RETIRED = {'path', 'cache', 'cache_path', 'db', 'bytes', 'us', 'ms', 'time', 'mtime', 'devrt', 'cuda_home', 'cc',
           'cc_major', 'cc_minor', 'compute_capability', 'version', 'pct_of_copy', 'total_memory', 'peak_bandwidth_gbs',
           'image', 'benchmark'}
UNITS = ('_ms', '_us', '_bytes', '_gbps', '_percent', '_khz', '_bits', '_unix_s')


def lint(value, where, parent, problems):
    if isinstance(value, dict):
        for k, v in value.items():
            path = where + '.' + k
            if parent in MACRO_OBJECTS:
                if not isinstance(v, str):
                    problems.append('%s: a macro value is a string' % path)
                continue
            if not KEY.match(k):
                problems.append('%s: keys are lower_snake_case' % path)
            if k in RETIRED:
                problems.append('%s: a retired name (docs/json.md)' % path)
            if k.endswith(UNITS) and not (v is None or isinstance(v, (int, float)) and not isinstance(v, bool)
                                          or isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)):
                problems.append('%s: a quantity with a unit is a number (or null), got %r' % (path, v))
            if k.endswith(('_path', '_dir')) and not (v is None or isinstance(v, str)):
                problems.append('%s: a path is a string (or null)' % path)
            if k == 'arch' and not (v is None or re.match(r'^(sm|compute)_\d+[af]?$', str(v))):
                problems.append('%s: a compute capability is "sm_XY" (a target also sm_XYa, sm_XYf, compute_XY), '
                                'got %r' % (path, v))
            lint(v, path, k, problems)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if parent == 'archs' and not re.match(r'^sm_\d+$', str(v)):
                problems.append('%s[%d]: a compute capability is "sm_XY", got %r' % (where, i, v))
            lint(v, '%s[%d]' % (where, i), parent, problems)


def check_document(out, rc, command, problems):
    try:
        text = out.decode('utf-8')  # strict: invalid UTF-8 fails here
        doc = json.loads(text)      # one document: anything after it fails here
    except (UnicodeDecodeError, ValueError) as e:
        problems.append('stdout is not one UTF-8 JSON document (%s): %r' % (e, out[:300]))
        return None
    if not isinstance(doc, dict):
        problems.append('the document is a %s, not an object' % type(doc).__name__)
        return None
    if doc.get('schema') != SCHEMA:
        problems.append('"schema" is %r, expected %d' % (doc.get('schema'), SCHEMA))
    if list(doc)[:2] != ['schema', 'command']:
        problems.append('the document starts with %r, expected "schema", "command"' % list(doc)[:2])
    if doc.get('command') != command:
        problems.append('"command" is %r, expected %r' % (doc.get('command'), command))
    err = doc.get('error')
    if rc == 0 and err is not None:
        problems.append('exit 0 with an "error": %r' % err)
    if rc != 0:
        if not isinstance(err, dict):
            problems.append('exit %d without an "error" object' % rc)
        else:
            if list(doc)[-1] != 'error':
                problems.append('"error" is not the last field')
            if err.get('class') != rc:
                problems.append('"error"."class" is %r, the exit code %d' % (err.get('class'), rc))
            status = err.get('status')
            if not (status is None or isinstance(status, str) and status.startswith('KJ_')):
                problems.append('"error"."status" is %r: a KJ_ status name or null' % status)
            if not isinstance(err.get('message'), str) or not err['message']:
                problems.append('"error"."message" is empty')
    lint(doc, '$', None, problems)
    return doc


def main():
    kernjit, stub, kernels = sys.argv[1:4]
    work = tempfile.mkdtemp(prefix='kernjit-json-')
    vadd = os.path.join(kernels, 'vadd.cu')
    bad = os.path.join(work, 'bad.cu')
    with open(bad, 'w') as f:
        f.write('extern "C" __global__ void k(int *x) { x[0] = oops; }\n')
    base = dict(os.environ, KERNJIT_CACHE_DIR=os.path.join(work, 'cache'), KERNJIT_PATH='')
    for k in ('KERNJIT_REMOTE_CACHE', 'KERNJIT_REMOTE_SECRET', 'KERNJIT_REMOTE_MODE', 'KERNJIT_SEED_SECRET'):
        base.pop(k, None)
    base['KERNJIT_SEED_PATH'] = ''
    base['KERNJIT_CUB_PLUGIN'] = 'off'  # bench reduce would build it (test-cub-build does)
    envs = {'none': dict(base, KERNJIT_LIBCUDA='/nonexistent/libcuda.so.1'),
            'stub': dict(base, KERNJIT_LIBCUDA=stub),
            'stub2': dict(base, KERNJIT_LIBCUDA=stub, KJ_STUB_DEVICES='2')}
    # (driver, command named in the document, arguments, expected exit code, details to check)
    # On the stub, the built-in kernels do not run (it runs only tests/kernels' few): their results
    # are wrong, which shows the whole document of a run with its "error" at the end.
    cases = [
        ('none', 'info', ['info'], 0, lambda d: d['devices'] == [] and d['toolchain']['archs']),
        ('stub', 'info', ['info'], 0, lambda d: d['devices'][0]['arch'] == 'sm_90'),
        ('none', '--version', ['--version'], 0, lambda d: d['kernjit_version']),
        ('none', 'list', ['list'], 0, lambda d: 'reduce' in [k['name'] for k in d['kernels']]),
        ('none', 'list', ['list', 'nosuch'], 2, lambda d: d['error']['status'] == 'KJ_ERR_UNKNOWN_KERNEL'),
        ('none', 'compile', ['compile', 'reduce', '--arch', 'sm_90'], 0,
         lambda d: d['targets'][0]['origin'] in ('compiled', 'disk')),
        ('none', 'compile', ['compile', vadd, '--arch', 'sm_80,sm_90'], 0, lambda d: len(d['targets']) == 2),
        ('none', 'compile', ['compile', vadd, '--arch', 'sm_90a,compute_80'], 0,
         lambda d: [t['arch'] for t in d['targets']] == ['sm_90a', 'compute_80'] and d['targets'][1]['ptx'] is True),
        ('none', 'compile', ['compile', 'reduce', '--all', '--arch', 'sm_90', '-D', 'BLOCK_SIZE=256',
                             '-D', 'COARSE_FACTOR=2,4'], 0, lambda d: d['targets'][0]['variants'] == 2),
        ('none', 'compile', ['compile', 'reduce', '-D', 'OP=avg'], 2,
         lambda d: d['error']['status'] == 'KJ_ERR_INVALID_DEFINE'),
        ('none', 'compile', ['compile', bad, '--arch', 'sm_90'], 1,
         lambda d: d['error']['status'] == 'KJ_ERR_COMPILE' and 'oops' in d['error']['message']),
        ('none', 'compile', ['compile', '--json', 'reduce', '--arch'], 2,
         lambda d: 'needs a value' in d['error']['message']),
        ('none', 'compile', ['compile', 'reduce', '--json=yes'], 2, lambda d: 'takes no value' in d['error']['message']),
        ('none', 'seed', ['seed', os.path.join(work, 'seed'), vadd, '--arch', 'sm_90'], 0,
         lambda d: d['compiled'] == 1 and d['entries'] == 1 and d['archs'] == ['sm_90'] and d['signed'] is False),
        ('none', 'seed', ['seed', os.path.join(work, 'seed2'), 'reduce'], 2, lambda d: '--arch' in d['error']['message']),
        ('none', 'cache path', ['cache', 'path'], 0, lambda d: d['cache_dir']),
        ('none', 'cache list', ['cache', 'list'], 0, lambda d: d['entries'] and isinstance(d['entries'][0]['macros'], dict)),
        ('none', 'cache stats', ['cache', 'stats'], 0, lambda d: d['entries'] > 0 and d['remote']['configured'] is False),
        ('none', 'cache push', ['cache', 'push'], 1, lambda d: d['error']['status'] == 'KJ_ERR_NOT_FOUND'),
        ('none', 'cache pull', ['cache', 'pull', 'reduce'], 1, lambda d: d['error']['status'] == 'KJ_ERR_NOT_FOUND'),
        ('none', 'cache', ['cache', 'frobnicate'], 2, None),
        ('none', 'tune --show', ['tune', '--show'], 0, lambda d: d['tuned'] == []),
        ('none', 'tune --forget', ['tune', '--forget', 'reduce'], 0, lambda d: d['removed_entries'] == 0),
        ('none', 'tune', ['tune', 'reduce', '--n', '1K'], 1, lambda d: d['error']['status'] == 'KJ_ERR_NO_DEVICE'),
        ('stub', 'tune', ['tune', 'vector_add', '--n', '1K', '--budget', '1', '--dry-run'], 1, None),
        ('none', 'demo', ['demo'], 0, lambda d: d['device'] is None and len(d['kernels']) >= 5),
        ('stub', 'demo', ['demo', '--n', '1K'], 1, lambda d: d['error']['status'] == 'KJ_ERR_WRONG_RESULT'),
        ('none', 'run reduce', ['run', 'reduce', '--n', '1000'], 1,
         lambda d: d['error']['status'] == 'KJ_ERR_NO_DEVICE'),
        ('none', 'run reduce', ['run', 'reduce', '--n', 'lots'], 2, None),
        ('stub', 'run reduce', ['run', 'reduce', '--n', '1000', '--seed', '7'], 1,
         lambda d: d['seed'] == 7 and d['ok'] is False and d['error']['status'] == 'KJ_ERR_WRONG_RESULT'),
        ('stub2', 'run reduce', ['run', 'reduce', '--n', '1001', '--devices', 'all', '--type', 'u32'], 1,
         lambda d: d['result'] == 1001 and [p['n'] for p in d['devices']] == [501, 500]),
        # the stub's reduce_fast writes an element count, which is no sum: checked against the CPU, wrong
        ('stub2', 'bench reduce', ['bench', 'reduce', '--devices', '1,0', '--sizes', '1K', '--samples', '1'], 1,
         lambda d: d['rows'][0]['device_count'] == 2 and d['rows'][0]['same_as_parts'] is False
         and d['rows'][0]['per_device_us'] == d['rows'][0]['diff_us'] and 'sequential_median_us' in d['rows'][0]
         and d['rows'][0]['launch_all_median_us'] > 0 and d['rows'][0]['launch_one_median_us'] > 0),
        ('stub', 'run transpose', ['run', 'transpose', '--rows', '64', '--cols', '64'], 1, lambda d: 'rows' in d),
        ('stub', 'run vector-add', ['run', 'vector-add', '--n', '1000'], 1, lambda d: d['n'] == 1000),
        ('stub', 'run nested-reduce', ['run', 'nested-reduce', '--n', '1000', '--repeat', '1'], 1, lambda d: 'sum' in d),
        ('stub', 'run nested-hello', ['run', 'nested-hello'], 1, lambda d: d['device_output'] == []),
        ('stub', 'run mandelbrot', ['run', 'mandelbrot', '--size', '64', '--repeat', '1'], 1,
         lambda d: d['width'] == 64),
        ('stub', 'launch', ['launch', vadd, '--grid', '1', '--block', '32', '--arg', 'f32[8]=iota', '--arg', 'f32[8]=1',
                            '--arg', 'f32[8]=zeros', '--arg', 'i32=8', '--print', '2', '--repeat', '2'], 0,
         lambda d: d['printed'][0]['values'] == [1, 2, 3, 4, 5, 6, 7, 8] and d['device_output'] == []),
        ('stub', 'launch', ['launch', vadd, '--grid', '1', '--block', '32', '--arch', 'compute_75', '--arg', 'f32[8]=iota',
                            '--arg', 'f32[8]=1', '--arg', 'f32[8]=zeros', '--arg', 'i32=8', '--print', '2'], 0,
         lambda d: d['arch'] == 'compute_75' and d['printed'][0]['values'] == [1, 2, 3, 4, 5, 6, 7, 8]),
        ('none', 'launch', ['launch', vadd, '--grid', '1', '--block', '32'], 1, None),
        ('stub', 'launch', ['launch', vadd, '--block', '32'], 2, lambda d: '--grid' in d['error']['message']),
        ('none', 'bench jit', ['bench', 'jit', '--repeat', '0'], 2, None),
        ('none', 'bench jit', ['bench', 'jit', '--repeat', '1'], 0, lambda d: d['device'] is None and d['cold_ms'] > 0),
        ('none', 'bench cache', ['bench', 'cache', '--repeat', '1'], 0, lambda d: d['cold_compile_ms'] > 0),
        ('none', 'bench reduce', ['bench', 'reduce'], 1, lambda d: d['error']['status'] == 'KJ_ERR_NO_DEVICE'),
        ('stub', 'bench reduce', ['bench', 'reduce', '--sizes', '1K', '--op', 'sum', '--type', 'f32', '--entry',
                                  'reduce_fast', '--samples', '1'], 1,
         lambda d: len(d['rows']) == 1 and d['error']['status'] == 'KJ_ERR_WRONG_RESULT'),
        # --host: the host's time per call of each size, with the entry that ran (the default's)
        ('stub', 'bench reduce', ['bench', 'reduce', '--host', '--sizes', '1K,2^20', '--samples', '3'], 0,
         lambda d: [(r['n'], r['entry']) for r in d['host']] == [(1024, 'reduce_fast'), (1 << 20, 'reduce_fast')]
         and all(r['async_us'] > 0 and r['sync_us'] > 0 for r in d['host'])),
        ('stub', 'bench transpose', ['bench', 'transpose', '--rows', '64', '--cols', '64', '--samples', '1'], 1,
         lambda d: d['results'] and d['error']['status'] == 'KJ_ERR_WRONG_RESULT'),
        ('stub', 'bench vector-add', ['bench', 'vector-add', '--n', '1K', '--samples', '1'], 1,
         lambda d: d['results'] and d['error']['status'] == 'KJ_ERR_WRONG_RESULT'),
        ('stub', 'bench nested', ['bench', 'nested', '--n', '1K', '--size', '64', '--repeat', '1'], 1,
         lambda d: d['reduce']['rows']),
        ('none', None, ['frobnicate'], 2, lambda d: 'unknown command' in d['error']['message']),
        ('none', 'run', ['run', 'frobnicate'], 2, None),
        ('none', 'bench', ['bench'], 2, None),
        ('none', 'cache clear', ['cache', 'clear'], 0, lambda d: d['removed_entries'] > 0),
    ]
    failures = 0
    covered = set()
    try:
        for driver, command, args, want_rc, detail in cases:
            covered.add(command)
            words = [kernjit] + args + ([] if '--json' in args else ['--json'])
            p = subprocess.run(words, env=envs[driver], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            problems = []
            if p.returncode != want_rc:
                problems.append('exited %d, expected %d' % (p.returncode, want_rc))
            doc = check_document(p.stdout, p.returncode, command, problems)
            if doc is not None and detail is not None:
                try:
                    if not detail(doc):
                        problems.append('the document lacks what the case expects')
                except (KeyError, IndexError, TypeError) as e:
                    problems.append('the document lacks what the case expects (%r)' % e)
            if p.returncode != 0 and args[:2] != ['cache', 'clear']:
                # the same exit code without --json (and nothing on stdout that a program would parse)
                q = subprocess.run([kernjit] + [a for a in args if a != '--json'], env=envs[driver], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=300)
                if q.returncode != p.returncode:
                    problems.append('exits %d without --json, %d with it' % (q.returncode, p.returncode))
            shown = ' '.join(args)
            if problems:
                failures += 1
                print('FAIL (%s) kernjit %s --json:\n    %s' % (driver, shown, '\n    '.join(problems)))
                print('    stdout: ' + p.stdout.decode('utf-8', 'replace')[:1500])
                print('    stderr: ' + p.stderr.decode('utf-8', 'replace')[-1500:])
            else:
                print('ok (%s) kernjit %s --json' % (driver, shown))

        # every command listed by the help has a case
        listed = set()
        for parent, words in (('', []), ('run ', ['run']), ('bench ', ['bench'])):
            out = subprocess.run([kernjit] + words + ['--help'], stdout=subprocess.PIPE, env=envs['none']).stdout.decode()
            body = out.split(':\n', 2)[-1] if parent else out.split('commands:\n', 1)[1]
            for line in body.split('\n\n', 1)[0].splitlines():
                m = re.match(r'^  (\S+)  ', line)
                if m and m.group(1) not in ('run', 'bench', 'cache', 'tune'):
                    listed.add(parent + m.group(1))
        listed |= {'cache ' + a for a in ('path', 'list', 'stats', 'clear', 'push', 'pull')}
        listed |= {'tune', 'tune --show', 'tune --forget', '--version'}
        for c in sorted(listed - covered):
            failures += 1
            print('FAIL: kernjit %s has no case here: every command is checked' % c)
        print('%d cases, %d commands listed by the help; %d failure(s)' % (len(cases), len(listed), failures))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
