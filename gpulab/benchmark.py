"""The benchmark harness behind `gpulab bench <chapter>`.

A chapter describes its benchmark with a [`BenchSpec`][gpulab.benchmark.BenchSpec]: the problem
sizes, how to set up inputs on the device, how to launch a variant, how to check it, how to call
the chapter's public function on device-resident inputs, and the peer library it is compared
with (cuBLAS through CuPy, CUB through `cupy.sort` ...). The harness times every variant × size
with [`measure`][gpulab.timing.measure] (CUDA events, warm-up, median of repeats), times the
peer in the same run, and writes one JSON file per chapter and device.

JSON schema (`"schema": "gpulab-bench/1"`):

```json
{
  "schema": "gpulab-bench/1", "chapter": "matmul", "date": "2026-11-21T22:40:00Z",
  "device": {"mode": "gpu", "name": "NVIDIA H200", "compute_capability": [9, 0], ...},
  "versions": {"python": ..., "numpy": ..., "numba": ..., "numba-cuda": ..., "cupy": ...,
               "pycuda": ..., "driver": ..., "gpulab_source_sha256": ...},
  "settings": {"warmup": 2, "repeat": 10, "quick": false},
  "records": [
    {"chapter": "matmul", "variant": "shared", "backend": "numba",
     "size": {"M": 4096, "N": 4096, "K": 4096}, "label": "N=4096",
     "median_ms": 17.1, "samples_ms": [...], "throughput": 8.03, "unit": "TFLOP/s",
     "public_median_ms": 17.2, "public_samples_ms": [...], "public_over_kernel": 1.006,
     "peer": "cuBLAS (CuPy)", "peer_median_ms": 2.7, "ratio_to_peer": 0.157,
     "other_peers_ms": {"...": 3.1},
     "ceiling": 67.0, "ceiling_name": "FP32 peak", "ratio_to_ceiling": 0.12,
     "check": true, "skipped": null}
  ]
}
```

`median_ms` times the variant's launcher on buffers the benchmark set up (what the chapter
optimizes); `public_median_ms` times the chapter's public function (`gpulab.matmul.matmul` ...)
called the way a pipeline calls it — inputs already on the device, result left there — so it
adds validation, allocation of the result and Python overhead; `public_over_kernel` is their
ratio (null for CPU variants and where the chapter defines no public call). Since 2026-11-30
the two are timed in turns (`gpulab.timing.measure_rounds`: four rounds, each a block of each),
so that their ratio does not take in the host's drift between two blocks.
`ratio_to_peer` is peer time / variant time (1.0 = as fast as the peer); `skipped` holds
the reason a variant did not run at that size (a memory limit, no pycuda ...), never silently.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

SCHEMA = "gpulab-bench/1"


@dataclass
class Case:
    """One problem size of a chapter's benchmark."""

    label: str
    size: dict
    work: float  # operations counted for the throughput (flops, keys, subsets)
    unit: str  # e.g. "TFLOP/s"
    unit_scale: float  # work per second / unit_scale = throughput in ``unit``
    ceiling: float | None = None  # hardware bound in ``unit`` (None when there is no meaningful one)
    ceiling_name: str = ""

    def throughput(self, ms: float) -> float:
        return self.work / (ms * 1e-3) / self.unit_scale


