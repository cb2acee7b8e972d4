"""The `gpulab` command: `info`, `tour`, `bench`, `grade`, `exercises`, `compile-check`.

A mistake on the command line (an unknown chapter, variant or size, a bad argument, exercises
that cannot be found ...) is reported in one line on stderr with exit status 2 — never a
traceback. Exit status 1 means the command ran and something failed its check.
"""

from __future__ import annotations

import argparse
import json
import sys

import gpulab  # noqa: F401  (device selection before anything imports numba)
from gpulab.errors import GpulabError


class UsageError(GpulabError):
    """A command-line mistake: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
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


def cmd_info(args) -> int:
    from gpulab import device

    info = device.info()
    if args.json:
        print(json.dumps(info.as_dict(), indent=1))
        return 0
    rows = [("mode", "GPU" if info.mode == "gpu" else "simulator (numba CUDA simulator on the CPU)"),
            ("device", info.name), ("compute capability", "%d.%d" % info.compute_capability),
            ("SMs", info.sm_count), ("max threads per block", info.max_threads_per_block),
            ("shared memory per block", f"{info.shared_memory_per_block} bytes "
                                        f"({info.shared_memory_per_block_optin} with opt-in)"),
            ("constant memory", f"{info.constant_memory} bytes"), ("warp size", info.warp_size),
            ("CUDA C backend (pycuda)", info.pycuda)]
    for k, v in rows:
        print(f"{k:26s} {v}")
    if info.mode == "sim":
        print("\n(simulator limits mirror an H200 so that size errors match the GPU; set GPULAB_DEVICE=gpu|sim to override)")
    return 0


def cmd_tour(args) -> int:
    from gpulab.tour import tour

    return 1 if tour(_chapters(args.chapters, "tour") or None) else 0


def cmd_bench(args) -> int:
    from gpulab import benchmark
    from gpulab.chapters import module, registry

    _chapters([args.chapter], "bench")
    spec = module(args.chapter, "bench").SPEC
    reg = registry(args.chapter)
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
    result = benchmark.run(spec, variants, quick=args.quick, warmup=args.warmup, repeat=args.repeat,
                           seed=args.seed, cases=cases, progress=None if args.no_progress else print)
    paths = benchmark.write(result, args.out, append=args.append)
    print()
    benchmark.main_print(result)
    print("\nwrote " + ", ".join(str(p) for p in paths))
    failed = [r for r in result["records"] if r["check"] is False]
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


def _run_chapter_command(name: str, run, args) -> int:
    """A chapter's sub-command: its user errors become one line on stderr, named by the command
    (`gpulab gp evolve: ...`), and exit status 2."""
    try:
        return run(args)
    except GpulabError as exc:
        print(f"{name}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def cmd_gp(args) -> int:
    from gpulab.gp import cli as gp_cli

    run = gp_cli.run_evolve if args.gp_cmd == "evolve" else gp_cli.run_experiment
    return _run_chapter_command(f"gpulab gp {args.gp_cmd}", run, args)


def _gp_parser(sub) -> None:
    """Chapter 3's commands: evolve trading rules; the chapter's train/test experiment."""
    g = sub.add_parser("gp", help="chapter 3: evolve trading rules (gp evolve, gp experiment)")
    gsub = g.add_subparsers(dest="gp_cmd", required=True)
    e = gsub.add_parser("evolve", help="evolve buy/sell rules; JSON + PNG of train vs test fitness")
    e.add_argument("--population", type=int, default=25_000)
    e.add_argument("--stocks", type=int, default=32, help="synthetic data: stocks")
    e.add_argument("--days", type=int, default=None, help="training days (synthetic: 768; real data: 3/4 of them)")
    e.add_argument("--test-days", type=int, default=256, help="synthetic data: test days after the training days")
    e.add_argument("--generations", type=int, default=50)
    e.add_argument("--variant", default=None, help="evaluator (default: bitsliced, or cpu_bitsliced with --backend cpu)")
    e.add_argument("--backend", default="numba", choices=["numba", "cuda-c", "cpu"])
    e.add_argument("--data", default="synthetic", help="synthetic, sample (AAPL/IBM/MSFT/GOOG) or csv:PATH[,PATH...]")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--out", default="gp-results")
    e.add_argument("--stem", default="gp-evolve", help="output file names (STEM.json, STEM.png)")
    x = gsub.add_parser("experiment", help="the chapter's experiment: more stocks/days vs out-of-sample fitness")
    x.add_argument("--population", type=int, default=2000)
    x.add_argument("--generations", type=int, default=30)
    x.add_argument("--seeds", type=int, default=3)
    x.add_argument("--stocks-total", type=int, default=64)
    x.add_argument("--test-days", type=int, default=256)
    x.add_argument("--variant", default=None)
    x.add_argument("--backend", default="cpu", choices=["numba", "cuda-c", "cpu"])
    x.add_argument("--out", default="gp-results")
    x.add_argument("--stem", default="gp-experiment")
    x.add_argument("--where", default="", help="a note on where it was run (stored in the JSON)")
    for p in (e, x):
        p.set_defaults(fn=cmd_gp)


def cmd_subset(args) -> int:
    from gpulab.subset import cli as subset_cli

    return _run_chapter_command("gpulab subset search", subset_cli.run_search, args)


def _subset_parser(sub) -> None:
    """Chapter 2's command: the least-correlated subset, on one device or across a Dask cluster."""
    g = sub.add_parser("subset", help="chapter 2: the least-correlated subset (subset search)")
    gsub = g.add_subparsers(dest="subset_cmd", required=True)
    s = gsub.add_parser("search", help="search every k-subset of n strategies; --gpus all / --scheduler ADDR for Dask")
    data = s.add_mutually_exclusive_group(required=True)
    data.add_argument("--csv", metavar="FILE", help="returns: one column per strategy, one row per day, optional header")
    data.add_argument("--synthetic", metavar="DAYS", type=_count(2), help="synthetic returns of --n strategies")
    s.add_argument("--n", type=_count(1), default=None, help="strategies (with --csv: its first n columns)")
    s.add_argument("--k", type=_count(1), required=True, help="subset size")
    s.add_argument("--seed", type=int, default=0, help="synthetic data's seed")
    s.add_argument("--variant", default="incremental")
    s.add_argument("--backend", default="numba", choices=["numba", "cuda-c", "cpu"])
    where = s.add_mutually_exclusive_group()
    where.add_argument("--gpus", metavar="all|N", type=_gpu_count,
                       help="a local Dask cluster, one worker per GPU (on the simulator: 2 CPU workers)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786")
    s.add_argument("--chunks", type=_count(1), default=None, help="rank ranges (Dask tasks); default 4 per worker")
    s.add_argument("--json", action="store_true", help="one line of JSON")
    s.set_defaults(fn=cmd_subset)


