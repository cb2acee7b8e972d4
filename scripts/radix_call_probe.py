"""Where gpulab.radix's public call spends the time it adds to the kernels, at one size (issue 30).

For each backend, the plan's sort alone (numba device arrays, what `gpulab bench radix` times
as the kernels) and the public call on CuPy arrays (`sort`, or `sort_pairs` with `--pairs`),
each call timed without stamps in its body:

  gpu ms    CUDA events around the call: median of --calls after --warmup calls
  first us  host time from the call to its first launch (the plan's `histograms`)
  pass0 us  host time from the call to the launch of its first pass (`one_pass`)
  gc/call   Python garbage collections during a call (`gc.callbacks`), and the us they took

once with Python's garbage collector on and once with it off (`gc.disable()`), in blocks that
alternate. The GPU is idle until the host launches the first pass (at 2^24 keys the host takes
longer to get there than the histograms take on the GPU), so what the public call adds before
it adds to the GPU time.

    python scripts/radix_call_probe.py --log2 24 --pairs --json probe.json
    python scripts/radix_call_probe.py --log2 24 --pairs --timeline --out --json probe.json

`--steps` (with `--timeline`) stamps the public call's own steps before the plan's sort too, and
every stamped call's return as "... done": where a real call's host time before its first launch goes.
`--out` adds the public call with `out=` (the caller's CuPy arrays, made once: no result
allocated per call). `--timeline` also stamps every kernel launch of a call and the host steps
around them (the offsets' copy started and back, each result asked for), and prints, per call,
the median host time of each stamp from the call's start beside the call's GPU time: where the
host's last launch comes close to the GPU's end, the GPU waited for the host.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import numpy as np

import gpulab.radix as rx  # before numba: gpulab picks the GPU or the simulator
from numba import cuda  # noqa: E402
from gpulab.benchmark import write_record  # noqa: E402
from gpulab.radix import host  # noqa: E402


class Probe:
    """Stamps the first entry of the plan's `histograms` and `one_pass` within a call, and the
    collections of Python's garbage collector during it."""

    def __init__(self):
        self.t0, self.first, self.pass0, self.gcs, self.gc_s, self._gc_t = 0.0, None, None, 0, 0.0, None
        self.active = False
        self._undo = []
        for name, attr in (("histograms", "first"), ("one_pass", "pass0")):
            orig = getattr(host.SortPlan, name)

            def stamped(*a, _orig=orig, _attr=attr, **k):
                if getattr(self, _attr) is None:
                    setattr(self, _attr, time.perf_counter())
                return _orig(*a, **k)

            setattr(host.SortPlan, name, stamped)
            self._undo.append((name, orig))
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase, info):
        if not self.active:
            return
        if phase == "start":
            self._gc_t = time.perf_counter()
        elif self._gc_t is not None:
            self.gcs += 1
            self.gc_s += time.perf_counter() - self._gc_t
            self._gc_t = None

    def begin(self):
        self.first = self.pass0 = None
        self.gcs, self.gc_s = 0, 0.0
        self.active = True
        self.t0 = time.perf_counter()

    def end(self):
        self.active = False

    def close(self):
        for name, orig in self._undo:
            setattr(host.SortPlan, name, orig)
        gc.callbacks.remove(self._on_gc)


class Timeline:
    """Stamps, within a call, every kernel launch (by kernel name) and the host steps around them:
    the offsets' copy started (`Readback.start`) and back (`passes_that_move`), each result
    asked for (`gpulab.radix._target`, in and out)."""

    def __init__(self, steps: bool = False):
        from gpulab import device
        from gpulab.launch import KernelProvider

        self.t0, self.stamps, self.active, self._undo = 0.0, [], False, []

        def wrap(owner, name, label_of, done=None):
            orig = getattr(owner, name)

            def stamped(*a, **k):
                if not self.active:
                    return orig(*a, **k)
                label = label_of(a)
                self.stamps.append((label, time.perf_counter()))
                r = orig(*a, **k)
                if done is not None:
                    self.stamps.append((label + done, time.perf_counter()))
                return r

            setattr(owner, name, stamped)
            self._undo.append((owner, name, orig))

        # with --steps every stamped call is also stamped on return ("... done"), and the public
        # call's steps before the plan's sort are stamped too (where its host time goes, in a real call)
        end = " done" if steps else None
        wrap(KernelProvider, "__call__", lambda a: a[1], end)
        wrap(device.Readback, "start", lambda a: "offsets copy queued", end)
        wrap(host.SortPlan, "passes_that_move", lambda a: "offsets back")
        wrap(rx, "_target", lambda a: "result", " made")
        if steps:
            for owner, name in ((host, "validate_keys"), (host, "validate_values"), (rx, "_kept_inputs"),
                                (rx, "_launch"), (rx, "_plan"), (rx, "_take"), (host, "order_on_device"),
                                (host.SortPlan, "sort")):
                if hasattr(owner, name):  # (a tree before a step existed)
                    wrap(owner, name, lambda a, _n=name: _n, end)

    def begin(self, t0):
        self.t0, self.stamps, self.active = t0, [], True

    def end(self):
        self.active = False
        return [(label, 1e6 * (t - self.t0)) for label, t in self.stamps]

    def close(self):
        for owner, name, orig in reversed(self._undo):
            setattr(owner, name, orig)


