"""The `gpulab` command: `info`, `tour`, `trace`, `bench`, `grade`, `exercises`, `compile-check`.

A mistake on the command line (an unknown chapter, variant or size, a bad argument, exercises
that cannot be found ...) is reported in one line on stderr with exit status 2 — never a
traceback. Exit status 1 means the command ran and something failed its check; 130 that it was
interrupted (Ctrl-C); 141 that stdout was closed before it finished (`gpulab ... | head -1`),
which is not an error: it exits quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import gpulab  # noqa: F401  (device selection before anything imports numba)
from gpulab.commands import GP_DEFAULTS, exit_statuses  # noqa: F401  (GP_DEFAULTS: gpulab.cli.GP_DEFAULTS)
from gpulab.commands import run_chapter_command as _run_chapter_command
from gpulab.errors import GpulabError


class UsageError(GpulabError):
    """A command-line mistake: one line on stderr, exit status 2."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Epilogs kept as written; every option with a default (not None or False) shows it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("%(default)" not in text and "default:" not in text and action.default is not None
                and action.default is not False and action.default is not argparse.SUPPRESS and action.option_strings):
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs.setdefault("epilog", exit_statuses())
        super().__init__(*args, **kwargs)

    def error(self, message):  # argparse prints the usage and exits; one line instead
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _chapters(names, cmd: str) -> list[str]:
    from gpulab.chapters import CHAPTERS

    unknown = [c for c in names if c not in CHAPTERS]
    if unknown:
        raise UsageError(f"gpulab {cmd}: unknown chapter {unknown[0]!r}; known: {', '.join(CHAPTERS)}")
    return list(names)