def _gpu_count(text: str) -> str:
    if text != "all":
        _count(1)(text)
    return text


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpulab", description="GPU algorithms, built step by step.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="command")

    s = sub.add_parser("info", help="the device kernels run on, and its limits")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("tour", help="run and check every variant of every finished chapter")
    s.add_argument("chapters", nargs="*", help="only these chapters")
    s.set_defaults(fn=cmd_tour)

    s = sub.add_parser("bench", help="benchmark a chapter's variants; writes JSON and a PNG chart")
    s.add_argument("chapter")
    s.add_argument("--variants", nargs="*", help="only these variant names")
    s.add_argument("--backend", choices=["numba", "cuda-c", "cpu"])
    s.add_argument("--sizes", nargs="*", help="only these size labels (e.g. N=8192)")
    s.add_argument("--quick", action="store_true", help="fewer, smaller sizes")
    s.add_argument("--warmup", type=_count(0), default=2)
    s.add_argument("--repeat", type=_count(1), default=10)
    s.add_argument("--seed", type=int, default=None)
    s.add_argument("--out", default="bench-results", help="directory for JSON and PNG (default: bench-results)")
    s.add_argument("--no-progress", action="store_true")
    s.add_argument("--append", action="store_true",
                   help="keep the records of other sizes/variants already in the JSON (a benchmark run in parts)")
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
                                    "exercises / no such set.")
    h.add_argument("dir", metavar="DIR", help="where to write the copy (new, or an empty directory)")
    h.add_argument("--exercises", dest="exercises", metavar="DIR", default=None, help=_exercises_help)
    h.add_argument("--sets", nargs="+", metavar="SET", default=None, help="only these sets (default: all)")
    h.set_defaults(fn=cmd_exercises)

    s = sub.add_parser("compile-check", help="compile every numba kernel to PTX and every .cu with NVRTC for sm_90")
    s.add_argument("chapters", nargs="*")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_compile_check)

    _gp_parser(sub)
    _subset_parser(sub)
    return p


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "gp_cmd", None) and args.variant is None:
            args.variant = "cpu_bitsliced" if args.backend == "cpu" else "bitsliced"
        return args.fn(args)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
    except GpulabError as exc:  # e.g. a variant that cannot run here, exercises not found
        print("gpulab: " + " ".join(str(exc).split()), file=sys.stderr)
    except KeyboardInterrupt:
        print("gpulab: interrupted", file=sys.stderr)
        return 130
    return 2
