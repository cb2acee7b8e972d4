"""Tuning sweep of chapter 1's kernels on one GPU, either backend: tile shapes and defines.

    python -m gpulab.matmul.tune --backend numba  [--sizes 8192] [--configs NAME ...] [--out DIR]
    python -m gpulab.matmul.tune --backend cuda-c [--sizes 4096 8192] [--extra NAME:K=V,K=V ...]
        [--extra-cpasync NAME:K=V,K=V ...]

Each configuration is a registered variant with some of its parameters replaced, launched
through the chapter's one launch path ([`gpulab.matmul.host.prepare`][gpulab.matmul.host.prepare]
with the variant's policy), so what is tuned is what the library runs. It is checked first at
odd sizes (C poisoned with NaN, fresh random inputs, against a float64 product), then timed
(warm-up, median of `--reps`) at the timing sizes next to cuBLAS in FP32 (CuPy, `CUPY_TF32`
removed from the environment), measured at the start and again at the end of the run (drift).
It prints a table last and writes `matmul-numba-tuning-<device>.json` or
`matmul-cuda-tuning-<device>.json` to `--out`.
"""

from __future__ import annotations

import argparse
import json
import os

from gpulab.commands import writable_dir
from gpulab.errors import GpulabError
from gpulab.matmul.variants import REGISTRY
from gpulab.matmul.variants import TILE_128 as TILE


def _tiles(**kw):
    return {**TILE, **kw}


# numba: every register-tile shape for each of its tiled kernels
NUMBA_TILES = [_tiles(), _tiles(BK=16), _tiles(TM=16), _tiles(TN=16), _tiles(BM=256, TM=16), _tiles(BN=256, TN=16),
               _tiles(BM=64, BN=64, TM=4, TN=4), _tiles(BN=64, TN=4)]


def _numba_configs():
    return [(f"{name}_{c['BM']}x{c['BN']}x{c['BK']}_{c['TM']}x{c['TN']}", name, c, None)
            for c in NUMBA_TILES for name in ("register", "prefetch", "wide")]


def _registered_shape(name: str, prefix: str) -> dict:
    """A registered warp-tiled variant's defines without their prefix (THREADS left out: it follows)."""
    return {k[len(prefix):]: v for k, v in REGISTRY.get(name, "cuda-c").params.items() if k != f"{prefix}THREADS"}


