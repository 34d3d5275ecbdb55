#!/usr/bin/env python3
"""The folders of src/ are the layers, and no layer reaches up.

usage: test-layers.py --source SOURCE_DIR --archive libkernjit_internal.a [--self-test]

Bottom to top: base, jit, cache, runtime, tunedb, ops, tune; every file of src/ lies in one of them.
A file may use its own folder and the folders below it (allowed()), checked three ways:
  includes  every #include, "..." and <...> alike, is resolved as the compiler does (a "..." first
            beside the including file, then the include dirs of its folder: INCLUDE_DIRS) and judged
            by the file it finds; a <...> found in none of them is a system header. An include that
            contains '..' is refused, and in src/ a project header is spelled by its path from src/.
            src/ includes the public headers (kernjit.h, kernjit/...) and headers of allowed folders;
            cli/, testing/ and examples/ include only the public headers and their own folder (cli/
            also testing/'s headers, testing/ also the *_cpu.h of src/ops);
  symbols   nm on each object of the internal archive: every kj symbol it needs from the library is
            defined by an object of an allowed folder (macros such as KJ_CU hide references that
            the includes do not show);
  cycles    no cycle between the modules (a .c with its .h) of one folder, by includes and symbols.
A header whose text holds the line PRIVATE_MARK ("/* layers: private */") is private to its folder:
only the files of that folder include it. tests/ (white-box unit tests) is not checked.
The *_cpu.c files of src/ops (host code that testing/ builds into programs on the installed library,
which exports no internal name) include only public headers, other *_cpu.h and kernels_src/'s, and
need no kj__ symbol.
A kernel family (src/ops/<family>/) sees ops/ (ops.h: the families' one door to the layers below),
its own folder and ops/cdp/ (the dynamic-parallelism helper), and the headers of kernels_src/ that
hold the structs its kernels share with the host; of the tuner, only tune/targets.c names the
families. There are no exceptions: every finding fails.
Every run first checks the checker on a small made-up tree and its nm reader on known nm output;
--self-test instead copies the source tree to a temporary folder, checks that the copy passes, then
applies each of MUTATIONS to it in turn and checks that the run fails naming the file and the rule.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

LAYERS = ['base', 'jit', 'cache', 'runtime', 'tunedb', 'ops', 'tune']
HELPERS = {'ops/cdp'}       # family folders that every family may use
REGISTRY = 'tune/targets.c'  # the one file of the tuner that names the families
DEVICE = 'kernels_src'       # the structs a family's host side shares with its kernels
CPU = re.compile(r'^ops/.*_cpu\.[ch]$')  # public API only: testing/ links them too



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


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]*)"|<([^>\n]*)>)', re.M)
# The include dirs (from the source root) of each top folder, as its meson.build gives them: src/
# (meson.build's inc), cli/ (kernjit_dep, kjtest_cli_dep), testing/, examples/ (pkg-config).
INCLUDE_DIRS = {
    'src': ['include', 'include/compat', 'src', '.'],
    'cli': ['include', 'include/compat', 'testing'],
    'testing': ['src', '.', 'include', 'include/compat'],
    'examples': ['include', 'include/compat'],
}
PRIVATE_MARK = re.compile(r'^/\* layers: private \*/$', re.M)


def includes_of(path):
    """[(name, quoted)] of a file's #include lines: quoted for "...", not for <...>."""
    with open(path, encoding='utf-8', errors='replace') as f:
        return [(q or a, bool(q)) for q, a in INCLUDE.findall(f.read())]


def is_public(name):
    return name == 'kernjit.h' or name.startswith('kernjit/')


def resolve(root, path, name, quoted):
    """The file (from root) that #include of name in path (from root) reads, or None when the
    project has none: a "..." looks beside the including file first, then the include dirs; then
    those of src/, so that a header of the project is judged even where the build would not find it."""
    dirs = ([os.path.dirname(path)] if quoted else []) + INCLUDE_DIRS[path.split('/')[0]] + INCLUDE_DIRS['src']
    for d in dirs:
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


_private = {}


def is_private(root, target):
    if target not in _private:
        with open(os.path.join(root, target), encoding='utf-8', errors='replace') as f:
            _private[target] = bool(PRIVATE_MARK.search(f.read()))
    return _private[target]


def judge_include(root, path, name, quoted):
    """(key, target, why) of #include of name in path (from root): key names the include ("FILE ->
    NAME", FILE from src/ in src/, else from root), None for a system header; target is the file it
    reads (from root) when found; why is what is wrong with it, None when nothing is."""
    key = '%s -> %s' % (path[4:] if path.startswith('src/') else path, name)
    if '..' in name:
        return key, None, "an include contains no '..': name the header through the include dirs"
    if is_public(name):
        return key, None, None
    target = resolve(root, path, name, quoted)
    if target is None:
        if quoted:
            return key, None, 'found neither beside the file nor in the include dirs %s' % (
                ', '.join(INCLUDE_DIRS[path.split('/')[0]]))
        return None, None, None  # a system header
    if target.startswith('include/'):
        return key, None, None
    top = path.split('/')[0]
    if target.startswith('src/'):
        folder = folder_of(target[4:])
    else:
        folder = target.split('/')[0]
    if is_private(root, target):
        mine = folder_of(path[4:]) if top == 'src' else top
        if mine != folder:
            return key, target, '%s is private to %s/ (it holds "/* layers: private */")' % (target, folder)
    if top != 'src':
        if folder == top or (top == 'cli' and folder == 'testing') or (
                top == 'testing' and target.startswith('src/') and CPU.match(target[4:])):
            return key, target, None
        return key, target, '%s/ includes only the public headers and its own folder' % top
    spelled = target[4:] if target.startswith('src/') else target
    if name != spelled:
        return key, target, 'spell it "%s", its path from src/' % spelled
    return key, target, None