def timeline_rows(runs: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """The median time of each stamp over calls whose stamps came in the same order as the first."""
    labels = [label for label, _ in runs[0]]
    same = [r for r in runs if [label for label, _ in r] == labels]
    return [(label, statistics.median(r[i][1] for r in same)) for i, label in enumerate(labels)]


def time_call(call, probe: Probe, calls: int, warmup: int, collect: bool, before=None, timeline=None) -> dict:
    start, stop = cuda.event(), cuda.event()
    for _ in range(warmup):
        call()
    cuda.synchronize()
    (gc.enable if collect else gc.disable)()
    gpu, first, pass0, gcs, gc_us, stamps = [], [], [], [], [], []
    try:
        for _ in range(calls):
            if before is not None:
                before()
            start.record()
            probe.begin()
            if timeline is not None:
                timeline.begin(probe.t0)
            call()
            probe.end()
            if timeline is not None:
                stamps.append(timeline.end())
            stop.record()
            stop.synchronize()
            gpu.append(start.elapsed_time(stop))
            first.append(1e6 * (probe.first - probe.t0) if probe.first else float("nan"))
            pass0.append(1e6 * (probe.pass0 - probe.t0) if probe.pass0 else float("nan"))
            gcs.append(probe.gcs)
            gc_us.append(1e6 * probe.gc_s)
    finally:
        gc.enable()
    out = {"gpu ms": statistics.median(gpu), "first us": statistics.median(first),
           "pass0 us": statistics.median(pass0), "gc/call": sum(gcs) / calls, "gc us/call": sum(gc_us) / calls}
    if timeline is not None:
        out["timeline"] = timeline_rows(stamps)
    return out


def readback_host_us(plan, d_keys, calls: int = 50) -> dict:
    """Host µs of one `Readback.start` (the offsets' copy queued, its event recorded), median of
    `calls`: with the GPU idle, and right after a whole sort was queued (the GPU busy for most of a
    millisecond). A copy that is queued and not waited for takes the same few µs either way; one
    that waits for the work before it takes about the sort's time when the GPU is busy."""
    out = {}
    for busy in (False, True):
        times = []
        for _ in range(calls):
            cuda.synchronize()
            if busy:
                plan.sort(d_keys)  # its own wait for the offsets comes early; its passes stay queued
            t = time.perf_counter()
            wait = plan.hist_back.start(plan.hist, plan.stream)
            times.append(1e6 * (time.perf_counter() - t))
            wait()
        out["busy" if busy else "idle"] = statistics.median(times)
    cuda.synchronize()
    return out


def _attached(fn):
    from numba.cuda.cudadrv import devices

    def run():
        with devices._runtime.ensure_context():
            return fn()

    return run


def plain_launches_only() -> None:
    """Every plan made from here on launches through its provider, none kept
    (`gpulab.launch.KeptLaunches` disabled): the wrapped steps see every launch and copy. Since
    session 33 a onesweep plan keeps its launches, which bypass the provider; this script
    stamps the plain path (as it did before them)."""
    from gpulab.launch import KeptLaunches

    init = KeptLaunches.__init__
    KeptLaunches.__init__ = lambda self, enabled=True: init(self, False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, default=24)
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--variant", default="onesweep")
    ap.add_argument("--pairs", action="store_true", help="also key-value pairs (sort_pairs)")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=4, help="blocks per setting, gc on and off alternating")
    ap.add_argument("--attach", action="store_true",
                    help="experiment: each call inside numba's ensure_context (the CUDA context looked up once a "
                         "call, not at every numba API call)")
    ap.add_argument("--prewalk", action="store_true",
                    help="experiment: before each timed call, run the public call's host steps up to the plan's "
                         "sort once (checks, look-ups, the array taken; nothing launched), so that the call "
                         "finds their code and data warm")
    ap.add_argument("--out", action="store_true", help="also the public call with out= (the caller's CuPy arrays)")
    ap.add_argument("--timeline", action="store_true", help="stamp every launch and host step of a call (see above)")
    ap.add_argument("--steps", action="store_true",
                    help="with --timeline: also stamp the public call's steps before the plan's sort, and every "
                         "stamped call's return (where the host time before the first launch goes in a real call)")
    ap.add_argument("--json")
    ap.add_argument("--readback", action="store_true",
                    help="also the host time of the offsets' copy queued (Readback.start), GPU idle and busy")
    a = ap.parse_args()
    plain_launches_only()
    if a.steps and not a.timeline:
        ap.error("--steps stamps within --timeline: give both")
    if a.readback and a.variant != "onesweep":
        ap.error("--readback times onesweep's offsets' copy: --variant onesweep")
    import cupy

    n = 2**a.log2
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**32, n, dtype=np.uint32)
    d_keys, d_vals = cuda.to_device(keys), cuda.to_device(np.arange(n, dtype=np.uint32))
    c_keys, c_vals = cupy.asarray(d_keys), cupy.asarray(d_vals)
    probe = Probe()
    timeline = Timeline(a.steps) if a.timeline else None
    rows = []
    try:
        for backend in a.backends:
            v = rx.REGISTRY.get(a.variant, backend)
            for pairs in ([False, True] if a.pairs else [False]):
                plan = v.run(n, pairs, v.launch_params(None))
                if a.readback and not pairs:
                    rb = readback_host_us(plan, d_keys)
                    print(json.dumps({"backend": backend, "readback host us": rb}), flush=True)
                    rows.append({"backend": backend, "case": f"2^{a.log2}", "call": "Readback.start",
                                 "host us, GPU idle": rb["idle"], "host us, GPU busy": rb["busy"]})
                params = None  # the plan's are the variant's own: the call as a user writes it (as the benchmark)
                calls = {"kernels": (lambda: plan.sort(d_keys, d_vals)) if pairs else (lambda: plan.sort(d_keys)),
                         "public cupy": ((lambda: rx.sort_pairs(c_keys, c_vals, v.name, backend, params)) if pairs
                                         else (lambda: rx.sort(c_keys, v.name, backend, params)))}
                if a.out:
                    o_keys, o_vals = cupy.empty_like(c_keys), cupy.empty_like(c_vals)
                    calls["public cupy out"] = ((lambda: rx.sort_pairs(c_keys, c_vals, v.name, backend, params,
                                                                       out=(o_keys, o_vals))) if pairs
                                                else (lambda: rx.sort(c_keys, v.name, backend, params, out=o_keys)))
                before = None
                if a.prewalk:
                    def before(_b=backend, _v=v.name, _p=pairs):
                        host.validate_keys(c_keys)
                        if _p:
                            host.validate_values(n, c_vals)
                        vv, pp, pk = rx._launch(rx._sized(_v, _b, n), _b, None)
                        plan_ = rx._plan(vv, n, _p, pp, pk, 0)
                        rx._take(c_keys, "keys", plan_.scratch, 0)
                        if _p:
                            rx._take(c_vals, "values", plan_.values_scratch, 0)
                    calls = {c + " prewalk": f for c, f in calls.items()}
                if a.attach:
                    calls = {c + " attached": _attached(f) for c, f in calls.items()}
                per = {(c, g): [] for c in calls for g in (True, False)}
                for b in range(a.blocks):
                    for collect in ((True, False) if b % 2 == 0 else (False, True)):
                        for c in (list(calls) if b % 2 == 0 else list(calls)[::-1]):
                            per[c, collect].append(time_call(calls[c], probe, a.calls, a.warmup, collect, before,
                                                             timeline))
                for (c, collect), blocks in per.items():
                    row = {"backend": backend, "case": f"{'pairs ' if pairs else ''}2^{a.log2}", "call": c,
                           "gc": "on" if collect else "off"}
                    for k in blocks[0]:
                        if k != "timeline":
                            row[k] = statistics.median(x[k] for x in blocks)
                    row["gpu ms, per block"] = [x["gpu ms"] for x in blocks]
                    if timeline is not None:  # the first block's (each block's median per stamp)
                        row["timeline us"] = [(label, round(t, 1)) for label, t in blocks[0]["timeline"]]
                    rows.append(row)
                    print(json.dumps({k: (round(x, 4) if isinstance(x, float) else x) for k, x in row.items()}),
                          flush=True)
                del plan
                rx.clear_cache()
    finally:
        probe.close()
        if timeline is not None:
            timeline.close()
    print(f"\n{'backend':7} {'case':11} {'call':21} {'gc':3} {'gpu ms':>8} {'first us':>9} {'pass0 us':>9} "
          f"{'gc/call':>8} {'gc us':>6}")
    for r in [r for r in rows if "gc" in r]:
        print(f"{r['backend']:7} {r['case']:11} {r['call']:21} {r['gc']:3} {r['gpu ms']:8.4f} {r['first us']:9.1f} "
              f"{r['pass0 us']:9.1f} {r['gc/call']:8.2f} {r['gc us/call']:6.1f}")
    for r in [r for r in rows if "gc" not in r]:
        print(f"{r['backend']:7} Readback.start host us: GPU idle {r['host us, GPU idle']:.1f}, "
              f"GPU busy {r['host us, GPU busy']:.1f}")
    if timeline is not None:
        for r in rows:
            if r.get("gc") == "on":
                print(f"\n{r['backend']} {r['case']} {r['call']}: GPU {1e3 * r['gpu ms']:.0f} us; host us from the call's start:")
                print("  " + "; ".join(f"{label} {t:.0f}" for label, t in r["timeline us"]))
    if a.json:
        write_record(a.json, "gpulab-radix-call-probe/1", rows)


if __name__ == "__main__":
    main()