def _count(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum of {minimum}")
        return value

    return parse


def _counts(minimum: int):
    """A comma-separated list of whole numbers >= `minimum` (e.g. `--stocks 32,64,128`)."""
    one = _count(minimum)

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(one(t) for t in text.split(",") if t.strip())
        if not values:
            raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got {text!r}")
        return tuple(dict.fromkeys(values))

    return parse


def cmd_info(args) -> int:
    from gpulab import cudac, device

    info = device.info()
    pycuda = cudac.pycuda_status()
    if args.json:
        print(json.dumps({**info.as_dict(), "pycuda": pycuda}, indent=1))
        return 0
    rows = [("mode", "GPU" if info.mode == "gpu" else "simulator (numba CUDA simulator on the CPU)"),
            ("device", info.name), ("compute capability", "%d.%d" % info.compute_capability),
            ("SMs", info.sm_count), ("max threads per block", info.max_threads_per_block),
            ("shared memory per block", f"{info.shared_memory_per_block} bytes "
                                        f"({info.shared_memory_per_block_optin} with opt-in)"),
            ("constant memory", f"{info.constant_memory} bytes"), ("warp size", info.warp_size),
            ("CUDA C backend (pycuda)", pycuda)]
    for k, v in rows:
        print(f"{k:26s} {v}")
    if info.mode == "sim":
        print("\n(simulator limits mirror an H200 so that size errors match the GPU; set GPULAB_DEVICE=gpu|sim to override)")
    return 0


def cmd_tour(args) -> int:
    from gpulab.chapters import CHAPTERS, registry
    from gpulab.tour import tour

    chapters = _chapters(args.chapters, "tour")
    known = {n for c in chapters or CHAPTERS for n in registry(c).names()}
    unknown = [n for n in args.variants or () if n not in known]
    if unknown:
        raise UsageError(f"gpulab tour: unknown variant {unknown[0]!r} in {', '.join(chapters) or 'any chapter'}")
    return 1 if tour(chapters or None, as_json=args.json, variants=args.variants) else 0


def cmd_trace(args) -> int:
    from gpulab import chapters, device, trace

    _chapters([args.chapter], "trace")
    if not device.on_simulator():
        raise UsageError("gpulab trace: the tracer runs on numba's simulator; run it with GPULAB_DEVICE=sim")
    numba = chapters.get(args.chapter).registry.names("numba")
    unknown = [v for v in args.variants or () if v not in numba]
    if unknown:  # (other errors, e.g. a limit a variant hits while traced, take the usual path)
        raise UsageError(f"gpulab trace: {args.chapter}: no numba variant {unknown[0]!r} to trace; "
                         f"known: {', '.join(numba)}")
    result = trace.trace_chapter(args.chapter, args.variants or None)
    print(json.dumps(result) if args.json else trace.format_table(result, lines=args.lines))
    return 0


def _metrics_ncu() -> str:
    """`bench --metrics`: Nsight Compute's ncu, and a GPU to profile (checked before any work)."""
    from gpulab import device, metrics

    try:
        ncu = metrics.require_ncu()
    except GpulabError as exc:
        raise UsageError(f"gpulab bench: {exc}") from None
    if device.on_simulator():
        raise UsageError("gpulab bench: --metrics profiles a GPU with Nsight Compute, and this runs on numba's "
                         "simulator (its counts: gpulab trace CHAPTER)")
    return ncu


def cmd_bench(args) -> int:
    from gpulab import benchmark
    from gpulab import chapters

    _chapters([args.chapter], "bench")
    if not args.metrics and (args.metrics_kernels or args.metrics_launches):
        raise UsageError(f"gpulab bench: --metrics-{'kernels' if args.metrics_kernels else 'launches'} "
                         "goes with --metrics")
    if args.metrics_kernels:
        import re

        try:
            re.compile(args.metrics_kernels)
        except re.error as exc:
            raise UsageError(f"gpulab bench: --metrics-kernels {args.metrics_kernels!r} is not a regular expression: {exc}") from None
    ncu = _metrics_ncu() if args.metrics else None
    chapter = chapters.get(args.chapter)
    spec, reg = chapter.bench, chapter.registry
    unknown = [n for n in args.variants or () if n not in reg.names()]
    if unknown:
        raise UsageError(f"gpulab bench {args.chapter}: unknown variant {unknown[0]!r}; "
                         f"known: {', '.join(dict.fromkeys(reg.names()))}")
    variants = [v for v in reg if (not args.variants or v.name in args.variants)
                and (not args.backend or v.backend == args.backend)]
    if not variants:
        raise UsageError(f"gpulab bench {args.chapter}: no variant {' '.join(args.variants or ['(any)'])} "
                         f"has the backend {args.backend}")
    cases = None
    if args.sizes:
        known = [c.label for c in spec.cases(args.quick)]
        unknown = [s for s in args.sizes if s not in known]
        if unknown:
            raise UsageError(f"gpulab bench {args.chapter}: unknown size {unknown[0]!r}"
                             f"{' with --quick' if args.quick else ''}; known: {', '.join(known)}")
        cases = [c for c in spec.cases(args.quick) if c.label in args.sizes]
    from gpulab import progress
    from gpulab.commands import writable_dir

    try:  # after the arguments' checks (a typo makes no directory), before the benchmark's work
        writable_dir(args.out, "--out")
    except GpulabError as exc:
        raise UsageError(f"gpulab bench: {exc}") from None

    result = benchmark.run(spec, variants, quick=args.quick, warmup=args.warmup, repeat=args.repeat,
                           seed=args.seed, cases=cases, progress=None if args.no_progress else progress.write)
    if ncu:
        from gpulab import metrics

        metrics.annotate(result, ncu, quick=args.quick, seed=args.seed, kernels=args.metrics_kernels,
                         launches=args.metrics_launches,
                         progress=None if args.no_progress else progress.write)
    paths = benchmark.write(result, args.out, append=args.append)
    failed = [r for r in result["records"] if r["check"] is False]
    if args.json:
        keep = ("variant", "backend", "label", "median_ms", "throughput", "unit", "public_median_ms",
                "peer", "peer_median_ms", "ratio_to_peer", "check", "skipped") + (("metrics",) if ncu else ())
        print(json.dumps({"chapter": result["chapter"], "device": result["device"].get("name"),
                          "mode": result["device"].get("mode"), "settings": result["settings"],
                          "records": [{k: r.get(k) for k in keep} for r in result["records"]],
                          "failed": len(failed), "files": [str(p) for p in paths]}))
        return 1 if failed else 0
    benchmark.main_print(result)
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 1 if failed else 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return value


def _grading():
    try:
        from gpulab import grading
    except ModuleNotFoundError as exc:
        if exc.name != "pytest":
            raise
        raise UsageError("gpulab: grading runs pytest, which is not installed (pip install 'gpulab[test]')") from None
    return grading


def cmd_grade(args) -> int:
    grade = _grading().grade

    return grade(args.exercise_set, path=args.exercises, solutions=args.solutions, exercises=args.exercise,
                 as_json=args.json, gradescope=args.gradescope, verbose=args.verbose, timeout=args.timeout)


def cmd_exercises(args) -> int:
    handout = _grading().handout

    copied = handout(args.dir, source=args.exercises, sets=args.sets)
    print(f"wrote the exercises ({', '.join(copied)}) without solutions to {args.dir}; "
          f"grade a set with: gpulab grade SET --exercises {args.dir}")
    return 0


def cmd_compile_check(args) -> int:
    from gpulab.compilecheck import main as cc_main

    return cc_main(_chapters(args.chapters, "compile-check") or None, args.json)


def cmd_gp(args) -> int:
    from gpulab.gp import cli as gp_cli

    run = gp_cli.run_evolve if args.gp_cmd == "evolve" else gp_cli.run_experiment
    return _run_chapter_command(f"gpulab gp {args.gp_cmd}", run, args)


def _gp_default(command: str, what: str) -> str:
    """``"default: 25,000 on a GPU, 1,000 on the simulator"`` for ``--help``."""
    k = ("backend", "population", "generations").index(what)
    gpu, sim = (f"{x:,}" if isinstance(x, int) else x for x in (GP_DEFAULTS[command][d][k] for d in ("gpu", "sim")))
    return f"default: {gpu}" if gpu == sim else f"default: {gpu} on a GPU, {sim} on the simulator"


def _gp_parser(sub) -> None:
    """Chapter 3's commands: evolve trading rules; the chapter's train/test experiment."""
    defaults_help = _gp_default
    g = sub.add_parser("gp", help="chapter 3: evolve trading rules (gp evolve, gp experiment)")
    gsub = g.add_subparsers(dest="gp_cmd", required=True)
    e = gsub.add_parser("evolve", help="evolve buy/sell rules; JSON + PNG of train vs test fitness",
                        description="Evolve buy/sell rules on the training days and report them on the test days "
                                    "that follow. Ctrl-C keeps the generations finished (exit status 130).")
    e.add_argument("--population", type=_count(1), default=None,
                   help=f"individuals ({defaults_help('evolve', 'population')})")
    e.add_argument("--generations", type=_count(0), default=None,
                   help=f"generations after the first ({defaults_help('evolve', 'generations')})")
    e.add_argument("--data", default="synthetic",
                   help="synthetic, sample (AAPL/IBM/MSFT/GOOG) or csv:PATH[,PATH...] (default: synthetic)")
    e.add_argument("--stocks", type=_count(1), default=None, help="synthetic data: stocks (default: 32)")
    e.add_argument("--days", type=_count(1), default=None,
                   help="training days (default: 768 with synthetic data; 3/4 of the days of real data)")
    e.add_argument("--test-days", type=_count(1), default=None,
                   help="synthetic data: test days after the training days (default: 256)")
    e.add_argument("--variant", default=None,
                   help="evaluator (default: the backend's best: bitsliced, or cpu_bitsliced with --backend cpu)")
    e.add_argument("--backend", default=None, choices=["numba", "cuda-c", "cpu"],
                   help=f"({defaults_help('evolve', 'backend')})")
    e.add_argument("--breeding", default=None, choices=["gpu", "cpu"],
                   help="where the next generation is bred; the same children either way (default: the faster "
                        "as measured: gpu from 10,000 individuals on a GPU unless --backend cpu, cpu "
                        "otherwise)")
    e.add_argument("--no-reuse", action="store_true",
                   help="interpret every individual every generation (default: a copied individual keeps its "
                        "parent's fitness and an unchanged tree its day masks; the same run either way)")
    e.add_argument("--seed", type=_count(0), default=0, help="seeds the data and the run (default: 0)")
    e.add_argument("--out", default="gp-results", help="directory for the JSON and PNG (default: gp-results)")
    e.add_argument("--stem", default="gp-evolve", help="output file names, STEM.json and STEM.png (default: gp-evolve)")
    e.add_argument("--json", action="store_true", help="print one JSON object (the summary) on stdout, nothing else")
    x = gsub.add_parser("experiment", help="the chapter's experiment: more stocks/days vs out-of-sample fitness",
                        description="Train on each number of stocks (--stocks, default 8 and 32) over each "
                                    "number of days (--days, default 256 and 768) just before a test period, "
                                    "several seeds each; measure the best rules on the test period. Ctrl-C "
                                    "keeps the runs finished (exit status 130).")
    x.add_argument("--population", type=_count(1), default=None,
                   help=f"individuals ({defaults_help('experiment', 'population')})")
    x.add_argument("--generations", type=_count(0), default=None,
                   help=f"generations per run ({defaults_help('experiment', 'generations')})")
    x.add_argument("--seeds", type=_count(1), default=3, help="runs per configuration, seeds 0..N-1 (default: 3)")
    x.add_argument("--stocks", type=_counts(1), default=(8, 32), metavar="S[,S...]",
                   help="training stocks, one configuration per value (default: 8,32; the paper: 32,64,128)")
    x.add_argument("--days", type=_counts(1), default=(256, 768), metavar="D[,D...]",
                   help="training days, one configuration per value and number of stocks (default: 256,768)")
    x.add_argument("--stocks-total", type=_count(1), default=None,
                   help="stocks of the test period, the training stocks among them (default: the larger of 64 "
                        "and twice the most training stocks)")
    x.add_argument("--test-days", type=_count(1), default=256, help="test days (default: 256)")
    x.add_argument("--variant", default=None, help="evaluator (default: the backend's best)")
    x.add_argument("--backend", default=None, choices=["numba", "cuda-c", "cpu"],
                   help=f"({defaults_help('experiment', 'backend')})")
    x.add_argument("--out", default="gp-results", help="directory for the JSON and PNG (default: gp-results)")
    x.add_argument("--stem", default="gp-experiment", help="output file names (default: gp-experiment)")
    x.add_argument("--where", default="", help="a note on where it was run (stored in the JSON)")
    x.add_argument("--json", action="store_true", help="print one JSON object (the summary) on stdout, nothing else")
    for p in (e, x):
        p.set_defaults(fn=cmd_gp)


def cmd_subset(args) -> int:
    from gpulab.subset import cli as subset_cli

    return _run_chapter_command("gpulab subset search", subset_cli.run_search, args)


def _subset_parser(sub) -> None:
    """Chapter 2's command: the least-correlated subset, on one device or across a Dask cluster."""
    g = sub.add_parser("subset", help="chapter 2: the least-correlated subset (subset search)")
    gsub = g.add_subparsers(dest="subset_cmd", required=True)
    s = gsub.add_parser("search", help="search every k-subset of n strategies; --gpus all / --scheduler ADDR for Dask",
                        description="Search every k-subset of n strategies for the least-correlated one. Without "
                                    "a GPU the kernels run on numba's simulator, about 5e4 subsets/s: C(n, k) up "
                                    "to ~2 million (e.g. --n 30 --k 4) finishes in under a minute; a larger search "
                                    "says how long it would take before it starts.",
                        epilog=exit_statuses(None))
    data = s.add_mutually_exclusive_group(required=True)
    data.add_argument("--csv", metavar="FILE", help="returns: one column per strategy, one row per day, optional header")
    data.add_argument("--synthetic", metavar="DAYS", type=_count(2), help="synthetic returns of --n strategies")
    s.add_argument("--n", type=_count(1), default=None, help="strategies (with --csv: its first n columns)")
    s.add_argument("--k", type=_count(1), required=True, help="subset size")
    s.add_argument("--seed", type=_count(0), default=0, help="synthetic data's seed")
    s.add_argument("--variant", default=None,
                   help="default: with --backend, its default, incremental (numba, cuda-c) or cpu_parallel "
                        "(cpu); without, the one measured fastest for the size (see --backend)")
    s.add_argument("--backend", default=None, choices=["numba", "cuda-c", "cpu"],
                   help="cpu: numba's parallel CPU search, no GPU or simulator. Default: cuda-c where it runs "
                        "(a GPU and pycuda: about twice numba's speed), with the variant measured fastest for "
                        "C(n, k) (constant_local up to 230,300 subsets and n <= 128, else incremental, or incremental_lanes "
                        "for k >= 5 and large n); elsewhere numba, the same rule (on the simulator: incremental). "
                        "--json reports the choice")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--gpus", metavar="all|N", type=_gpu_count,
                       help="a local Dask cluster, one worker per GPU (on the simulator: 2 CPU workers)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786")
    s.add_argument("--chunks", type=_count(1), default=None, help="rank ranges (Dask tasks); default one per worker")
    s.add_argument("--json", action="store_true", help="one JSON object on stdout, nothing else")
    s.set_defaults(fn=cmd_subset)


