"""`gpulab grade <set>`: run an exercise set's tests and score them per exercise.

Exercise tests carry `@pytest.mark.exercise("<set>.<n>-<slug>")`. Grading runs pytest on
`exercises/<set>/` in a subprocess (so the student's code cannot break the grader) with a
small plugin that records each test's exercise, outcome and — when it failed — the exception
message with its values (`assert 12967.0 == 12966.0`, numpy's mismatch summary ...), where it
was raised, the short traceback and what the test printed (the `rng` fixture prints its seed).
[`grade`][gpulab.grading.grade] then prints one row per exercise, and under the table why each
failed exercise failed; or one JSON object (`--json`); and/or Gradescope's `results.json`
(`--gradescope FILE`). The exit status is 0 when every exercise passed and 1 when any failed,
so it can gate a CI job or an autograder.

An exercise passes when none of its tests failed and at least one passed; a skipped test (an
optional package missing) counts neither way. Its score is the fraction of its tests (skipped
ones aside) that passed — what Gradescope shows, out of 1 per exercise.

The exercises directory is `--exercises DIR` when given; otherwise `./exercises`, the current
directory if it is an exercises directory itself, then the `exercises/` of the source
checkout gpulab was installed from (an editable install), in that order
([`find_exercises`][gpulab.grading.find_exercises]).

`GPULAB_EXERCISE_IMPL=solutions` (`--solutions`) points the tests at the reference
solutions in `exercises/solutions/<set>/` instead of the student files.
[`handout`][gpulab.grading.handout] (`gpulab exercises handout DIR`) copies the exercises
without the solutions, for students.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gpulab.errors import GpulabError

RESULTS_ENV = "GPULAB_GRADE_RESULTS"
ONLY_ENV = "GPULAB_GRADE_ONLY"
_MESSAGE_CHARS = 4000  # one failure's message / traceback / output, kept at most (the tail is cut)


class ExercisesNotFound(GpulabError):
    """No exercises directory, or no such exercise set in it (the message says where it looked)."""


def _clip(text: str, limit: int = _MESSAGE_CHARS) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters cut)"


_DIFF_HINT = re.compile(r"\n[ \tE]*Use -v+ to get (more|the full) diff")  # pytest's, about its own options


def _exercise_of(item) -> str:
    marker = item.get_closest_marker("exercise")
    return marker.args[0] if marker is not None and marker.args else "(unmarked)"


def selects(name: str, selector: str) -> bool:
    """`--exercise` matching: the whole name, or the name up to its slug (`matmul.1`)."""
    return name == selector or name.startswith(selector + "-")


class _Recorder:
    """pytest plugin: appends one JSON line per collected set and per test phase to a file, as
    it goes (a student's code that ends the process still leaves the lines written so far)."""

    def __init__(self, path: str, only: list[str] | None):
        self.file = open(path, "a", encoding="utf-8")
        self.only = only

    def _write(self, record: dict) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()

    def pytest_collection_modifyitems(self, session, config, items):
        known = list(dict.fromkeys(_exercise_of(i) for i in items))
        if self.only:
            unknown = [s for s in self.only if not any(selects(n, s) for n in known)]
            keep = [] if unknown else [i for i in items if any(selects(_exercise_of(i), s) for s in self.only)]
            drop = [i for i in items if i not in keep]
            if unknown:
                self._write({"kind": "unknown", "unknown": unknown, "known": known})
            items[:] = keep
            if drop:
                config.hook.pytest_deselected(items=drop)
        self._write({"kind": "collected", "known": known, "tests": {i.nodeid: _exercise_of(i) for i in items}})

    def pytest_collectreport(self, report):
        if report.failed:  # a test file that cannot even be imported fails every exercise in it
            text = str(report.longrepr)
            lines = [l.strip() for l in text.splitlines() if l.strip()]
            self._write({"kind": "test", "exercise": f"(cannot import {report.nodeid})", "test": report.nodeid,
                         "when": "collect", "outcome": "failed", "message": _clip(lines[-1] if lines else "collection failed"),
                         "where": report.nodeid, "traceback": _clip(text), "output": ""})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        outcome.get_result()._exercise = _exercise_of(item)

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and report.outcome == "passed":
            return  # setup / teardown count only when they fail (or skip)
        record = {"kind": "test", "exercise": getattr(report, "_exercise", "(unmarked)"), "test": report.nodeid,
                  "when": report.when, "outcome": report.outcome, "message": "", "where": "", "traceback": "",
                  "output": _clip(report.capstdout, 2000)}
        if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
            record["message"] = str(report.longrepr[2])
        elif report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            record["message"] = _clip(_DIFF_HINT.sub("", crash.message if crash is not None else str(report.longrepr)))
            # where the exception was raised; not inside Python's import machinery (a SyntaxError's
            # message names its file and line itself)
            if crash is not None and not str(crash.path).startswith("<"):
                record["where"] = f"{crash.path}:{crash.lineno}"
            record["traceback"] = _clip(_DIFF_HINT.sub("", report.longreprtext))
        self._write(record)

    def pytest_sessionfinish(self, session):
        self._write({"kind": "finished"})
        self.file.close()


def pytest_configure(config):  # this module doubles as the plugin (-p gpulab.grading)
    config.addinivalue_line("markers", "exercise(name): an exercise test, graded per exercise by `gpulab grade`")
    path = os.environ.get(RESULTS_ENV)
    if path:
        only = json.loads(os.environ[ONLY_ENV]) if os.environ.get(ONLY_ENV) else None
        config.pluginmanager.register(_Recorder(path, only), "gpulab-grade-recorder")
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


class GradingFailed(GpulabError):
    """pytest stopped before it collected a test (a broken conftest, say); `output` is the end
    of what it printed."""

    def __init__(self, message: str, output: str = ""):
        super().__init__(message)
        self.output = output


def run(exercise_set: str, path: str | os.PathLike | None = None, solutions: bool = False,
        exercises: list[str] | None = None, timeout: float | None = None) -> dict:
    """Run one exercise set's tests in a subprocess and return the results (what `--json` prints).

    `exercises` keeps only these exercises: full names (`matmul.1-matvec-constant`) or their
    numbers (`matmul.1`, or `1` within the set). `timeout` (seconds) fails a test that runs
    longer (pytest-timeout), so a student's endless loop costs one test, not the grade.

    Returns:
        A dict: `set`, `exercises_dir`, `implementation` (`student` / `solutions`), `passed` and
        `failed` (exercises), `execution_time` (s), `complete` (false when the test process ended
        early), and `exercises`: per exercise `name`, `status` (`passed` / `failed`), `score`
        (fraction of its tests passed), `tests`, `passed`, `failed`, `skipped` (test counts),
        `failures` (per failed test: `test`, `message`, `where`, `traceback`, `output`) and `skips`.

    Raises:
        ExercisesNotFound: no exercises directory, no such set or exercise, no solutions for it.
        GradingFailed: pytest stopped before collecting any test.
    """
    root = find_exercises(path)
    target = root / exercise_set
    if not (target.is_dir() and any(target.glob("test_*.py"))):
        raise ExercisesNotFound(f"no exercise set {exercise_set!r} in {root} (known: {', '.join(exercise_sets(root)) or 'none'})")
    if solutions and not (root / "solutions" / exercise_set).is_dir():
        raise ExercisesNotFound(f"no reference solutions in {root / 'solutions' / exercise_set} "
                                "(a student handout has none); grade the student files without --solutions")
    import importlib.util

    timeout_args = []
    has_timeout = importlib.util.find_spec("pytest_timeout") is not None
    if timeout is not None and not has_timeout:
        raise GpulabError("--timeout needs the pytest-timeout package (pip install 'gpulab[test]')")
    if has_timeout:
        # pytest loads the plugin by its entry point, unless plugin autoloading is off
        load = ["-p", "pytest_timeout"] if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") else []
        # the grade's own limit, not a pyproject.toml's above the exercises (the repository's sets
        # a 900 s limit by the "thread" method, which ends the whole run at the first timeout):
        # no limit unless --timeout, and the signal method, which fails only the test that ran over
        method = ["-o", "timeout_method=signal"] if hasattr(os, "fork") else []
        timeout_args = [*load, *method, f"--timeout={0 if timeout is None else timeout:g}"]
    only = [s if s.startswith(exercise_set + ".") else f"{exercise_set}.{s}" for s in exercises] if exercises else None
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "results.jsonl")
        env = dict(os.environ, **{RESULTS_ENV: results, "GPULAB_EXERCISE_IMPL": "solutions" if solutions else "student"})
        env.pop(ONLY_ENV, None)
        if only:
            env[ONLY_ENV] = json.dumps(only)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "gpulab.grading",
                               "-p", "no:cacheprovider", *timeout_args, "--rootdir", str(root), str(target)],
                              env=env, capture_output=True, text=True)
        lines = Path(results).read_text(encoding="utf-8").splitlines() if os.path.exists(results) else []
    elapsed = time.monotonic() - start
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:  # the last line, cut short by a process that ended mid-write
            pass
    unknown = next((r for r in records if r["kind"] == "unknown"), None)
    if unknown:
        raise ExercisesNotFound(f"no exercise {', '.join(map(repr, unknown['unknown']))} in set {exercise_set} "
                                f"(known: {', '.join(unknown['known']) or 'none'})")
    collected = next((r for r in records if r["kind"] == "collected"), None)
    runs = [r for r in records if r["kind"] == "test"]
    pytest_output = (proc.stdout + proc.stderr).strip()
    if collected is None and not runs:
        raise GradingFailed(f"grading {exercise_set} failed: pytest stopped before collecting the tests in {target} "
                            f"(exit status {proc.returncode}; its output is above)", _clip(pytest_output[-3000:], 3000))
    complete = any(r["kind"] == "finished" for r in records)
    by_test: dict[str, dict | None] = dict.fromkeys((collected or {}).get("tests", {}))
    for r in runs:
        cur = by_test.get(r["test"])
        if cur is None or (r["outcome"] == "failed" and cur["outcome"] != "failed") or \
                (r["outcome"] == "skipped" and cur["outcome"] == "passed"):
            by_test[r["test"]] = r
    for nodeid, r in by_test.items():
        if r is None:  # collected, never reported: the process died (os._exit, a crash, killed)
            by_test[nodeid] = {"exercise": collected["tests"][nodeid], "test": nodeid, "outcome": "failed",
                               "message": f"the test process ended before this test finished (pytest exit status "
                                          f"{proc.returncode}); the end of its output:\n{pytest_output[-1500:]}",
                               "where": "", "traceback": "", "output": ""}
    grouped: dict[str, list[dict]] = {}
    for r in by_test.values():
        grouped.setdefault(r["exercise"], []).append(r)
    rows = []
    for name, ts in grouped.items():
        passed = sum(t["outcome"] == "passed" for t in ts)
        failed = sum(t["outcome"] == "failed" for t in ts)
        ok = failed == 0 and passed > 0
        rows.append({"name": name, "status": "passed" if ok else "failed",
                     "score": round(passed / (passed + failed), 4) if passed + failed else 0.0,
                     "tests": len(ts), "passed": passed, "failed": failed, "skipped": len(ts) - passed - failed,
                     "failures": [{k: t[k] for k in ("test", "message", "where", "traceback", "output")}
                                  for t in ts if t["outcome"] == "failed"],
                     "skips": [{"test": t["test"], "message": t["message"]} for t in ts if t["outcome"] == "skipped"]})
    if not rows:
        raise ExercisesNotFound(f"no exercise tests ran in {target} (test files named test_*.py, functions test_*)")
    n_passed = sum(r["status"] == "passed" for r in rows)
    return {"set": exercise_set, "exercises_dir": str(root), "implementation": "solutions" if solutions else "student",
            "selected": only, "passed": n_passed, "failed": len(rows) - n_passed, "execution_time": round(elapsed, 2),
            "complete": complete, "exercises": rows}


