"""Shared test fixtures. Importing gpulab first selects GPU or simulator before numba loads."""

import importlib
import os
from pathlib import Path

import numpy as np
import pytest

# Under pytest-xdist (README: `pytest -n auto`), numba's CPU thread pool is split between the
# workers, as scripts/gpu_tests.sh does: unsplit, every worker's parallel njit would start a thread
# per core (at least 2: tests compare thread counts). Set before gpulab imports numba.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT") and "NUMBA_NUM_THREADS" not in os.environ:
    os.environ["NUMBA_NUM_THREADS"] = str(max(2, (os.cpu_count() or 2) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))

import gpulab  # noqa: E402, F401
from gpulab import device  # noqa: E402


@pytest.fixture
def rng(request):
    """A fresh random generator per test; its seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("GPULAB_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"[{request.node.nodeid}] seed={seed} (replay with GPULAB_TEST_SEED={seed})")
    return np.random.default_rng(seed)


def skip_unless_runnable(variant):
    """Skip (never silently pass) a variant that cannot run here, naming the reason."""
    reason = variant.unavailable_reason()
    if reason:
        pytest.skip(f"{variant.key}: {reason}")


ON_SIMULATOR = device.on_simulator()

ROOT = Path(__file__).resolve().parent.parent


def child_env(*, drop=(), **extra) -> dict:
    """The environment of a child `python -m gpulab ...`: this checkout first on PYTHONPATH (so
    the child runs the code under test, whatever is installed, from any working directory), then
    the parent's PYTHONPATH (on the GPU machine the kit's numpy and pycuda live there); `drop`
    removes variables, `extra` sets them."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *rest])
    env.update(extra)
    return env



def device_only(host_array):
    """`host_array` copied to the device, as a public function's device input.

    On the simulator a device array is a numpy array in disguise, so a function could read it
    back to the host without anyone noticing. The array returned here refuses every way back
    (`copy_to_host`, `np.asarray`, `tolist` ...) — also through its slices, views and
    reshapes — while kernels and device-to-device copies still read it: a test passing it
    proves the function kept the input on the device. On a GPU it is a plain numba device array.
    """
    from numba import cuda

    d = cuda.to_device(np.ascontiguousarray(host_array))
    if not ON_SIMULATOR:
        return d
    return _no_host_copy_class()(d._ary)


_CLASS = []


def _no_host_copy_class():
    if _CLASS:
        return _CLASS[0]
    import sys

    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    def _device_to_device():
        """Called (through numpy) by the simulator's copy_to_device: a device-to-device copy."""
        caller = sys._getframe(2).f_code
        return caller.co_name == "copy_to_device" and "simulator" in caller.co_filename

    def refuse(*args, **kwargs):
        raise AssertionError("a device input was copied to the host (device arrays must stay on the device)")

    class NoHostCopy(FakeCUDAArray):
        copy_to_host = tolist = item = tobytes = __iter__ = staticmethod(refuse)

        def __array__(self, *args, **kwargs):
            if not _device_to_device():
                refuse()
            return self._ary

        def __getattr__(self, name):
            if name in ("copy", "astype", "get") or (name.startswith("__array_") and not _device_to_device()):
                refuse()
            return super().__getattr__(name)

        def __getitem__(self, idx):
            out = super().__getitem__(idx)
            return NoHostCopy(out._ary) if isinstance(out, FakeCUDAArray) else out

        def view(self, *args, **kwargs):
            return NoHostCopy(self._ary.view(*args, **kwargs))

        def reshape(self, *args, **kwargs):
            return NoHostCopy(self._ary.reshape(*args, **kwargs))

        def ravel(self, *args, **kwargs):
            return NoHostCopy(self._ary.ravel(*args, **kwargs))

    _CLASS.append(NoHostCopy)
    return NoHostCopy


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return major, minor


NVRTC_OF_CI = (13, 5)  # the cu13 wheels CI installs: its compiles always carried the ptxas report


