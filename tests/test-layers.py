#!/usr/bin/env python3
"""The folders of src/ are the layers, and no layer reaches up.

usage: test-layers.py --source SOURCE_DIR --archive libkernjit_internal.a

Bottom to top: base, jit, cache, runtime, tunedb, ops, tune; every file of src/ lies in one of them.
A file may use its own folder and the folders below it (allowed()), checked three ways:
  includes  every #include "..." in src/ names a public header (kernjit.h, kernjit/...) or a path
            from src/ in an allowed folder; cli/, testing/ and examples/ include only the public
            headers and their own folder (cli/ also testing/'s headers, testing/ also the *_cpu.h
            of src/ops);
  symbols   nm on each object of the internal archive: every kj symbol it needs from the library is
            defined by an object of an allowed folder (macros such as KJ_CU hide references that
            the includes do not show);
  cycles    no cycle between the modules (a .c with its .h) of one folder, by includes and symbols.
The *_cpu.c files of src/ops (host code that testing/ builds into programs on the installed library,
which exports no internal name) include only public headers, other *_cpu.h and kernels_src/'s, and
need no kj__ symbol.
A kernel family (src/ops/<family>/) sees ops/ (ops.h: the families' one door to the layers below),
its own folder and ops/cdp/ (the dynamic-parallelism helper), and the headers of kernels_src/ that
hold the structs its kernels share with the host; of the tuner, only tune/targets.c names the
families. ALLOWLIST holds the violations that the tree has today, each with what ends
it; an entry that no longer matches fails too, so that the list stays exact.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

LAYERS = ['base', 'jit', 'cache', 'runtime', 'tunedb', 'ops', 'tune']
HELPERS = {'ops/cdp'}       # family folders that every family may use
REGISTRY = 'tune/targets.c'  # the one file of the tuner that names the families
DEVICE = 'kernels_src'       # the structs a family's host side shares with its kernels
CPU = re.compile(r'^ops/.*_cpu\.[ch]$')  # public API only: testing/ links them too

# Today's violations -> what removes them. Keys: "include FILE -> HEADER", "symbols FILE -> FILE",
# "cycle MODULE MODULE ..." (paths from src/).
OPS_H = 'ops include only ops/ops.h, which gives them what they need of the layers below'
RT_FIELDS = 'ops read rt-> fields and the driver table; ops/ops.h gives enter, slots, device info, memsets'
TUNEDB = 'the "explicit, else tuned, else default" rule moves to one kj__config_resolve() in ops/'
TARGETS = ('the tuning target interface and its helpers (rotation, replicate, compare, define lookup) '
           'move from tune/ to ops/ops.h')
ORACLES = ('the CPU oracles move to testing/; the library keeps only what it needs itself (the reduce '
           'target\'s check, kj__mb_config_make)')
TYPES = 'kj_op/kj_type move from ops/reduce/reduce.c to ops/types.c'
ALLOWLIST = {}


def folder_of(path):
    """The folder that a path from src/ belongs to: 'jit', 'ops', 'ops/reduce'."""
    parts = path.split('/')
    if parts[0] == 'ops' and len(parts) > 2:
        return 'ops/' + parts[1]
    return parts[0]


def layer_of(folder):
    return folder.split('/')[0]


def allowed(src_file, target_folder, include):
    """Whether the file (a path from src/) may include a header of (include) or use a symbol of
    target_folder. A family includes only ops/ (ops.h), but what ops.h declares may come from below."""
    folder = folder_of(src_file)
    if target_folder == folder:
        return True
    if folder not in LAYERS and layer_of(folder) != 'ops':
        return False  # a file outside the layers (reported as such) may use nothing
    if target_folder == DEVICE:
        return folder.startswith('ops/')
    if target_folder not in LAYERS and layer_of(target_folder) != 'ops':
        return False  # testing/, cli/: never from the library
    if target_folder.startswith('ops/'):  # a family: its helpers for families, else only the registry
        return target_folder in HELPERS if folder.startswith('ops/') else src_file == REGISTRY
    if folder.startswith('ops/') and include:
        return target_folder == 'ops'
    return LAYERS.index(layer_of(target_folder)) <= LAYERS.index(layer_of(folder))


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes_of(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return INCLUDE.findall(f.read())


def is_public(name):
    return name == 'kernjit.h' or name.startswith('kernjit/')


def library_files(root):
    src = os.path.join(root, 'src')
    out = []
    for d, _, files in os.walk(src):
        for f in files:
            if f.endswith(('.c', '.h')):
                out.append(os.path.relpath(os.path.join(d, f), src))
    return sorted(out)


def check_includes(root, edges):
    """Violations of the include rule in src/; adds module edges for the cycle check."""
    found = {}
    for rel in library_files(root):
        if folder_of(rel) not in LAYERS and layer_of(folder_of(rel)) != 'ops':
            found['file %s' % rel] = 'not in a layer folder: it goes into the lowest layer that has what it uses'
        for name in includes_of(os.path.join(root, 'src', rel)):
            if is_public(name):
                continue
            if os.path.isfile(os.path.join(root, 'src', name)):
                target = name
                edges.setdefault(module(rel), set()).add(module(name))
            elif os.path.isfile(os.path.join(root, name)):
                target = name  # a folder beside src/ (testing/)
            else:
                found['include %s -> %s' % (rel, name)] = 'not a path from src/ (write "layer/file.h")'
                continue
            if not allowed(rel, folder_of(target), True):
                found['include %s -> %s' % (rel, target)] = '%s may not use %s' % (folder_of(rel), folder_of(target))
            elif CPU.match(rel) and not CPU.match(target) and folder_of(target) != DEVICE:
                found['include %s -> %s' % (rel, target)] = 'a *_cpu file uses the public API alone'
    return found


def check_outside(root):
    """cli/, testing/ and examples/ include only the public headers and their own folder."""
    found = {}
    for top, also in (('cli', ['testing']), ('testing', []), ('examples', [])):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(('.c', '.h', '.cpp', '.cu')):
                    continue
                path = os.path.join(d, f)
                for name in includes_of(path):
                    here = [d] + [os.path.join(root, a) for a in also]
                    if is_public(name) or any(os.path.isfile(os.path.join(h, name)) for h in here):
                        continue
                    if top == 'testing' and CPU.match(name) and os.path.isfile(os.path.join(root, 'src', name)):
                        continue
                    found['include %s -> %s' % (os.path.relpath(path, root), name)] = \
                        '%s/ includes only the public headers and its own folder' % top
    return found


def module(rel):
    return os.path.splitext(rel)[0]


def nm_archive(archive):
    """{member: (defined kj symbols, undefined kj symbols)} of a static archive."""
    out = subprocess.run(['nm', archive], check=True, capture_output=True, text=True).stdout
    members, cur = {}, None
    for line in out.splitlines():
        if line.endswith(':') and ' ' not in line:
            cur = os.path.basename(line[:-1])  # a thin archive names its members by their paths
            members[cur] = (set(), set())
            continue
        parts = line.split()
        if cur is None or not parts or not parts[-1].startswith('kj'):
            continue
        if len(parts) == 2 and parts[0] == 'U':
            members[cur][1].add(parts[1])
        elif len(parts) == 3 and parts[1].isupper():
            members[cur][0].add(parts[2])
    return members


def check_symbols(root, archive, edges):
    """Violations of the symbol rule; adds module edges for the cycle check."""
    # meson names an object after its source's path from src/, with '/' as '_'
    by_member = {rel.replace('/', '_') + '.o': rel for rel in library_files(root) if rel.endswith('.c')}
    members = nm_archive(archive)
    found, owner, files = {}, {}, {}
    for member in members:
        if member in by_member:
            files[member] = by_member[member]
        elif 'kernels_embedded' in member:
            files[member] = 'jit/kernels_embedded.c'  # generated: the embedded sources that jit/source.c reads
        else:
            found['object %s' % member] = 'an object of the archive with no source in src/'
            continue
        for s in members[member][0]:
            owner[s] = files[member]
    for member, rel in files.items():
        needs = {}
        for s in members[member][1]:
            if s in owner and owner[s] != rel:
                needs.setdefault(owner[s], []).append(s)
        for target, syms in sorted(needs.items()):
            edges.setdefault(module(rel), set()).add(module(target))
            internal = sorted(s for s in syms if s.startswith('kj__'))
            if not allowed(rel, folder_of(target), False):
                found['symbols %s -> %s' % (rel, target)] = '%s may not use %s: %s' % (
                    folder_of(rel), folder_of(target), ', '.join(sorted(syms)))
            elif CPU.match(rel) and internal:
                found['symbols %s -> %s' % (rel, target)] = 'a *_cpu file needs no kj__ symbol: %s' % (
                    ', '.join(internal))
    return found


def check_cycles(edges):
    """Strongly connected components of more than one module inside one folder (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if folder_of(w) != folder_of(v):
                continue  # across folders: the include and symbol rules judge those
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return {'cycle ' + ' '.join(c): 'these modules use each other' for c in comps}


def self_test():
    """The checks find what they must on a small tree made for it: a lower layer including an upper
    one, a family reaching into another and below ops/, a cycle, a file outside the layers."""
    with tempfile.TemporaryDirectory() as d:
        files = {
            'src/base/a.c': '#include "runtime/r.h"\n',
            'src/runtime/r.h': '',
            'src/ops/x/x.c': '#include "ops/y/y.h"\n#include "runtime/r.h"\n#include "ops/cdp/c.h"\n'
                             '#include "kernels_src/s.h"\n',
            'src/tune/t.c': '#include "kernels_src/s.h"\n',
            'kernels_src/s.h': '',
            'src/ops/y/y_cpu.c': '#include "ops/y/y_cpu.h"\n#include "kernels_src/s.h"\n#include "ops/ops.h"\n',
            'src/ops/y/y_cpu.h': '',
            'src/ops/ops.h': '',
            'testing/o.c': '#include "ops/y/y_cpu.h"\n#include "ops/y/y.h"\n',
            'src/ops/y/y.h': '',
            'src/ops/cdp/c.h': '',
            'src/jit/p.c': '#include "jit/q.h"\n',
            'src/jit/q.c': '#include "jit/p.h"\n',
            'src/jit/p.h': '',
            'src/jit/q.h': '',
            'src/loose.c': '',
        }
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), 'w') as f:
                f.write(text)
        edges = {}
        found = set(check_includes(d, edges)) | set(check_outside(d)) | set(check_cycles(edges))
    want = {'include base/a.c -> runtime/r.h', 'include ops/x/x.c -> ops/y/y.h',
            'include ops/x/x.c -> runtime/r.h', 'include tune/t.c -> kernels_src/s.h', 'cycle jit/p jit/q',
            'file loose.c', 'include ops/y/y_cpu.c -> ops/ops.h', 'include testing/o.c -> ops/y/y.h'}
    if found != want:
        sys.exit('test-layers: the self-test found %s, expected %s' % (sorted(found), sorted(want)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--archive', required=True)
    a = ap.parse_args()
    self_test()
    edges = {}
    found = check_includes(a.source, edges)
    found.update(check_outside(a.source))
    found.update(check_symbols(a.source, a.archive, edges))
    found.update(check_cycles(edges))
    new = sorted(k for k in found if k not in ALLOWLIST)
    stale = sorted(k for k in ALLOWLIST if k not in found)
    for k in sorted(k for k in found if k in ALLOWLIST):
        print('allowed for now: %s (%s; to end it: %s)' % (k, found[k], ALLOWLIST[k]))
    for k in new:
        print('FAIL: %s: %s' % (k, found[k]))
    for k in stale:
        print('FAIL: %s: in the allowlist but no longer found: remove it from ALLOWLIST' % k)
    if new or stale:
        return 1
    print('ok: no layer reaches up beyond the %d allowlisted violations' % len(ALLOWLIST))
    return 0


if __name__ == '__main__':
    sys.exit(main())
