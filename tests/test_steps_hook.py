"""The book's step lines and running tables (docs/hooks/steps.py) quote the benchmark JSON right."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

HOOK = Path(__file__).resolve().parents[1] / "docs" / "hooks" / "steps.py"


@pytest.fixture(scope="module")
def steps():
    spec = importlib.util.spec_from_file_location("gpulab_steps_hook", HOOK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _result(rng, times: dict) -> dict:
    recs = [{"variant": v, "backend": b, "label": "N=7", "median_ms": t, "check": True,
             "ratio_to_peer": float(rng.uniform(0.1, 0.9)), "peer": "the peer"} for (v, b), t in times.items()]
    recs.append({"variant": "cpu_thing", "backend": "cpu", "label": "N=7", "median_ms": 1.0, "check": True})
    return {"chapter": "toy", "date": "2026-11-26T00:00:00Z", "device": {"name": "GPU"}, "records": recs}


def test_a_step_line_gives_each_backend_its_time_and_its_gain_over_the_step_before(steps, rng):
    a = float(rng.uniform(20, 100))  # three steps, each at least 10% faster than the last
    b = a / float(rng.uniform(1.1, 3))
    c = b / float(rng.uniform(1.1, 3))
    res = _result(rng, {("s1", "numba"): a, ("s1", "cuda-c"): a, ("s2", "numba"): b, ("s2", "cuda-c"): c,
                        ("s3", "numba"): c})
    line = steps.step_line(res, "s2", "N=7", "h200")
    assert f"numba {steps.num(b)} ms ({steps.num(a / b)}× faster than `s1`" in line
    assert f"CUDA C {steps.num(c)} ms ({steps.num(a / c)}× faster than `s1`" in line
    slower = steps.step_line(res, "s1", "N=7", "h200", vs="s3")  # s1 is slower than s3
    assert f"{steps.num(a / c)}× slower than `s3`" in slower


def test_a_step_within_half_a_percent_is_not_called_faster(steps, rng):
    t = float(rng.uniform(1, 10))
    res = _result(rng, {("s1", "numba"): t, ("s2", "numba"): t * 1.001})
    assert "within 1% of `s1`" in steps.step_line(res, "s2", "N=7", "h200")


def test_the_ladder_has_one_row_per_gpu_step_in_order_and_no_cpu_row(steps, rng):
    times = {(f"s{i}", b): float(t) for i, t in enumerate(np.sort(rng.uniform(1, 100, 4))[::-1]) for b in ("numba", "cuda-c")}
    table = steps.ladder_table(_result(rng, times), "N=7", "h200").splitlines()
    rows = [r for r in table if r.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == ["s0", "s1", "s2", "s3"]
    assert "cpu_thing" not in "\n".join(table)


def test_a_marker_naming_a_size_that_was_not_measured_fails_the_build(steps, rng):
    res = _result(rng, {("s1", "numba"): 1.0})
    with pytest.raises(steps.Missing, match="N=8"):
        steps.step_line(res, "s1", "N=8", "h200")
    with pytest.raises(steps.Missing, match="nope"):
        steps.step_line(res, "nope", "N=7", "h200")
    with pytest.raises(steps.Missing, match="s9"):  # a misspelled vs= fails too
        steps.step_line(res, "s1", "N=7", "h200", vs="s9")


def test_a_rows_marker_can_give_columns_their_unit(tmp_path, rng):
    """`units="ms: a|b"` heads columns a and b "a ms", "b ms"; a column the JSON lacks fails."""
    spec = importlib.util.spec_from_file_location("gpulab_bench_tables_test", HOOK.with_name("bench_tables.py"))
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    (tmp_path / "benchmarks").mkdir()
    rows = [{"size": f"n={i}", "pairing": float(rng.uniform(1, 9)), "ranking": float(rng.uniform(1, 9))} for i in range(3)]
    (tmp_path / "benchmarks" / "st.json").write_text(__import__("json").dumps({"rows": rows}))
    render = lambda opts: tables.ROWS.sub(lambda m: tables._render_rows(m, tmp_path), f"<!-- gpulab:rows st {opts}-->")
    head = render('units="ms: pairing|ranking" ').splitlines()[0]
    assert head.startswith("| size | pairing ms | ranking ms |"), head
    with pytest.raises(KeyError, match="splice"):
        render('units="ms: splice" ')


def test_a_rows_marker_can_choose_its_open_columns(tmp_path, rng):
    """`cols="a|b"` opens exactly those columns, in that order, every column staying below; a
    column the JSON lacks fails the build."""
    spec = importlib.util.spec_from_file_location("gpulab_bench_tables_test2", HOOK.with_name("bench_tables.py"))
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    (tmp_path / "benchmarks").mkdir()
    names = [f"c{i} ms" for i in range(12)]  # wider than the page: without cols= the hook picks
    rows = [{"backend": b, **{c: float(rng.uniform(1, 9)) for c in names}} for b in ("numba", "cuda-c")]
    (tmp_path / "benchmarks" / "st.json").write_text(__import__("json").dumps({"rows": rows}))
    render = lambda opts: tables.ROWS.sub(lambda m: tables._render_rows(m, tmp_path), f"<!-- gpulab:rows st {opts}-->")
    want = ["backend", names[9], names[3]]
    text = render(f'cols="{"|".join(want)}" ')
    assert text.splitlines()[0] == "| " + " | ".join(want) + " |", text.splitlines()[0]
    assert "All 2 records" in text and all(c in text for c in names)  # everything below
    with pytest.raises(KeyError, match="nope"):
        render('cols="backend|nope" ')


def test_a_rows_marker_where_filters_a_short_table_and_long_notes_stay_in_the_json(tmp_path, rng):
    """`where="k=v"` opens only the rows where k is v, even when the table is short enough to
    open whole (a short table once opened every row, whatever where= said); a long or multi-line
    text of the JSON (a script's docstring) is not printed under the table."""
    spec = importlib.util.spec_from_file_location("gpulab_bench_tables_test3", HOOK.with_name("bench_tables.py"))
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    (tmp_path / "benchmarks").mkdir()
    backends = ["numba", "cuda-c"] * 3
    rng.shuffle(backends)
    rows = [{"backend": b, "population": 1000 * (i + 1), "total_ms": float(rng.uniform(1, 9))}
            for i, b in enumerate(backends)]
    doc = {"what": "a docstring\nof several lines " + "x" * 200, "date": "2026-11-28", "rows": rows}
    (tmp_path / "benchmarks" / "st.json").write_text(__import__("json").dumps(doc))
    text = tables.ROWS.sub(lambda m: tables._render_rows(m, tmp_path), '<!-- gpulab:rows st where="backend=cuda-c" -->')
    opened = text.split("All 6 records")[0]
    assert opened.count("| cuda-c |") == 3 and "| numba |" not in opened, opened
    assert "backend = cuda-c: 3 of 6 records" in text
    assert "date = 2026-11-28" in text and "docstring" not in text
    with pytest.raises(KeyError, match="matches none"):
        tables.ROWS.sub(lambda m: tables._render_rows(m, tmp_path), '<!-- gpulab:rows st where="backend=cuda_c" -->')
