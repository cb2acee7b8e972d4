"""Chapter 3's CUDA C logic checked without a GPU: a ``.cu`` source compiled by the host's C++
compiler with a harness that defines the CUDA keywords away (each launch a loop over the
threads), loaded with ctypes."""

import ctypes
import shutil
import subprocess
from importlib import resources

import pytest


def compile_for_host(tmp_path, source: str, defines: dict, harness: str) -> ctypes.CDLL:
    """``gpulab/gp/<source>`` with ``harness`` (which includes it), ``-D`` each of ``defines``;
    skips the test when there is no host C++ compiler."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip(f"no host C++ compiler (g++ or clang++) to compile {source}'s logic as C++")
    (tmp_path / source).write_text(resources.files("gpulab.gp").joinpath(source).read_text())
    (tmp_path / "harness.cpp").write_text(harness)
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    subprocess.run([cxx, "-O1", "-ffp-contract=off", "-shared", "-fPIC", *flags, "-o", str(tmp_path / "twin.so"),
                    str(tmp_path / "harness.cpp")], check=True, cwd=tmp_path)
    return ctypes.CDLL(str(tmp_path / "twin.so"))


def ptr(a):
    """A numpy array's data, for a ctypes call."""
    return a.ctypes.data_as(ctypes.c_void_p)