def _one_line(text: str, width: int = 100) -> str:
    s = " ".join(text.split())
    return s if len(s) <= width else s[:width - 3] + "..."


def _summary(message: str) -> str:
    """One line for the table: the message, or for a SyntaxError (`File "...", line N` first) its
    last line and the file's name and line."""
    lines = [l.strip() for l in message.strip().splitlines() if l.strip()]
    m = re.match(r'File "(.*)", line (\d+)', lines[0]) if lines else None
    if m and len(lines) > 1:
        return f"{lines[-1]} ({os.path.basename(m.group(1))}, line {m.group(2)})"
    return message


def _seed_lines(output: str) -> list[str]:
    return [l.strip() for l in output.splitlines() if "GPULAB_TEST_SEED=" in l]


def _why(ex: dict) -> str:
    if ex["failures"]:
        return ex["failures"][0]["message"]
    return "every test was skipped: " + (ex["skips"][0]["message"] if ex["skips"] else "no test ran")


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def _place(where: str) -> str:
    if not where:
        return ""
    rel = os.path.relpath(where) if os.path.isabs(where.rsplit(":", 1)[0]) else where
    return where if rel.startswith("..") else rel


def _indent(text: str, pad: str) -> str:
    return "\n".join(pad + l for l in text.rstrip().splitlines())


