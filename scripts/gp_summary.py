"""The short table ``scripts/gpu_gp.sh final`` prints last: chapter 3's GPU run against the
issue's targets, from the JSON files in one output folder.

    python scripts/gp_summary.py OUT
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path


def _load(pattern: str, out: Path):
    paths = sorted(p for p in glob.glob(str(out / pattern)))
    return (paths[0], json.loads(Path(paths[0]).read_text())) if paths else (None, None)


def main(out: str) -> int:
    out = Path(out)
    _, tune = _load("gp-tuning-*.json", out)
    if tune:
        print("== tuning winners (seed size)")
        for key, w in tune["winners"].items():
            rows = [r for r in tune["rows"] if f"{r['variant']}[{r['backend']}]" == key and "ms" in r
                    and all(r.get(k) == x for k, x in w.items())]
            ms = f"{rows[0]['ms']:.4g} ms" if rows else ""
            print(f"   {key:18s} {w}  {ms}")
        for b in tune.get("breakdown", []):
            parts = "  ".join(f"{k[:-3]} {b[k]:.3g}" for k in ("upload_ms", "kernel_ms", "fitness_ms", "host_only_ms") if k in b)
            print(f"   breakdown {b['variant']}[{b['backend']}] P={b['population']}: wall {b['wall_ms_per_call']:.3g} ms/call  {parts}")
        for t in tune.get("bitsliced_trading", []):
            print(f"   bitsliced[{t['backend']}]: {t['ms']:.3g} ms, of which trading {t['trading_ms']:.3g} ms")
    bench = None
    for path in sorted(glob.glob(str(out / "gp-*.json"))):
        data = json.loads(Path(path).read_text())
        if data.get("schema") == "gpulab-bench/1":
            bench = data
    if bench:
        print(f"== bench ({bench['device']['name']}): ms per generation")
        recs = [r for r in bench["records"] if r["median_ms"] is not None]
        for r in recs:
            if r["variant"] not in ("register", "bitsliced", "interpreter", "cpu_bitsliced", "compiled"):
                continue
            extra = "".join(f" {k}={r[k]:.3g}" for k in ("speedup_same_algorithm", "word_ops_per_s") if k in r)
            print(f"   {r['label']:22s} {r['variant']:14s} {r['backend']:7s} {r['median_ms']:9.4g} ms "
                  f"{r['throughput']:.3g} GP ops/s{extra}")
        seed = [r for r in recs if r["label"].startswith("seed")]
        interp = [r for r in seed if r["backend"] != "cpu" and r["variant"] not in ("bitsliced", "compiled")]
        bits = [r for r in seed if r["variant"] == "bitsliced"]
        print("== targets")
        if interp:
            b = max(interp, key=lambda r: r["throughput"])
            print(f"   best interpreter >= 1e12 GP ops/s: {b['variant']}[{b['backend']}] {b['throughput']:.3g}  "
                  f"{'MET' if b['throughput'] >= 1e12 else 'missed'}")
            sp = b.get("speedup_same_algorithm")
            if sp:
                print(f"   interpreter vs numba CPU interpreter >= 100x: {sp:.3g}x  {'MET' if sp >= 100 else 'missed'}")
        if bits:
            b = min(bits, key=lambda r: r["median_ms"])
            print(f"   seed-size generation <= 1 ms: bitsliced[{b['backend']}] {b['median_ms']:.4g} ms  "
                  f"{'MET' if b['median_ms'] <= 1 else 'missed'}")
            sp = b.get("speedup_same_algorithm")
            if sp:
                print(f"   bitsliced vs cpu_bitsliced >= 100x: {sp:.3g}x  {'MET' if sp >= 100 else 'missed'}")
    for path in sorted(glob.glob(str(out / "gp-evolve-*.json"))):
        ev = json.loads(Path(path).read_text())
        t, h = ev["timing"], ev["history"]
        print(f"== evolve {ev['settings']['variant']}[{ev['settings']['backend']}]: {ev['settings']['generations']} "
              f"generations in {t['total_s']:.3g} s (evaluation {t['evaluation_s']:.3g} s, breeding {t['breeding_s']:.3g} s); "
              f"mean size {h[0]['mean_nodes']:.1f} -> {h[-1]['mean_nodes']:.1f}; breeding "
              f"{h[0]['breed_ms']:.3g} ms (gen 0), {max(x['breed_ms'] for x in h):.3g} ms (max); "
              f"{'MET' if t['total_s'] <= 5 else 'missed'} (<= 5 s)")
    _, exp = _load("gp-experiment-*.json", out)
    if exp:
        print(f"== experiment (population {exp['settings']['population']}, {exp['settings']['generations']} generations, "
              f"{len(exp['settings']['seeds'])} seeds)")
        for s in exp["summary"]:
            print(f"   {s['stocks']:3d} stocks × {s['train_days']:4d} days: train {s['train_mean']:+.4f} ± {s['train_std']:.4f}"
                  f"  test {s['test_mean']:+.4f} ± {s['test_std']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "gpu-out"))