@dataclass
class BenchSpec:
    """How to benchmark one chapter. Every callable receives what `setup` returned (the state).

    Attributes:
        chapter: the chapter's name (`gpulab bench <chapter>`).
        cases: `quick -> [Case, ...]`, the problem sizes.
        setup: `(case, rng) -> state`: inputs, on the device, and whatever the checks need.
        runner: `(variant, state) -> launch`: a zero-argument function that runs the variant.
        check: `(variant, state) -> (ok, detail)`: runs it once and compares with a reference.
        peer_name: what the peer is, and what its time includes.
        peer: `state -> launch` of the peer library (or `None` where it is unavailable).
        teardown: `state -> None`, to free device memory between cases.
        public: `(variant, state) -> launch` of the chapter's public function on the state's
            device-resident inputs (or `None` to skip it for that variant): timed as
            `public_median_ms`.
        extra: chapter-specific facts written into the JSON.
    """

    chapter: str
    cases: Callable[[bool], list[Case]]
    setup: Callable[[Case, np.random.Generator], object]
    runner: Callable[[object, object], Callable[[], object]]
    check: Callable[[object, object], tuple[bool, str]]
    peer_name: str = ""
    # the peer's launch for a case, or (launch, name) when the peer differs between cases
    peer: Callable[[object], Callable[[], object] | tuple | None] | None = None
    # secondary peers, {name: launch}, timed in the same run and recorded as ``other_peers_ms``
    other_peers: Callable[[object], dict | None] | None = None
    teardown: Callable[[object], None] | None = None
    public: Callable[[object, object], Callable[[], object] | None] | None = None
    extra: dict = field(default_factory=dict)
    # (warmup, repeat) for the peer of a case, when it differs from the variants' (a CPU peer that
    # takes seconds per run); None (or a None answer for a case): the run's settings
    peer_timing: Callable[[Case], tuple[int, int]] | None = None
    # called with the finished result (e.g. to add a chapter's derived fields to its records)
    finalize: Callable[[dict], None] | None = None
    # (variant, case) -> (warmup, repeat), overriding the run's settings (e.g. one run of a
    # CPU baseline that takes seconds); None keeps them.
    repeats: Callable[[object, Case], tuple[int, int] | None] | None = None
    # (variant, state, record) -> None: add fields to a timed record (stage times, counts ...).
    annotate: Callable[[object, object, dict], None] | None = None