def print_text(result: dict, verbose: bool = False, out=sys.stdout) -> None:
    """The table of exercises, then why each failed one failed (its first failing test's message,
    or with `verbose` every failing test's traceback), then the tally."""
    who = "reference solutions" if result["implementation"] == "solutions" else "student files"
    print(f"grading {result['set']} ({who})\n", file=out)
    rows = result["exercises"]
    width = max([len(r["name"]) for r in rows] + [8])
    print(f"{'exercise'.ljust(width)}  tests   result  why", file=out)
    print(f"{'-' * width}  ------  ------  ---", file=out)
    for r in rows:
        ok = r["status"] == "passed"
        counted = f"{r['passed']:>2}/{r['passed'] + r['failed']:<3}"
        print(f"{r['name'].ljust(width)}  {counted}  {'PASS' if ok else 'FAIL':6s}  {'' if ok else _one_line(_summary(_why(r)))}",
              file=out)
    failing = [r for r in rows if r["status"] != "passed"]
    if failing:
        print("\nwhy" + ("" if verbose else " (each exercise's first failing test; --verbose shows every one with its traceback)")
              + ":", file=out)
    for r in failing:
        shown = r["failures"] if verbose else r["failures"][:1]
        if not shown:
            print(f"\n- {r['name']}: {_why(r)}", file=out)
        for i, f in enumerate(shown):
            more = len(r["failures"]) - 1
            tail = f" (and {more} more of its {r['passed'] + r['failed']} tests)" if not verbose and i == 0 and more else ""
            print(f"\n- {r['name']}: {_short(f['test'])} failed{tail}", file=out)
            if f["where"]:
                print(f"  at {_place(f['where'])}", file=out)
            text = f["traceback"] if verbose and f["traceback"] else f["message"]
            lines = text.rstrip().splitlines()
            if not verbose and len(lines) > 16:
                lines = lines[:16] + [f"... ({len(lines) - 16} more lines; --verbose shows them)"]
            print(_indent("\n".join(lines), "    "), file=out)
            for line in _seed_lines(f["output"]):
                print("  " + line, file=out)
    if not result["complete"]:
        print("\nthe test process ended before every test finished (a crash, os._exit, or killed)", file=out)
    if failing and not result["selected"]:
        print(f"\nrun one exercise alone: gpulab grade {result['set']} --exercise {failing[0]['name']}", file=out)
    print(f"\n{result['passed']} passed, {result['failed']} failed (exercises)", file=out)


