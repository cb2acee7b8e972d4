"""The exercise sets can fail and can pass: stubs fail every exercise, solutions pass them all."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETS = sorted(p.name for p in (ROOT / "exercises").iterdir()
              if p.is_dir() and p.name not in ("solutions", "__pycache__") and not p.name.startswith("."))


def grade(name, *extra, env=None):
    return subprocess.run([sys.executable, "-m", "gpulab", "grade", name, *extra], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("name", SETS)
def test_reference_solutions_pass_and_their_kernels_compile_for_sm90(name, tmp_path):
    """On the simulator the solutions' kernel launches are recorded with their argument types,
    then every recorded kernel is compiled for sm_90 by numba's real compiler: the simulator
    alone accepts code the GPU compiler rejects."""
    from gpulab import compilecheck
    from tests.conftest import ON_SIMULATOR

    recorded = tmp_path / "kernels.json"
    p = grade(name, "--solutions", env={compilecheck.RECORD_ENV: str(recorded)})
    assert p.returncode == 0, p.stdout + p.stderr
    assert " 0 failed" in p.stdout
    if not ON_SIMULATOR:
        return  # on a GPU the solutions just ran for real
    records = json.loads(recorded.read_text())
    assert records, "no kernel launch was recorded"
    results = compilecheck.compile_recorded_in_subprocess(str(recorded))
    failed = [f"{r['file']}:{r['kernel']}: {r['error']}" for r in results if not r["ok"] and not r["skipped"]]
    assert not failed, "\n".join(failed)
    print("\n".join(f"{r['kernel']}: {'ok' if r['ok'] else 'not checked, ' + r['skipped']}" for r in results))


@pytest.mark.parametrize("name", SETS)
def test_student_stubs_fail_every_exercise(name):
    p = grade(name)
    assert p.returncode == 1, p.stdout + p.stderr
    rows = [l for l in p.stdout.splitlines() if l.startswith(f"{name}.")]
    assert rows and all(" FAIL " in r and "NotImplementedError" in r for r in rows), p.stdout


def test_unknown_set_names_the_known_ones():
    p = grade("nope")
    assert p.returncode == 2 and "known: " + ", ".join(SETS) in p.stderr and "Traceback" not in p.stderr
