"""Every kernel of every chapter under compute-sanitizer: a small workload, and its driver.

**Workload** (one process per sanitizer tool): every GPU variant of the named chapters (all five
by default), from each chapter's registry, on one backend, at small sizes around the variant's
block or tile (1, below and above one block, a few blocks and a prime: ragged edges, one block,
several blocks), each run through the chapter's benchmark check (``bench.setup`` / ``bench.check``):
the result is compared with the CPU reference, and the checks poison the output or work buffers
first where the chapter's outputs are buffers (matmul's C, radix's key buffers, euler's circuit),
so a kernel that skips an element is caught even where the sanitizer sees nothing.

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \\
        python scripts/sanitize.py [chapters ...] --backend numba

On the simulator (``GPULAB_DEVICE=sim``, no compute-sanitizer) the same command runs the cases at
simulator sizes and checks the results: a dry run of the workload.

**Driver** (on a GPU machine): every tool × chapter × backend, each as its own
``compute-sanitizer`` process, the summaries parsed ("ERROR SUMMARY: N errors",
"RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"), written to
``DIR/sanitize-summary.json`` with one log per run, and a table on stdout:

    python scripts/sanitize.py --all-tools --out DIR [--tools memcheck,racecheck] [--timeout 300] [chapters ...]

Small on purpose: under racecheck and initcheck every shared / global access is tracked, and
each tool should finish all chapters in a few minutes on an H100.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
BACKENDS = ("numba", "cuda-c")


# ----------------------------------------------------------------------------- the cases


def _matmul_cases(v, sim):
    from gpulab.matmul import bench

    p = v.params
    t = p.get("BM") or p.get("WT_BM") or p.get("CA_BM") or p.get("TILE") or 16
    if sim:
        return [bench._case(1, 1, 1), bench._case(17, 5, 19)]
    # 1; one tile minus / plus one (a ragged second tile); a few tiles at prime sizes; whole tiles
    # (the unguarded fast paths: with K = 40 a cp.async ring of up to 4 stages wraps around)
    return [bench._case(1, 1, 1), bench._case(t - 1, 9, t + 1), bench._case(2 * t + 3 if t > 16 else 67, 37, 3 * t + 7),
            bench._case(2 * t, 40, 2 * t)]


def _subset_cases(v, sim):
    from gpulab.subset import bench

    # C(n, k) subsets: fewer than a warp, about one block, several blocks (n prime)
    sizes = [(4, 2), (9, 3)] if sim else [(4, 2), (12, 4), (23, 4)]
    return [bench._case(n, k) for n, k in sizes]


def _gp_cases(v, sim):
    from gpulab.gp import bench

    # (individuals, stocks, days): one of each; then several blocks of (individual, stock) threads
    # and days across 64-day words (63, 65, 131)
    sizes = [(1, 1, 40), (3, 5, 65)] if sim else [(1, 1, 63), (3, 33, 65), (7, 41, 131)]
    return [bench._case(f"P={P} S={S} D={D}", P, S, D) for P, S, D in sizes]


def _radix_tile(v, sim):
    p = v.launch_params()  # on the simulator (sim) its sim_params
    if "ITEMS" in p:
        return p["BLOCK"] * p["ITEMS"]
    return p.get("BLOCK") or 2 * p["SCAN_BLOCK"]


def _radix_cases(v, sim):
    from gpulab.radix import bench

    t = _radix_tile(v, sim)
    sizes = [1, t - 1, t + 1] if sim else [1, t - 1, t + 1, 3 * t + 17]
    out = [bench._case(kind, n, f"{kind} {n}") for n in sizes for kind in ("keys", "pairs")]
    return out + [bench._case("distinct", t + 1, f"distinct {t + 1}")]


def _euler_cases(v, sim):
    from gpulab.euler import bench

    if sim:
        return [bench._case("shallow", 24, "shallow 24"), bench._case("debruijn", 2**4, "B(2,4)", k=2, n=4),
                bench._undirected("deep", 24)]
    b = v.params.get("BLOCK", 256)
    sort = v.params.get("SMALL_SORT", 2048)
    return [bench._case("shallow", b - 1, f"shallow {b - 1}"), bench._case("deep", b + 1, f"deep {b + 1}"),
            bench._case("shallow", sort + 5, f"shallow {sort + 5}"),  # past the small sort, a few blocks
            bench._case("debruijn", 2**9, "B(2,9)", k=2, n=9),
            bench._undirected("deep", b + 1), bench._undirected("deep", sort + 5)]  # the darts' path too


CASES = {"matmul": _matmul_cases, "subset": _subset_cases, "gp": _gp_cases, "radix": _radix_cases,
         "euler": _euler_cases}


def _radix_lane31(state):
    """Lane 31 of every warp holds the largest low digit (numba's ballot mask once crashed on it)."""
    from numba import cuda

    import numpy as np

    keys = state["keys"]
    keys[31::32] |= np.uint32(0xFF)
    state["d_keys"] = cuda.to_device(keys)
    return state


def run_workload(chapters, backend, seed, variants=None, out=sys.stdout) -> int:
    """Run every case of every variant; return the number of wrong results and errors."""
    import numpy as np

    import gpulab  # noqa: F401  (device selection first)
    from gpulab import device
    from gpulab import chapters as book
    from gpulab.errors import GpulabError

    sim = device.on_simulator()
    print(f"sanitize workload: {', '.join(chapters)}, backend {backend}, on {device.info().name}"
          f"{' (simulator: dry run)' if sim else ''}, seed {seed}", file=out, flush=True)
    bad = ran = skipped = 0
    for ch in chapters:
        from numba import cuda

        chapter = book.get(ch)
        spec = chapter.bench
        states: dict = {}  # one input per case, shared by the chapter's variants (euler compares them)
        for v in chapter.registry.select(backend=backend):
            if variants and v.name not in variants:
                continue
            reason = v.unavailable_reason()
            if reason:
                print(f"{ch:7s} {v.key:26s} skipped: {reason}", file=out, flush=True)
                skipped += 1
                continue
            for case in CASES[ch](v, sim):
                label = f"{ch:7s} {v.key:26s} {case.label:18s}"
                t0 = time.perf_counter()
                try:
                    if case.label not in states:
                        rng = np.random.default_rng([seed, len(states)])
                        st = spec.setup(case, rng)
                        states[case.label] = _radix_lane31(st) if ch == "radix" else st
                    ok, detail = spec.check(v, states[case.label])
                    cuda.synchronize()
                except GpulabError as exc:  # a size this variant refuses, by design
                    print(f"{label} skipped: {exc}", file=out, flush=True)
                    skipped += 1
                    continue
                except Exception as exc:  # noqa: BLE001  (keep going: one report per case)
                    ok, detail = False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
                ran += 1
                bad += not ok
                print(f"{label} {'ok' if ok else 'WRONG'}  {detail}  ({time.perf_counter() - t0:.2f} s)",
                      file=out, flush=True)
        for st in states.values():
            if spec.teardown:
                spec.teardown(st)
    print(f"sanitize workload: {ran - bad} ok, {bad} wrong, {skipped} skipped", file=out, flush=True)
    return bad


# ----------------------------------------------------------------------------- the driver

_ERRORS = re.compile(r"ERROR SUMMARY:\s*(\d+) errors?\s*$", re.MULTILINE)  # not "N errors were not printed"
_RACE = re.compile(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


def parse_summary(text: str) -> dict:
    """The sanitizer's verdict from its log: errors (and racecheck's hazards / warnings), and the
    workload's own count of ok / wrong checks."""
    out: dict = {"errors": None, "hazards": None, "race_errors": None, "race_warnings": None}
    m = _ERRORS.findall(text)
    if m:
        out["errors"] = sum(int(x) for x in m)
    r = _RACE.findall(text)
    if r:
        out["hazards"] = sum(int(h) for h, _, _ in r)
        out["race_errors"] = sum(int(e) for _, e, _ in r)
        out["race_warnings"] = sum(int(w) for _, _, w in r)
    out["checks_ok"] = len(re.findall(r" ok  ", text))
    out["checks_wrong"] = len(re.findall(r" WRONG  ", text))
    out["skipped"] = len(re.findall(r" skipped: ", text))
    return out


def _run_one(exe, tool, ch, be, out_dir: Path, timeout: float, seed: int) -> dict:
    """One compute-sanitizer process: `tool` over chapter `ch` on backend `be`; its parsed record."""
    log = out_dir / f"sanitize-{tool}-{ch}-{be}.log"
    cmd = [exe, "--tool", tool, "--report-api-errors", "no", "--error-exitcode", "9",
           sys.executable, str(Path(__file__).resolve()), ch, "--backend", be, "--seed", str(seed)]
    # --report-api-errors no: numba's driver binding probes optional entry points
    # (cuGetProcAddress answers "invalid argument"), which memcheck would count as errors
    t0 = time.perf_counter()
    # its own process group, so that a timeout ends the sanitizer and the Python under it
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            start_new_session=True)
    timed_out = False
    try:
        text, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        text, _ = proc.communicate()
        text += f"\n[timed out after {timeout:.0f} s]\n"
    rc = None if timed_out else proc.returncode
    log.write_text(text)
    rec = {"tool": tool, "chapter": ch, "backend": be, "exit": rc, "seconds": round(time.perf_counter() - t0, 1),
           "timed_out": timed_out, "log": log.name, **parse_summary(text)}
    found = rec["errors"] is not None or rec["hazards"] is not None  # the tool printed its summary
    rec["clean"] = (rc == 0 and found and not rec["errors"] and not rec["hazards"]
                    and rec["checks_wrong"] == 0 and rec["checks_ok"] > 0)  # a run that checked nothing is not clean
    return rec


def drive(chapters, backends, tools, out_dir: Path, timeout: float, seed: int, jobs: int = 1) -> int:
    from concurrent.futures import ThreadPoolExecutor, as_completed

    exe = shutil.which("compute-sanitizer")
    if exe is None:
        print("compute-sanitizer not found on PATH (it ships with the CUDA toolkit)", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    # several sanitizer processes at once share the GPU (each is mostly host-bound under the tools)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_run_one, exe, tool, ch, be, out_dir, timeout, seed)
                   for tool in tools for ch in chapters for be in backends]
        for fut in as_completed(futures):
            rec = fut.result()
            runs.append(rec)
            print(f"{rec['tool']:9s} {rec['chapter']:7s} {rec['backend']:6s} exit {rec['exit']!s:4s} "
                  f"errors {rec['errors']!s:4s} "
                  f"{'hazards ' + str(rec['hazards']) + ' ' if rec['hazards'] is not None else ''}"
                  f"checks {rec['checks_ok']} ok {rec['checks_wrong']} wrong  {rec['seconds']:.0f} s"
                  f"{'' if rec['clean'] else '  <-- NOT CLEAN'}"
                  f"{'  (nothing ran: see the log)' if not rec['checks_ok'] else ''}", flush=True)
    runs.sort(key=lambda r: (tools.index(r["tool"]), chapters.index(r["chapter"]), backends.index(r["backend"])))
    summary = {"seed": seed, "chapters": chapters, "backends": backends, "tools": tools, "timeout_s": timeout,
               "runs": runs, "clean": all(r["clean"] for r in runs)}
    (out_dir / "sanitize-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\n{sum(r['clean'] for r in runs)} of {len(runs)} runs clean; summary in {out_dir / 'sanitize-summary.json'}")
    return 0 if summary["clean"] else 1


def main(argv=None) -> int:
    from gpulab.chapters import CHAPTERS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chapters", nargs="*", help=f"chapters (default: all of {', '.join(CHAPTERS)})")
    ap.add_argument("--backend", choices=BACKENDS, default="numba", help="workload mode: the backend to run")
    ap.add_argument("--variants", default="", help="workload mode: only these variant names (comma-separated)")
    ap.add_argument("--seed", type=int, default=None, help="input seed (default: fresh, printed)")
    ap.add_argument("--all-tools", action="store_true", help="driver mode: run the workload under each tool")
    ap.add_argument("--tools", default=",".join(TOOLS), help="driver mode: comma-separated sanitizer tools")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="driver mode: comma-separated backends")
    ap.add_argument("--timeout", type=float, default=300.0, help="driver mode: seconds per sanitizer run")
    ap.add_argument("--out", default="sanitize-out", help="driver mode: folder for the logs and the summary")
    ap.add_argument("--jobs", type=int, default=1, help="driver mode: sanitizer processes at once (default: 1)")
    a = ap.parse_args(argv)
    chapters = a.chapters or list(CHAPTERS)
    for ch in chapters:
        if ch not in CHAPTERS:
            ap.error(f"unknown chapter {ch!r}; known: {', '.join(CHAPTERS)}")
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    if a.all_tools:
        tools = [t for t in a.tools.split(",") if t]
        backends = [b for b in a.backends.split(",") if b]
        for t in tools:
            if t not in TOOLS:
                ap.error(f"unknown tool {t!r}; known: {', '.join(TOOLS)}")
        for b in backends:
            if b not in BACKENDS:
                ap.error(f"unknown backend {b!r}; known: {', '.join(BACKENDS)}")
        return drive(chapters, backends, tools, Path(a.out), a.timeout, seed, a.jobs)
    variants = {x for x in a.variants.split(",") if x} or None
    return 1 if run_workload(chapters, a.backend, seed, variants) else 0


if __name__ == "__main__":
    sys.exit(main())