def utc_now() -> str:
    """Now, in UTC, to the second (``2026-11-22T06:34:25Z``): every result file's ``date``."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


SOURCE_SUFFIXES = (".py", ".cu", ".cuh")


def source_sha256(package_dir: str | Path | None = None) -> str:
    """A SHA-256 of the gpulab source that ran: every ``.py``, ``.cu`` and ``.cuh`` file under
    the package directory (this installation's by default), by relative path and content, in
    path order. The version number does not change between commits and the GPU machines run a
    copy of the tree without its git history, so the result files record this instead; to see
    which commit a file came from, compute it for a checkout (``git archive <commit> gpulab``
    unpacked, then ``source_sha256("<that dir>/gpulab")``)."""
    import hashlib

    import gpulab

    root = Path(package_dir) if package_dir is not None else Path(gpulab.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts):
        rel = path.relative_to(root).as_posix()
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def versions() -> dict:
    """Versions of everything that shapes the numbers, and the SHA-256 of the gpulab source
    that ran (`source_sha256`)."""
    import gpulab

    out = {"python": platform.python_version(), "numpy": np.__version__, "gpulab": gpulab.__version__,
           "gpulab_source_sha256": source_sha256()}
    for dist in ("numba", "numba-cuda", "cupy-cuda13x", "cupy-cuda12x", "pycuda"):
        v = _version(dist)
        if v:
            out[dist] = v
    from gpulab import device

    if not device.on_simulator():
        try:
            from numba import cuda

            drv = cuda.cudadrv.driver.driver.get_version()
            out["cuda_driver_api"] = f"{drv[0]}.{drv[1]}"
        except Exception:  # pragma: no cover - informational only
            pass
        try:
            import subprocess

            out["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:  # pragma: no cover
            pass
    return out


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _time_cpu(run: Callable[[], object], warmup: int, repeat: int) -> list[float]:
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def _progress_line(line: str) -> None:
    from gpulab.progress import write

    write(line)


def run(spec: BenchSpec, variants: list, *, quick: bool = False, warmup: int = 2, repeat: int = 10,
        seed: int | None = None, progress: Callable[[str], None] | None = _progress_line,
        cases: list[Case] | None = None) -> dict:
    """Benchmark ``variants`` (registry entries) on every case; return the JSON-ready result.

    ``progress``: called with one line per record (default: [`gpulab.progress.write`][gpulab.progress.write],
    a line on stderr, so that stdout keeps only results); ``None``: none."""
    from gpulab import cudac, device
    from gpulab.errors import GpulabError
    from gpulab.timing import measure, measure_rounds

    rng = np.random.default_rng(seed)
    cases = cases if cases is not None else spec.cases(quick)
    records = []
    total = len(cases) * len(variants)
    done = 0
    t_start = time.perf_counter()
    for case in cases:
        state = spec.setup(case, rng)
        peer_ms, peer_name = None, spec.peer_name or None
        if spec.peer is not None and not device.on_simulator():
            peer_run = spec.peer(state)
            if isinstance(peer_run, tuple):  # (launch, name): the peer differs between cases
                peer_run, peer_name = peer_run
            if peer_run is not None:
                pw, pr = (spec.peer_timing(case) if spec.peer_timing else None) or (warmup, repeat)
                peer_ms = measure(peer_run, warmup=pw, repeat=pr).median_ms
        other_peers = {}  # secondary peers: recorded in the JSON, not in the ratio
        if spec.other_peers is not None and not device.on_simulator():
            for name, other_run in (spec.other_peers(state) or {}).items():
                other_peers[name] = measure(other_run, warmup=warmup, repeat=repeat).median_ms
        for v in variants:
            done += 1
            # The previous variant's closures hold its buffers (a plan of 77 GiB at 2^30 edges):
            # drop them before this variant's check allocates its own.
            launch = public = None
            rec = {"chapter": spec.chapter, "variant": v.name, "backend": v.backend, "size": case.size,
                   "label": case.label, "median_ms": None, "samples_ms": [], "throughput": None,
                   "unit": case.unit, "public_median_ms": None, "public_samples_ms": [], "public_over_kernel": None,
                   "peer": peer_name, "peer_median_ms": peer_ms,
                   "ratio_to_peer": None, "ceiling": case.ceiling, "ceiling_name": case.ceiling_name or None,
                   "ratio_to_ceiling": None, "check": None, "skipped": None}
            if other_peers:
                rec["other_peers_ms"] = other_peers
            reason = v.unavailable_reason()
            try:
                if reason:
                    raise GpulabError(reason)
                ok, detail = spec.check(v, state)
                rec["check"] = bool(ok)
                if not ok:
                    rec["skipped"] = f"wrong result, not timed: {detail}"
                else:
                    launch = spec.runner(v, state)
                    # Teaching-only steps (deliberately slow) and CPU baselines get fewer repeats:
                    # they can take seconds each at GPU-filling sizes.
                    reps = max(3, repeat // 3) if (v.teaching_only or v.backend == "cpu") else repeat
                    warm = 1 if v.backend == "cpu" else min(warmup, 1) if v.teaching_only else warmup
                    custom = spec.repeats(v, case) if spec.repeats else None
                    if custom:
                        warm, reps = custom
                    public = spec.public(v, state) if (spec.public and v.backend != "cpu") else None
                    pub = public_failed = None
                    if v.backend == "cpu":
                        samples = _time_cpu(launch, warm, reps)
                    elif public is None:
                        samples = measure(launch, warmup=warm, repeat=reps).samples_ms
                    else:  # the kernels and the public call in turns (their ratio at the same times)
                        pwarm = min(warmup, 1) if v.teaching_only else warmup
                        try:
                            kern, pub = measure_rounds([launch, public], warmups=[warm, pwarm], repeat=reps)
                            samples = kern.samples_ms
                        except Exception as exc:  # noqa: BLE001 (the public call failed: the kernels alone, kept)
                            public_failed = exc
                            if device.is_out_of_memory(exc):
                                device.release_memory()
                            samples = measure(launch, warmup=warm, repeat=reps).samples_ms
                    rec["samples_ms"] = [round(s, 6) for s in samples]
                    med = float(np.median(samples))
                    rec["median_ms"] = med
                    rec["throughput"] = case.throughput(med)
                    if peer_ms:
                        rec["ratio_to_peer"] = peer_ms / med
                    if case.ceiling:
                        rec["ratio_to_ceiling"] = rec["throughput"] / case.ceiling
                    if public_failed is not None:  # recorded as when the public call was timed after the kernels
                        raise public_failed
                    if pub is not None:
                        rec["public_samples_ms"] = [round(x, 6) for x in pub.samples_ms]
                        rec["public_median_ms"] = pub.median_ms
                        rec["public_over_kernel"] = pub.median_ms / med
                    if spec.annotate is not None:
                        spec.annotate(v, state, rec)
            except GpulabError as exc:
                rec["skipped"] = str(exc)
                rec.update(getattr(exc, "record", None) or {})  # measurements of what did not finish
            except Exception as exc:  # a size that does not fit is a result too: recorded, not a crash
                if not device.is_out_of_memory(exc):
                    raise
                device.release_memory()
                free = device.free_memory_text()
                rec["skipped"] = f"out of device memory ({type(exc).__name__}{f'; {free} after it' if free else ''})"
            records.append(rec)
            if progress:
                elapsed = time.perf_counter() - t_start
                what = f"{rec['median_ms']:.4g} ms" if rec["median_ms"] is not None else f"skipped: {rec['skipped']}"
                if rec["public_median_ms"] is not None:
                    what += f" (public call {rec['public_median_ms']:.4g} ms)"
                progress(f"[{done}/{total} {elapsed:6.1f}s] {spec.chapter} {case.label} {v.key}: {what}")
        if spec.teardown:
            spec.teardown(state)
    result = {"schema": SCHEMA, "chapter": spec.chapter,
              "date": utc_now(),
              "device": {**device.info().as_dict(), "pycuda": cudac.pycuda_status()}, "versions": versions(),
              "settings": {"warmup": warmup, "repeat": repeat, "quick": quick, "seed": seed},
              "records": records}
    if spec.extra:  # chapter facts for the book (values may be callables, evaluated after the run)
        result["extra"] = {k: (v() if callable(v) else v) for k, v in spec.extra.items()}
    if spec.finalize:
        spec.finalize(result)
    return result


COPY_BYTES = 1 << 30  # the copy bandwidth's buffers: 1 GiB each (far past any L2)


def caller_cupy():
    """CuPy where a GPU user of this machine would have it (installed and able to allocate on
    the GPU), else None (always None on the simulator). A benchmark's public call takes its
    device inputs as that user holds them: CuPy arrays (views of the case's numba arrays, no
    copy), whose results come from CuPy's memory pool, as in that user's program."""
    from gpulab import device

    if device.on_simulator():
        return None
    try:
        import cupy

        cupy.zeros(1)
        return cupy
    except Exception:  # not installed, or installed without a working CUDA runtime
        return None


def public_inputs_text(inputs: str) -> str:
    """What a benchmark's public call was given (the JSON's `extra.public_call_inputs`)."""
    from gpulab import device

    if device.on_simulator():
        return "numba device arrays (simulator)"
    if caller_cupy() is None:
        return "numba device arrays (CuPy is missing or cannot run): each result a new numba allocation"
    return f"CuPy arrays (views of the case's {inputs}): each result from CuPy's memory pool"


def copy_bandwidth_GBps(nbytes: int = COPY_BYTES) -> float | None:
    """The device-to-device copy bandwidth, GB/s of bytes read + written (a copy of ``nbytes``
    moves 2 * nbytes): a numba device-to-device copy (``cudaMemcpy`` device → device), the median
    of 10 timed by CUDA events after 2 warm-ups. Half the free memory at most; ``None`` on the
    simulator (no bandwidth to measure). A chapter's bandwidth bounds divide bytes by it (the
    euler benchmark's ``extra.copy_bandwidth_GBps``)."""
    from numba import cuda

    from gpulab import device, timing

    if device.on_simulator():
        return None
    device.release_memory()
    n = max(1 << 20, min(int(nbytes), device.free_bytes() // 4) // 4)
    a = cuda.device_array(n, np.int32)
    b = cuda.device_array(n, np.int32)
    a.copy_to_device(np.zeros(n, np.int32))
    ms = timing.measure(lambda: b.copy_to_device(a), warmup=2, repeat=10).median_ms
    return 2 * n * 4 / (ms * 1e-3) / 1e9


def device_slug(result: dict) -> str:
    name = result["device"]["name"]
    if result["device"]["mode"] == "sim":
        return "simulator"
    return name.lower().replace("nvidia", "").strip().replace(" ", "-") or "gpu"


def merge(old: dict, new: dict) -> dict:
    """``new`` with the records of ``old`` that it does not measure again (same size label,
    variant and backend), in ``old``'s order first: a benchmark run in several parts. Its
    ``parts`` lists the runs, oldest first (what each measured, its date, repeats and
    warm-ups); a record measured again comes from the later run."""
    key = lambda r: (r["label"], r["variant"], r["backend"])  # noqa: E731
    fresh = {key(r) for r in new["records"]}
    merged = dict(new)
    merged["records"] = [r for r in old["records"] if key(r) not in fresh] + new["records"]
    merged["parts"] = _parts(old) + _parts(new)
    return merged


def _parts(result: dict) -> list[dict]:
    """The runs a result's records come from: ``[{"what", "date", "repeat", "warmup"}]``."""
    parts, s = result.get("parts"), result["settings"]
    if isinstance(parts, list):
        return parts
    if isinstance(parts, dict):  # an earlier form, {what: date}, the runs' settings alike
        return [{"what": w, "date": d, "repeat": s["repeat"], "warmup": s["warmup"]} for w, d in parts.items()]
    labels = list(dict.fromkeys(r["label"] for r in result["records"]))
    return [{"what": ", ".join(labels), "date": result["date"], "repeat": s["repeat"], "warmup": s["warmup"]}]


def measured_text(result: dict) -> str:
    """When and how a result's records were measured (the end of its caption in the book):
    one run, or each run of a result merged from several (`merge`)."""
    if not result.get("parts"):
        s = result["settings"]
        return f"measured {result['date']}; median of {s['repeat']} runs after {s['warmup']} warm-up runs, CUDA events"
    parts = _parts(result)
    runs = "; ".join(f"{p['what']} on {p['date']}, median of {p['repeat']} after {p['warmup']} warm-up runs"
                     for p in parts)
    return f"measured in {len(parts)} runs, CUDA events ({runs}; a record measured again is the later run's)"


def write_record(path: str | os.PathLike, schema: str, rows: list, **extra) -> None:
    """A measuring script's JSON: `schema`, the date, the command line that ran, the device,
    the versions, `extra` fields and `rows`."""
    from gpulab import device

    Path(path).write_text(json.dumps({"schema": schema, "date": utc_now(),
                                      "script": "python " + " ".join(sys.argv), "device": device.info().as_dict(),
                                      "versions": versions(), **extra, "rows": rows}, indent=1) + "\n")


def write(result: dict, out_dir: str | os.PathLike, append: bool = False) -> list[Path]:
    """Write ``<chapter>-<device>.json`` and a PNG chart; return the paths written. With
    ``append``, records already in that file for other sizes/variants are kept (`merge`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{result['chapter']}-{device_slug(result)}"
    path = out / f"{stem}.json"
    if append and path.exists():
        result = merge(json.loads(path.read_text()), result)
    path.write_text(json.dumps(result, indent=1) + "\n")
    paths = [path]
    png = chart(result, out / f"{stem}.png")
    if png:
        paths.append(png)
    return paths


# The book's charts are read at page width: the content column is 688 px wide at a 1280 px window,
# and a chart 7 in (504 pt = 672 px) wide is shown at its own size, so 9 pt text is 12 px on the page.
CHART_WIDTH_IN = 7.0
CHART_RC = {"svg.fonttype": "none", "svg.hashsalt": "gpulab", "font.size": 9.5, "axes.titlesize": 10,
            "axes.labelsize": 9.5, "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9,
            "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white"}
CHART_SCALES = {3: "thousands", 6: "millions", 9: "billions", 12: "trillions"}
CHART_SIZES = 4  # panels: the sizes the book's table opens with
BACKEND_STYLE = {"numba": ("#0072B2", "numba"), "cuda-c": ("#E69F00", "CUDA C"), "cpu": ("#999999", "CPU")}


def log_tick_label(v, _pos=None) -> str:
    """A log axis' tick as a plain number (``1,000``, ``0.01``): no 10ⁿ, whose small exponent
    would be the smallest text of the chart."""
    return f"{v:,.0f}" if v >= 1 else f"{v:.10f}".rstrip("0")


def save_chart(fig, path: Path) -> Path:
    """Write a chart: SVG with text as text and no date (byte-for-byte reproducible), or PNG."""
    path = Path(path)
    if path.suffix == ".svg":
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight",
                    pad_inches=0.04)
    else:
        fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.04)
    return path


def chart(result: dict, path: Path, sizes: list[str] | None = None) -> Path | None:
    """Throughput of every variant, one panel per problem size (the first `CHART_SIZES` sizes, or
    `sizes`): horizontal bars, one per variant and backend (a colour per backend), on a log axis;
    the peer is a vertical line. Bars, not lines: the sizes are not points of one axis."""
    recs = [r for r in result["records"] if r["throughput"] is not None]
    if not recs:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    labels = list(dict.fromkeys(r["label"] for r in result["records"]))  # as the book's table
    sizes = [s for s in (sizes or labels[:CHART_SIZES]) if s in labels] or labels[:CHART_SIZES]
    recs = [r for r in recs if r["label"] in sizes]
    top = max(r["throughput"] for r in recs)
    exp = max((e for e in (3, 6, 9, 12) if top >= 10 ** (e + 1)), default=0)  # ticks of at most 4 digits
    unit = recs[0]["unit"] + (f", {CHART_SCALES[exp]}" if exp else "")
    names = list(dict.fromkeys(r["variant"] for r in recs))
    backends = [b for b in BACKEND_STYLE if any(r["backend"] == b for r in recs)]
    backends += [b for b in dict.fromkeys(r["backend"] for r in recs) if b not in backends]
    ncols = 2 if len(sizes) > 1 else 1
    nrows = -(-len(sizes) // ncols)
    h = 0.9 + nrows * (0.45 + 0.15 * len(names) * min(len(backends), 2))
    with plt.rc_context(CHART_RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=(CHART_WIDTH_IN, h), sharey=True, squeeze=False,
                                 layout="constrained")
        lo = min(r["throughput"] for r in recs) / 10 ** exp
        hi = top / 10 ** exp
        peer_name = next((r["peer"] for r in recs if r.get("peer_median_ms")), None)
        bar_h = 0.8 / len(backends)
        y = np.arange(len(names))
        for ax, size in zip(axes.flat, sizes):
            here = [r for r in recs if r["label"] == size]
            for j, b in enumerate(backends):
                pts = [(names.index(r["variant"]), r["throughput"]) for r in here if r["backend"] == b]
                if pts:
                    ys, xs = zip(*pts)
                    xs = np.array(xs) / 10 ** exp
                    color, name = BACKEND_STYLE.get(b, ("#CC79A7", b))
                    ax.barh(np.array(ys) + (j - (len(backends) - 1) / 2) * bar_h, xs, bar_h, color=color,
                            label=name)
            peers = [r["throughput"] / r["ratio_to_peer"] for r in here if r.get("peer_median_ms")]
            if peers:
                peer = peers[0] / 10 ** exp
                lo = min(lo, peer)
                hi = max(hi, peer)
                ax.axvline(peer, color="black", linewidth=1.5, linestyle="--", label=peer_name)
            ax.set_title(size)
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(numticks=5))
            ax.xaxis.set_major_formatter(log_tick_label)
            ax.grid(True, axis="x", which="major", alpha=0.3)
        x0, x1 = lo / 2, hi * 2
        if math.floor(math.log10(x1)) - math.ceil(math.log10(x0)) < 1:  # under two labelled decades in view:
            x0, x1 = 10 ** math.floor(math.log10(x0)), 10 ** math.ceil(math.log10(x1))  # (else tiny minor labels)
        for ax in axes.flat:
            ax.set_xlim(x0, x1)
            ax.set_yticks(y, names)
            ax.invert_yaxis() if ax is axes.flat[0] else None
        for ax in axes.flat[len(sizes):]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel(f"{unit} (log scale)")
        seen = {}
        for ax in axes.flat[:len(sizes)]:
            for hd, t in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(t, hd)
        order = sorted(seen, key=lambda t: t == peer_name)  # the backends, then the peer
        fig.legend([seen[t] for t in order], order, loc="outside lower center", ncols=min(len(seen), 4),
                   frameon=False)
        fig.suptitle(f"{result['chapter']} on {result['device']['name']}: throughput per variant (longer is faster)",
                     fontsize=10)
        save_chart(fig, path)
        plt.close(fig)
    return Path(path)


def _fmt(x, spec="{:.3g}"):
    return "—" if x is None else spec.format(x)


def _has_public(result: dict) -> bool:
    return any(r.get("public_median_ms") is not None for r in result["records"])


def table_rows(result: dict) -> list[list[str]]:
    """One row per record (the full table): [`header`][gpulab.benchmark.header]'s columns."""
    public = _has_public(result)
    rows = []
    for r in result["records"]:
        row = [r["label"], r["variant"], r["backend"], _fmt(r["median_ms"], "{:.4g}")]
        if public:
            row.append(_fmt(r.get("public_median_ms"), "{:.4g}"))
        row += [_fmt(r["throughput"]) + (f" {r['unit']}" if r["throughput"] is not None else ""),
                _ratio(r["ratio_to_peer"]),
                _fmt(r["ratio_to_ceiling"] and 100 * r["ratio_to_ceiling"], "{:.1f}%"),
                {True: "✓", False: "✗", None: "—"}[r["check"]] if not r["skipped"] or r["check"] is False else "skipped"]
        rows.append(row)
    return rows


def _ratio(x) -> str:
    """Speed relative to the peer: a percentage below 2x (cuBLAS, CUB), a factor above (a CPU baseline)."""
    if not x:
        return "—"
    return f"{100 * x:.1f}%" if x < 2 else f"{x:.3g}×"


HEADER = ["size", "variant", "backend", "median ms", "throughput", "speed vs peer", "% of ceiling", "check"]


def header(result: dict, markdown: bool = False) -> list[str]:
    """The full table's columns (with "public call ms" when the run timed the public calls)."""
    out = list(HEADER)
    if markdown:
        peer = next((r["peer"] for r in result["records"] if r["peer"]), "peer")
        out[5] = f"speed vs {peer}"
        ceiling = next((r["ceiling_name"] for r in result["records"] if r["ceiling_name"]), None)
        if ceiling:
            out[6] = f"% of {ceiling}"
    if _has_public(result):
        out.insert(4, "public call ms")
    return out


def format_text(result: dict) -> str:
    head = header(result)
    rows = [head] + table_rows(result)
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    skipped = [f"  {r['variant']}[{r['backend']}] at {r['label']}: {r['skipped']}" for r in result["records"] if r["skipped"]]
    if skipped:
        lines += ["skipped:"] + skipped
    peer = next((r["peer"] for r in result["records"] if r["peer"]), None)
    if peer:
        lines.append(f"peer: {peer}, measured in the same run")
    if _has_public(result):
        lines.append("public call ms: the chapter's public function on device-resident inputs (median ms is the launcher alone)")
    return "\n".join(lines)


def compact_rows(result: dict, labels: list[str] | None = None, number=None, ratio=None
                 ) -> tuple[list[str], list[list[str]]]:
    """The chapter table: one row per variant × backend, one column per size (`labels`, default
    every size); each cell the throughput and, in parentheses, the speed against the peer. The
    fastest cell of each column is bold; `—` where the variant did not run (the full table says
    why), `✗` where its result was wrong. `number(throughput)` and `ratio(speed-up)` format the
    cells (the book's hook passes its human formats)."""
    number = number or _fmt
    ratio = ratio or _ratio
    recs = result["records"]
    labels = list(dict.fromkeys(r["label"] for r in recs)) if labels is None else list(labels)
    keys = list(dict.fromkeys((r["variant"], r["backend"]) for r in recs))
    units = {r["unit"] for r in recs if r["throughput"] is not None}
    by = {(r["variant"], r["backend"], r["label"]): r for r in recs}
    best = {lab: max((r["throughput"] for r in recs if r["label"] == lab and r["throughput"] is not None),
                     default=None) for lab in labels}
    rows = []
    for name, backend in keys:
        row = [f"{name}\u00a0·\u00a0{backend}"]
        for lab in labels:
            r = by.get((name, backend, lab))
            if r is None or r["throughput"] is None:
                row.append("✗" if r is not None and r["check"] is False else "—")
                continue
            cell = number(r["throughput"]) + ("" if len(units) == 1 else f"\u00a0{r['unit']}")
            if r["ratio_to_peer"]:
                cell += f"\u00a0({ratio(r['ratio_to_peer'])})"  # no-break spaces: one line per cell
            row.append(f"**{cell}**" if r["throughput"] == best[lab] else cell)
        rows.append(row)
    return ["variant · backend"] + labels, rows


def format_markdown(result: dict) -> str:
    """What the book shows (rendered from committed JSON by the docs hook): the compact
    variant × size table, the device line, and every record in a collapsed block."""
    recs = result["records"]
    head, rows = compact_rows(result)
    out = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    units = list(dict.fromkeys(r["unit"] for r in recs if r["throughput"] is not None))
    peer = next((r["peer"] for r in recs if r["peer"]), None)
    what = f"Throughput in {units[0]}" if len(units) == 1 else "Throughput"
    if peer:
        what += f"; in parentheses, the speed against {peer} measured in the same run (100% = as fast)"
    out.append("")
    out.append(f"*{what}. Bold: the fastest at that size; —: not run there (see all records).*")
    dev = result["device"]
    v = result["versions"]
    out.append("")
    out.append(f"*{dev['name']} (sm_{dev['compute_capability'][0]}{dev['compute_capability'][1]}, "
               f"{dev['sm_count']} SMs), driver {v.get('driver', '?')}, numba-cuda {v.get('numba-cuda', '?')}, "
               f"{measured_text(result)}.*")
    full = ["| " + " | ".join(header(result, markdown=True)) + " |", "|" + "---|" * len(header(result))]
    full += ["| " + " | ".join(row) + " |" for row in table_rows(result)]
    if _has_public(result):
        full += ["", "*public call ms: the chapter's public function called on inputs already on the device "
                     "(validation, result allocation and Python included); median ms: the variant's launcher alone.*"]
    out.append("")
    out.append(f'??? note "All {len(recs)} records"')
    out.append("")
    out += [("    " + line) if line else "" for line in full]
    return "\n".join(out)


def main_print(result: dict, file=sys.stdout) -> None:
    print(format_text(result), file=file)
