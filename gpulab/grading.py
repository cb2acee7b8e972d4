"""`gpulab grade <set>`: run an exercise set's tests and print a score per exercise.

Exercise tests carry `@pytest.mark.exercise("<set>.<n>-<slug>")`. Grading runs pytest on
`exercises/<set>/` in a subprocess (so the student's code cannot break the grader) with a
small plugin that records each test's exercise and outcome, then prints one row per exercise:
passed / failed and why (the first failure's last line). The exit status is 1 if any exercise
fails, so it can gate a CI job or an autograder.

The exercises directory is `--exercises DIR` when given; otherwise `./exercises`, the current
directory if it is an exercises directory itself, then the `exercises/` of the source
checkout gpulab was installed from (an editable install), in that order
([`find_exercises`][gpulab.grading.find_exercises]).

`GPULAB_EXERCISE_IMPL=solutions` (`--solutions`) points the tests at the reference
solutions in `exercises/solutions/<set>/` instead of the student files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import pytest

from gpulab.errors import GpulabError

RESULTS_ENV = "GPULAB_GRADE_RESULTS"


class ExercisesNotFound(GpulabError):
    """No exercises directory, or no such exercise set in it (the message says where it looked)."""


class _Recorder:
    """pytest plugin: collects (exercise, test, outcome, reason) into a JSON file."""

    def __init__(self, path: str):
        self.path = path
        self.rows: list[dict] = []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            marker = next((m for m in getattr(report, "_exercise", []) or []), None)
            reason = ""
            if report.outcome != "passed":
                text = str(report.longrepr) if report.longrepr else ""
                lines = [l.strip() for l in text.splitlines() if l.strip()]
                reason = (lines[-1] if lines else report.outcome)[:160]
            self.rows.append({"exercise": marker, "test": report.nodeid, "outcome": report.outcome, "reason": reason})

    def pytest_collectreport(self, report):
        if report.failed:  # a test file that cannot even be imported fails every exercise in it
            lines = [l.strip() for l in str(report.longrepr).splitlines() if l.strip()]
            self.rows.append({"exercise": f"(collecting {report.nodeid})", "test": report.nodeid, "outcome": "failed",
                              "reason": (lines[-1] if lines else "collection failed")[:160]})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        rep._exercise = [m.args[0] for m in item.iter_markers("exercise")]

    def pytest_sessionfinish(self, session):
        Path(self.path).write_text(json.dumps(self.rows))


def pytest_configure(config):  # this module doubles as the plugin (-p gpulab.grading)
    config.addinivalue_line("markers", "exercise(name): an exercise test, graded per exercise by `gpulab grade`")
    path = os.environ.get(RESULTS_ENV)
    if path:
        config.pluginmanager.register(_Recorder(path), "gpulab-grade-recorder")
    from gpulab import compilecheck, device

    kernels = os.environ.get(compilecheck.RECORD_ENV)
    if kernels and device.on_simulator():  # CI: remember each launched kernel to compile it for sm_90
        compilecheck.record_simulated_launches(kernels)


def is_exercises_dir(path: Path) -> bool:
    """An exercises directory: a `conftest.py` beside set folders holding `test_*.py` files."""
    return (path / "conftest.py").is_file() and any(path.glob("*/test_*.py"))


def source_checkout() -> Path | None:
    """The source checkout gpulab was installed from, if it is an editable install (or a pip
    install from a local directory, which records it in `direct_url.json`)."""
    import gpulab

    root = Path(gpulab.__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file():
        return root
    try:
        from importlib import metadata
        from urllib.parse import unquote, urlparse

        text = metadata.distribution("gpulab").read_text("direct_url.json")
        url = urlparse(json.loads(text)["url"]) if text else None
        if url and url.scheme == "file" and Path(unquote(url.path)).is_dir():
            return Path(unquote(url.path))
    except Exception:  # no metadata, or a record of another kind: no checkout to offer
        pass
    return None


def find_exercises(explicit: str | os.PathLike | None = None) -> Path:
    """The exercises directory: `explicit` (`--exercises DIR`) when given, else the first of
    `./exercises`, the current directory, the source checkout's `exercises/`.

    Raises:
        ExercisesNotFound: none of them is an exercises directory; the message lists them.
    """
    if explicit is not None:
        path = Path(explicit).expanduser()
        if path.is_dir() and (is_exercises_dir(path) or is_exercises_dir(path / "exercises")):
            return path if is_exercises_dir(path) else path / "exercises"
        raise ExercisesNotFound(f"{path} is not an exercises directory (no conftest.py beside exercise sets); "
                                "pass the exercises/ folder of a gpulab checkout with --exercises DIR")
    cwd = Path.cwd()
    looked = [cwd / "exercises", cwd]
    checkout = source_checkout()
    if checkout is not None:
        looked.append(checkout / "exercises")
    for path in looked:
        if is_exercises_dir(path):
            return path
    places = ", ".join(str(p) for p in looked) + ("" if checkout else " (gpulab was not installed from a source checkout)")
    raise ExercisesNotFound(f"no exercises directory found; looked in {places}; pass one with --exercises DIR")


def exercise_sets(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and p.name != "solutions" and not p.name.startswith(("_", ".")) and any(p.glob("test_*.py")))


def grade(exercise_set: str, path: str | os.PathLike | None = None, solutions: bool = False, out=sys.stdout) -> int:
    """Grade one exercise set; print a row per exercise to `out`; return the exit status
    (0 all passed, 1 some failed).

    Raises:
        ExercisesNotFound: no exercises directory, or no such set in it.
    """
    root = find_exercises(path)
    target = root / exercise_set
    if not (target.is_dir() and any(target.glob("test_*.py"))):
        raise ExercisesNotFound(f"no exercise set {exercise_set!r} in {root} (known: {', '.join(exercise_sets(root)) or 'none'})")
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "results.json")
        env = dict(os.environ, **{RESULTS_ENV: results, "GPULAB_EXERCISE_IMPL": "solutions" if solutions else "student"})
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "gpulab.grading", "-p", "no:cacheprovider",
                               "--rootdir", str(root), str(target)], env=env, capture_output=True, text=True)
        if not os.path.exists(results):
            print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
            raise GpulabError(f"grading {exercise_set} failed: pytest could not collect the tests in {target} (its output is above)")
        rows = json.loads(Path(results).read_text())
    if not rows:
        raise ExercisesNotFound(f"no exercise tests ran in {target} (test files named test_*.py, functions test_*)")
    by_ex: "OrderedDict[str, list[dict]]" = OrderedDict()
    for r in rows:
        by_ex.setdefault(r["exercise"] or "(unmarked)", []).append(r)
    who = "reference solutions" if solutions else "student files"
    print(f"grading {exercise_set} ({who})\n", file=out)
    width = max([len(k) for k in by_ex] + [8])
    print(f"{'exercise'.ljust(width)}  tests   result  why", file=out)
    print(f"{'-' * width}  ------  ------  ---", file=out)
    failed = 0
    for ex, rs in by_ex.items():
        passed = sum(r["outcome"] == "passed" for r in rs)
        ok = passed == len(rs)
        failed += not ok
        why = "" if ok else next(r["reason"] for r in rs if r["outcome"] != "passed")
        print(f"{ex.ljust(width)}  {passed:>2}/{len(rs):<3}  {'PASS' if ok else 'FAIL':6s}  {why}", file=out)
    total = len(by_ex)
    print(f"\n{total - failed} passed, {failed} failed (exercises)", file=out)
    return 1 if failed or not total else 0
