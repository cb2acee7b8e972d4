"""Compile every kernel for a real GPU without one: numba → PTX → cubin, and CUDA C → cubin.

The simulator checks what kernels compute but not whether the real compiler accepts them
(types, intrinsics, shared-array shapes), so CI also compiles every numba kernel of every
chapter for sm_90 and links it with nvJitLink (registers, spills, stack frame per kernel),
and compiles every CUDA C configuration the registries use with NVRTC.

Numba's real compiler cannot be used in a process that runs the simulator, so
[`run_in_subprocess`][gpulab.compilecheck.run_in_subprocess] starts a fresh interpreter with ``GPULAB_DEVICE=gpu``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import contextmanager

from gpulab import device
from gpulab import chapters as book

ARCH = (9, 0)


@contextmanager
def _pretend_device(cc=ARCH):
    """Kernels calling device functions ask the driver for the current device's compute
    capability while compiling; without a driver, answer with the target's."""
    import numba.cuda.dispatcher as disp

    class _Dev:
        compute_capability = cc

    saved = getattr(disp, "get_current_device", None)
    disp.get_current_device = lambda: _Dev()
    try:
        yield
    finally:
        if saved is not None:
            disp.get_current_device = saved


def link_report(ptx: str, arch: str = "sm_90") -> dict:
    """Registers / spills / stack of each kernel in ``ptx``, from nvJitLink's verbose log."""
    from cuda.bindings import nvjitlink

    from gpulab.cudac import parse_ptxas

    handle = nvjitlink.create(2, [f"-arch={arch}", "-verbose"])
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel.ptx")
        nvjitlink.complete(handle)
        size = nvjitlink.get_info_log_size(handle)
        buf = bytearray(size)
        nvjitlink.get_info_log(handle, buf)
        return parse_ptxas(buf.decode(errors="replace"))
    finally:
        nvjitlink.destroy(handle)


_LOCAL = re.compile(r"\b(ld|st)\.local\b")


FOUNDATION = "foundation"  # the shared kernels (gpulab.arrays' device-side checks), checked like a chapter's


def _ptx_targets(chapter: str) -> list:
    """A chapter's numba kernels with the parameters its registry uses (`Chapter.ptx_targets`),
    or the shared kernels' for `FOUNDATION`."""
    if chapter == FOUNDATION:
        import gpulab.arrays

        return gpulab.arrays.ptx_targets()
    return book.get(chapter).ptx_targets()


def numba_ptx(chapters=None) -> list[dict]:
    """Compile each chapter's `ptx_targets()` (and, by default, the shared kernels:
    chapter `"foundation"`) for sm_90 (needs a non-simulator process)."""
    if device.on_simulator():
        raise RuntimeError("numba_ptx needs the real numba compiler: run it with GPULAB_DEVICE=gpu")
    from numba import cuda

    out = []
    for ch in chapters or [*book.CHAPTERS, FOUNDATION]:
        for name, kern, sig in _ptx_targets(ch):
            rec = {"chapter": ch, "kernel": name, "kind": "numba", "ok": False, "error": None,
                   "local_memory_ops": None, "resources": {}}
            try:
                with _pretend_device():
                    # the kernel's own launch bounds (they cap its registers), as its launches get them
                    bounds = getattr(kern, "targetoptions", {}).get("launch_bounds")
                    ptx, _ = cuda.compile_ptx(kern.py_func, sig, cc=ARCH, launch_bounds=bounds)
                rec["local_memory_ops"] = len(_LOCAL.findall(ptx))
                try:
                    res = link_report(ptx)
                    rec["resources"] = next(iter(res.values())) if len(res) == 1 else res
                except Exception as exc:  # resource report is informative; the compile is the check
                    rec["resources"] = {"note": f"nvJitLink report unavailable: {exc}"}
                rec["ok"] = True
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"
            out.append(rec)
    return out


def nvrtc(chapters=None) -> list[dict]:
    """Compile each chapter's CUDA C configurations (`Chapter.cuda_builds`) for sm_90."""
    from gpulab.cudac import nvrtc_compile, source_text

    out = []
    for ch in chapters or book.CHAPTERS:
        chapter = book.get(ch)
        pkg = chapter.package
        for build in chapter.cuda_builds():
            # (filename, defines), or (name, defines, source text) for generated source
            filename, defines = build[0], build[1]
            text = build[2] if len(build) > 2 else source_text(pkg, filename)
            rep = nvrtc_compile(text, filename, defines)
            out.append({"chapter": ch, "kernel": f"{filename} {defines}", "kind": "nvrtc", "ok": rep.ok,
                        "error": None if rep.ok else rep.log, "resources": rep.resources})
    return out


def _in_real_compiler_process(call: str) -> list[dict]:
    """Evaluate ``call`` (an expression on module ``c`` = this module returning JSON-able data)
    in a fresh interpreter with ``GPULAB_DEVICE=gpu``: numba's real compiler, no simulator."""
    env = dict(os.environ, GPULAB_DEVICE="gpu")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop(RECORD_ENV, None)
    code = f"import json, gpulab.compilecheck as c; print('@@' + json.dumps({call}))"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("@@")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"compile subprocess failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(line[2:])


