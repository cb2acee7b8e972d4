"""Hardware counters per benchmark record: `gpulab bench CHAPTER --metrics` under Nsight Compute.

[`gpulab.trace`][gpulab.trace] counts a kernel's memory requests on numba's simulator; this
module asks the GPU for the same counts. With `--metrics`, after the timed runs, each timed GPU
record (a variant at one size) gets ONE more call of its benchmark case, in a child process
run under Nsight Compute's command-line profiler:

```
ncu --csv --metrics <METRICS> --target-processes all --profile-from-start off --clock-control none \\
    python -m gpulab.metrics CHAPTER VARIANT BACKEND SIZE_LABEL [--quick] [--seed N]
```

The child sets the case up with the benchmark's own code (the chapter's
[`BenchSpec`][gpulab.benchmark.BenchSpec]: `setup`, then `runner`) on inputs of the same
size and distribution, drawn afresh from `--seed` for each case (not the very inputs the timed
runs drew: the benchmark draws every case from one generator in turn), calls the launch once
unprofiled (compilation, plan caches) and once between `cuda.profile_start()` and
`cuda.profile_stop()`: only that call's kernels are profiled (`--profile-from-start off`).
Nsight Compute replays each kernel as often as the counters need, so the profiled call is
slower than the timed ones; the timings of the record are those of the timed runs, untouched.

Each record then holds `record["metrics"] = {kernel: {...}}` (the kernel's short name: the
function name without namespace, template or argument list), its launches in the profiled
call added up:

| key | Nsight Compute metric(s) | as in `gpulab.trace` |
|---|---|---|
| `global_load_requests`, `global_load_sectors` | `l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum`, `l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` | same names |
| `global_store_requests`, `global_store_sectors` | the same with `op_st` | same names |
| `global_load_sectors_per_request`, `global_store_sectors_per_request` | their ratios | `sectors_per_request` |
| `shared_requests` | `smsp__inst_executed_op_shared_ld.sum` + `smsp__inst_executed_op_shared_st.sum` (warp-wide shared instructions) | same name |
| `shared_wavefronts` | `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum` + `…_op_st.sum` | same name |
| `shared_wavefronts_per_request` | their ratio | same name |
| `shared_bank_conflicts` | `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum` + `…_op_st.sum` | — |
| `achieved_occupancy_pct` | `sm__warps_active.avg.pct_of_peak_sustained_active` (mean over launches) | — |
| `dram_throughput_pct` | `dram__throughput.avg.pct_of_peak_sustained_elapsed` (mean over launches) | — |

A chapter whose call launches many kernels (radix sort's passes, the Euler pipeline's rounds)
takes minutes under ncu, which replays every launch once per counter pass: `--metrics-kernels
REGEX` profiles only the kernels whose name matches (ncu's `--kernel-name regex:`); the others
run unprofiled, and the record keeps the expression in `metrics_kernels`. A kernel launched
thousands of times (min-label propagation's rounds) still takes long: `--metrics-launches N`
profiles only the first N matching launches (`metrics_launches`); totals then cover those
launches, and per-request ratios are those of the launches profiled.

A count Nsight Compute reports as `n/a` is `null`, and so is a ratio without requests. A
record that was not profiled has `"metrics": null` and, where a profile was tried and failed
(ncu's error, e.g. `ERR_NVGPUCTRPERM` where counters need administrator rights), the reason in
`"metrics_skipped"`; CPU variants and skipped records are not profiled.

`ncu` is found on `PATH`, or at `$GPULAB_NCU`. Without it, `gpulab bench --metrics` stops
before any work with one line (exit status 2).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from gpulab.errors import BackendUnavailable, GpulabError

__all__ = ["METRICS", "find_ncu", "require_ncu", "ncu_command", "parse_csv", "summarize", "kernel_name",
           "profile", "annotate"]

# Nsight Compute metric names (sm_70 and later), as the nvprof → ncu "Metric Comparison" table of
# the Nsight Compute CLI documentation maps nvprof's gld_transactions(_per_request),
# gst_transactions, shared_load/store_transactions, shared_ld/st_bank_conflict,
# achieved_occupancy and dram_utilization:
# https://docs.nvidia.com/nsight-compute/NsightComputeCli/index.html#nvprof-metric-comparison
# (the metric structure, unit__counter.rollup.submetric: https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#metrics-structure)
METRICS = {
    "global_load_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",),
    "global_load_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",),
    "global_store_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",),
    "global_store_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",),
    "shared_requests": ("smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"),
    "shared_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                          "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    "shared_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
}
PERCENTS = ("achieved_occupancy_pct", "dram_throughput_pct")  # averaged over launches, not added
RATIOS = {"global_load_sectors_per_request": ("global_load_sectors", "global_load_requests"),
          "global_store_sectors_per_request": ("global_store_sectors", "global_store_requests"),
          "shared_wavefronts_per_request": ("shared_wavefronts", "shared_requests")}
PROFILE_TIMEOUT_S = 1800  # one profiled call (ncu replays each kernel once per counter pass)


# --------------------------------------------------------------------------- finding ncu


def find_ncu() -> str | None:
    """The `ncu` to run: `$GPULAB_NCU` (a path or a command name) or `ncu` on `PATH`; `None`
    where there is none."""
    return shutil.which(os.environ.get("GPULAB_NCU") or "ncu")


def require_ncu() -> str:
    """[`find_ncu`][gpulab.metrics.find_ncu], or a `BackendUnavailable` that says where it looked."""
    ncu = find_ncu()
    if ncu is None:
        where = os.environ.get("GPULAB_NCU")
        raise BackendUnavailable(
            f"--metrics needs Nsight Compute's ncu: GPULAB_NCU={where} is not an executable" if where else
            "--metrics needs Nsight Compute's ncu: none on PATH (install Nsight Compute, or set GPULAB_NCU=/path/to/ncu)")
    return ncu


def ncu_command(ncu: str, chapter: str, variant: str, backend: str, label: str, *, quick: bool = False,
                seed: int | None = None, kernels: str | None = None, launches: int | None = None) -> list[str]:
    """The command line that profiles one call of a benchmark case (see the module's text);
    `kernels` (a regular expression) profiles only the kernels whose name contains a match,
    `launches` only the first that many (matching) launches."""
    cmd = [ncu, "--csv", "--metrics", ",".join(m for names in METRICS.values() for m in names),
           "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none"]
    if kernels:
        cmd += ["--kernel-name", f"regex:.*({kernels}).*"]
    if launches:
        cmd += ["--launch-count", str(launches)]
    cmd += [sys.executable, "-m", "gpulab.metrics", chapter, variant, backend, label]
    if quick:
        cmd.append("--quick")
    if seed is not None:
        cmd += ["--seed", str(seed)]
    return cmd


# --------------------------------------------------------------------------- reading ncu's CSV


def _number(text: str) -> float | None:
    """A CSV value: `"1,048,576"` → 1048576.0 (thousands separators), `"n/a"` or empty → None."""
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def kernel_name(full: str) -> str:
    """The short name of a kernel as ncu prints it (demangled): the function's own name, without
    `void`, namespaces, template arguments, numba's `[abi:…]` tag or the argument list
    (`cudapy::gpulab::matmul::kernels_numba::naive[abi:v1,…](Array<float, 2, C, …>)` → `naive`,
    `void tiled<32>(float const*, …)` → `tiled`)."""
    s = full.strip()
    s = s[5:] if s.startswith("void ") else s
    depth, start, end = 0, 0, len(s)
    for k, ch in enumerate(s):
        if ch == "<":
            if depth == 0:
                end = min(end, k)
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and ch in "([":
            end = min(end, k)
            break
        elif depth == 0 and s.startswith("::", k) and k < end:
            start = k + 2
    return s[start:end].strip() or full


def parse_csv(text: str) -> dict[str, dict[str, list[float | None]]]:
    """ncu's `--csv` output (one row per kernel launch and metric: `"ID"`, `"Process ID"`,
    `"Process Name"`, `"Host Name"`, `"Kernel Name"`, ..., `"Metric Name"`, `"Metric Unit"`,
    `"Metric Value"`) → `{kernel: {metric: [value per launch]}}`, kernels by
    [`kernel_name`][gpulab.metrics.kernel_name] in order of first launch. Whatever precedes the
    header (the program's own output, ncu's `==PROF==` lines) and ncu's `==…==` lines after it
    are skipped."""
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if head is None:
        return {}
    rows = [line for line in lines[head:] if line.strip() and not line.startswith("==")]
    launches: dict[str, dict[str, dict[str, float | None]]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        name, metric = row.get("Kernel Name"), row.get("Metric Name")
        if not name or not metric:
            continue
        per_launch = launches.setdefault(kernel_name(name), {})
        per_launch.setdefault(row.get("ID", ""), {})[metric] = _number(row.get("Metric Value") or "")
    out: dict[str, dict[str, list]] = {}
    for kernel, by_id in launches.items():
        metrics = out[kernel] = {}
        for values in by_id.values():
            for metric, value in values.items():
                metrics.setdefault(metric, []).append(value)
    return out


def summarize(parsed: dict[str, dict[str, list]]) -> dict[str, dict]:
    """[`parse_csv`][gpulab.metrics.parse_csv]'s values → per kernel, our names (the table of
    the module's text): counts added over launches, percentages averaged, ratios of the sums."""
    out = {}
    for kernel, metrics in parsed.items():
        row: dict = {"launches": max((len(v) for v in metrics.values()), default=0)}
        for ours, names in METRICS.items():
            values = [x for m in names for x in metrics.get(m, [])]
            if not values or any(x is None for x in values):
                row[ours] = None
            elif ours in PERCENTS:
                row[ours] = sum(values) / len(values)
            else:
                row[ours] = int(sum(values)) if all(float(x).is_integer() for x in values) else sum(values)
        for ratio, (n, d) in RATIOS.items():
            row[ratio] = row[n] / row[d] if row[n] is not None and row[d] else None
        out[kernel] = row
    return out


