"""The tracer in the book: the committed trace JSON is what `gpulab trace` gives today, the
`gpulab:trace` marker renders it (docs/hooks/trace_tables.py), chapter 0's and chapter 1's tracer
examples print what the book shows, and exercise matmul.2's traced test tells a padded tile from
an unpadded one."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ON_SIMULATOR, ROOT, child_env

HOOK = ROOT / "docs" / "hooks" / "trace_tables.py"
needs_simulator = pytest.mark.skipif(not ON_SIMULATOR, reason="the memory tracer runs only on numba's simulator")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def hook():
    return _load(HOOK, "gpulab_trace_tables_hook")


def _without_times(result: dict) -> dict:
    result = json.loads(json.dumps(result))  # as the committed file holds it (tuples → lists ...)
    for r in result["rows"]:
        r.pop("seconds")
    return result


# ------------------------------------------------------------------ the committed JSON is fresh

@needs_simulator
def test_committed_matmul_trace_is_what_gpulab_trace_gives_now():
    from gpulab import trace

    committed = json.loads((ROOT / "docs" / "benchmarks" / "trace-matmul.json").read_text())
    assert _without_times(trace.trace_chapter("matmul")) == _without_times(committed), (
        "docs/benchmarks/trace-matmul.json is stale: rewrite it with "
        "`python -m gpulab trace matmul --json > docs/benchmarks/trace-matmul.json`")


GLOBAL_AND_CONSTANT = ("global_load_requests", "global_load_sectors", "global_store_requests",
                       "global_store_sectors", "constant_requests", "constant_wavefronts")


@needs_simulator
def test_committed_subset_trace_has_todays_lines_and_global_and_constant_counts():
    """subset's tour draws a fresh random Q, and the block argmin's shared accesses follow the
    data (which thread holds the smaller value): only those counts may differ between runs."""
    from gpulab import trace

    committed = _without_times(json.loads((ROOT / "docs" / "benchmarks" / "trace-subset.json").read_text()))
    fresh = _without_times(trace.trace_chapter("subset"))
    stale = "docs/benchmarks/trace-subset.json is stale: rewrite it with `python -m gpulab trace subset --json`"
    assert fresh["not_traced"] == committed["not_traced"], stale
    assert [(r["variant"], r["kernel"]) for r in fresh["rows"]] == [(r["variant"], r["kernel"]) for r in committed["rows"]], stale
    for f, c in zip(fresh["rows"], committed["rows"]):
        assert [(x["file"], x["line"], x["array"]) for x in f["by_line"]] == \
            [(x["file"], x["line"], x["array"]) for x in c["by_line"]], stale
        for fl, cl in zip([f["totals"]] + f["by_line"], [c["totals"]] + c["by_line"]):
            assert {k: fl[k] for k in GLOBAL_AND_CONSTANT} == {k: cl[k] for k in GLOBAL_AND_CONSTANT}, stale


# ------------------------------------------------------------------ the hook

def _row(rng, variant: str, kernel: str, size: str) -> dict:
    """A row as `gpulab trace --json` writes it, with random counts (every kind of request > 0)."""
    req = {k: int(rng.integers(1, 500)) for k in ("global_load_requests", "global_store_requests",
                                                    "shared_requests", "constant_requests")}
    totals = {"global_load_requests": req["global_load_requests"],
              "global_load_sectors": req["global_load_requests"] * int(rng.integers(1, 33)) + int(rng.integers(0, 7)),
              "global_store_requests": req["global_store_requests"],
              "global_store_sectors": req["global_store_requests"] * int(rng.integers(1, 33)),
              "shared_requests": req["shared_requests"],
              "shared_wavefronts": req["shared_requests"] * int(rng.integers(1, 33)) + int(rng.integers(0, 5)),
              "constant_requests": req["constant_requests"],
              "constant_wavefronts": req["constant_requests"] * int(rng.integers(1, 33))}
    outputs = int(rng.integers(1, 10_000))
    moved = 32 * (totals["global_load_sectors"] + totals["global_store_sectors"])
    line = dict(totals, file="gpulab/toy/kernels_numba.py", line=int(rng.integers(1, 400)), array="A")
    return {"variant": variant, "size": size, "seconds": 0.1, "kernel": kernel, "launches": 1, "totals": totals,
            "outputs": outputs, "bytes_moved": moved, "bytes_per_output": moved / outputs, "by_line": [line]}


def _cells(text: str) -> list[list[str]]:
    """The open table's body rows (before any collapsed block)."""
    rows = []
    for line in text.split("\n\n")[0].splitlines()[2:]:
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_the_table_gives_each_kernel_its_ratios_in_human_numbers(hook, rng):
    size = f"n={int(rng.integers(10, 99))}"
    rows = [_row(rng, "first", "k_first", size), _row(rng, "second", "k_second", size)]
    shared = _row(rng, "first", "k_final", size)
    rows += [shared, dict(shared, variant="second")]  # one kernel, same counts, in both variants
    result = {"chapter": "toy", "rows": rows, "not_traced": [{"variant": "first", "backend": "cuda-c", "reason": "x"}]}
    text = hook.trace_table(result)
    body = _cells(text)
    assert [r[0] for r in body] == ["`first`: `k_first`", "`second`: `k_second`", "all 2: `k_final`"]
    for cells, r in zip(body, rows[:3]):
        t = r["totals"]
        assert len(cells) == 6
        assert cells[1:] == [hook.num(t["global_load_sectors"] / t["global_load_requests"]),
                             hook.num(t["global_store_sectors"] / t["global_store_requests"]),
                             hook.num(t["shared_wavefronts"] / t["shared_requests"]),
                             hook.num(t["constant_wavefronts"] / t["constant_requests"]),
                             hook.num(r["bytes_per_output"])]
        assert not re.search(r"\de[+-]?\d", " ".join(cells))  # never e-notation
    caption = text.strip().splitlines()[-1]
    assert size in caption and "`gpulab trace toy`" in caption and "simulator" in caption
    assert "Nsight Compute" in caption and "CUDA C" in caption

    only = hook.trace_table(result, variants=["second"], lines=True)
    assert [r[0] for r in _cells(only)] == ["`second`: `k_second`", "`second`: `k_final`"]
    one_each = hook.trace_table(result, kernels=["k_first", "k_second"])  # one kernel per variant
    assert [r[0] for r in _cells(one_each)] == ["`first`", "`second`"] and "`k_first`" not in one_each
    assert '??? note "The same counts per source line and array"' in only
    assert f"`kernels_numba.py:{rows[1]['by_line'][0]['line']}` (`k_second`)" in only