def require_ptxas_report(report):
    """Skip a check of ptxas' resources when NVRTC compiled without reporting them, with an NVRTC
    other than CI's (seen with the GPU machines' NVRTC 13.0: `gpulab.cudac.nvrtc_compile`); with
    CI's NVRTC a missing report fails the check. A failed compile is not skipped."""
    if report.ok and not report.resources and nvrtc_version() != NVRTC_OF_CI:
        pytest.skip(f"NVRTC compiled {report.source} without a ptxas report (log of {len(report.log)} characters): "
                    "the resource check runs where NVRTC reports them (CI)")


def gpu_library(name):
    """CuPy or PyTorch for the device-array tests that run on a real GPU (skipped elsewhere)."""
    if ON_SIMULATOR:
        pytest.skip(f"{name} arrays live on a real GPU; the simulator's device arrays are tested instead")
    try:
        lib = importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name} is not installed ({exc})")
    except Exception as exc:  # seen on the H200 image: torch fails to import inside pytest (schema parse error)
        pytest.skip(f"{name} is installed but failed to import in this process: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0][:160]}")
    if name == "torch" and not lib.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA")
    return lib


def on_gpu(lib, host_array):
    """`host_array` as a CuPy array or a PyTorch CUDA tensor."""
    if lib.__name__ == "cupy":
        return lib.asarray(host_array)
    return lib.as_tensor(np.ascontiguousarray(host_array), device="cuda")


def from_gpu(x):
    """A CuPy array or PyTorch tensor back as numpy (for the checks)."""
    if type(x).__module__.split(".")[0] == "torch":
        return x.cpu().numpy()
    return x.get()


# ----------------------------------------------------------------------------- scheduling on a GPU machine
#
# scripts/gpu_tests.sh runs all of tests/ at once with pytest-xdist: 8 workers, tests handed out
# one by one (`--dist load`; each worker compiles the kernels its tests launch, once), numba's
# CPU thread pool split between the workers. On a fresh H200 that took 317 s (2026-11-26); with
# 4 workers and unsplit thread pools the same suite had not finished in 560 s.
# (`--dist loadfile` keeps each file in one worker; `--dist loadgroup` does not group under
# pytest 9, whose node ids drop xdist 3.8's group suffix.) The per-test timeout (pytest-timeout, `timeout` in
# pyproject.toml) is raised for the files whose session fixtures compile every kernel or build
# the site before the first of their tests runs.

LONG_TIMEOUT_S = 1800
LONG = ("test_compile.py", "test_exercises.py", "test_site.py", "test_distributed.py")


def pytest_itemcollected(item):
    """The files named in `LONG` get the long timeout."""
    if (item.config.pluginmanager.hasplugin("timeout") and item.path.name in LONG
            and item.get_closest_marker("timeout") is None):
        item.add_marker(pytest.mark.timeout(LONG_TIMEOUT_S))


def pytest_runtest_logreport(report):
    """With `GPULAB_TEST_LOG=FILE`, one line per test phase as it ends (node id, phase, outcome,
    seconds, worker, and for a failure the last line of its report), flushed at once: a run cut
    off by a time limit still says where its time went and why a test failed
    (scripts/gpu_tests.sh sets it; under xdist the controller writes every worker's reports)."""
    path = os.environ.get("GPULAB_TEST_LOG")
    if path and not os.environ.get("PYTEST_XDIST_WORKER") and (report.when == "call" or report.duration > 1.0 or report.outcome == "failed"):
        worker = getattr(report, "node", None)
        worker = getattr(getattr(worker, "gateway", None), "id", "-")
        why = ""
        if report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            why = (crash.message if crash is not None else str(report.longrepr)).replace("\n", " | ").replace("\t", " ")[:2000]
        with open(path, "a") as f:
            f.write(f"{report.nodeid}\t{report.when}\t{report.outcome}\t{report.duration:.2f}\t{worker}\t{why}\n")
