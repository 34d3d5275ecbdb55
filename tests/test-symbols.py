#!/usr/bin/env python3
"""The libraries export exactly the public API.

usage: test-symbols.py --header include/kernjit.h [--header ...] [--testing testing/kjtest.h]
                       [--map src/kernjit.map] [--layout src/base/layout.c]
                       [--shared libkernjit.so] [--static libkernjit.a]

The intended set is every function the public headers declare with KJ_API. The version script
(--map) names exactly that set, each name once and no pattern, so that a function added to a header
must be added to the map too. The shared library's dynamic symbol table must hold exactly that set (a
function declared but not exported, or exported but not declared, fails), each under the version
node the map gives it.

Every struct of the public headers that begins with `size_t size` (a caller's sized struct) has its
layout assertion in src/base/layout.c (--layout), and that file asserts nothing else. The static archive may
also hold the kj__ internals, but no other global name: a program linking it statically must not
meet a name of ours outside the kj_ prefix.

The CPU oracles of testing/kjtest.h (--testing) are not API: testing/ defines them, and neither
library may define or export them, nor a public header declare them.
"""
import argparse
import re
import subprocess
import sys

def version_nodes(path):
    """The names the version script exports, each with its node: {name: node}; and the problems."""
    with open(path) as f:
        text = re.sub(r'/\*.*?\*/', ' ', f.read(), flags=re.S)
    nodes, problems = {}, []
    for node, body in re.findall(r'([A-Za-z_][A-Za-z0-9_.]*)\s*\{(.*?)\}\s*[A-Za-z0-9_.]*\s*;', text, flags=re.S):
        glob = re.search(r'global\s*:(.*?)(?:local\s*:|$)', body, flags=re.S)
        for name in (n.strip() for n in (glob.group(1) if glob else '').split(';')):
            if not name:
                continue
            if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name):
                problems.append('%s: a pattern in the global list of %s: name each function' % (name, path))
            elif name in nodes:
                problems.append('%s: listed twice in %s' % (name, path))
            else:
                nodes[name] = node
    if not nodes:
        problems.append('no exported name found in %s' % path)
    return nodes, problems


def check_map(path, intended):
    nodes, problems = version_nodes(path)
    for n in sorted(intended - set(nodes)):
        problems.append('%s: declared KJ_API in a public header but not listed in %s' % (n, path))
    for n in sorted(set(nodes) - intended):
        problems.append('%s: listed in %s but not declared KJ_API in a public header' % (n, path))
    print('%s: %d names in %d node(s)' % (path, len(nodes), len(set(nodes.values()))))
    return nodes, problems


def sized_structs(header_paths):
    """The structs that begin with `size_t size`: the callers' sized structs."""
    names = set()
    for path in header_paths:
        with open(path) as f:
            text = re.sub(r'/\*.*?\*/', ' ', f.read(), flags=re.S)
        names |= set(re.findall(r'typedef\s+struct\s+\w+\s*\{\s*size_t\s+size\s*;[^}]*\}\s*(\w+)\s*;', text))
    return names


def check_layout(path, header_paths):
    with open(path) as f:
        text = re.sub(r'/\*.*?\*/', ' ', f.read(), flags=re.S)
    asserted = re.findall(r'^KJ__NO_TAIL_PADDING\(\s*(\w+)\s*,', text, flags=re.M)
    structs = sized_structs(header_paths)
    problems = ['%s: asserted twice in %s' % (n, path) for n in sorted({n for n in asserted if asserted.count(n) > 1})]
    problems += ['%s: a sized struct of the public headers without its layout assertion in %s' % (n, path)
                 for n in sorted(structs - set(asserted))]
    problems += ['%s: asserted in %s but not a sized struct of the public headers' % (n, path)
                 for n in sorted(set(asserted) - structs)]
    if not structs:
        problems.append('no sized struct found in the public headers')
    print('%s: %d sized structs, %d asserted' % (path, len(structs), len(asserted)))
    return problems


def declared(header_paths):
    names = []
    for path in header_paths:
        with open(path) as f:
            text = f.read()
        # comments may mention KJ_API or parentheses; only code counts
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        text = re.sub(r'#[^\n]*(\\\n[^\n]*)*', ' ', text)  # the KJ_API definition itself
        for m in re.finditer(r'\bKJ_API\b([^;(]*)\(', text):
            ident = re.search(r'([A-Za-z_][A-Za-z0-9_]*)\s*$', m.group(1))
            if not ident:
                sys.exit('test-symbols: cannot read the declaration after KJ_API: %r' % m.group(0))
            names.append(ident.group(1))
    dups = sorted({n for n in names if names.count(n) > 1})
    return set(names), dups


