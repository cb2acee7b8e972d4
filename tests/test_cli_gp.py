"""`gpulab gp evolve` / `gpulab gp experiment` and the API under them: every bad argument is one
line on stderr (exit 2) before any work and before any file is made; the header states the real
train/test split; `--json` is one JSON object; Ctrl-C keeps the generations finished; a backend
named without a variant runs that backend's best variant."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from argparse import Namespace

import numpy as np
import pytest

import gpulab.gp as gp
from gpulab.errors import GpulabError
from gpulab.gp import reference
from gpulab.gp.loop import EvolutionInterrupted, GPParams
from tests.test_cli import assert_one_line_error
from tests.conftest import child_env


def _env(**extra):
    """This checkout's gpulab (whatever is installed), from any working directory."""
    return child_env(**extra)


def gpulab(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gpulab", *args], capture_output=True, text=True, cwd=cwd, env=_env())

TINY = ["--population", "40", "--generations", "1", "--stocks", "3", "--days", "40", "--test-days", "20",
        "--backend", "cpu"]


def files_under(path):
    return sorted(p.relative_to(path) for p in path.rglob("*")) if path.exists() else []


@pytest.mark.parametrize("args,fragments", [
    (["evolve", "--population", "-5"], ["gpulab gp evolve: argument --population: -5 is below the minimum of 1"]),
    (["evolve", "--population", "0"], ["--population: 0 is below the minimum of 1"]),
    (["evolve", "--generations", "-1"], ["--generations: -1 is below the minimum of 0"]),
    (["evolve", "--stocks", "0"], ["--stocks: 0 is below the minimum of 1"]),
    (["evolve", "--days", "0"], ["--days: 0 is below the minimum of 1"]),
    (["evolve", "--test-days", "0"], ["--test-days: 0 is below the minimum of 1"]),
    (["evolve", "--seed", "-3"], ["--seed: -3 is below the minimum of 0"]),
    (["evolve", "--population", "many"], ["--population: 'many' is not a whole number"]),
    (["evolve", "--backend", "gpu"], ["invalid choice: 'gpu'"]),
    (["experiment", "--seeds", "0"], ["gpulab gp experiment: argument --seeds: 0 is below the minimum of 1"]),
    (["experiment", "--stocks-total", "16"], ["stocks_total = 16 is below the 32 training stocks"]),
    (["experiment", "--stocks", "32,x"], ["--stocks: 'x' is not a whole number"]),
    (["experiment", "--days", "256,0"], ["--days: 0 is below the minimum of 1"]),
    (["experiment", "--stocks", ","], ["--stocks: expected whole numbers separated by commas"]),
    (["experiment", "--population", "-1"], ["--population: -1 is below the minimum of 1"]),
    (["experiment", "--test-days", "0"], ["--test-days: 0 is below the minimum of 1"]),
    # past the parser: data, variant and backend, output names
    (["evolve", *TINY, "--data", "yahoo"], ["gpulab gp evolve: --data 'yahoo': expected synthetic, sample or csv:"]),
    (["evolve", "--data", "csv:/no/such.csv", "--backend", "cpu"], ["gpulab gp evolve:", "cannot read"]),
    (["evolve", "--data", "csv:", "--backend", "cpu"], ["--data 'csv:': expected synthetic, sample or csv:"]),
    (["evolve", "--data", "sample", "--stocks", "3"], ["--stocks applies to --data synthetic only"]),
    (["evolve", *TINY, "--variant", "bitsliced"], ["no variant 'bitsliced' for backend 'cpu'"]),
    (["evolve", *TINY, "--variant", "nope"], ["no variant 'nope' for backend 'cpu'"]),
    (["evolve", *TINY, "--stem", "a/b"], ["--stem 'a/b': expected a file name without a directory"]),
    (["evolve", *TINY[:-2], "--days", "700", "--data", "sample", "--backend", "cpu"], []),  # filled in below
    (["experiment", "--backend", "cpu", "--variant", "register"], ["gpulab gp experiment:",
                                                                   "no variant 'register' for backend 'cpu'"]),
])
def test_bad_arguments_are_one_line_exit_2_and_make_no_files(args, fragments, tmp_path, capsys, monkeypatch):
    """In process through `gpulab.cli.main` (what `python -m gpulab` runs), for speed; the
    subprocess tests below check the real command."""
    from gpulab.cli import main

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results"
    if "sample" in args and "--days" in args:  # more training days than the sample's data have
        pytest.importorskip("bokeh_sampledata", reason="bokeh-sampledata (the 'sample' extra) is not installed")
        args = ["evolve", "--data", "sample", "--days", "100000", "--backend", "cpu"]
        fragments = ["gpulab gp evolve: --days 100000: the data have", "leave some for the test"]
    rc = main(["gp", *args, "--out", str(out)])
    captured = capsys.readouterr()
    assert_one_line_error(subprocess.CompletedProcess(args, rc, captured.out, captured.err), *fragments)
    assert captured.out == "" and files_under(tmp_path) == [], (captured.out, files_under(tmp_path))


@pytest.mark.parametrize("args,fragment", [
    (["--population", "-5"], "gpulab gp evolve: argument --population: -5 is below the minimum of 1"),
    (["--data", "csv:/no/such.csv", "--backend", "cpu"], "cannot read"),
])
def test_the_command_says_one_line(args, fragment, tmp_path):
    p = gpulab("gp", "evolve", *args, "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert_one_line_error(p, fragment)
    assert p.stdout == "" and files_under(tmp_path) == []


def test_unwritable_out_fails_before_the_run(tmp_path):
    """--out under a regular file: refused at once (the paper's 25,000 × 50 would take hours here)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    start = time.perf_counter()
    p = gpulab("gp", "evolve", "--population", "25000", "--generations", "50", "--backend", "cpu",
               "--out", str(blocker / "results"), cwd=tmp_path)
    elapsed = time.perf_counter() - start
    assert_one_line_error(p, f"gpulab gp evolve: --out {blocker / 'results'}: cannot write there")
    assert p.stdout == "" and elapsed < 60 and files_under(tmp_path) == [blocker.relative_to(tmp_path)]


def test_header_states_the_real_split_and_json_is_one_object(tmp_path):
    p = gpulab("gp", "evolve", *TINY, "--seed", "4", "--out", str(tmp_path), "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)  # the whole of stdout: one object
    assert isinstance(summary, dict) and p.stdout.strip().count("\n") == 0
    assert summary["train_days"] == 40 and summary["test_days"] == 20 and not summary["interrupted"]
    assert summary["variant"] == "cpu_bitsliced" and summary["generations_done"] == 1
    assert sorted(summary["files"]) == sorted(str(tmp_path / f) for f in ("gp-evolve.json", "gp-evolve.png"))
    # the header (on stderr under --json) states the split the run used, as the JSON records it
    assert "train 40 days, test 20 days" in p.stderr, p.stderr
    data = json.loads((tmp_path / "gp-evolve.json").read_text())
    assert (data["settings"]["train_days"], data["settings"]["test_days"]) == (40, 20)
    assert data["best"]["buy"] == summary["best"]["buy"] and data["interrupted"] is False
    # real data without --days: the header says 3/4 of the days, and that is what the run trained on
    pytest.importorskip("bokeh_sampledata", reason="bokeh-sampledata (the 'sample' extra) is not installed")
    p = gpulab("gp", "evolve", "--data", "sample", "--population", "20", "--generations", "0", "--backend", "cpu",
               "--out", str(tmp_path), "--stem", "s", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    train, test = data["settings"]["train_days"], data["settings"]["test_days"]
    assert train == (train + test) * 3 // 4
    assert f"train {train} days, test {test} days" in p.stdout.splitlines()[0], p.stdout


def test_interrupted_run_keeps_its_generations(tmp_path):
    """SIGINT (Ctrl-C) once the bar shows a generation done: exit 130, the history so far in a JSON
    marked interrupted, and a line on stderr saying where."""
    env = _env(GPULAB_PROGRESS="1")  # the bar on a pipe: it shows when a generation is done
    proc = subprocess.Popen([sys.executable, "-m", "gpulab", "gp", "evolve", *TINY[:2], "--generations", "100000",
                             *TINY[4:], "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path, env=env)
    seen = b""
    deadline = time.monotonic() + 120
    while not re.search(rb"generations[^\r\n]*\b[1-9]\d*/100001", seen):
        chunk = os.read(proc.stderr.fileno(), 4096)
        assert chunk and time.monotonic() < deadline, seen.decode(errors="replace")
        seen += chunk
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    err = (seen + err).decode(errors="replace")
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted after generation" in err and str(tmp_path / "gp-evolve.json") in err
    data = json.loads((tmp_path / "gp-evolve.json").read_text())
    assert data["interrupted"] is True and len(data["history"]) >= 1
    assert data["generations_done"] == data["history"][-1]["generation"] == len(data["history"]) - 1
    assert data["best"]["generation"] == data["generations_done"] and "best rule" in out.decode()


def test_ctrl_c_stops_after_the_generation_it_arrives_in():
    """A real SIGINT (as Ctrl-C sends) during a generation: the run finishes that generation
    (no half-bred population, no SystemError out of numba's parallel code) and stops, keeping
    it; the handler is gone afterwards."""
    import signal

    market = gp.synthetic_market(3, 60, seed=6)
    before = signal.getsignal(signal.SIGINT)

    def ctrl_c_in_gen_1(line):
        if line.startswith("gen   1"):
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(EvolutionInterrupted) as err:
        gp.evolve(market, train_days=40, params=GPParams(population=30, generations=50), backend="cpu",
                  progress=ctrl_c_in_gen_1)
    r = err.value.result
    assert [h["generation"] for h in r.history] == [0, 1] and r.best["generation"] == 1
    assert all("breed_ms" in h for h in r.history) and signal.getsignal(signal.SIGINT) is before


def test_interrupt_from_the_progress_callback_keeps_the_history():
    market = gp.synthetic_market(3, 60, seed=5)

    def stop_at_2(line):
        if line.startswith("gen   2"):
            raise KeyboardInterrupt

    with pytest.raises(EvolutionInterrupted) as err:
        gp.evolve(market, train_days=40, params=GPParams(population=30, generations=50), backend="cpu",
                  progress=stop_at_2)
    r = err.value.result
    assert isinstance(err.value, KeyboardInterrupt) and r.interrupted
    assert [h["generation"] for h in r.history] == [0, 1, 2] and r.to_json()["generations_done"] == 2
    assert r.best["generation"] == 2 and r.best["train"] == r.history[-1]["train_best"]
    # the best so far is what the reference says about that rule
    best = gp.Population.from_individuals([(r.best["buy"], r.best["sell"])])
    assert reference.evaluate(best, market.split(40)[0]).fitness[0] == pytest.approx(r.best["train"], rel=1e-12)


def test_experiment_interrupt_keeps_the_runs_done():
    lines = []

    def stop_at_second_run(line):
        lines.append(line)
        if sum(x.startswith("==") for x in lines) == 2:
            raise KeyboardInterrupt

    with pytest.raises(EvolutionInterrupted) as err:
        gp.experiment(stocks_total=4, test_days=20, configs=[(2, 30), (4, 30)], seeds=(0, 1),
                      params=GPParams(population=20, generations=1), progress=stop_at_second_run)
    data = err.value.result
    assert data["interrupted"] and len(data["runs"]) == 1 and data["runs_planned"] == 4
    assert [s["runs"] for s in data["summary"]] == [1] and data["settings"]["variant"] == "cpu_bitsliced"


@pytest.mark.parametrize("call,name", [
    (lambda pop, m: gp.evaluate(pop, None), "market"),
    (lambda pop, m: gp.evaluate(None, m), "population"),
    (lambda pop, m: gp.evaluate(pop, m, backend="gpu"), "backend"),
    (lambda pop, m: gp.evaluate(pop, m, variant=3), "variant"),
    (lambda pop, m: gp.evaluate(pop, m, params=[1]), "params"),
    (lambda pop, m: gp.evolve(None), "market"),
    (lambda pop, m: gp.evolve(m, train_days=0, backend="cpu"), "train_days"),
    (lambda pop, m: gp.evolve(m, train_days=m.days, backend="cpu"), "train_days"),
    (lambda pop, m: gp.evolve(m, train_days=2.5, backend="cpu"), "train_days"),
    (lambda pop, m: gp.evolve(m, params=GPParams(population=0), backend="cpu"), "params.population"),
    (lambda pop, m: gp.evolve(m, params=GPParams(generations=-1), backend="cpu"), "params.generations"),
    (lambda pop, m: gp.evolve(m, params=GPParams(p_mutation=2.0), backend="cpu"), "params.p_mutation"),
    (lambda pop, m: gp.evolve(m, params={"population": 10}, backend="cpu"), "params"),
    (lambda pop, m: gp.evolve(m, seed=-1, backend="cpu"), "seed"),
    (lambda pop, m: gp.evolve(m, test_market="later", backend="cpu"), "test_market"),
    (lambda pop, m: gp.experiment(stocks_total=8), "stocks_total"),
    (lambda pop, m: gp.experiment(seeds=()), "seeds"),
    (lambda pop, m: gp.experiment(test_days=0), "test_days"),
    (lambda pop, m: gp.experiment(configs=[(8, 0)]), "training days"),
])
def test_the_api_rejects_bad_arguments_by_name(call, name):
    market = gp.synthetic_market(2, 30, seed=1)
    pop = gp.Population.from_individuals([("(> MA10 MA50)", "NVIL")])
    with pytest.raises(GpulabError) as err:
        call(pop, market)
    assert name in str(err.value) and not isinstance(err.value, AttributeError)


def test_a_backend_without_a_variant_runs_its_best(rng):
    """backend="cpu" alone means cpu_bitsliced (the registry's best for cpu), equal to the reference."""
    assert gp.REGISTRY.default("cpu") == "cpu_bitsliced" and gp.REGISTRY.default("numba") == "bitsliced"
    market = gp.synthetic_market(int(rng.integers(2, 6)), int(rng.integers(40, 120)), seed=int(rng.integers(2**31)))
    from gpulab.gp.loop import initial_population

    pop = initial_population(GPParams(population=50), int(rng.integers(2**31)))
    fit = gp.evaluate(pop, market, backend="cpu")
    ref = reference.evaluate(pop, market).fitness
    assert fit.shape == (50,) and np.abs(ref).max() > 0
    np.testing.assert_allclose(fit, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(fit, gp.evaluate(pop, market, variant="cpu_bitsliced", backend="cpu"))


def test_evolve_stays_a_function_after_its_module_is_imported():
    import importlib

    market = gp.synthetic_market(2, 40, seed=2)
    params = GPParams(population=12, generations=1)
    a = gp.evolve(market, params=params, backend="cpu", progress=None)
    importlib.import_module("gpulab.gp.loop")
    import gpulab.gp.loop  # noqa: F401

    assert callable(gp.evolve) and gp.evolve is gpulab.gp.loop.evolve and gp.GPParams is GPParams
    b = gp.evolve(market, params=params, backend="cpu", progress=None)
    assert a.best == b.best and a.settings["train_days"] == 30 and len(b.history) == 2


def test_simulator_defaults_are_said_in_one_line(monkeypatch):
    from gpulab import device
    from gpulab.cli import GP_DEFAULTS
    from gpulab.gp import cli as gp_cli

    monkeypatch.setattr(device, "on_simulator", lambda: True)
    args = Namespace(backend=None, population=None, generations=None)
    line = gp_cli.settle_defaults(args, "evolve")
    assert (args.backend, args.population, args.generations) == GP_DEFAULTS["evolve"]["sim"]
    assert line.startswith("simulator") and "\n" not in line and "--population" in line and "--generations" in line
    args = Namespace(backend="cpu", population=7, generations=3)
    assert gp_cli.settle_defaults(args, "experiment") is None and args.population == 7
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    args = Namespace(backend=None, population=None, generations=None)
    assert gp_cli.settle_defaults(args, "evolve") is None
    assert (args.backend, args.population, args.generations) == ("numba", 25_000, 50)  # the paper's on a GPU


def test_experiment_runs_every_stocks_by_days_configuration(tmp_path, capsys):
    """`--stocks 2,3 --days 30,40`: four configurations, each with its seeds, and a test period
    over the default number of stocks (64 here: at least twice the most training stocks)."""
    from gpulab.cli import main

    out = tmp_path / "results"
    code = main(["gp", "experiment", "--stocks", "2,3", "--days", "30,40", "--population", "12",
                 "--generations", "1", "--seeds", "2", "--backend", "cpu", "--test-days", "20",
                 "--out", str(out), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [(s["stocks"], s["train_days"], s["runs"]) for s in data["summary"]] == [
        (2, 30, 2), (2, 40, 2), (3, 30, 2), (3, 40, 2)]
    saved = json.loads((out / "gp-experiment.json").read_text())
    assert saved["market"]["stocks"] == 64 and saved["settings"]["configs"] == [[2, 30], [2, 40], [3, 30], [3, 40]]