def check_includes(root, edges):
    """Violations of the include rule in src/; adds module edges for the cycle check."""
    found = {}
    for rel in library_files(root):
        if folder_of(rel) not in LAYERS and layer_of(folder_of(rel)) != 'ops':
            found['file %s' % rel] = 'not in a layer folder: it goes into the lowest layer that has what it uses'
        for name, quoted in includes_of(os.path.join(root, 'src', rel)):
            key, target, why = judge_include(root, 'src/' + rel, name, quoted)
            if key is None:
                continue
            if why is None and target is not None:
                if target.startswith('src/'):
                    target = target[4:]
                    edges.setdefault(module(rel), set()).add(module(target))
                if not allowed(rel, folder_of(target), True):
                    why = '%s may not use %s' % (folder_of(rel), folder_of(target))
                elif CPU.match(rel) and not CPU.match(target) and folder_of(target) != DEVICE:
                    why = 'a *_cpu file uses the public API alone'
            if why:
                found['include ' + key] = why
    return found


def library_files(root):
    src = os.path.join(root, 'src')
    out = []
    for d, _, files in os.walk(src):
        for f in files:
            if f.endswith(('.c', '.h')):
                out.append(os.path.relpath(os.path.join(d, f), src))
    return sorted(out)


def check_outside(root):
    """cli/, testing/ and examples/ include only the public headers and their own folder."""
    found = {}
    for top in ('cli', 'testing', 'examples'):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h', '.cpp', '.cu', '.cuh')):
                    continue
                path = os.path.relpath(os.path.join(d, f), root)
                for name, quoted in includes_of(os.path.join(root, path)):
                    key, _, why = judge_include(root, path, name, quoted)
                    if key is not None and why:
                        found['include ' + key] = why
    return found


def module(rel):
    return os.path.splitext(rel)[0]


def parse_nm(out):
    """{member: (defined kj symbols, undefined kj symbols)} from the text of nm on an archive."""
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


def nm_archive(archive):
    return parse_nm(subprocess.run(['nm', archive], check=True, capture_output=True, text=True).stdout)


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


def write_tree(d, files):
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), 'w') as f:
            f.write(text)


def self_test():
    """The checks find what they must on a small tree made for it: a lower layer including an upper
    one, a family reaching into another and below ops/ (by "..." and by <...>), a cycle, a file
    outside the layers, '..', a header not spelled from src/ or not found, a private header, cli/
    reaching into src/; and the nm reader parses known nm output."""
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, {
            'src/base/a.c': '#include "runtime/r.h"\n',
            'src/base/b.c': '#include "nowhere.h"\n#include <stdio.h>\n',
            'src/runtime/r.h': '',
            'src/runtime/r.c': '#include "runtime/priv.h"\n#include "runtime/r.h"\n',
            'src/runtime/priv.h': '/* The runtime\'s own. */\n/* layers: private */\n',
            'src/tune/u.c': '#include "runtime/priv.h"\n#include "runtime/r.h"\n',
            'src/ops/x/x.c': '#include "ops/y/y.h"\n#include "runtime/r.h"\n#include "ops/cdp/c.h"\n'
                             '#include "kernels_src/s.h"\n',
            'src/ops/z/z.c': '#include <runtime/r.h>\n#include <ops/ops.h>\n',
            'src/tune/t.c': '#include "kernels_src/s.h"\n',
            'kernels_src/s.h': '',
            'src/ops/y/y_cpu.c': '#include "ops/y/y_cpu.h"\n#include "kernels_src/s.h"\n#include "ops/ops.h"\n',
            'src/ops/y/y_cpu.h': '',
            'src/ops/ops.h': '',
            'testing/o.c': '#include "ops/y/y_cpu.h"\n#include "ops/y/y.h"\n',
            'testing/kjtest.h': '',
            'src/ops/y/y.h': '',
            'src/ops/cdp/c.h': '',
            'src/jit/p.c': '#include "jit/q.h"\n',
            'src/jit/q.c': '#include "jit/p.h"\n',
            'src/jit/p.h': '',
            'src/jit/q.h': '',
            'src/jit/s.c': '#include "p.h"\n#include "../jit/q.h"\n',
            'src/loose.c': '',
            'include/kernjit/kernjit.h': '',
            'cli/c.c': '#include "../src/runtime/r.h"\n#include <runtime/r.h>\n#include "kjtest.h"\n'
                       '#include <kernjit/kernjit.h>\n#include <cuda.h>\n',
        })
        edges = {}
        found = set(check_includes(d, edges)) | set(check_outside(d)) | set(check_cycles(edges))
    want = {'include base/a.c -> runtime/r.h', 'include ops/x/x.c -> ops/y/y.h',
            'include ops/x/x.c -> runtime/r.h', 'include tune/t.c -> kernels_src/s.h', 'cycle jit/p jit/q',
            'file loose.c', 'include ops/y/y_cpu.c -> ops/ops.h', 'include testing/o.c -> ops/y/y.h',
            'include base/b.c -> nowhere.h', 'include tune/u.c -> runtime/priv.h',
            'include ops/z/z.c -> runtime/r.h', 'include jit/s.c -> p.h', 'include jit/s.c -> ../jit/q.h',
            'include cli/c.c -> ../src/runtime/r.h', 'include cli/c.c -> runtime/r.h'}
    if found != want:
        sys.exit('test-layers: the self-test found %s, expected %s' % (sorted(found), sorted(want)))
    nm = ('\n'
          'src/libkernjit_internal.a.p/base_util.c.o:\n'
          '0000000000000000 T kj__buf_append\n'
          '                 U kj__fail\n'
          '                 U memcpy\n'
          '0000000000000010 t kj__static_helper\n'
          '0000000000000020 D kj_public_table\n'
          '                 w kj__weak_maybe\n'
          '\n'
          'jit_key.c.o:\n'
          '0000000000000008 B kj__key_count\n'
          '                 U kj__buf_append\n')
    want_nm = {'base_util.c.o': ({'kj__buf_append', 'kj_public_table'}, {'kj__fail'}),
               'jit_key.c.o': ({'kj__key_count'}, {'kj__buf_append'})}
    if parse_nm(nm) != want_nm:
        sys.exit('test-layers: the nm reader gave %s, expected %s' % (parse_nm(nm), want_nm))