def run_in_subprocess(chapters=None) -> list[dict]:
    """Run [`numba_ptx`][gpulab.compilecheck.numba_ptx] in a fresh interpreter that uses numba's real compiler."""
    return _in_real_compiler_process(f"c.numba_ptx({chapters!r})")


def _fmt_res(x: dict) -> str:
    return f"{x['registers']} regs, {x['spill_bytes']} B spills, {x['stack']} B stack, {x['shared']} B static shared"


def main(chapters=None, as_json=False) -> int:
    records = (numba_ptx(chapters) if not device.on_simulator() else run_in_subprocess(chapters)) + nvrtc(chapters)
    if as_json:  # one JSON object: the verdict and every kernel's record
        print(json.dumps({"ok": all(r["ok"] for r in records), "records": records}, indent=1))
    else:
        for r in records:
            res = r["resources"]
            local = f", {r['local_memory_ops']} local-memory ops" if r.get("local_memory_ops") is not None else ""
            print(f"{'ok ' if r['ok'] else 'FAIL'} {r['kind']:6s} {r['chapter']:8s} {r['kernel']}"
                  + (f"  {_fmt_res(res)}{local}" if "registers" in res else ""))
            if "registers" not in res and res and all(isinstance(x, dict) for x in res.values()):
                for name, x in res.items():
                    print(f"       {name:28s} {_fmt_res(x)}")
            if not r["ok"]:
                print("     " + str(r["error"])[:2000])
    return 0 if all(r["ok"] for r in records) else 1


# ------------------------------------------------------- kernels seen on the simulator (exercises)
#
# Exercise solutions have no registry to list their kernels and signatures, so CI records every
# kernel launch while the solutions' tests run on the simulator (argument types included), then
# compiles each recorded kernel for sm_90 in a process with the real compiler. Kernels built
# inside a function (closures, e.g. around cuda.const.array_like) cannot be rebuilt in another
# process; they are reported as not checked, with that reason.

RECORD_ENV = "GPULAB_RECORD_KERNELS"


def _describe_arg(x):
    import numpy as np

    arr = getattr(x, "_ary", x)  # the simulator's device arrays wrap a numpy array
    arr = getattr(arr, "_a", arr)  # and so do gpulab.trace's traced arrays (a launch under the tracer)
    if isinstance(arr, np.ndarray) and arr.ndim > 0:
        layout = "C" if arr.flags.c_contiguous else "F" if arr.flags.f_contiguous else "A"
        return ["array", arr.dtype.str, arr.ndim, layout]
    import numba

    return ["scalar", str(numba.typeof(x))]


def record_simulated_launches(path: str) -> None:
    """Record (file, qualified name, argument types) of every simulated kernel launch into ``path``."""
    import atexit
    import inspect

    from numba.cuda.simulator import kernel as simkernel

    seen: dict = {}
    original = simkernel.FakeCUDAKernel.__call__

    def recording_call(self, *args):
        if not self._device:
            fn = self.fn
            key = (inspect.getsourcefile(fn), fn.__qualname__, json.dumps([_describe_arg(a) for a in args]))
            seen.setdefault(key, True)
        return original(self, *args)

    simkernel.FakeCUDAKernel.__call__ = recording_call

    def dump():
        with open(path, "w") as f:
            json.dump([{"file": k[0], "qualname": k[1], "args": json.loads(k[2])} for k in seen], f)

    atexit.register(dump)


def _numba_type(desc):
    import numpy as np
    from numba import from_dtype, types

    if desc[0] == "array":
        return types.Array(from_dtype(np.dtype(desc[1])), desc[2], desc[3])
    return getattr(types, desc[1])


def compile_recorded(records: list[dict]) -> list[dict]:
    """Compile recorded kernels for sm_90 (needs a non-simulator process)."""
    import importlib.util

    from numba import cuda

    if device.on_simulator():
        raise RuntimeError("compile_recorded needs the real numba compiler: run it with GPULAB_DEVICE=gpu")
    out, modules = [], {}
    for r in records:
        rec = {"file": r["file"], "kernel": r["qualname"], "ok": False, "error": None, "skipped": None}
        if "<locals>" in r["qualname"]:
            rec["skipped"] = "built inside a function (a closure): cannot be rebuilt outside the test run"
            out.append(rec)
            continue
        try:
            if r["file"] not in modules:
                spec = importlib.util.spec_from_file_location(f"_recorded_{len(modules)}", r["file"])
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                modules[r["file"]] = mod
            obj = modules[r["file"]]
            for part in r["qualname"].split("."):
                obj = getattr(obj, part)
            sig = tuple(_numba_type(a) for a in r["args"])
            with _pretend_device():
                cuda.compile_ptx(obj.py_func, sig, cc=ARCH)
            rec["ok"] = True
        except Exception as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"[:1500]
        out.append(rec)
    return out


def compile_recorded_in_subprocess(path: str) -> list[dict]:
    """Run [`compile_recorded`][gpulab.compilecheck.compile_recorded] on the records in ``path`` in a fresh non-simulator interpreter."""
    return _in_real_compiler_process(f"c.compile_recorded(json.load(open({path!r})))")