def test_a_long_table_opens_with_20_rows_and_keeps_all_collapsed(hook, rng):
    rows = [_row(rng, f"v{i}", f"k{i}", "n=1") for i in range(int(rng.integers(21, 40)))]
    text = hook.trace_table({"chapter": "toy", "rows": rows})
    assert len(_cells(text)) == 20
    assert f'??? note "All {len(rows)} rows"' in text and f"`v{len(rows) - 1}`" in text


def test_a_marker_naming_what_is_not_there_fails_the_build(hook, rng, tmp_path):
    (tmp_path / "benchmarks").mkdir()
    rows = [_row(rng, "first", "k_first", "n=3")]
    (tmp_path / "benchmarks" / "trace-toy.json").write_text(json.dumps({"chapter": "toy", "rows": rows}))
    config = {"docs_dir": str(tmp_path)}
    page = "Before.\n\n  <!-- gpulab:trace toy -->\n\nAfter.\n"
    out = hook.on_page_markdown(page, None, config, None)
    assert "  | `first` | " in out and "gpulab:trace" not in out
    for marker, what in [("<!-- gpulab:trace nothing -->", "does not exist"),
                         ('<!-- gpulab:trace toy variants="first|third" -->', "third"),
                         ('<!-- gpulab:trace toy kernels="k_other" -->', "k_other"),
                         ('<!-- gpulab:trace toy colour="red" -->', "colour")]:
        with pytest.raises(hook.Missing, match=what):
            hook.on_page_markdown(marker + "\n", None, config, None)


# ------------------------------------------------------------------ the book's examples

@pytest.mark.parametrize("example", ["trace_tour", "trace_padding"])
def test_a_book_example_prints_what_the_book_shows(example):
    script = ROOT / "docs" / "examples" / f"{example}.py"
    shown = (ROOT / "docs" / "examples" / f"{example}.txt").read_text()
    expected = [line for line in shown.splitlines() if "--8<--" not in line]
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env=child_env(GPULAB_DEVICE="sim"), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == expected


# ------------------------------------------------------------------ exercise matmul.2

@needs_simulator
def test_the_traced_transpose_test_passes_the_solution_and_fails_an_unpadded_tile(rng, tmp_path):
    tests = _load(ROOT / "exercises" / "matmul" / "test_matmul_exercises.py", "gpulab_matmul_exercise_tests")
    check = tests.test_transpose_is_conflict_free_and_coalesced
    solution = ROOT / "exercises" / "solutions" / "matmul" / "transpose_shared.py"
    check(lambda *_: _load(solution, "gpulab_transpose_padded"), rng)

    source = solution.read_text()
    assert "TILE_PADDED = TILE + 1" in source
    unpadded = tmp_path / "transpose_unpadded.py"
    unpadded.write_text(source.replace("TILE_PADDED = TILE + 1", "TILE_PADDED = TILE"))
    with pytest.raises(AssertionError, match="shared wavefronts per request"):
        check(lambda *_: _load(unpadded, "gpulab_transpose_unpadded"), rng)


def test_every_committed_trace_points_at_code_lines():
    """Each committed `trace-*.json` names, per count, a source line of its kernels: after a
    kernel module changes, its lines move and the file must be made again
    (`gpulab trace CHAPTER --json > docs/benchmarks/trace-CHAPTER.json`). A stale file points at
    blank lines, comments, decorators and `def` lines (or at lines without an index)."""
    stale = []
    bench = ROOT / "docs" / "benchmarks"
    for path in sorted(bench.glob("trace-*.json")) + [bench / "traces-at-sizes.json"]:  # (and scripts/trace_at_sizes.py's)
        for row in json.loads(path.read_text())["rows"]:
            for e in row.get("by_line", []):  # (traces-at-sizes.json keeps the lines where the book reads them)
                src = ROOT / e["file"]
                if not src.exists():  # generated code (gp's compiled kernels)
                    continue
                line = src.read_text().splitlines()[e["line"] - 1].strip()
                if not line or line.startswith(("#", "@", "def ", '"""')) or "[" not in line:
                    stale.append(f"{path.name}: {e['file']}:{e['line']} ({e['array']}): {line!r}")
    assert not stale, "stale trace files:\n" + "\n".join(stale[:10])
