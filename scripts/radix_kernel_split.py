"""Where one sort's time goes, kernel by kernel: CUB's SortKeys / SortPairs against onesweep
(CUDA C and numba) on the same kind of keys (2^k random uint32), under Nsight Compute.

One process per sort: it warms the sort up, then runs it once between cuProfilerStart and
cuProfilerStop, so ``ncu --profile-from-start off`` records only that sort's kernels:

    ncu --csv --profile-from-start off --cache-control none --clock-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        python scripts/radix_kernel_split.py 28 cuda-c pairs > cuda-c-pairs.csv
    python scripts/radix_kernel_split.py --parse cub-keys.csv cuda-c-keys.csv ... --json split.json --about TEXT

(The CSV files of the committed run: docs/benchmarks/radix-runs/split-h200/; the JSON:
docs/benchmarks/radix-split-h200.json.)

`who` is cub, cuda-c or numba (onesweep with the registry's parameters); `what` keys or pairs
(uint32 values). Each kernel's bandwidth is its DRAM bytes over its duration; its bound those
bytes at the copy bandwidth of `gpulab.radix.bench.COPY_BW`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import ncu_csv  # (beside this script)


def run(log2n: int, who: str, what: str) -> None:
    import numpy as np
    from numba import cuda

    import gpulab.radix  # noqa: F401  (the registry)
    from gpulab.radix import peer as cub
    from gpulab.radix.variants import REGISTRY

    n, pairs = 1 << log2n, what == "pairs"
    keys = np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32)
    d = cuda.to_device(keys)
    pos = cuda.to_device(np.arange(n, dtype=np.uint32))
    if who == "cub":
        launch, ko, _ = cub.sorter(d, pairs=pairs)
        go, result = launch, lambda out: ko
    else:
        v = REGISTRY.get("onesweep", who)
        plan = v.run(n, pairs, v.launch_params())
        go, result = (lambda: plan.sort(d, pos if pairs else None)), (lambda out: out[0])
    go()
    cuda.synchronize()
    cuda.profile_start()
    out = go()
    cuda.synchronize()
    cuda.profile_stop()
    ok = np.array_equal(result(out).copy_to_host(), np.sort(keys))
    print(f"@@ check {who} {what} {'ok' if ok else 'WRONG'}", flush=True)


def parse_one(path: str) -> tuple[list[dict], str | None]:
    from gpulab.radix.bench import COPY_BW

    rows, check = ncu_csv.read(path)
    ks = []
    for k in sorted(rows):
        r = rows[k]
        ms = r.get("gpu__time_duration.sum", 0.0) / 1e6  # ns -> ms
        b = r.get("dram__bytes_read.sum", 0.0) + r.get("dram__bytes_write.sum", 0.0)
        ks.append({"kernel": _short(r["name"]), "ms": round(ms, 5), "dram_GB": round(b / 1e9, 4),
                   "TBps": round(b / (ms * 1e-3) / 1e12, 3) if ms else None,
                   "bound_ms": round(b / COPY_BW * 1e3, 5)})
    return ks, check


def _short(name: str) -> str:
    for key in ("Onesweep", "Histogram", "ExclusiveSum", "Upsweep", "Downsweep", "ScanBins"):
        if key in name:
            return "CUB " + key
    # numba's scan kernel is built by onesweep_hist_kernel, so its mangled name holds both
    for key in ("onesweep_first", "onesweep_scan", "onesweep_hist", "zero_i32", "onesweep"):
        if key in name:
            return key
    return name[:40]


NAMES = {"cub-keys": "CUB SortKeys", "cuda-c-keys": "onesweep CUDA C", "numba-keys": "onesweep numba",
         "cub-pairs": "CUB SortPairs", "cuda-c-pairs": "onesweep CUDA C, pairs", "numba-pairs": "onesweep numba, pairs"}


def book_rows(sorts: dict) -> list[dict]:
    """The book's table: per sort (the CSV files named as in `NAMES`), its histogram kernel, its
    four digit passes together and the whole sort; kernels under 0.02 ms (scans, zeroing, CUB's
    empty launches) count only in the whole sort."""
    rows = []
    for case in [c for c in NAMES if c in sorts]:
        s, agg = sorts[case], {}
        for k in s["kernels"]:
            if k["ms"] < 0.02 or k["kernel"] in ("CUB ExclusiveSum", "zero_i32", "onesweep_scan"):
                continue
            part = "histograms" if k["kernel"] in ("CUB Histogram", "onesweep_hist") else "4 digit passes"
            a = agg.setdefault(part, {"ms": 0.0, "GB": 0.0, "bound": 0.0})
            a["ms"] += k["ms"]
            a["GB"] += k["dram_GB"]
            a["bound"] += k["bound_ms"]
        for part in ("histograms", "4 digit passes"):
            a = agg[part]
            rows.append({"sort": NAMES[case], "kernels": part, "ms": round(a["ms"], 3), "DRAM GB": round(a["GB"], 2),
                         "TB/s": round(a["GB"] / a["ms"], 2), "bound ms": round(a["bound"], 3),
                         "× bound": round(a["ms"] / a["bound"], 1)})
        rows.append({"sort": NAMES[case], "kernels": "whole sort", "ms": round(s["total_ms"], 3),
                     "DRAM GB": round(sum(k["dram_GB"] for k in s["kernels"]), 2), "TB/s": None, "bound ms": None,
                     "× bound": None})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("args", nargs="*", help="log2n who what; or with --parse, the CSV files")
    ap.add_argument("--parse", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--about", help="with --parse: what the run was (written into the JSON)")
    a = ap.parse_args(argv)
    if not a.parse:
        log2n, who, what = a.args
        run(int(log2n), who, what)
        return 0
    from gpulab.radix.bench import COPY_BW

    res = {"about": a.about, "copy_TBps": COPY_BW / 1e12, "sorts": {}}
    for path in a.args:
        ks, check = parse_one(path)
        case = Path(path).stem
        res["sorts"][case] = {"check": check, "total_ms": round(sum(k["ms"] for k in ks), 4), "kernels": ks}
        print(f"{case}: {sum(k['ms'] for k in ks):.3f} ms in {len(ks)} kernels, check {check}")
        for k in ks:
            print(f"  {k['kernel']:16} {k['ms']:7.3f} ms {k['dram_GB']:6.2f} GB {(k['TBps'] or 0):5.2f} TB/s"
                  f"  bound {k['bound_ms']:.3f} ms")
    res["rows"] = book_rows(res["sorts"])
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
