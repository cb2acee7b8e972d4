"""The exercise sets can fail and can pass: stubs fail every exercise, solutions pass them all."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETS = sorted(p.name for p in (ROOT / "exercises").iterdir()
              if p.is_dir() and p.name not in ("solutions", "__pycache__") and not p.name.startswith("."))


def grade(name, *extra):
    return subprocess.run([sys.executable, "-m", "gpulab", "grade", name, *extra], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("name", SETS)
def test_reference_solutions_pass(name):
    p = grade(name, "--solutions")
    assert p.returncode == 0, p.stdout + p.stderr
    assert " 0 failed" in p.stdout


@pytest.mark.parametrize("name", SETS)
def test_student_stubs_fail_every_exercise(name):
    p = grade(name)
    assert p.returncode == 1, p.stdout + p.stderr
    rows = [l for l in p.stdout.splitlines() if l.startswith(f"{name}.")]
    assert rows and all(" FAIL " in r and "NotImplementedError" in r for r in rows), p.stdout


def test_unknown_set_names_the_known_ones():
    p = grade("nope")
    assert p.returncode == 2 and "known:" in p.stdout