def gradescope_results(result: dict) -> dict:
    """Gradescope's autograder `results.json` for a graded set: one Gradescope test per
    exercise, `max_score` 1, `score` the fraction of its tests that passed."""
    tests = []
    for r in result["exercises"]:
        counted = r["passed"] + r["failed"]
        head = f"{r['passed']} of {counted} tests passed" + (f", {r['skipped']} skipped" if r["skipped"] else "") + "."
        parts = [head]
        if r["status"] != "passed" and not r["failures"]:
            parts.append(_why(r))
        for f in r["failures"][:5]:
            parts.append(f"FAILED {f['test']}\n" + (f["traceback"] or f["message"])
                         + "".join("\n" + s for s in _seed_lines(f["output"])))
        if len(r["failures"]) > 5:
            parts.append(f"... and {len(r['failures']) - 5} more failing tests: "
                         + ", ".join(_short(f["test"]) for f in r["failures"][5:]))
        tests.append({"name": r["name"], "score": r["score"], "max_score": 1, "status": r["status"],
                      "output": _clip("\n\n".join(parts), 20000)})
    who = "reference solutions" if result["implementation"] == "solutions" else "your files"
    summary = f"{result['set']}: {result['passed']} of {len(tests)} exercises passed ({who})."
    if not result["complete"]:
        summary += " The test process ended before every test finished (a crash, os._exit, or killed)."
    return {"score": round(sum(t["score"] for t in tests), 4), "execution_time": round(result["execution_time"]),
            "output": summary, "output_format": "text", "test_output_format": "text", "tests": tests}