# --------------------------------------------------------------------------- profiling


def _child_env() -> dict:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)  # the child imports this gpulab
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("GPULAB_PROGRESS", None)
    return env


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    return " ".join((errors or lines or ["(no output)"])[-1].split())[:300]


def profile(ncu: str, chapter: str, variant: str, backend: str, label: str, *, quick: bool = False,
            seed: int | None = None, timeout: float = PROFILE_TIMEOUT_S, kernels: str | None = None,
            launches: int | None = None) -> dict[str, dict]:
    """Profile one call of a benchmark case under `ncu`; its kernels'
    [`summarize`][gpulab.metrics.summarize]d counts.

    Raises:
        GpulabError: ncu failed, timed out or profiled no kernel (the message says which).
    """
    cmd = ncu_command(ncu, chapter, variant, backend, label, quick=quick, seed=seed, kernels=kernels,
                      launches=launches)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_child_env())
    except subprocess.TimeoutExpired:
        raise GpulabError(f"ncu did not finish in {timeout:g} s") from None
    if proc.returncode != 0:
        raise GpulabError(f"ncu exited with status {proc.returncode}: {_last_error(proc.stdout + proc.stderr)}")
    parsed = parse_csv(proc.stdout)
    if not parsed:
        raise GpulabError(f"ncu profiled no kernel: {_last_error(proc.stdout + proc.stderr)}")
    return summarize(parsed)


