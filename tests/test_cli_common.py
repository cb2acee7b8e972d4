"""What every command shares: a closed pipe exits quietly, `--help` states the exit statuses and
the defaults, `--json` is one JSON object on stdout and nothing else, and `backend="cpu"` with
no variant named runs that backend's default variant in every chapter's API and the subset CLI."""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gpulab import cli
from gpulab.chapters import CHAPTERS, registry
from gpulab.errors import GpulabError
from tests.test_cli import ROOT, assert_one_line_error, gpulab
from tests.conftest import child_env

MINE = ("info", "tour", "bench", "compile-check", "subset search")


def _parsers(parser=None, prefix=()):
    """Every (command words, parser) of the `gpulab` command line, the top level first."""
    parser = parser or cli.build_parser()
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, prefix + (name,))


# ----------------------------------------------------------------------------- a closed pipe


def test_a_closed_stdout_exits_quietly(tmp_path):
    """`gpulab info | head -0`: the reader is gone before the first write; no traceback, no
    "Exception ignored" at exit, status 141 (128 + SIGPIPE)."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "gpulab", "info"], stdout=w, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, env=child_env(), timeout=120)
    finally:
        os.close(w)
    assert p.returncode == 141 and p.stderr == "", (p.returncode, p.stderr)


# ----------------------------------------------------------------------------- --help


def test_every_help_states_the_exit_statuses():
    seen = set()
    for words, parser in _parsers():
        text = parser.format_help()
        assert "exit status:" in text and "130  interrupted" in text and "  2    a usage error" in text, words
        seen.add(" ".join(words))
    assert set(MINE) <= seen and "" in seen
    # what status 1 means, where a command has it
    helps = {" ".join(w): p.format_help() for w, p in _parsers()}
    assert "1    a variant's result failed its check" in helps["tour"]
    assert "1    a kernel failed to compile" in helps["compile-check"]
    assert "\n  1 " not in helps["info"] and "\n  1 " not in helps["subset search"]


def test_help_shows_every_default_of_these_commands():
    for words, parser in _parsers():
        if " ".join(words) not in MINE:
            continue
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if not action.option_strings or action.default in (None, argparse.SUPPRESS) or action.default is False:
                continue
            assert f"(default: {action.default})" in text, (words, action.dest, text)
    helps = {" ".join(w): " ".join(p.format_help().split()) for w, p in _parsers()}
    assert "--repeat REPEAT timed runs (the median is reported) (default: 10)" in helps["bench"]
    assert "Default: cuda-c where it runs" in helps["subset search"] and "(default: 0)" in helps["subset search"]


def test_help_from_the_command_line():
    p = gpulab("bench", "--help", cwd=ROOT)
    assert p.returncode == 0 and p.stderr == ""
    text = " ".join(p.stdout.split())
    assert "(default: 10)" in text and "(default: bench-results)" in text and "130 interrupted" in text


# ----------------------------------------------------------------------------- --json


def _one_object(p) -> dict:
    assert p.returncode == 0, (p.returncode, p.stderr)
    out = json.loads(p.stdout)  # the whole of stdout: one JSON value
    assert isinstance(out, dict)
    return out


def test_info_json(tmp_path):
    out = _one_object(gpulab("info", "--json", cwd=ROOT))
    assert out["mode"] in ("gpu", "sim") and "name" in out


def test_tour_json(tmp_path):
    p = gpulab("tour", "matmul", "--variants", "naive", "--json", cwd=ROOT)
    out = _one_object(p)
    rows = out["results"]
    assert {(r["chapter"], r["variant"]) for r in rows} == {("matmul", "naive")}
    assert rows[0]["check"] is True and out["summary"]["failed"] == 0
    assert out["summary"]["passed"] + out["summary"]["skipped"] == len(rows)
    assert "matmul   naive" in p.stderr  # the line per variant went to stderr


def test_tour_unknown_variant_is_a_usage_error(tmp_path):
    assert_one_line_error(gpulab("tour", "matmul", "--variants", "fastest", cwd=ROOT),
                          "gpulab tour: unknown variant 'fastest'")


def test_bench_json(tmp_path):
    from gpulab.matmul import bench

    smallest = bench.SPEC.cases(True)[0].label  # the quick sizes depend on the device
    p = gpulab("bench", "matmul", "--quick", "--sizes", smallest, "--variants", "naive", "--repeat", "1",
               "--warmup", "0", "--out", str(tmp_path / "out"), "--json", cwd=ROOT)
    out = _one_object(p)
    assert out["chapter"] == "matmul" and out["failed"] == 0
    numba = [r for r in out["records"] if r["backend"] == "numba"]
    assert len(numba) == 1 and numba[0]["variant"] == "naive" and numba[0]["median_ms"] > 0
    assert all(os.path.exists(f) for f in out["files"]) and any(f.endswith(".json") for f in out["files"])
    assert "[1/" in p.stderr  # the progress lines went to stderr


def test_compile_check_json_is_one_object(monkeypatch, capsys, rng):
    from gpulab import compilecheck

    oks = [bool(x) for x in rng.integers(0, 2, 3)] + [True]
    records = [{"chapter": "matmul", "kernel": f"k{i}", "kind": "numba", "ok": ok, "error": None, "resources": {}}
               for i, ok in enumerate(oks)]
    monkeypatch.setattr(compilecheck, "numba_ptx", lambda chapters: records[:2])
    monkeypatch.setattr(compilecheck, "run_in_subprocess", lambda chapters: records[:2])
    monkeypatch.setattr(compilecheck, "nvrtc", lambda chapters: records[2:])
    capsys.readouterr()  # (the rng fixture printed its seed)
    status = compilecheck.main(["matmul"], as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert out == {"ok": all(oks), "records": records} and status == (0 if all(oks) else 1)


def test_subset_search_json(tmp_path):
    import gpulab.subset as ss

    out = _one_object(gpulab("subset", "search", "--synthetic", "40", "--n", "8", "--k", "3", "--json", cwd=ROOT))
    assert (out["variant"], out["backend"]) == ss.default_choice(8, 3) and out["subsets"] == 56


# ----------------------------------------------------------------------------- backend="cpu"


def test_every_registry_names_a_registered_default_per_backend():
    for chapter in CHAPTERS:
        reg = registry(chapter)
        for backend, name in reg.defaults.items():
            v = reg.get(name, backend)
            assert reg.default(backend) == name and v.backend == backend and not v.teaching_only
    with pytest.raises(GpulabError, match="matmul: no variant for backend 'cpu'; its backends: numba, cuda-c"):
        registry("matmul").default("cpu")


def test_subset_cpu_backend_without_a_variant(rng):
    import gpulab.subset as ss

    n = int(rng.integers(7, 12))
    C = ss.correlation(ss.synthetic_returns(60, n, seed=int(rng.integers(1 << 30))))
    k = int(rng.integers(2, 5))
    want = ss.least_correlated_reference(C, k)
    got = ss.least_correlated(C, k, backend="cpu")
    assert got.combination == want.combination and got.rank == want.rank
    assert got.distance == pytest.approx(want.distance, rel=1e-12)


def test_radix_cpu_backend_without_a_variant(rng):
    import gpulab.radix as rx

    keys = rng.integers(0, 50, int(rng.integers(100, 400))).astype(np.uint32)  # repeated keys: stability shows
    vals = rng.integers(0, 2**32, keys.size, dtype=np.uint32)
    order = np.argsort(keys, kind="stable")
    assert np.array_equal(rx.sort(keys, backend="cpu"), keys[order])
    assert np.array_equal(rx.argsort(keys, backend="cpu"), order)
    k, v = rx.sort_pairs(keys, vals, backend="cpu")
    assert np.array_equal(k, keys[order]) and np.array_equal(v, vals[order])
    assert np.array_equal(rx.distinct(keys, backend="cpu"), np.unique(keys))


def test_euler_cpu_backend_without_a_variant(rng):
    import gpulab.euler as eu

    # a random closed walk: every vertex's in-degree equals its out-degree, one component
    walk = rng.integers(0, 12, int(rng.integers(20, 60)))
    walk = np.append(walk, walk[0])
    src, dst = walk[:-1].astype(np.int32), walk[1:].astype(np.int32)
    edges = eu.euler_circuit(src, dst, backend="cpu")
    assert sorted(edges.tolist()) == list(range(src.size))  # every edge once
    assert np.array_equal(dst[edges[:-1]], src[edges[1:]]) and dst[edges[-1]] == src[edges[0]]
    path = eu.euler_path(src[1:], dst[1:], backend="cpu")  # one edge less: a path from walk[1] to walk[0]
    assert sorted(path.tolist()) == list(range(src.size - 1))
    assert np.array_equal(dst[1:][path[:-1]], src[1:][path[1:]])


def test_matmul_cpu_backend_says_there_is_none():
    import gpulab.matmul as mm

    A = np.ones((2, 3), np.float32)
    with pytest.raises(GpulabError, match="no variant for backend 'cpu'; its backends: numba, cuda-c"):
        mm.matmul(A, A.T, backend="cpu")


def test_subset_search_cli_cpu_backend(tmp_path, rng):
    import gpulab.subset as ss

    seed = int(rng.integers(1 << 30))
    out = _one_object(gpulab("subset", "search", "--synthetic", "50", "--n", "9", "--k", "3", "--seed", str(seed),
                             "--backend", "cpu", "--json", cwd=ROOT))
    want = ss.least_correlated_reference(ss.correlation(ss.synthetic_returns(50, 9, seed=seed)), 3)
    assert out["variant"] == "cpu_parallel" and tuple(out["combination"]) == want.combination
    assert out["rank"] == want.rank


# ----------------------------------------------------------------------------- long searches


def test_subset_search_in_chunks_with_a_bar_is_the_search(capsys, rng):
    """With a bar the ranks go in chunks (here of 40 subsets): the answer is the one search's."""
    import gpulab.subset as ss
    from gpulab.subset.cli import search_here

    C = ss.correlation(ss.synthetic_returns(40, 11, seed=int(rng.integers(1 << 30))))
    got = search_here(C, 3, "cpu_parallel", "cpu", chunk=40, progress=True)
    assert got == ss.least_correlated(C, 3, backend="cpu")
    assert "C(11,3)" in capsys.readouterr().err  # the bar was drawn


def test_a_gpu_sized_search_says_so_before_it_starts(tmp_path):
    from gpulab import device

    if not device.on_simulator():
        pytest.skip("the estimate is for the simulator")
    p = subprocess.Popen([sys.executable, "-m", "gpulab", "subset", "search", "--synthetic", "30", "--n", "200",
                          "--k", "6", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT, env=child_env())
    try:
        line = p.stderr.readline()
    finally:
        p.kill()
        p.communicate()
    assert line.startswith("gpulab subset search: C(200,6) = 82,408,626,300 subsets take about ") and "days" in line
    assert "--n 30 --k 3" in line
