#!/usr/bin/env python3
"""kernjit from Python through its C ABI (ctypes): compile a kernel of our own, and with a GPU launch
it on numpy arrays copied to the device and check the result.

    python3 examples/python/vadd.py [PATH/TO/libkernjit.so] [--n N]

The library is the one given, else $KERNJIT_LIB, else libkernjit.so.2 (the soname of the ABI these
structures mirror) as the system finds it, else the one this checkout builds (build/src/). Without a
GPU (or a driver) it compiles the kernel and says so; numpy is needed only to launch. Only
kernjit/kernjit.h's own functions are used; the structures below mirror its structs from their first
field (size) up to the last one this program uses. size holds the mirror's own sizeof, so the library
reads and writes only those bytes, and the fields left out (and any that a newer library adds) take
their defaults.
"""
import argparse
import ctypes as C
import os
import sys

SONAME = "libkernjit.so.2"
CHECKOUT_BUILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "build", "src", SONAME)

SOURCE = rb"""
// c = a + b, one element per thread
__global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

KJ_OK, KJ_DEVICE_AUTO = 0, -1


class Sized(C.Structure):
    """A struct the caller allocates: zeroed (each field's default), size set to this mirror's sizeof."""

    def __init__(self, **fields):
        super().__init__(size=C.sizeof(self), **fields)


class RuntimeOptions(Sized):  # kj_runtime_options up to device; kj_runtime_options_init gives the rest
    _fields_ = [("size", C.c_size_t), ("device", C.c_int)]


class Request(Sized):  # kj_request up to entry
    _fields_ = [("size", C.c_size_t), ("kernel", C.c_char_p), ("source_text", C.c_char_p), ("entry", C.c_char_p)]


class CompileResult(Sized):  # kj_compile_result up to binary_bytes
    _fields_ = [("size", C.c_size_t), ("cache_hit", C.c_int), ("stored", C.c_int), ("linked", C.c_int),
                ("is_ptx", C.c_int), ("arch", C.c_char_p), ("key", C.c_char_p), ("cache_path", C.c_char_p),
                ("compile_ms", C.c_double), ("link_ms", C.c_double), ("binary_bytes", C.c_size_t)]


class LaunchConfig(Sized):  # kj_launch_config up to block
    _fields_ = [("size", C.c_size_t), ("grid", C.c_uint * 3), ("block", C.c_uint * 3)]


def open_library(given):
    """The first library that loads, of those asked for; exits with one line naming what was tried."""
    wanted = [given] if given else [os.environ["KERNJIT_LIB"]] if os.environ.get("KERNJIT_LIB") else \
        [SONAME, os.path.normpath(CHECKOUT_BUILD)]
    tried = []
    for name in wanted:
        if os.sep in name and not os.path.exists(name):
            tried.append(f"{name} (no such file)")
            continue
        try:
            return C.CDLL(name)
        except OSError as e:
            tried.append(f"{name} ({e})")
    sys.exit(f"vadd.py: cannot load kernjit: tried {'; '.join(tried)}. Build it (meson setup build && meson compile "
             f"-C build), install it, or name the library: vadd.py PATH, or KERNJIT_LIB=PATH")


def load(given):
    lib = open_library(given)
    lib.kj_last_error.restype = C.c_char_p
    lib.kj_version_string.restype = C.c_char_p
    lib.kj_status_name.restype = C.c_char_p
    lib.kj_runtime_arch.restype = C.c_char_p
    lib.kj_runtime_options_init.argtypes = [C.POINTER(RuntimeOptions), C.c_size_t]
    lib.kj_runtime_create.argtypes = [C.POINTER(RuntimeOptions), C.POINTER(C.c_void_p)]
    lib.kj_runtime_destroy.argtypes = [C.c_void_p]
    lib.kj_runtime_has_device.argtypes = [C.c_void_p]
    lib.kj_runtime_arch.argtypes = [C.c_void_p]
    lib.kj_compile.argtypes = [C.c_void_p, C.POINTER(Request), C.POINTER(CompileResult)]
    lib.kj_kernel_get.argtypes = [C.c_void_p, C.POINTER(Request), C.POINTER(C.c_void_p), C.c_void_p]
    lib.kj_kernel_launch.argtypes = [C.c_void_p, C.POINTER(LaunchConfig), C.POINTER(C.c_void_p)]
    lib.kj_mem_alloc.argtypes = [C.c_void_p, C.c_size_t, C.POINTER(C.c_uint64)]
    lib.kj_mem_free.argtypes = [C.c_void_p, C.c_uint64]
    lib.kj_memcpy_htod.argtypes = [C.c_void_p, C.c_uint64, C.c_void_p, C.c_size_t]
    lib.kj_memcpy_dtoh.argtypes = [C.c_void_p, C.c_void_p, C.c_uint64, C.c_size_t]
    lib.kj_synchronize.argtypes = [C.c_void_p]
    return lib


def check(lib, status, what):
    if status != KJ_OK:
        sys.exit(f"{what}: {lib.kj_status_name(status).decode()}: {lib.kj_last_error().decode()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", nargs="?")
    ap.add_argument("--n", type=int, default=1000003)
    args = ap.parse_args()
    lib = load(args.library)

    opts = RuntimeOptions()
    check(lib, lib.kj_runtime_options_init(C.byref(opts), C.sizeof(opts)), "kj_runtime_options_init")
    opts.device = KJ_DEVICE_AUTO  # a GPU when there is one, else compile-only
    rt = C.c_void_p()
    check(lib, lib.kj_runtime_create(C.byref(opts), C.byref(rt)), "kj_runtime_create")
    req = Request(kernel=b"vadd.cu", source_text=SOURCE, entry=b"vadd")
    try:
        if not lib.kj_runtime_has_device(rt):
            res = CompileResult()
            check(lib, lib.kj_compile(rt, C.byref(req), C.byref(res)), "kj_compile")
            how = "from the cache" if res.cache_hit else f"in {res.compile_ms:.1f} ms"
            print(f"kernjit {lib.kj_version_string().decode()} ({lib._name}): no GPU here; compiled vadd for "
                  f"{res.arch.decode()} {how} ({res.binary_bytes} bytes)")
            return 0
        try:
            import numpy as np
        except ImportError:
            sys.exit("vadd.py: numpy is needed to launch vadd on the GPU and check it (apt install python3-numpy, "
                     "or pip install numpy)")
        kernel = C.c_void_p()
        check(lib, lib.kj_kernel_get(rt, C.byref(req), C.byref(kernel), None), "kj_kernel_get")
        n = args.n
        rng = np.random.default_rng()
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        c = np.full(n, np.nan, dtype=np.float32)  # poisoned: every element must be written
        bufs = [C.c_uint64() for _ in range(3)]
        for buf in bufs:
            check(lib, lib.kj_mem_alloc(rt, max(n, 1) * 4, C.byref(buf)), "kj_mem_alloc")
        try:
            check(lib, lib.kj_memcpy_htod(rt, bufs[0], a.ctypes.data, n * 4), "kj_memcpy_htod")
            check(lib, lib.kj_memcpy_htod(rt, bufs[1], b.ctypes.data, n * 4), "kj_memcpy_htod")
            check(lib, lib.kj_memcpy_htod(rt, bufs[2], c.ctypes.data, n * 4), "kj_memcpy_htod")
            cn = C.c_int(n)
            argv = (C.c_void_p * 4)(*[C.cast(C.byref(x), C.c_void_p) for x in (*bufs, cn)])
            cfg = LaunchConfig()
            cfg.grid[0], cfg.block[0] = (n + 255) // 256, 256
            check(lib, lib.kj_kernel_launch(kernel, C.byref(cfg), argv), "kj_kernel_launch")
            check(lib, lib.kj_synchronize(rt), "kj_synchronize")
            check(lib, lib.kj_memcpy_dtoh(rt, c.ctypes.data, bufs[2], n * 4), "kj_memcpy_dtoh")
        finally:
            for buf in bufs:
                lib.kj_mem_free(rt, buf)
        bad = np.flatnonzero(c != a + b)  # one IEEE addition: bit-equal to numpy's
        if bad.size:
            print(f"WRONG: {bad.size} of {n} elements differ, first at {bad[0]}: {c[bad[0]]} != {a[bad[0]] + b[bad[0]]}")
            return 1
        print(f"ok: c = a + b on {lib.kj_runtime_arch(rt).decode()} for {n} elements, checked against numpy "
              f"(kernjit {lib.kj_version_string().decode()}, {lib._name})")
        return 0
    finally:
        lib.kj_runtime_destroy(rt)


if __name__ == "__main__":
    sys.exit(main())