# Each mutation: (file from root, text to add after its first #include line, what the run must print).
MUTATIONS = [
    ('src/ops/vector_add/vector_add.c',
     '#include <runtime/runtime.h>\nstatic void mutant(kj_runtime *rt) { rt->cu->cuCtxSynchronize(); }\n',
     'FAIL: include ops/vector_add/vector_add.c -> runtime/runtime.h: src/runtime/runtime.h is private to runtime/'),
    ('src/ops/vector_add/vector_add.c', '#include <runtime/context.h>\n',
     'FAIL: include ops/vector_add/vector_add.c -> runtime/context.h: ops/vector_add may not use runtime'),
    ('cli/cmd_info.c', '#include "../src/runtime/runtime.h"\n',
     "FAIL: include cli/cmd_info.c -> ../src/runtime/runtime.h: an include contains no '..'"),
    ('cli/cmd_info.c', '#include <runtime/context.h>\n',
     'FAIL: include cli/cmd_info.c -> runtime/context.h: cli/ includes only the public headers'),
    ('src/tune/tune.c', '#include "runtime/cuda_loader.h"\n',
     'FAIL: include tune/tune.c -> runtime/cuda_loader.h: src/runtime/cuda_loader.h is private to runtime/'),
]
TREE = ['src', 'include', 'kernels_src', 'cli', 'testing', 'examples']


def mutation_test(source, archive):
    """The real tree, copied, passes; each mutation of the copy fails, naming its file and rule."""
    def run(root):
        r = subprocess.run([sys.executable, os.path.abspath(__file__), '--source', root, '--archive', archive],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    with tempfile.TemporaryDirectory() as d:
        for top in TREE:
            shutil.copytree(os.path.join(source, top), os.path.join(d, top))
        rc, out = run(d)
        if rc != 0:
            sys.exit('test-layers: the copy of the tree fails before any mutation:\n' + out)
        for rel, text, want in MUTATIONS:
            path = os.path.join(d, rel)
            with open(path) as f:
                orig = f.read()
            at = INCLUDE.search(orig).end() + 1
            with open(path, 'w') as f:
                f.write(orig[:at] + text + orig[at:])
            rc, out = run(d)
            with open(path, 'w') as f:
                f.write(orig)
            if rc != 1 or want not in out:
                sys.exit('test-layers: with %r added to %s the run gave %d and printed\n%s\nexpected 1 and %r'
                         % (text, rel, rc, out, want))
            print('ok: caught %s' % want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--archive', required=True)
    ap.add_argument('--self-test', action='store_true',
                    help='check that the run catches each of MUTATIONS on a copy of the tree')
    a = ap.parse_args()
    self_test()
    if a.self_test:
        mutation_test(a.source, a.archive)
        return 0
    edges = {}
    found = check_includes(a.source, edges)
    found.update(check_outside(a.source))
    found.update(check_symbols(a.source, a.archive, edges))
    found.update(check_cycles(edges))
    for k in sorted(found):
        print('FAIL: %s: %s' % (k, found[k]))
    if found:
        return 1
    print('ok: no layer reaches up')
    return 0


if __name__ == '__main__':
    sys.exit(main())
