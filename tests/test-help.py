#!/usr/bin/env python3
"""The help as users read it: `kernjit --help` and the man page made from it (packaging/make-man.sh),
against the sources and the README.

- every command's --help (each command, each `run` family and `bench` benchmark) fits 80 columns;
- the environment: every KERNJIT_* variable the sources read (and CUDA_VISIBLE_DEVICES, which
  --device counts within) is listed in `kernjit --help`, in the man page's ENVIRONMENT and in the
  README's "Environment", and none of the three lists one that nothing reads;
- the man page, made here as the build makes it (when help2man is installed), with HOME and the
  cache variables pointing into an empty folder: nothing is created there (help2man runs
  --version and --help only), the page has NAME, DESCRIPTION, COMMANDS, EXIT STATUS, ENVIRONMENT
  and EXAMPLES, and each example is a line of the README (which tests/test-readme.sh runs).

usage: test-help.py --kernjit build/cli/kernjit --source-root . [--help2man /usr/bin/help2man]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

failures = []


def fail(message):
    failures.append(message)
    print('FAIL: ' + message)


def run(kernjit, *args, env=None):
    p = subprocess.run([kernjit] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    if p.returncode != 0:
        fail('kernjit %s exited %d' % (' '.join(args), p.returncode))
    return p.stdout.decode('utf-8')


def section(text, header):
    """The lines of a help section: after the line `header`, up to a blank line."""
    lines = text.split('\n')
    if header not in lines:
        fail('no section %r in:\n%s' % (header, text))
        return []
    out = []
    for line in lines[lines.index(header) + 1:]:
        if not line.strip():
            break
        out.append(line)
    return out


def variables_read(root):
    """Every KERNJIT_* variable the library and the CLI read: getenv's and kj__getenv_path's literal
    names, and the names a reader keeps in a variable (remote_config.c: `what = "KERNJIT_..."`)."""
    names = set()
    for path in glob.glob(os.path.join(root, 'src', '**', '*.c'), recursive=True) + \
            glob.glob(os.path.join(root, 'cli', '*.c')):
        with open(path, encoding='utf-8') as f:
            text = f.read()
        names |= set(re.findall(r'(?:getenv|kj__getenv_path)\("(KERNJIT_[A-Z0-9_]+)"\)', text))
        names |= set(re.findall(r'=\s*"(KERNJIT_[A-Z0-9_]+)";', text))
    return names


def check_environment(listed, where, needed):
    before = len(failures)
    for name in sorted(needed - listed):
        fail('%s does not list %s' % (where, name))
    for name in sorted(listed - needed):
        fail('%s lists %s, which nothing reads' % (where, name))
    if len(failures) == before:
        print('ok: %s lists the %d variables' % (where, len(needed)))


def readme_section(readme, title):
    m = re.search(r'^## %s\n(.*?)(?=^## )' % re.escape(title), readme, re.M | re.S)
    if not m:
        fail('README.md has no section "## %s"' % title)
        return ''
    return m.group(1)


def make_man(args, needed, readme):
    if not args.help2man:
        print('skip: the man page (no help2man)')
        return
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, 'home')
        os.mkdir(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith('KERNJIT_') and k != 'XDG_CACHE_HOME'}
        env['HOME'] = home
        page = os.path.join(tmp, 'kernjit.1')
        p = subprocess.run([os.path.join(args.source_root, 'packaging', 'make-man.sh'), args.kernjit, args.help2man,
                            os.path.join(args.source_root, 'packaging', 'kernjit.h2m'), page],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        if p.returncode != 0:
            fail('make-man.sh exited %d: %s' % (p.returncode, p.stdout.decode()))
            return
        made = [os.path.relpath(os.path.join(d, n), home) for d, ds, fs in os.walk(home) for n in ds + fs]
        if made:
            fail('making the man page created %s under HOME' % ', '.join(made))
        else:
            print('ok: making the man page touched no cache folder')
        with open(page, encoding='utf-8') as f:
            roff = f.read()
    sections = re.findall(r'^\.SH "?([^"\n]*)"?$', roff, re.M)
    for want in ('NAME', 'DESCRIPTION', 'COMMANDS', 'EXIT STATUS', 'ENVIRONMENT', 'EXAMPLES'):
        if want not in sections:
            fail('the man page has no %s section (it has %s)' % (want, ', '.join(sections)))
    for word in ('driver:', 'cache:', 'NVRTC 1'):
        if re.search(r'^%s' % re.escape(word), roff, re.M):
            fail('the man page holds the build machine\'s "%s" line' % word)
    environment = re.search(r'^\.SH ENVIRONMENT\n(.*?)(?=^\.SH )', roff, re.M | re.S)
    listed = set(re.findall(r'^\.B ([A-Z][A-Z0-9_]+)$', environment.group(1) if environment else '', re.M))
    check_environment(listed, 'the man page', needed)
    examples = re.search(r'^\.SH EXAMPLES\n(.*?)(?=^\.SH |\Z)', roff, re.M | re.S)
    lines = re.findall(r'^\.B (kernjit .*)$', examples.group(1) if examples else '', re.M)
    if not lines:
        fail('the man page has no example')
    for line in lines:
        if not re.search(r'^    %s( |$)' % re.escape(line), readme, re.M):
            fail('the man page\'s example "%s" is no line of the README (which tests them)' % line)
    print('ok: the man page (%d examples)' % len(lines))


def check_widths(kernjit, top):
    """Every --help, line by line, within 80 columns."""
    helps = {'kernjit --help': top}
    for cmd in [line.split()[0] for line in section(top, 'commands:')]:
        text = run(kernjit, cmd, '--help')
        helps['kernjit %s --help' % cmd] = text
        sub = {'run': 'kernels:', 'bench': 'benchmarks:'}.get(cmd)
        for name in [line.split()[0] for line in section(text, sub)] if sub else []:
            helps['kernjit %s %s --help' % (cmd, name)] = run(kernjit, cmd, name, '--help')
    if len(helps) < 20:
        fail('only %d helps found: %s' % (len(helps), ', '.join(helps)))
    before = len(failures)
    for what, text in helps.items():
        for line in text.split('\n'):
            if len(line) > 80:
                fail('%s has a line of %d columns: %s' % (what, len(line), line))
    if len(failures) == before:
        print('ok: %d helps fit 80 columns' % len(helps))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kernjit', required=True)
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--help2man', default='')
    args = ap.parse_args()
    top = run(args.kernjit, '--help')

    check_widths(args.kernjit, top)
    needed = variables_read(args.source_root)
    if 'KERNJIT_CACHE_DIR' not in needed or len(needed) < 10:
        fail('the scan of the sources found too few variables: %s' % sorted(needed))
    needed.add('CUDA_VISIBLE_DEVICES')
    listed = {line.split()[0] for line in section(top, 'environment:') if re.match(r'^  [A-Z]', line)}
    check_environment(listed, 'kernjit --help', needed)
    with open(os.path.join(args.source_root, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    env_section = readme_section(readme, 'Environment')
    listed = {n for n in re.findall(r'`([A-Z][A-Z0-9_]+)(?:=[^`]*)?`', env_section)
              if n.startswith('KERNJIT_') or n == 'CUDA_VISIBLE_DEVICES'}
    check_environment(listed, 'the README', needed)
    make_man(args, needed, readme)

    if failures:
        print('%d failure(s)' % len(failures))
        return 1
    print('all help checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