def _write_json(path: str | os.PathLike, data: dict) -> None:
    from gpulab.commands import cannot_write

    path = Path(path).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise cannot_write("--gradescope", path, exc) from None


def grade(exercise_set: str, path: str | os.PathLike | None = None, solutions: bool = False, out=sys.stdout, *,
          exercises: list[str] | None = None, as_json: bool = False, gradescope: str | os.PathLike | None = None,
          verbose: bool = False, timeout: float | None = None) -> int:
    """Grade one exercise set: print the table and why each failed exercise failed (or with
    `as_json` one JSON object, [`run`][gpulab.grading.run]'s) to `out`; with `gradescope`, also
    write Gradescope's `results.json` there. Returns the exit status: 0 all passed, 1 some failed.

    With `gradescope`, a results file is written even when the grader cannot run the tests
    (score 0, the reason as its output) before the error is raised.

    Raises:
        ExercisesNotFound: no exercises directory, or no such set or exercise in it.
        GradingFailed: pytest stopped before collecting any test (its output goes to stderr).
    """
    start = time.monotonic()
    if gradescope is not None:  # before the tests run: a place that cannot be written loses nothing
        _write_json(gradescope, {"score": 0, "execution_time": 0, "output": "grading did not finish",
                                 "output_format": "text", "tests": []})
    try:
        result = run(exercise_set, path, solutions=solutions, exercises=exercises, timeout=timeout)
    except GpulabError as exc:
        detail = getattr(exc, "output", "")
        if gradescope is not None:
            _write_json(gradescope, {"score": 0, "execution_time": round(time.monotonic() - start),
                                     "output": f"The grader could not run the tests: {exc}" + (f"\n\n{detail}" if detail else ""),
                                     "output_format": "text", "tests": []})
        if detail:
            print(detail, file=sys.stderr)
        raise
    if gradescope is not None:
        _write_json(gradescope, gradescope_results(result))
    if as_json:
        print(json.dumps(result), file=out)
    else:
        print_text(result, verbose=verbose, out=out)
    return 0 if result["failed"] == 0 else 1


def handout(dest: str | os.PathLike, source: str | os.PathLike | None = None, sets: list[str] | None = None) -> list[str]:
    """Copy the exercises for students into `dest`: the README and conftest, and each set's
    stubs, tests and README — no `solutions/` directory. Returns the sets copied.

    Raises:
        GpulabError: `dest` exists and is not an empty directory.
        ExercisesNotFound: no exercises directory at `source` (found as by `grade`), or no such set.
    """
    root = find_exercises(source)
    dest = Path(dest).expanduser()
    if dest.resolve().is_relative_to(root.resolve()):
        raise GpulabError(f"{dest} is inside the exercises directory {root}; give a directory outside it")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise GpulabError(f"{dest} exists and is not empty; give a new or empty directory for the handout")
    known = exercise_sets(root)
    unknown = [s for s in sets or [] if s not in known]
    if unknown:
        raise ExercisesNotFound(f"no exercise set {unknown[0]!r} in {root} (known: {', '.join(known) or 'none'})")
    chosen = list(sets) if sets else known
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted(root.iterdir()):
        if item.name.startswith(".") or item.name in ("solutions", "__pycache__") or (item.is_dir() and item.name in known and item.name not in chosen):
            continue
        if item.is_dir():
            shutil.copytree(item, dest / item.name, ignore=ignore)
        else:
            shutil.copy2(item, dest / item.name)
    return chosen
