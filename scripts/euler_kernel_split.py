"""Where one Euler circuit's time goes, kernel by kernel, under Nsight Compute: the public call
(`gpulab.euler.euler_circuit`, ruling_set with the registry's tuned parameters) on a deep graph
already on the device, as the benchmark's ``deep-<E>`` case builds it.

One process per backend: it warms the call up, then runs it once between cuProfilerStart and
cuProfilerStop, so ``ncu --profile-from-start off`` records only that call's kernels:

    ncu --csv --profile-from-start off --cache-control none --clock-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        python scripts/euler_kernel_split.py 41943040 cuda-c > cuda-c.csv
    python scripts/euler_kernel_split.py --parse cuda-c.csv numba.csv --json split.json

The parse sums each kernel's launches (ncu runs them one at a time, so host gaps and overlap
are not in it) and prints them by total time, with DRAM bytes and the bytes' bound at
`gpulab.radix.bench.COPY_BW`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import ncu_csv  # (beside this script)


def run(E: int, backend: str) -> None:
    import numpy as np

    import gpulab.euler as eu  # (gpulab before numba: it picks the device)
    from numba import cuda
    from gpulab.euler import bench, generators as gen
    from gpulab.euler.variants import REGISTRY

    v = REGISTRY.get("ruling_set", backend)
    how = dict(variant="ruling_set", backend=backend, params=bench.tuned_params(v) or None)
    ds, dd = gen.deep_graph(E, 4, int(np.random.default_rng().integers(1 << 30)), device=True)
    for _ in range(2):
        eu.euler_circuit(ds, dd, **how)
    cuda.synchronize()
    cuda.profile_start()
    out = eu.euler_circuit(ds, dd, **how)
    cuda.synchronize()
    cuda.profile_stop()
    n = len(out)
    print(f"@@ check {backend} E={E} {'ok' if n == E else 'WRONG'}", flush=True)


def _short(name: str) -> str:
    """A kernel's own name: the last component of numba's mangled ``_ZN6cudapy...E`` name (its
    ``$N`` suffix dropped), or a CUDA C signature without ``void``, template and arguments."""
    if name.startswith("_ZN"):
        i, parts = 3, []
        while i < len(name) and name[i].isdigit():
            j = i
            while name[j].isdigit():
                j += 1
            k = int(name[i:j])
            parts.append(name[j:j + k])
            i = j + k
        if parts:
            return parts[-1].split("$")[0]
    m = re.match(r"^[\w:]*::(\w+)\[", name)  # numba's demangled name: module::kernel[v54,...]
    if m:
        return m.group(1)
    name = re.sub(r"^void\s+", "", name)
    return re.split(r"[<(]", name, maxsplit=1)[0].strip()


def parse_one(path: str) -> tuple[list[dict], str | None]:
    from gpulab.radix.bench import COPY_BW

    rows, check = ncu_csv.read(path)
    by = {}
    for k in sorted(rows):
        r = rows[k]
        s = by.setdefault(_short(r["name"]), {"kernel": _short(r["name"]), "launches": 0, "ms": 0.0, "bytes": 0.0,
                                              "first_id": k})
        s["launches"] += 1
        s["ms"] += r.get("gpu__time_duration.sum", 0.0) / 1e6
        s["bytes"] += r.get("dram__bytes_read.sum", 0.0) + r.get("dram__bytes_write.sum", 0.0)
    ks = []
    for s in sorted(by.values(), key=lambda s: -s["ms"]):
        ks.append({"kernel": s["kernel"], "launches": s["launches"], "ms": round(s["ms"], 4),
                   "dram_GB": round(s["bytes"] / 1e9, 4), "bound_ms": round(s["bytes"] / COPY_BW * 1e3, 4),
                   "first_id": s["first_id"]})
    return ks, check


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("E", nargs="?", type=int)
    ap.add_argument("backend", nargs="?", choices=("cuda-c", "numba"))
    ap.add_argument("--parse", nargs="+", metavar="CSV")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if not a.parse:
        run(a.E, a.backend)
        return 0
    out = {}
    for p in a.parse:
        ks, check = parse_one(p)
        name = Path(p).stem
        out[name] = {"check": check, "kernels": ks, "total_ms": round(sum(k["ms"] for k in ks), 4)}
        print(f"== {name}: check {check}, {sum(k['launches'] for k in ks)} launches, "
              f"{out[name]['total_ms']:.3f} ms of kernels")
        for k in ks[:18]:
            print(f"  {k['kernel'][:34]:34s} {k['launches']:4d} {k['ms']:8.3f} ms {k['dram_GB']:7.3f} GB "
                  f"bound {k['bound_ms']:6.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
