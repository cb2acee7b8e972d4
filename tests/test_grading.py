"""`gpulab grade` says why a test failed (the assertion with its values), writes Gradescope's
results.json (also when everything fails, a student's file does not parse, or the test process
dies), filters by exercise, prints one JSON object with --json; `gpulab exercises handout` copies
the exercises without the solutions.

Everything runs on a tiny synthetic exercise set in tmp_path (no kernels), so the file is fast."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import child_env
from tests.test_cli import assert_one_line_error

ROOT = Path(__file__).resolve().parent.parent

TESTS = '''
import numpy as np
import pytest

@pytest.mark.exercise("toy.1-stub")
def test_stub(impl):
    assert impl("toy", "stub").f(1) == 1

@pytest.mark.exercise("toy.2-wrong")
def test_wrong_total(impl):
    assert impl("toy", "wrong").total(np.full(3, 4322.0)) == 12966.0

@pytest.mark.exercise("toy.2-wrong")
def test_wrong_array(impl, rng):
    np.testing.assert_allclose(impl("toy", "wrong").arr(), [1.0, 2.0, 3.0])

@pytest.mark.exercise("toy.3-good")
@pytest.mark.parametrize("x", [1, 2, 3])
def test_good(impl, x):
    assert impl("toy", "good").double(x) == 2 * x

@pytest.mark.exercise("toy.3-good")
def test_good_with_an_optional_package(impl):
    pytest.importorskip("a_package_nobody_has_installed")

@pytest.mark.exercise("toy.4-partly")
@pytest.mark.parametrize("x", [1, 2, 3, 4])
def test_partly(impl, x):
    assert impl("toy", "partly").half(x) == x / 2

@pytest.mark.exercise("toy.5-syntax")
def test_syntax(impl):
    assert impl("toy", "syntax").g(1) == 1

@pytest.mark.exercise("toy.6-exits")  # last: the student's code ends the test process
def test_exits(impl):
    assert impl("toy", "exits").h() == 0
'''

STUDENT = {
    "stub.py": 'def f(x):\n    raise NotImplementedError("exercise toy.1: write f")\n',
    "wrong.py": "import numpy as np\n\ndef total(x):\n    return float(np.sum(x)) + 1.0\n\n"
                "def arr():\n    return np.array([1.0, 2.0, 4.0])\n",
    "good.py": "def double(x):\n    return 2 * x\n",
    "partly.py": "def half(x):\n    return x // 2\n",  # right for even x only
    "syntax.py": "def g(x:\n    return x\n",
    "exits.py": "import os\n\ndef h():\n    os._exit(0)\n",
}

STUB_TESTS = '''
import pytest

@pytest.mark.exercise("stubs.1-one")
def test_one(impl):
    assert impl("stubs", "one").one() == 1

@pytest.mark.exercise("stubs.2-two")
def test_two(impl):
    assert impl("stubs", "two").two() == 2
'''


@pytest.fixture
def exercises(tmp_path):
    """An exercises directory: the real conftest (its impl and rng fixtures), the set `toy`
    (a stub, a wrong answer with known values, a correct one, one right for half its cases, a
    syntax error, one that ends the process), and the set `stubs` (stubs only) with solutions."""
    ex = tmp_path / "exercises"
    (ex / "toy").mkdir(parents=True)
    shutil.copy(ROOT / "exercises" / "conftest.py", ex / "conftest.py")
    (ex / "README.md").write_text("# Toy exercises\n")
    (ex / "toy" / "test_toy.py").write_text(TESTS)
    for name, text in STUDENT.items():
        (ex / "toy" / name).write_text(text)
    for where, (one, two) in {ex / "stubs": ('raise NotImplementedError("one")', 'raise NotImplementedError("two")'),
                              ex / "solutions" / "stubs": ("return 1", "return 2")}.items():
        where.mkdir(parents=True)
        (where / "one.py").write_text(f"def one():\n    {one}\n")
        (where / "two.py").write_text(f"def two():\n    {two}\n")
    (ex / "stubs" / "test_stubs.py").write_text(STUB_TESTS)
    (ex / "stubs" / "README.md").write_text("# Stubs\n")
    return ex


def gpulab(*args):
    """This checkout's `gpulab` (run from its root, so `-m gpulab` and the graders' pytest import it)."""
    env = child_env(drop=("GPULAB_TEST_SEED",))
    return subprocess.run([sys.executable, "-m", "gpulab", *args], capture_output=True, text=True, cwd=ROOT, env=env)


def test_failures_show_their_values_and_gradescope_gets_every_exercise(exercises, tmp_path):
    results = tmp_path / "autograder" / "results" / "results.json"  # its folder does not exist yet
    p = gpulab("grade", "toy", "--exercises", str(exercises), "--gradescope", str(results))
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    table, why = out.split("\nwhy", 1)
    rows = {l.split()[0]: l for l in table.splitlines() if l.startswith("toy.")}
    assert set(rows) == {f"toy.{n}" for n in ("1-stub", "2-wrong", "3-good", "4-partly", "5-syntax", "6-exits")}, out
    assert " 3/3 " in rows["toy.3-good"] and " PASS " in rows["toy.3-good"], out  # the skipped test counts neither way
    assert " 2/4 " in rows["toy.4-partly"] and " FAIL " in rows["toy.4-partly"], out
    assert "NotImplementedError: exercise toy.1: write f" in rows["toy.1-stub"], out
    # why, with the values: the rewritten assert, numpy's mismatch summary, the parse error
    assert "assert 12967.0 == 12966.0" in rows["toy.2-wrong"], out
    assert "assert 12967.0 == 12966.0" in why, out
    assert "SyntaxError" in rows["toy.5-syntax"] and "syntax.py" in why, out
    assert f"at {exercises / 'toy' / 'stub.py'}:2" in out, out
    assert "the test process ended before this test finished" in out, out
    assert "gpulab grade toy --exercise toy.1-stub" in out, out
    assert out.rstrip().endswith("1 passed, 5 failed (exercises)"), out

    r = json.loads(results.read_text())
    assert {"score", "execution_time", "output", "tests"} <= set(r) and isinstance(r["execution_time"], int)
    tests = {t["name"]: t for t in r["tests"]}
    assert list(tests) == sorted(tests) and len(tests) == 6
    for t in r["tests"]:
        assert set(t) >= {"name", "score", "max_score", "status", "output"} and t["max_score"] == 1
        assert t["status"] == ("passed" if t["name"] == "toy.3-good" else "failed")
    assert [tests[n]["score"] for n in sorted(tests)] == [0.0, 0.0, 1.0, 0.5, 0.0, 0.0]
    assert r["score"] == 1.5 and "1 of 6 exercises passed" in r["output"] and "ended before" in r["output"]
    assert tests["toy.3-good"]["output"] == "3 of 3 tests passed, 1 skipped."
    wrong = tests["toy.2-wrong"]["output"]
    assert "assert 12967.0 == 12966.0" in wrong and "Mismatched elements: 1 / 3" in wrong, wrong
    assert "GPULAB_TEST_SEED=" in wrong, wrong  # the rng fixture's seed, to replay the failing test
    assert "test_partly[1]" in tests["toy.4-partly"]["output"] and "test_partly[2]" not in tests["toy.4-partly"]["output"]
    assert "SyntaxError" in tests["toy.5-syntax"]["output"] and "syntax.py" in tests["toy.5-syntax"]["output"]


def test_one_exercise_alone_and_json(exercises):
    p = gpulab("grade", "toy", "--exercises", str(exercises), "--exercise", "2", "--exercise", "toy.3-good", "--json")
    assert p.returncode == 1, p.stdout + p.stderr
    result = json.loads(p.stdout)  # the whole of stdout is one JSON object
    assert [e["name"] for e in result["exercises"]] == ["toy.2-wrong", "toy.3-good"]
    assert (result["passed"], result["failed"], result["complete"]) == (1, 1, True)
    wrong = result["exercises"][0]
    assert (wrong["tests"], wrong["passed"], wrong["failed"], wrong["status"]) == (2, 0, 2, "failed")
    messages = [f["message"] for f in wrong["failures"]]
    assert "assert 12967.0 == 12966.0" in messages[0] and "Mismatched elements" in messages[1], messages
    good = result["exercises"][1]
    assert (good["passed"], good["skipped"], good["failures"]) == (3, 1, [])

    p = gpulab("grade", "toy", "--exercises", str(exercises), "--exercise", "toy.9")
    assert_one_line_error(p, "no exercise 'toy.9' in set toy", "known: toy.1-stub, toy.2-wrong")


def test_handout_has_no_solutions_and_its_stubs_fail_every_exercise(exercises, tmp_path):
    hand = tmp_path / "handout"
    p = gpulab("exercises", "handout", str(hand), "--exercises", str(exercises))
    assert p.returncode == 0 and str(hand) in p.stdout, p.stdout + p.stderr
    files = sorted(str(f.relative_to(hand)) for f in hand.rglob("*") if f.is_file())
    assert "conftest.py" in files and "README.md" in files and "stubs/README.md" in files and "toy/test_toy.py" in files
    assert not any("solutions" in f or "__pycache__" in f for f in files), files
    assert (hand / "stubs" / "one.py").read_text() == (exercises / "stubs" / "one.py").read_text()

    results = tmp_path / "results.json"
    p = gpulab("grade", "stubs", "--exercises", str(hand), "--gradescope", str(results))
    assert p.returncode == 1 and "0 passed, 2 failed (exercises)" in p.stdout, p.stdout + p.stderr
    assert "NotImplementedError: one" in p.stdout and "NotImplementedError: two" in p.stdout, p.stdout
    r = json.loads(results.read_text())
    assert r["score"] == 0 and [t["status"] for t in r["tests"]] == ["failed", "failed"]
    assert_one_line_error(gpulab("grade", "stubs", "--exercises", str(hand), "--solutions"),
                          "no reference solutions in", "a student handout has none")
    # the source still has them: every exercise passes, exit 0, full marks
    p = gpulab("grade", "stubs", "--exercises", str(exercises), "--solutions", "--gradescope", str(results))
    assert p.returncode == 0 and "2 passed, 0 failed" in p.stdout, p.stdout + p.stderr
    r = json.loads(results.read_text())
    assert r["score"] == 2 and all(t["status"] == "passed" and t["score"] == 1 for t in r["tests"])


def test_handout_refuses_a_directory_that_is_not_empty(exercises, tmp_path):
    hand = tmp_path / "handout"
    hand.mkdir()
    (hand / "notes.txt").write_text("mine")
    assert_one_line_error(gpulab("exercises", "handout", str(hand), "--exercises", str(exercises)),
                          f"{hand} exists and is not empty")
    assert [f.name for f in hand.iterdir()] == ["notes.txt"]
    assert_one_line_error(gpulab("exercises", "handout", str(tmp_path / "new"), "--exercises", str(exercises),
                                 "--sets", "nope"), "no exercise set 'nope'", "known: stubs, toy")
    assert not (tmp_path / "new").exists()


def test_results_json_even_when_the_tests_cannot_start(exercises, tmp_path):
    """A conftest that cannot be imported stops pytest before any test: exit status 2, one line
    from gpulab, and Gradescope still gets a results.json (score 0, the reason)."""
    (exercises / "toy" / "conftest.py").write_text("raise RuntimeError('the course broke its conftest')\n")
    results = tmp_path / "results.json"
    p = gpulab("grade", "toy", "--exercises", str(exercises), "--gradescope", str(results))
    assert p.returncode == 2 and "Traceback" not in p.stderr.splitlines()[-1], p.stderr
    assert p.stderr.splitlines()[-1].startswith("gpulab: grading toy failed: pytest stopped before collecting"), p.stderr
    assert "the course broke its conftest" in p.stderr  # pytest's own output, above gpulab's line
    r = json.loads(results.read_text())
    assert r["score"] == 0 and r["tests"] == [] and "the course broke its conftest" in r["output"]


def test_timeout_fails_an_endless_test_and_grading_goes_on(exercises):
    """Only the test that runs over fails, even under a pyproject.toml that asks for pytest-timeout's
    "thread" method (which ends the whole run), as the repository's own does; the endless test
    runs first, so a killed run would fail the passing one after it."""
    (exercises.parent / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntimeout = 900\n'
                                                     'timeout_method = "thread"\n')
    (exercises / "toy" / "test_aa_loops.py").write_text(
        'import time\nimport pytest\n\n@pytest.mark.exercise("toy.7-loops")\n'
        'def test_loops():\n    while True:\n        time.sleep(0.01)\n')
    p = gpulab("grade", "toy", "--exercises", str(exercises), "--exercise", "toy.7", "--exercise", "3",
               "--timeout", "1", "--json")
    result = json.loads(p.stdout)
    status = {e["name"].split("-")[0]: e["status"] for e in result["exercises"]}
    assert p.returncode == 1 and status == {"toy.3": "passed", "toy.7": "failed"}, p.stdout + p.stderr
    loops = next(e for e in result["exercises"] if e["name"].startswith("toy.7"))
    assert "Timeout" in loops["failures"][0]["message"] and result["complete"]
    assert_one_line_error(gpulab("grade", "toy", "--exercises", str(exercises), "--timeout", "0"), "--timeout: 0 is not above 0")
