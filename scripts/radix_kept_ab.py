"""A/B in turns: onesweep's kept launches and the public call by addresses (issue 30) against
the tree before them, at the sizes where a sort is bound by the host.

For each backend and case (2^20 keys, 2^20 keys with uint32 values, `distinct` of 2M keys in
[0, 1M), 2^24 keys), one child process per turn imports gpulab from one tree (`--old DIR`: a
copy of the package before the change, e.g. `git archive <rev> gpulab | tar x -C abold`) and
times, with CUDA events after warm-up (median of `--repeat`):

* plan: the plan's own call on numba device arrays, as `gpulab bench radix` times "the kernels"
  (`plan.sort(keys)`, `plan.sort(keys, positions)`, `distinct_plan(plan).run(keys)`);
* public: `rx.sort` / `rx.sort_pairs` / `rx.distinct` on CuPy arrays (the benchmark's public call);
* CUB: `DeviceRadixSort` alone (keys and pairs; none for distinct), the chapter's peer;
* host: the public call's host time per call (`gpulab.timing.host_us`, 200 calls queued).

Every result is checked against numpy first (a wrong result stops the run). Turns alternate
new, old, old, new. Needs a GPU and CuPy:
    python scripts/radix_kept_ab.py --old abold --out runs.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

CASES = (("keys", 2**20), ("pairs", 2**20), ("distinct", 2_000_000), ("keys", 2**24))


def child(repeat: int) -> list[dict]:
    import numpy as np

    import gpulab  # noqa: F401
    import cupy as cp
    from numba import cuda

    import gpulab.radix as rx
    from gpulab.radix import host
    from gpulab.radix import peer as cub
    from gpulab.radix.variants import REGISTRY
    from gpulab.timing import host_us, measure

    rng = np.random.default_rng()
    rows = []
    for backend in ("cuda-c", "numba"):
        v = REGISTRY.get("onesweep", backend)
        for kind, n in CASES:
            keys = (rng.integers(0, n // 2, n) if kind == "distinct" else rng.integers(0, 2**32, n)).astype(np.uint32)
            keys[:2] = [0, (n // 2 - 1) if kind == "distinct" else 2**32 - 1]  # every pass moves keys
            d_keys, c_keys = cuda.to_device(keys), cp.asarray(keys)
            pos = np.arange(n, dtype=np.uint32)
            d_pos, c_pos = cuda.to_device(pos), cp.asarray(pos)
            plan = v.run(n, kind == "pairs", v.launch_params())
            if kind == "distinct":
                dplan = host.distinct_plan(plan)
                want = np.unique(keys)
                plan_call = lambda: dplan.run(d_keys)  # noqa: E731
                public = lambda: rx.distinct(c_keys, "onesweep", backend)  # noqa: E731
                out, count = dplan.run(d_keys)
                assert count == want.size and np.array_equal(out.copy_to_host()[:count], want), "plan distinct"
                assert np.array_equal(cp.asnumpy(public()), want), "public distinct"
                peer = None
            elif kind == "pairs":
                order = np.argsort(keys, kind="stable")
                plan_call = lambda: plan.sort(d_keys, d_pos)  # noqa: E731
                public = lambda: rx.sort_pairs(c_keys, c_pos, "onesweep", backend)  # noqa: E731
                k, vals = plan.sort(d_keys, d_pos)
                assert np.array_equal(k.copy_to_host(), keys[order]) and np.array_equal(vals.copy_to_host(), order)
                k, vals = public()
                assert np.array_equal(cp.asnumpy(k), keys[order]) and np.array_equal(cp.asnumpy(vals), order)
                peer = cub.sorter(d_keys, pairs=True)[0]
            else:
                want = np.sort(keys)
                plan_call = lambda: plan.sort(d_keys)  # noqa: E731
                public = lambda: rx.sort(c_keys, "onesweep", backend)  # noqa: E731
                assert np.array_equal(plan.sort(d_keys)[0].copy_to_host(), want), "plan sort"
                assert np.array_equal(cp.asnumpy(public()), want), "public sort"
                peer = cub.sorter(d_keys)[0]
            t_plan = measure(plan_call, warmup=5, repeat=repeat).median_ms
            t_pub = measure(public, warmup=5, repeat=repeat).median_ms
            t_cub = measure(peer, warmup=5, repeat=repeat).median_ms if peer else None
            t_host = host_us(public, 200)
            rows.append({"backend": backend, "case": f"{kind} {n}", "plan_ms": t_plan, "public_ms": t_pub,
                         "cub_ms": t_cub, "public_host_us": t_host, "public_over_plan": t_pub / t_plan,
                         "public_over_cub": (t_pub / t_cub) if t_cub else None})
            del plan
            rx.clear_cache()
    return rows


def profile(calls: int = 300) -> None:
    """Where the host time of a 2^20-key sort goes, public call and plan, in both backends
    (cProfile, `gpulab.timing.host_profile`), with the host time of each call unprofiled."""
    import numpy as np

    import gpulab  # noqa: F401
    import cupy as cp
    from numba import cuda

    import gpulab.radix as rx
    from gpulab.radix.variants import REGISTRY
    from gpulab.timing import host_profile, host_us

    keys = np.random.default_rng().integers(0, 2**32, 2**20).astype(np.uint32)
    d_keys, c_keys = cuda.to_device(keys), cp.asarray(keys)
    for backend in ("cuda-c", "numba"):
        v = REGISTRY.get("onesweep", backend)
        plan = v.run(keys.size, False, v.launch_params())
        for what, call in (("plan", lambda: plan.sort(d_keys)), ("public", lambda: rx.sort(c_keys, "onesweep", backend))):
            call()
            cuda.synchronize()
            print(f"== {backend} {what}: {host_us(call, calls):.1f} us a call without the profiler")
            print("\n".join(host_profile(call, calls, top=22, after=cuda.synchronize)))
        rx.clear_cache()


def probe(rounds: int = 4, repeat: int = 30) -> None:
    """The benchmark's own runner and public call (`gpulab.radix.bench`: the public call on CuPy
    views of the case's numba arrays) beside the public call on CuPy arrays that own their
    memory, at 2^20 keys, in rounds (CUDA events, median of `repeat`), both backends."""
    import numpy as np

    import gpulab  # noqa: F401
    import cupy as cp

    import gpulab.radix as rx
    from gpulab.radix import bench
    from gpulab.radix.variants import REGISTRY
    from gpulab.timing import host_us, measure

    case = bench._case("keys", 2**20, "2^20")
    state = bench.setup(case, np.random.default_rng())
    owned = cp.asarray(state["keys"])
    for backend in ("cuda-c", "numba"):
        v = REGISTRY.get("onesweep", backend)
        calls = {"kernels (bench runner)": bench.runner(v, state), "public (bench: CuPy view of numba)": bench.public(v, state),
                 "public (CuPy-owned keys)": lambda: rx.sort(owned, "onesweep", backend)}
        for r in range(rounds):
            line = [f"{backend} round {r + 1}:"]
            for name, call in calls.items():
                t = measure(call, warmup=5, repeat=repeat).median_ms
                line.append(f"{name} {1e3 * t:.1f} us (host {host_us(call, 100, 3):.1f})")
            print("  ".join(line), flush=True)
        rx.clear_cache()
        state["plans"].clear()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--old", default="abold")
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", action="store_true", help="only the host profile of 2^20 keys (this tree)")
    ap.add_argument("--probe", action="store_true", help="only the benchmark's calls beside owned CuPy keys (this tree)")
    a = ap.parse_args()
    if a.profile:
        profile()
        return
    if a.probe:
        probe()
        return
    if a.child:
        print("ROWS " + json.dumps(child(a.repeat)))
        return
    here = Path(__file__).resolve().parent.parent
    trees = {"new": str(here), "old": str(Path(a.old).resolve())}
    order = [("new", "old", "old", "new")[i % 4] for i in range(a.turns)]
    runs = []
    for turn, tree in enumerate(order, 1):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (trees[tree], os.environ.get("PYTHONPATH")))))
        p = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(a.repeat)], env=env,
                           capture_output=True, text=True, cwd=trees[tree])
        line = [x for x in p.stdout.splitlines() if x.startswith("ROWS ")]
        if p.returncode or not line:
            sys.exit(f"turn {turn} ({tree}) failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        for r in json.loads(line[0][5:]):
            runs.append({"turn": turn, "tree": tree, **r})
    import gpulab  # noqa: F401
    from gpulab import device

    result = {"device": device.info().name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "what": __doc__.split("\n\n")[0], "runs": runs}
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1))
    print(f"{'turn':>4} {'tree':>4} {'backend':>7} {'case':>16} {'plan ms':>8} {'public ms':>9} {'pub/plan':>8} "
          f"{'CUB ms':>7} {'pub/CUB':>7} {'host us':>7}")
    for r in runs:
        cub = f"{r['cub_ms']:7.4f} {r['public_over_cub']:7.3f}" if r["cub_ms"] else f"{'-':>7} {'-':>7}"
        print(f"{r['turn']:>4} {r['tree']:>4} {r['backend']:>7} {r['case']:>16} {r['plan_ms']:8.4f} {r['public_ms']:9.4f} "
              f"{r['public_over_plan']:8.3f} {cub} {r['public_host_us']:7.1f}")


if __name__ == "__main__":
    main()