def annotate(result: dict, ncu: str, *, quick: bool = False, seed: int | None = None,
             progress: Callable[[str], None] | None = None, timeout: float = PROFILE_TIMEOUT_S,
             kernels: str | None = None, launches: int | None = None) -> dict:
    """Add `metrics` (and, where a profile failed, `metrics_skipped`) to every record of a
    [`gpulab.benchmark.run`][gpulab.benchmark.run] result; returns the result. `kernels` (a
    regular expression, `--metrics-kernels`) profiles only the kernels it names, and the record
    says so (`metrics_kernels`); `launches` (`--metrics-launches`) profiles only the first that
    many of them (`metrics_launches`: the counts then cover those launches, not the whole call)."""
    records = result["records"]
    for n, rec in enumerate(records, 1):
        rec["metrics"] = None
        if rec.get("median_ms") is None or rec.get("backend") == "cpu":
            continue
        try:
            rec["metrics"] = profile(ncu, result["chapter"], rec["variant"], rec["backend"], rec["label"],
                                     quick=quick, seed=seed, timeout=timeout, kernels=kernels, launches=launches)
            if kernels:
                rec["metrics_kernels"] = kernels
            if launches:
                rec["metrics_launches"] = launches
            what = ", ".join(rec["metrics"]) or "no kernel"
        except GpulabError as exc:
            rec["metrics_skipped"] = str(exc)
            what = f"not profiled: {exc}"
        if progress:
            progress(f"[metrics {n}/{len(records)}] {result['chapter']} {rec['label']} "
                     f"{rec['variant']}[{rec['backend']}]: {what}")
    return result


# --------------------------------------------------------------------------- the child


def _child(argv: list[str] | None = None) -> int:
    """Run one benchmark case's launch once unprofiled, then once inside the profiler's range."""
    p = argparse.ArgumentParser(prog="python -m gpulab.metrics",
                                description="one profiled call of a benchmark case (run by gpulab bench --metrics under ncu)")
    p.add_argument("chapter")
    p.add_argument("variant")
    p.add_argument("backend")
    p.add_argument("label")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args(argv)

    import numpy as np
    from numba import cuda

    from gpulab import chapters, device

    chapter = chapters.get(args.chapter)
    spec = chapter.bench
    variant = chapter.registry.get(args.variant, args.backend)
    case = next((c for c in spec.cases(args.quick) if c.label == args.label), None)
    if case is None:
        print(f"gpulab.metrics: {args.chapter} has no size {args.label!r}", file=sys.stderr)
        return 2
    state = spec.setup(case, np.random.default_rng(args.seed))
    launch = spec.runner(variant, state)
    profiler = not device.on_simulator()  # (the simulator has no profiler range; the tests run the child there)
    launch()  # compilation, caches: outside the profiled range
    cuda.synchronize()
    if profiler:
        cuda.profile_start()
    launch()
    cuda.synchronize()
    if profiler:
        cuda.profile_stop()
    if spec.teardown:
        spec.teardown(state)
    return 0


if __name__ == "__main__":
    sys.exit(_child())
