"""`gpulab bench --metrics` (gpulab.metrics) without a GPU: ncu's CSV parsed into our names, the
command ncu is given, a stand-in ncu driven end to end through `annotate`, and the one-line
errors without ncu or on the simulator. (Nothing here runs Nsight Compute or a GPU.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpulab import metrics
from tests.conftest import ON_SIMULATOR, ROOT, child_env
from tests.test_cli import assert_one_line_error

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
NUMBA_NAME = ("cudapy::gpulab::matmul::kernels_numba::shared_kernel[abi:v1,cw51cXTLSUwv1sCUt9Uw1VEw0NRRQPKzLTg4g]"
              "(Array<float, 2, C, mutable, aligned>, Array<float, 2, C, mutable, aligned>)")
CUDA_C_NAME = "void tiled<32, cub::Policy<4>>(float const*, float const*, float*, int)"


def _row(launch: int, kernel: str, metric: str, value: str) -> str:
    unit = "%" if metric.endswith(("pct_of_peak_sustained_active", "pct_of_peak_sustained_elapsed")) else ""
    return (f'"{launch}","4242","python3.11","gpu-host","{kernel}","1","7","(32, 8, 1)","(4, 4, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def _canned(rng):
    """ncu --csv output for two launches of the numba kernel and one of a CUDA C kernel, with the
    program's own output and ncu's ==PROF== lines around it; every count random and above 1000
    (printed with thousands separators). Returns (text, {kernel: {metric: [values]}})."""
    launches = [(0, NUMBA_NAME), (1, CUDA_C_NAME), (2, NUMBA_NAME)]
    truth: dict = {}
    rows = []
    for launch, kernel in launches:
        short = {NUMBA_NAME: "shared_kernel", CUDA_C_NAME: "tiled"}[kernel]
        for names in metrics.METRICS.values():
            for m in names:
                if "pct" in m:
                    x = round(float(rng.uniform(1, 99)), 2)
                    text = f"{x:.2f}"
                else:
                    x = int(rng.integers(1_000, 10**9))
                    text = f"{x:,}"
                truth.setdefault(short, {}).setdefault(m, []).append(x)
                rows.append(_row(launch, kernel, m, text))
    text = "\n".join(["device: NVIDIA H100 80GB HBM3, 132 SMs", "==PROF== Connected to process 4242 (python3.11)",
                      "==PROF== Profiling \"shared_kernel\": 0%....50%....100% - 9 passes", HEADER, *rows,
                      "==PROF== Disconnected from process 4242"])
    return text, truth


def test_ncu_csv_is_parsed_per_kernel_and_launch_with_thousands_separators(rng):
    text, truth = _canned(rng)
    parsed = metrics.parse_csv(text)
    assert list(parsed) == ["shared_kernel", "tiled"]
    assert parsed == truth


def test_counts_map_to_the_tracers_names(rng):
    text, truth = _canned(rng)
    got = metrics.summarize(metrics.parse_csv(text))
    k = truth["shared_kernel"]
    s = got["shared_kernel"]
    assert s["launches"] == 2 and got["tiled"]["launches"] == 1
    ld_req = sum(k["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"])
    ld_sec = sum(k["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])
    st_req = sum(k["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"])
    st_sec = sum(k["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
    sh_req = sum(k["smsp__inst_executed_op_shared_ld.sum"]) + sum(k["smsp__inst_executed_op_shared_st.sum"])
    sh_wf = (sum(k["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"])
             + sum(k["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]))
    assert (s["global_load_requests"], s["global_load_sectors"]) == (ld_req, ld_sec)
    assert (s["global_store_requests"], s["global_store_sectors"]) == (st_req, st_sec)
    assert (s["shared_requests"], s["shared_wavefronts"]) == (sh_req, sh_wf)
    assert s["global_load_sectors_per_request"] == pytest.approx(ld_sec / ld_req)
    assert s["global_store_sectors_per_request"] == pytest.approx(st_sec / st_req)
    assert s["shared_wavefronts_per_request"] == pytest.approx(sh_wf / sh_req)
    assert s["shared_bank_conflicts"] == (sum(k["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"])
                                          + sum(k["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]))
    occ = k["sm__warps_active.avg.pct_of_peak_sustained_active"]
    dram = k["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert s["achieved_occupancy_pct"] == pytest.approx(sum(occ) / 2)  # averaged over launches, not added
    assert s["dram_throughput_pct"] == pytest.approx(sum(dram) / 2)
    # the names the tracer's totals use, where they correspond
    from gpulab.trace import COUNTS

    assert {c for c in COUNTS if c.startswith(("global", "shared"))} <= set(s)


def test_n_a_values_and_no_requests_give_null():
    name = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
    text = "\n".join([HEADER, _row(0, "void k(int*)", name, "0"),
                      _row(0, "void k(int*)", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "0"),
                      _row(0, "void k(int*)", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "n/a")])
    s = metrics.summarize(metrics.parse_csv(text))["k"]
    assert s["global_store_requests"] == 0 and s["global_store_sectors_per_request"] is None
    assert s["dram_throughput_pct"] is None and s["global_load_requests"] is None
    assert metrics.parse_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == {}


@pytest.mark.parametrize("full,short", [
    (NUMBA_NAME, "shared_kernel"), (CUDA_C_NAME, "tiled"), ("radix_pass", "radix_pass"),
    ("void cub::DeviceRadixSortOnesweepKernel<cub::Policy<1>, (bool)0>(int*)", "DeviceRadixSortOnesweepKernel")])
def test_kernel_names_are_the_functions_own(full, short):
    assert metrics.kernel_name(full) == short


def test_the_command_ncu_is_given():
    cmd = metrics.ncu_command("/opt/ncu", "matmul", "shared", "cuda-c", "N=1024", quick=True, seed=7)
    assert cmd[:2] == ["/opt/ncu", "--csv"]
    listed = cmd[cmd.index("--metrics") + 1].split(",")
    assert listed == [m for names in metrics.METRICS.values() for m in names] and len(set(listed)) == 12
    assert cmd[cmd.index("--target-processes") + 1] == "all"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"  # only the call between profile_start/stop
    assert cmd[cmd.index("--clock-control") + 1] == "none"  # the GPU's clocks left as they are (the book says so)
    child = cmd[cmd.index(sys.executable):]
    assert child == [sys.executable, "-m", "gpulab.metrics", "matmul", "shared", "cuda-c", "N=1024",
                     "--quick", "--seed", "7"]
    assert metrics.ncu_command("ncu", "gp", "x", "numba", "L")[-4:] == ["gp", "x", "numba", "L"]


def _fake_ncu(tmp_path, body: str):
    """A stand-in `ncu`: a Python script that logs its arguments and runs `body`."""
    path = tmp_path / "ncu"
    path.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(tmp_path / 'argv.json')!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _result():
    rec = dict(chapter="matmul", median_ms=1.0, label="N=64")
    return {"chapter": "matmul", "records": [
        {**rec, "variant": "shared", "backend": "numba"}, {**rec, "variant": "cpu", "backend": "cpu"},
        {**rec, "variant": "naive", "backend": "cuda-c", "median_ms": None, "skipped": "wrong result"}]}


def test_annotate_profiles_each_timed_gpu_record_once(rng, tmp_path):
    text, truth = _canned(rng)
    (tmp_path / "out.csv").write_text(text)
    ncu = _fake_ncu(tmp_path, f"sys.stdout.write(open({str(tmp_path / 'out.csv')!r}).read())")
    lines = []
    result = metrics.annotate(_result(), ncu, quick=True, seed=3, progress=lines.append)
    shared, cpu, skipped = result["records"]
    assert shared["metrics"] == metrics.summarize(metrics.parse_csv(text))
    assert cpu["metrics"] is None and skipped["metrics"] is None
    calls = [json.loads(x) for x in (tmp_path / "argv.json").read_text().splitlines()]
    assert calls == [metrics.ncu_command(ncu, "matmul", "shared", "numba", "N=64", quick=True, seed=3)[1:]]
    assert len(lines) == 1 and "shared_kernel, tiled" in lines[0]
    json.dumps(result)  # JSON-ready


def test_metrics_kernels_narrows_what_ncu_profiles(rng, tmp_path):
    import re

    cmd = metrics.ncu_command("ncu", "euler", "jump", "numba", "L", kernels="jump_round|tile_contract")
    assert "--kernel-name" not in metrics.ncu_command("ncu", "euler", "jump", "numba", "L")
    pattern = cmd[cmd.index("--kernel-name") + 1]
    assert pattern.startswith("regex:") and cmd.index("--kernel-name") < cmd.index(sys.executable)
    regex = re.compile(pattern[len("regex:"):])  # matched whole or searched: either way only these kernels
    for name, hit in [("cudapy::gpulab::euler::kernels_numba::jump_round[abi:v1](Array<int, 1, C>)", True),
                      ("void tile_contract<256>(int const*, int*)", True), ("void jump_init(int*)", False)]:
        assert bool(regex.fullmatch(name)) is hit and bool(regex.search(name)) is hit
    text, _ = _canned(rng)
    (tmp_path / "out.csv").write_text(text)
    ncu = _fake_ncu(tmp_path, f"sys.stdout.write(open({str(tmp_path / 'out.csv')!r}).read())")
    rec = metrics.annotate(_result(), ncu, kernels="shared_kernel")["records"][0]
    assert rec["metrics_kernels"] == "shared_kernel" and rec["metrics"]
    argv = json.loads((tmp_path / "argv.json").read_text().splitlines()[0])
    assert argv[argv.index("--kernel-name") + 1] == "regex:.*(shared_kernel).*"
    assert "--launch-count" not in argv
    cmd = metrics.ncu_command("ncu", "euler", "propagate", "numba", "L", kernels="propagate_round", launches=20)
    assert cmd[cmd.index("--launch-count") + 1] == "20" and cmd.index("--launch-count") < cmd.index(sys.executable)
    rec = metrics.annotate(_result(), ncu, launches=5)["records"][0]
    assert rec["metrics_launches"] == 5 and "metrics_kernels" not in rec


def test_a_failed_profile_is_recorded_not_raised(tmp_path):
    ncu = _fake_ncu(tmp_path, "print('==PROF== Connected'); print('==ERROR== ERR_NVGPUCTRPERM - The user does not "
                              "have permission to access NVIDIA GPU Performance Counters'); sys.exit(1)")
    rec = metrics.annotate(_result(), ncu)["records"][0]
    assert rec["metrics"] is None
    assert rec["metrics_skipped"].startswith("ncu exited with status 1: ==ERROR== ERR_NVGPUCTRPERM")


def test_bench_metrics_without_ncu_is_one_line_before_any_work(monkeypatch, capsys, tmp_path):
    from gpulab import cli

    monkeypatch.delenv("GPULAB_NCU", raising=False)
    monkeypatch.setattr(metrics.shutil, "which", lambda name: None)
    out = tmp_path / "results"
    assert cli.main(["bench", "matmul", "--metrics", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gpulab bench: --metrics needs Nsight Compute's ncu: none on PATH (install Nsight Compute, "
                   "or set GPULAB_NCU=/path/to/ncu)"]
    assert not out.exists()  # stopped before the benchmark (and before creating --out)


def test_bench_metrics_with_a_missing_gpulab_ncu_names_it(tmp_path):
    p = subprocess.run([sys.executable, "-m", "gpulab", "bench", "matmul", "--metrics"], capture_output=True,
                       text=True, cwd=ROOT, env=child_env(GPULAB_NCU=str(tmp_path / "no-ncu")))
    assert_one_line_error(p, f"gpulab bench: --metrics needs Nsight Compute's ncu: GPULAB_NCU={tmp_path / 'no-ncu'} "
                             "is not an executable")


@pytest.mark.skipif(not ON_SIMULATOR, reason="the simulator's refusal")
def test_bench_metrics_on_the_simulator_is_one_line(tmp_path):
    ncu = _fake_ncu(tmp_path, "sys.exit(0)")
    p = subprocess.run([sys.executable, "-m", "gpulab", "bench", "matmul", "--metrics", "--out", str(tmp_path / "r")],
                       capture_output=True, text=True, cwd=ROOT, env=child_env(GPULAB_NCU=ncu))
    assert_one_line_error(p, "--metrics profiles a GPU", "gpulab trace CHAPTER")
    assert not (tmp_path / "argv.json").exists() and not (tmp_path / "r").exists()


@pytest.mark.skipif(not ON_SIMULATOR, reason="runs a benchmark case on the simulator")
def test_the_child_ncu_runs_sets_up_and_calls_the_case(rng, tmp_path):
    """A stand-in ncu that runs the child command it is given (the simulator has no profiler
    range), then prints a canned CSV: the child accepts the command line and runs the case."""
    text, _ = _canned(rng)
    (tmp_path / "out.csv").write_text(text)
    ncu = _fake_ncu(tmp_path, "import subprocess\n"
                              "rc = subprocess.run(sys.argv[sys.argv.index('-m') - 1:]).returncode\n"
                              f"sys.exit(rc) if rc else sys.stdout.write(open({str(tmp_path / 'out.csv')!r}).read())")
    from gpulab import chapters

    spec = chapters.get("matmul").bench
    label = spec.cases(True)[0].label
    result = {"chapter": "matmul", "records": [
        {"variant": "shared", "backend": "numba", "label": label, "median_ms": 1.0},
        {"variant": "shared", "backend": "numba", "label": "no such size", "median_ms": 1.0}]}
    ok, bad = metrics.annotate(result, ncu, quick=True, seed=int(rng.integers(1 << 30)))["records"]
    assert ok["metrics"] and "metrics_skipped" not in ok, ok.get("metrics_skipped")
    assert bad["metrics"] is None and bad["metrics_skipped"] == ("ncu exited with status 2: gpulab.metrics: "
                                                               "matmul has no size 'no such size'")


def test_metrics_options_need_metrics(capsys):
    from gpulab import cli

    for extra in (["--metrics-kernels", "jump_round"], ["--metrics-launches", "3"]):
        assert cli.main(["bench", "euler", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"gpulab bench: {extra[0]} goes with --metrics"]
    assert cli.main(["bench", "euler", "--metrics", "--metrics-kernels", "jump_round|(tile"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a regular expression" in err[0], err