def functions(path):
    """The functions a header (without KJ_API: testing/'s) declares."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'#[^\n]*', ' ', text)
    return set(re.findall(r'\b([a-z_][a-z0-9_]*)\s*\([^;{]*\)\s*(?:__attribute__\(\(.*?\)\))?\s*;', text))


def nm(args):
    out = subprocess.run(['nm'] + args, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            rows.append((parts[1], parts[2]))
    return rows


def check_shared(path, intended, nodes):
    problems = []
    exported = {}
    for kind, sym in nm(['-D', '--defined-only', '--with-symbol-versions', path]):
        if kind == 'A':  # the version node's own absolute symbol
            continue
        name, _, version = sym.partition('@')
        exported[name] = version.lstrip('@')
    names = set(exported)
    for n in sorted(intended - names):
        problems.append('%s: declared KJ_API in the header but not exported (not defined, or not visible)' % n)
    for n in sorted(names - intended):
        problems.append('%s: exported but not declared KJ_API in the public header' % n)
    for n in sorted(names & intended):
        if nodes and exported[n] != nodes.get(n):
            problems.append('%s: exported with version %r, expected %s' % (n, exported[n] or 'none', nodes.get(n)))
    print('%s: %d symbols exported, %d declared' % (path, len(names), len(intended)))
    return problems


# Names a sanitizer build (-Db_sanitize) adds beside each instrumented global: the instrumentation's,
# not the library's.
SANITIZER_PREFIXES = ('__odr_asan', '__asan', '__ubsan', '__tsan', '__sancov')


def check_static(path, intended):
    problems = []
    defined = {sym for kind, sym in nm(['-g', '--defined-only', path]) if kind not in 'Uw'}
    for n in sorted(defined):
        if n.startswith(SANITIZER_PREFIXES):
            continue
        if not n.startswith('kj_'):
            problems.append('%s: a global name outside the kj_ prefix in the static library' % n)
        elif not n.startswith('kj__') and n not in intended:
            problems.append('%s: a kj_ name in the static library that the header does not declare '
                            '(internal names are kj__)' % n)
    for n in sorted(intended - defined):
        problems.append('%s: declared in the header but not defined in the static library' % n)
    print('%s: %d global names' % (path, len(defined)))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--header', action='append', required=True)
    ap.add_argument('--testing')
    ap.add_argument('--map')
    ap.add_argument('--layout')
    ap.add_argument('--shared')
    ap.add_argument('--static')
    a = ap.parse_args()
    public, dups = declared(a.header)
    problems = ['%s: declared twice in the public headers' % n for n in dups]
    if not public:
        problems.append('no KJ_API declaration found in %s' % ', '.join(a.header))
    nodes = {}
    if a.map:
        nodes, found = check_map(a.map, public)
        problems += found
    if a.layout:
        problems += check_layout(a.layout, a.header)
    oracles = set()
    if a.testing:
        oracles = functions(a.testing)
        if not oracles:
            problems.append('no function declaration found in %s' % a.testing)
        problems += ['%s: declared both in %s and in a public header' % (n, a.testing) for n in sorted(oracles & public)]
        print('the oracles of %s, not in the libraries: %s' % (a.testing, ', '.join(sorted(oracles))))
    if a.shared:
        problems += check_shared(a.shared, public, nodes)
        exported = {sym.partition('@')[0] for kind, sym in nm(['-D', '--defined-only', a.shared])}
        problems += ['%s: an oracle of %s, exported by %s' % (n, a.testing, a.shared) for n in sorted(oracles & exported)]
    if a.static:
        problems += check_static(a.static, public)
        defined = {sym for kind, sym in nm(['-g', '--defined-only', a.static]) if kind not in 'Uw'}
        problems += ['%s: an oracle of %s, defined in %s' % (n, a.testing, a.static) for n in sorted(oracles & defined)]
    for p in problems:
        print('FAIL: ' + p)
    if not problems:
        print('ok: the exported symbols are the %d functions of the public headers' % len(public))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