def _shape(base: dict, prefix: str, kw: dict) -> dict:
    d = {**base, **kw}
    d.setdefault("THREADS", 32 * (d["BM"] // d["WM"]) * (d["BN"] // d["WN"]))
    return {f"{prefix}{k}": v for k, v in d.items()}


# the registered warp-tile shapes (THREADS follows from them)
WARP_TILE = _registered_shape("warptile", "WT_")
CPASYNC_TILE = _registered_shape("cpasync", "CA_")


def wt(**kw):
    """A warp-tile shape as defines (WT_ prefixed): the registry's, with `kw` replaced; THREADS,
    unless given, is one warp per WM×WN warp tile of the BM×BN block tile."""
    return _shape(WARP_TILE, "WT_", kw)


def ca(**kw):
    """A cpasync configuration as defines (CA_ prefixed), as [`wt`][gpulab.matmul.tune.wt] does
    for warptile; besides the shape, STAGES (pipeline depth) and GROUP (rasterization, 0 = off)."""
    return _shape(CPASYNC_TILE, "CA_", kw)


# CUDA C: (label, variant, parameters replaced, timing sizes: None = every --sizes)
CUDA_LADDER = [
    ("naive", "naive", {}, [4096]), ("coalesced", "coalesced", {}, [4096]),
    ("shared16", "shared", {"TILE": 16}, [4096]), ("shared32", "shared", {"TILE": 32}, [4096]),
    ("constant", "constant", {}, []), ("constant_scattered", "constant_scattered", {}, []),
    ("register", "register", TILE, None), ("prefetch", "prefetch", TILE, None), ("vec4", "vec4", TILE, None),
]
# The warp-tile shapes of the H200 runs (scripts/tune_matmul_cuda.md says what each run found).
WARPTILE = [(f"wt_{label}", "warptile", wt(**d), None) for label, d in [
    ("default", {}), ("bk8_mb1", dict(BK=8, MINBLOCKS=1)),
    ("w32x64_bk8", dict(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=1)),
    ("w32x64_bk8_mb2", dict(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=2)),
    ("tm8tn4_bk8_mb2", dict(WM=64, WN=32, WNITER=2, TM=8, TN=4, BK=8, MINBLOCKS=2)),
    ("bk8_mb2", dict(BK=8, MINBLOCKS=2)),
    ("256x128_bk8", dict(BM=256, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1)),
    ("w32x64_bk8_mb2_pad8", dict(WM=32, WN=64, WNITER=2, BK=8, MINBLOCKS=2, APAD=8)),
    ("bk16_mb2", dict(BK=16, MINBLOCKS=2)),
    ("128t_bk8_wniter4", dict(THREADS=128, WM=64, WN=64, WNITER=4, BK=8, MINBLOCKS=1)),
    ("128t_bk8_tm8", dict(THREADS=128, WM=64, WN=64, WNITER=2, TM=8, BK=8, MINBLOCKS=1)),
    ("128t_bk16_mb2", dict(THREADS=128, WM=64, WN=64, WNITER=2, BK=16, MINBLOCKS=2)),
    ("128t_bk4", dict(THREADS=128, WM=64, WN=64, WNITER=2, BK=4, MINBLOCKS=1)),
    ("64t_64x128_bk8", dict(BM=64, THREADS=64, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1)),
    ("256t_128x256_bk8", dict(BN=256, THREADS=256, WM=64, WN=64, WNITER=2, BK=8, MINBLOCKS=1)),
    ("128t_bk8_pad8", dict(THREADS=128, WM=64, WN=64, WNITER=2, BK=8, APAD=8, MINBLOCKS=1)),
    ("default_again", {}),
]]

# cp.async step, one lever at a time from the registered configuration (3 stages, groups of 8):
# the pipeline depth, the rasterization, then shapes that the freed staging registers may allow.
CPASYNC = [(f"ca_{label}", "cpasync", ca(**d), None) for label, d in [
    ("default", {}), ("st2", dict(STAGES=2)), ("st4", dict(STAGES=4)),
    ("g0", dict(GROUP=0)), ("g4", dict(GROUP=4)), ("g16", dict(GROUP=16)),
    ("st2_g0", dict(STAGES=2, GROUP=0)),  # warptile's schedule, copies by cp.async: the copy lever alone
    ("bk16_st2", dict(BK=16, STAGES=2)), ("wniter4", dict(WNITER=4)), ("tm8", dict(TM=8)),
    ("256t_w32x64", dict(WM=32, WN=64)), ("256t_256x128", dict(BM=256)), ("256t_128x256", dict(BN=256, STAGES=2)),
    ("default_again", {}),
]]

CHECK_SIZES = [(1, 1, 1), (127, 131, 129), (257, 513, 100), (512, 384, 256), (4099, 4099, 4099)]  # (M, N, K)
CONST_SIZES = [(1, 1, 1), (127, 131, 100), (257, 128, 128), (300, 1, 16384)]


def configs(backend: str, extra=(), extra_cpasync=()) -> list[tuple[str, str, dict, list | None]]:
    """The sweep of `backend`; `extra` / `extra_cpasync`: more warptile / cpasync
    configurations as `name:K=V,K=V`."""
    out = _numba_configs() if backend == "numba" else CUDA_LADDER + WARPTILE + CPASYNC
    for specs, variant, defines in ((extra, "warptile", wt), (extra_cpasync, "cpasync", ca)):
        for spec in specs:
            name, kv = spec.split(":", 1)
            out.append((name, variant, defines(**{k: int(v) for k, v in (p.split("=") for p in kv.split(","))}), None))
    return out


def _reference(A, B):
    try:
        import cupy as cp  # float64 on the GPU: the CPU takes seconds at 4099^3

        return cp.asnumpy(cp.asarray(A, cp.float64) @ cp.asarray(B, cp.float64))
    except ImportError:
        import numpy as np

        return np.asarray(A, np.float64) @ np.asarray(B, np.float64)


def check(policy, backend: str, params: dict, sizes, rng) -> tuple[bool, list]:
    """Relative errors at `sizes` (fresh inputs, C poisoned with NaN); ok when all < 1e-4."""
    import numpy as np
    from numba import cuda

    from gpulab.checking import poisoned, relative_error
    from gpulab.matmul.host import prepare

    errs = []
    for M, N, K in sizes:
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        dC = cuda.to_device(poisoned((M, N), np.float32))
        prepare(policy, backend, cuda.to_device(A), cuda.to_device(B), dC, B, params)()
        errs.append((M, N, K, relative_error(dC.copy_to_host(), _reference(A, B))))
    return all(e < 1e-4 for *_, e in errs), errs


def resources(policy, backend: str, params: dict) -> dict:
    """Registers, local and shared bytes of the compiled kernel (informative only)."""
    from gpulab.matmul import host

    try:
        kern = host.KERNELS.provider(backend, params).kernel(policy.kernel)
        if backend == "cuda-c":
            return {"registers": kern.num_regs, "local_bytes": kern.local_size_bytes, "smem": kern.shared_size_bytes}
        from gpulab.matmul.kernels_numba import SIG

        compiled = kern.compile(SIG)  # the overload the launches use
        return {"registers": compiled.regs_per_thread, "local_bytes": compiled.local_mem_per_thread,
                "smem": compiled.shared_mem_per_block}
    except Exception as exc:
        return {"error": str(exc)[:200]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpulab.matmul.tune", description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("numba", "cuda-c"), required=True)
    ap.add_argument("--configs", nargs="*", help="labels to run (default: all of the backend's)")
    ap.add_argument("--sizes", nargs="*", type=int, help="timing sizes N (default: 8192 numba, 4096 8192 CUDA C)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--extra", nargs="*", default=[], help="CUDA C: more warp-tile shapes, name:K=V,K=V (WT_ added)")
    ap.add_argument("--extra-cpasync", nargs="*", default=[],
                    help="CUDA C: more cpasync configurations, name:K=V,K=V (CA_ added; STAGES, GROUP too)")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-results"))
    args = ap.parse_args(argv)
    try:  # before the sweep: its only output must have somewhere to go
        out = writable_dir(args.out, "--out")
    except GpulabError as exc:
        ap.error(str(exc))
    os.environ.pop("CUPY_TF32", None)  # FP32 SGEMM for the peer, no TF32

    import numpy as np
    from numba import cuda

    from gpulab import device
    from gpulab.benchmark import device_slug, versions
    from gpulab.matmul.host import prepare
    from gpulab.timing import measure

    sizes = args.sizes or ([8192] if args.backend == "numba" else [4096, 8192])
    todo = [c for c in configs(args.backend, args.extra, args.extra_cpasync) if not args.configs or c[0] in args.configs]
    rng = np.random.default_rng()
    inputs = {}
    for n in sizes:
        A = rng.standard_normal((n, n), dtype=np.float32)
        B = rng.standard_normal((n, n), dtype=np.float32)
        inputs[n] = (A, B, cuda.to_device(A), cuda.to_device(B), cuda.device_array((n, n), np.float32))

    def cublas(n):
        try:
            import cupy as cp
        except ImportError:
            return None
        A, B, dA, dB, _ = inputs[n]
        cA, cB = cp.asarray(A), cp.asarray(B)
        cC = cp.empty((n, n), cp.float32)
        return measure(lambda: cp.matmul(cA, cB, out=cC), warmup=3, repeat=args.reps).median_ms

    peer = {n: cublas(n) for n in sizes}
    rows = []
    for label, name, replaced, tsizes in todo:
        v = REGISTRY.get(name, args.backend)
        params = {**v.params, **replaced}
        row = {"name": label, "variant": name, "params": params}
        try:
            csizes = CONST_SIZES if v.policy.constant_b else CHECK_SIZES
            if not v.policy.constant_b and v.policy.per_thread == (1, 1) and v.policy.threads is None:
                csizes = csizes[:-1] + [(1031, 1029, 1027)]  # one output per thread: 4099^3 is slow
            row["correct"], row["checks"] = check(v.policy, args.backend, params, csizes, rng)
            row["resources"] = resources(v.policy, args.backend, params)
            for n in (sizes if tsizes is None else [s for s in tsizes if s in sizes]):
                A, B, dA, dB, dC = inputs[n]
                ms = measure(prepare(v.policy, args.backend, dA, dB, dC, B, params), warmup=3,
                             repeat=5 if v.teaching_only else args.reps).median_ms
                row[f"ms_{n}"] = ms
                row[f"tflops_{n}"] = 2.0 * n**3 / (ms * 1e-3) / 1e12
                if peer[n]:
                    row[f"pct_cublas_{n}"] = 100 * peer[n] / ms
        except Exception as exc:  # a compile error, a launch the shape does not fit: report, go on
            row["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        rows.append(row)
        print(json.dumps(row), flush=True)
    peer_end = {n: cublas(n) for n in sizes}  # drift (clocks, heat) shows up here

    result = {"backend": args.backend, "device": device.info().as_dict(), "versions": versions(),
              "cublas_ms": peer, "cublas_ms_end": peer_end, "rows": rows}
    tag = "numba" if args.backend == "numba" else "cuda"
    path = out / f"matmul-{tag}-tuning-{device_slug({'device': result['device']})}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    for n in sizes:
        if peer[n]:
            print(f"cuBLAS N={n}: {peer[n]:.3f} ms at the start, {peer_end[n]:.3f} ms at the end")
    print(f"\n{'name':28s} {'N':>5s} {'TFLOP/s':>8s} {'%cuBLAS':>8s} {'regs':>5s} ok")
    for r in rows:
        regs = r.get("resources", {}).get("registers", "?")
        timed = [int(k[3:]) for k in r if k.startswith("ms_")] or [None]
        for n in timed:
            tf = r.get(f"tflops_{n}", float("nan"))
            pct = r.get(f"pct_cublas_{n}", float("nan"))
            print(f"{r['name']:28s} {n or '-'!s:>5s} {tf:8.2f} {pct:8.1f} {regs!s:>5s} {r.get('correct', r.get('error', '?'))}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