def _gpu_count(text: str) -> str:
    if text != "all":
        _count(1)(text)
    return text


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpulab", description="GPU algorithms, built step by step. "
                                           "`gpulab COMMAND --help` describes a command.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="command")

    s = sub.add_parser("info", help="the device kernels run on, and its limits", epilog=exit_statuses(None))
    s.add_argument("--json", action="store_true", help="one JSON object on stdout, nothing else")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("tour", help="run and check every variant of every finished chapter",
                       epilog=exit_statuses("a variant's result failed its check"))
    s.add_argument("chapters", nargs="*", help="only these chapters (default: all)")
    s.add_argument("--variants", nargs="*", help="only these variant names (default: all)")
    s.add_argument("--json", action="store_true",
                   help="one JSON object on stdout (every variant's result and a summary), nothing else")
    s.set_defaults(fn=cmd_tour)

    s = sub.add_parser("trace", help="count each numba variant's memory requests, sectors and bank conflicts on the simulator",
                       epilog=exit_statuses(None))
    s.add_argument("chapter", help="matmul, subset, gp, radix or euler")
    s.add_argument("variants", nargs="*", default=[], help="only these numba variants (default: all)")
    s.add_argument("--lines", action="store_true", help="under each kernel, its counts per source line and array")
    s.add_argument("--json", action="store_true",
                   help="one JSON object on stdout (every kernel's counts, also per line), nothing else")
    s.set_defaults(fn=cmd_trace)

    s = sub.add_parser("bench", help="benchmark a chapter's variants; writes JSON and a PNG chart",
                       epilog=exit_statuses("a variant's result failed its check"))
    s.add_argument("chapter", help="matmul, subset, gp, radix or euler")
    s.add_argument("--variants", nargs="*", help="only these variant names (default: all)")
    s.add_argument("--backend", choices=["numba", "cuda-c", "cpu"], help="only this backend's variants (default: all)")
    s.add_argument("--sizes", nargs="*", help="only these size labels (e.g. N=8192; default: all)")
    s.add_argument("--quick", action="store_true", help="fewer, smaller sizes")
    s.add_argument("--warmup", type=_count(0), default=2, help="untimed runs before the timed ones")
    s.add_argument("--repeat", type=_count(1), default=10, help="timed runs (the median is reported)")
    s.add_argument("--seed", type=int, default=None, help="the inputs' random seed (default: fresh)")
    s.add_argument("--out", default="bench-results", help="directory for JSON and PNG")
    s.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    s.add_argument("--json", action="store_true",
                   help="one JSON object on stdout (each result and the files written), nothing else")
    s.add_argument("--append", action="store_true",
                   help="keep the records of other sizes/variants already in the JSON (a benchmark run in parts)")
    s.add_argument("--metrics", action="store_true",
                   help="after timing, profile one more call of each timed GPU record under Nsight Compute "
                        "(ncu on PATH or $GPULAB_NCU) and record its kernels' counters in the JSON: global "
                        "load/store sectors per request, shared wavefronts per request and bank conflicts, "
                        "achieved occupancy, DRAM throughput (gpulab.metrics)")
    s.add_argument("--metrics-kernels", metavar="REGEX", default=None,
                   help="with --metrics: profile only the kernels whose name matches REGEX (e.g. "
                        "'jump_round|tile_contract'); the others run unprofiled (much faster for chapters "
                        "that launch many kernels)")
    s.add_argument("--metrics-launches", metavar="N", type=_count(1), default=None,
                   help="with --metrics: profile only the first N (matching) kernel launches of each call")
    s.set_defaults(fn=cmd_bench)

    _exercises_help = ("the exercises directory (default: ./exercises, the current directory if it is one, "
                       "then the source checkout gpulab was installed from)")
    s = sub.add_parser("grade", help="grade an exercise set (e.g. matmul); exit status 1 if any exercise fails",
                       description="Run an exercise set's tests; print one row per exercise and why each failed one "
                                   "failed. Exit status: 0 every exercise passed, 1 some failed, 2 a usage error "
                                   "(no such set or exercise, no exercises directory) or pytest could not start.")
    s.add_argument("exercise_set", help="the set: a chapter name (matmul, subset, gp, radix, euler)")
    s.add_argument("--exercises", "--path", dest="exercises", metavar="DIR", default=None, help=_exercises_help)
    s.add_argument("--solutions", action="store_true", help="grade the reference solutions instead of the student files")
    s.add_argument("--exercise", action="append", metavar="NAME", default=None,
                   help="only this exercise: its full name (matmul.1-matvec-constant) or number (matmul.1 or 1); "
                        "repeat for several (default: all)")
    s.add_argument("-v", "--verbose", action="store_true",
                   help="show every failing test with its traceback (default: each exercise's first failure)")
    s.add_argument("--timeout", type=_seconds, metavar="SECONDS", default=None,
                   help="fail a test that runs longer than this (needs pytest-timeout; default: no limit)")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    s.add_argument("--gradescope", metavar="FILE", default=None,
                   help="also write Gradescope's autograder results.json to FILE (one test per exercise, max_score 1, "
                        "score the fraction of its tests passed); written even when the tests cannot run")
    s.set_defaults(fn=cmd_grade)

    s = sub.add_parser("exercises", help="the exercise sets: hand them out to students (exercises handout DIR)")
    esub = s.add_subparsers(dest="exercises_cmd", required=True, metavar="command")
    h = esub.add_parser("handout", help="copy the exercises without the solutions to DIR, for students",
                        description="Write a student copy of the exercises to DIR: the READMEs, conftest.py, and each "
                                    "set's stubs and tests; no solutions/ directory. Grade it with gpulab grade SET "
                                    "--exercises DIR. Exit status: 0 written, 2 DIR exists and is not empty, or no "
                                    "exercises / no such set.", epilog=exit_statuses(None))
    h.add_argument("dir", metavar="DIR", help="where to write the copy (new, or an empty directory)")
    h.add_argument("--exercises", dest="exercises", metavar="DIR", default=None, help=_exercises_help)
    h.add_argument("--sets", nargs="+", metavar="SET", default=None, help="only these sets (default: all)")
    h.set_defaults(fn=cmd_exercises)

    s = sub.add_parser("compile-check", help="compile every numba kernel to PTX and every .cu with NVRTC for sm_90",
                       epilog=exit_statuses("a kernel failed to compile"))
    s.add_argument("chapters", nargs="*", help="only these chapters (default: all)")
    s.add_argument("--json", action="store_true",
                   help="one JSON object on stdout ({\"ok\": ..., \"records\": [...]}), nothing else")
    s.set_defaults(fn=cmd_compile_check)

    _gp_parser(sub)
    _subset_parser(sub)
    from gpulab.euler.cli import add_parser as _euler_parser
    _euler_parser(sub)
    return p


def main(argv=None) -> int:
    """The `gpulab` command; returns its exit status."""
    try:
        try:
            status = _main(argv)
        except SystemExit as exc:  # --help
            status = exc.code or 0
        sys.stdout.flush()  # a reader that went away shows here at the latest
        return status
    except BrokenPipeError:
        # stdout was closed early (`gpulab ... | head -1`). The Python docs' recipe (signal
        # module, "Note on SIGPIPE"): point stdout at devnull, so that the interpreter's own
        # flush at exit fails no more, and exit quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv=None) -> int:
    # numba's performance hints (a small grid, a host array copied for a launch) are for kernel
    # authors; on a command's stderr they would break the one-line error and --json contracts
    warnings.filterwarnings("ignore", message=r".*Grid size .* will likely result in GPU under-utilization")
    warnings.filterwarnings("ignore", message=r".*Host array used in CUDA kernel will incur copy overhead")
    try:
        args = build_parser().parse_args(argv)
        return args.fn(args)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
    except GpulabError as exc:  # e.g. a variant that cannot run here, exercises not found
        print("gpulab: " + " ".join(str(exc).split()), file=sys.stderr)
    except KeyboardInterrupt:
        print("gpulab: interrupted", file=sys.stderr)
        return 130
    return 2
