"""``gpulab grade <set>``: run an exercise set's tests and print a score per exercise.

Exercise tests carry ``@pytest.mark.exercise("<set>.<n>-<slug>")``. Grading runs pytest on
``exercises/<set>/`` in a subprocess (so the student's code cannot break the grader) with a
small plugin that records each test's exercise and outcome, then prints one row per exercise:
passed / failed and why (the first failure's last line). The exit status is 1 if any exercise
fails, so it can gate a CI job or an autograder.

``GPULAB_EXERCISE_IMPL=solutions`` (``--solutions``) points the tests at the reference
solutions in ``exercises/solutions/<set>/`` instead of the student files.
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

RESULTS_ENV = "GPULAB_GRADE_RESULTS"


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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        rep._exercise = [m.args[0] for m in item.iter_markers("exercise")]

    def pytest_sessionfinish(self, session):
        Path(self.path).write_text(json.dumps(self.rows))


def pytest_configure(config):  # this module doubles as the plugin (-p gpulab.grading)
    path = os.environ.get(RESULTS_ENV)
    if path:
        config.pluginmanager.register(_Recorder(path), "gpulab-grade-recorder")
    from gpulab import compilecheck, device

    kernels = os.environ.get(compilecheck.RECORD_ENV)
    if kernels and device.on_simulator():  # CI: remember each launched kernel to compile it for sm_90
        compilecheck.record_simulated_launches(kernels)


def grade(exercise_set: str, path: str = "exercises", solutions: bool = False, out=sys.stdout) -> int:
    root = Path(path)
    target = root / exercise_set
    if not target.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "solutions" and not p.name.startswith(("_", "."))) if root.is_dir() else []
        print(f"no exercise set {exercise_set!r} under {root}/ (known: {', '.join(known) or 'none'})", file=out)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "results.json")
        env = dict(os.environ, **{RESULTS_ENV: results, "GPULAB_EXERCISE_IMPL": "solutions" if solutions else "student"})
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "gpulab.grading", "-p", "no:cacheprovider",
                               "--rootdir", str(root), str(target)], env=env, capture_output=True, text=True)
        if not os.path.exists(results):
            print(proc.stdout[-3000:] + proc.stderr[-3000:], file=out)
            print("grading failed: the tests could not be collected (see above)", file=out)
            return 2
        rows = json.loads(Path(results).read_text())
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
