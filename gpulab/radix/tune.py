"""Chapter 4 tuning sweep on the GPU: the register-resident sorts (`local`, `onesweep`) over their
tile shape and ranking, keys-only and key-value, against CUB's sort alone in the same run.

    python -m gpulab.radix.tune --out gpu-out [--log2n 28]
        -> radix-tuning-<device>.json   every configuration of the round (--round, default 3): whole sort, the one-sweep preamble
                                        (all histograms + their scans) and the per-pass time
        and prints a table, best first per (variant, backend, keys/pairs).

Swept: BLOCK x ITEMS (the tile), MIN_BLOCKS (CUDA C: `__launch_bounds__(BLOCK, MIN_BLOCKS)`,
which caps registers so that many blocks fit an SM), BALLOT (BITS ballots or one match_any to
find a lane's digit peers). Every configuration's result is checked against numpy's sort of
the same keys before it is timed; configurations that do not fit (shared memory) are listed
with the reason. Dry run on a CPU: GPULAB_DEVICE=sim python -m gpulab.radix.tune --log2n 13.
(It was scripts/tune_radix.py in the recorded rounds 1 to 5.) Each configuration runs the launch
policy of the registry entry it names (`SortPlan(REGISTRY.get(variant, backend).policy, ...)`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import gpulab  # noqa: F401  (device selection first)
from gpulab import benchmark, device
from gpulab.errors import GpulabError
from gpulab.radix import host, peer
from gpulab.radix.variants import REGISTRY
from gpulab.timing import measure

# (BLOCK, ITEMS, MIN_BLOCKS). Round 1 (docs/benchmarks/radix-runs/tune1-h200.log) swept
# 256-512 x 12-24 x MIN_BLOCKS 1-4 in CUDA C and 5 shapes x both rankings in numba: the winners
# were the shapes with the most resident threads. Round 2 swept around them,
# numba with launch bounds too.
ROUNDS = {
    1: dict(onesweep_keys=[(256, 16, 1), (256, 16, 3), (256, 16, 4), (384, 16, 1), (384, 16, 2), (384, 16, 3),
                           (256, 12, 1), (256, 12, 4), (512, 12, 1), (512, 12, 2), (256, 20, 1), (256, 20, 2),
                           (256, 20, 3), (384, 20, 1), (384, 20, 2), (256, 24, 1), (256, 24, 2)],
            pairs=[(256, 16, 1), (256, 16, 2), (256, 16, 3), (256, 12, 1), (256, 12, 3), (256, 12, 4), (256, 8, 4)],
            numba_keys=[(256, 16, 1), (384, 16, 1), (256, 12, 1), (512, 12, 1), (256, 20, 1)],
            numba_pairs=[(256, 12, 1), (256, 16, 1)], ballots=(1, 0)),
    2: dict(onesweep_keys=[(384, 16, 3), (384, 12, 3), (384, 12, 4), (384, 14, 3), (320, 16, 3), (448, 16, 2),
                           (448, 12, 3), (512, 12, 3), (384, 18, 2)],
            local_keys=[(384, 16, 2), (256, 16, 3), (384, 12, 3), (448, 16, 2)],
            pairs=[(256, 12, 4), (256, 16, 3), (320, 12, 3), (288, 12, 4), (256, 14, 4), (384, 8, 4)],
            numba_keys=[(384, 16, 3), (384, 16, 2), (256, 16, 4), (256, 12, 4), (256, 20, 3), (448, 16, 2)],
            numba_pairs=[(256, 12, 4), (256, 16, 3), (288, 12, 4)], ballots=(1,)),
    # Round 3: the restructured tile (full-tile path, shuffle scan of the digit starts, staging
    # before the look-back, values through the keys' buffer after them). A 4th element adds
    # defines (FULL_TILES=0: every tile bounds-checked, to measure the full-tile path).
    3: dict(onesweep_keys=[(384, 16, 3), (384, 16, 3, dict(FULL_TILES=0)), (384, 16, 2), (256, 16, 4), (384, 12, 3),
                           (384, 14, 3), (512, 12, 2), (256, 20, 3), (384, 20, 2), (512, 16, 2)],
            local_keys=[(384, 16, 2), (256, 16, 3), (384, 16, 3)],
            pairs=[(384, 16, 2), (384, 12, 3), (256, 16, 3), (384, 8, 4), (256, 12, 4), (384, 16, 3), (512, 12, 2),
                   (256, 16, 4)],
            numba_keys=[(384, 16, 3), (384, 16, 2), (256, 16, 4), (384, 12, 3)],
            numba_pairs=[(384, 16, 2), (384, 12, 3), (256, 16, 3)], ballots=(1,)),
    # Round 5: round 3 found the full-tile path worth 22% (9.02 -> 7.00 ms) and 384 x 16 x 3 best
    # for keys; around it with fewer spills (fewer threads per block at 3 blocks), and the
    # key-value tiles that the old shared-memory check refused (values no longer need a buffer).
    5: dict(onesweep_keys=[(384, 16, 3), (352, 16, 3), (320, 16, 3), (320, 18, 3), (352, 18, 3), (384, 15, 3),
                           (288, 16, 4), (384, 16, 3, dict(FULL_TILES=0))],
            local_keys=[(384, 16, 3), (352, 16, 3)],
            pairs=[(256, 16, 3), (384, 16, 2), (384, 12, 3), (320, 16, 3), (352, 16, 3), (384, 16, 3), (512, 12, 2),
                   (320, 12, 4)],
            local_pairs=[(256, 16, 3), (384, 16, 2), (384, 12, 3), (352, 16, 3)],
            numba_keys=[(384, 16, 3), (352, 16, 3)],
            numba_pairs=[(256, 16, 3), (384, 16, 2), (384, 12, 3), (352, 16, 3)], ballots=(1,)),
    # The shipped defaults only: run against an older tree in the same session for an A/B.
    4: dict(onesweep_keys=[(384, 16, 3)], local_keys=[(384, 16, 2)], pairs=[(384, 8, 4)],
            numba_keys=[(384, 16, 3)], numba_pairs=[(256, 12, 4)], ballots=(1,)),
}


def _shape(t):
    b, it, mb, *extra = t
    return dict(BLOCK=b, ITEMS=it, BITS=8, BALLOT=1, MIN_BLOCKS=mb, **(extra[0] if extra else {}))


def configs(sim: bool, rnd: int):
    """(variant, backend, pairs, parameters) of every configuration of round `rnd`. A round
    names each variant's shapes `<variant>_keys` / `<variant>_pairs` (local: the first six
    onesweep shapes and `pairs` where it names none of its own)."""
    if sim:  # a handful, to prove the script on the simulator
        yield ("onesweep", "numba", False, dict(BLOCK=64, ITEMS=4, BITS=4, BALLOT=1))
        yield ("local", "numba", True, dict(BLOCK=64, ITEMS=4, BITS=4, BALLOT=0))
        return
    r = ROUNDS[rnd]
    for name in ("onesweep", "local"):
        for t in r.get(f"{name}_keys", r["onesweep_keys"][:6]):
            yield (name, "cuda-c", False, _shape(t))
        for t in r.get(f"{name}_pairs", r["pairs"]):
            yield (name, "cuda-c", True, _shape(t))
        for ballot in r["ballots"]:
            for pairs, shapes in ((False, r["numba_keys"]), (True, r["numba_pairs"])):
                for t in shapes:
                    yield (name, "numba", pairs, {**_shape(t), "BALLOT": ballot})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpulab.radix.tune", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--round", type=int, default=3, choices=sorted(ROUNDS))
    ap.add_argument("--tag", default="", help="suffix of the output file's name")
    args = ap.parse_args(argv)
    from numba import cuda

    sim = device.on_simulator()
    n = 2**args.log2n
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ref = np.sort(keys)
    d = cuda.to_device(keys)
    result = {"schema": "gpulab-radix-tuning/1", "date": benchmark.utc_now(), "device": device.info().as_dict(),
              "versions": benchmark.versions(), "n": n, "repeat": args.repeat, "round": args.round,
              "peer": None, "rows": []}
    cub = {}
    if not sim and peer.unavailable_reason() is None:
        for pairs in (False, True):
            launch, _, _ = peer.sorter(d, pairs)
            cub[pairs] = measure(launch, repeat=args.repeat).median_ms
            print(f"CUB {'SortPairs' if pairs else 'SortKeys'} alone: {cub[pairs]:.3f} ms", flush=True)
        result["peer"] = {"what": "CUB DeviceRadixSort::SortKeys / SortPairs (uint32 values), direct call, "
                                  "input already on the device, no copy in the timed region",
                          "keys_ms": cub[False], "pairs_ms": cub[True], "version": peer.version()}
    vals = cuda.to_device(np.arange(n, dtype=np.uint32))
    for name, backend, pairs, p in configs(sim, args.round):
        policy = REGISTRY.get(name, backend).policy
        params = dict(SCAN_BLOCK=512, **p)
        row = {"variant": name, "backend": backend, "pairs": pairs,
               **params, "ok": None, "sort_ms": None, "error": None}
        mb = params.pop("MIN_BLOCKS", 1)  # the kernel each variant runs gets it
        params.update(DOWNSWEEP_MIN_BLOCKS=mb, ONESWEEP_MIN_BLOCKS=mb)
        result["rows"].append(row)
        plan = None
        try:
            plan = host.SortPlan(policy, backend, n, pairs, params)
            kd, vd = plan.sort(d, vals if pairs else None)
            got = kd.copy_to_host()
            row["ok"] = bool(np.array_equal(got, ref))
            if pairs and row["ok"]:
                row["ok"] = bool(np.array_equal(keys[vd.copy_to_host()], ref))
            if not row["ok"]:
                print(f"WRONG {row}", flush=True)
                continue
            mk = int(ref[-1])
            row["sort_ms"] = measure(lambda: plan.sort(d, vals if pairs else None, max_key=mk),
                                     repeat=args.repeat).median_ms
            if policy.histograms_first:
                row["preamble_ms"] = measure(lambda: plan.histograms(d, plan.passes(mk)), repeat=args.repeat).median_ms
                row["pass_ms"] = (row["sort_ms"] - row["preamble_ms"]) / plan.passes(mk)
            if cub.get(pairs):
                row["pct_of_cub"] = 100 * cub[pairs] / row["sort_ms"]
            print(f"{row['variant']:8s} {backend:6s} {'pairs' if pairs else 'keys ':5s} B={p['BLOCK']:3d} "
                  f"I={p['ITEMS']:2d} MB={p.get('MIN_BLOCKS', '-')} BALLOT={p['BALLOT']}"
                  f"{' FULL_TILES=0' if p.get('FULL_TILES') == 0 else ''} {row['sort_ms']:8.3f} ms "
                  f"{row.get('pct_of_cub', 0):5.1f}% CUB" + (f"  pass {row['pass_ms']:.3f} pre {row['preamble_ms']:.3f}"
                                                              if "pass_ms" in row else ""), flush=True)
        except (GpulabError, RuntimeError, ValueError) as exc:  # a configuration that cannot build: say why
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            print(f"skip {row['variant']} {backend} {p}: {row['error']}", flush=True)
        finally:
            del plan
            device.release_memory()
    out = Path(args.out) / f"radix-tuning-{'sim' if sim else 'h200'}{args.tag}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {out}\n\nbest per (variant, backend, keys/pairs):")
    best = {}
    for r in result["rows"]:
        if r["sort_ms"] is None:
            continue
        k = (r["variant"], r["backend"], r["pairs"])
        if k not in best or r["sort_ms"] < best[k]["sort_ms"]:
            best[k] = r
    for (v, b, pr), r in sorted(best.items()):
        print(f"  {v:8s} {b:6s} {'pairs' if pr else 'keys ':5s} {r['sort_ms']:8.3f} ms {r.get('pct_of_cub', 0):5.1f}% of CUB"
              f"  BLOCK={r['BLOCK']} ITEMS={r['ITEMS']} MIN_BLOCKS={r.get('MIN_BLOCKS', '-')} BALLOT={r['BALLOT']}")
    return 0 if all(r["ok"] is not False for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
