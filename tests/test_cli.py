"""The command line: every user error is one clear line on stderr with exit status 2, and
`gpulab grade` finds the exercises from anywhere (or says where it looked)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import grading
from tests.conftest import child_env

ROOT = Path(__file__).resolve().parent.parent


def gpulab(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gpulab", *args], capture_output=True, text=True, cwd=cwd,
                          env=child_env())


def assert_one_line_error(p, *fragments):
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.parametrize("args,fragments", [
    (["bench", "nope"], ["gpulab bench: unknown chapter 'nope'", "known: matmul, subset, gp, radix, euler"]),
    (["tour", "matmul", "nope"], ["gpulab tour: unknown chapter 'nope'"]),
    (["compile-check", "nope"], ["gpulab compile-check: unknown chapter 'nope'"]),
    (["bench", "matmul", "--variants", "fastest"], ["unknown variant 'fastest'", "known: naive, coalesced"]),
    (["bench", "matmul", "--variants", "vec4", "--backend", "numba"], ["no variant vec4 has the backend numba"]),
    (["bench", "matmul", "--sizes", "N=3"], ["unknown size 'N=3'", "known: "]),
    (["bench", "matmul", "--repeat", "0"], ["--repeat: 0 is below the minimum of 1"]),
    (["bench", "matmul", "--warmup", "two"], ["--warmup: 'two' is not a whole number"]),
    (["bench", "matmul", "--backend", "gpu"], ["invalid choice: 'gpu'"]),
    (["bench"], ["required: chapter"]),
    (["frobnicate"], ["invalid choice: 'frobnicate'"]),
    (["grade"], ["required: exercise_set"]),
    (["grade", "nope"], ["no exercise set 'nope' in", "known: euler, gp, matmul, radix, subset"]),
    (["grade", "matmul", "--exercises", "/nonexistent/place"], ["/nonexistent/place is not an exercises directory"]),
    (["info", "--verbose"], ["unrecognized arguments: --verbose"]),
])
def test_user_errors_are_one_line_and_exit_2(args, fragments, tmp_path):
    assert_one_line_error(gpulab(*args, cwd=tmp_path), *fragments)


def test_grade_outside_the_repository_finds_the_source_checkout(tmp_path):
    """From an unrelated directory the editable install's checkout is found (an unknown set
    then names the sets it found there, without running any test)."""
    p = gpulab("grade", "nope", cwd=tmp_path)
    assert_one_line_error(p, f"in {ROOT / 'exercises'}", "known: euler, gp, matmul, radix, subset")


def test_grade_takes_an_exercises_directory_anywhere(tmp_path):
    """A copy of the exercises elsewhere (as a student gets them), by --exercises or --path,
    and from inside that copy by the current directory."""
    copy = tmp_path / "course" / "exercises"
    shutil.copytree(ROOT / "exercises", copy, ignore=shutil.ignore_patterns("__pycache__", "radix", "subset", "gp", "euler"))
    for option in ("--exercises", "--path"):
        p = gpulab("grade", "matmul", option, str(copy), cwd=tmp_path)
        assert p.returncode == 1 and " FAIL " in p.stdout and "NotImplementedError" in p.stdout, p.stdout + p.stderr
    p = gpulab("grade", "nope", cwd=copy)
    assert_one_line_error(p, f"in {copy}", "known: matmul")


def test_no_exercises_anywhere_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(grading, "source_checkout", lambda: None)
    with pytest.raises(grading.ExercisesNotFound) as err:
        grading.find_exercises()
    msg = str(err.value)
    assert f"looked in {tmp_path / 'exercises'}, {tmp_path}" in msg and "not installed from a source checkout" in msg
    assert "--exercises DIR" in msg and "\n" not in msg
    monkeypatch.setattr(grading, "source_checkout", lambda: ROOT)
    assert grading.find_exercises() == ROOT / "exercises"


def test_broken_and_empty_exercise_sets(tmp_path):
    """A test file that cannot be imported fails its set (a graded failure, exit 1, with the
    reason); a set whose tests select nothing is a one-line error."""
    ex = tmp_path / "exercises"
    (ex / "broken").mkdir(parents=True)
    (ex / "empty").mkdir()
    (ex / "conftest.py").write_text("")
    (ex / "broken" / "test_broken.py").write_text("import this_module_does_not_exist\n")
    (ex / "empty" / "test_empty.py").write_text("x = 1\n")
    p = gpulab("grade", "broken", cwd=tmp_path)
    assert p.returncode == 1 and "FAIL" in p.stdout and "this_module_does_not_exist" in p.stdout, p.stdout + p.stderr
    assert_one_line_error(gpulab("grade", "empty", cwd=tmp_path), "no exercise tests ran in")
