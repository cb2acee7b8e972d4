"""NVRTC writes its log and cubin into the buffers gpulab gives it: they must be fresh objects.

`b" " * 1` is Python's one shared b" " — a 1-byte log buffer made that way (an empty log is
just its NUL) had NVRTC overwrite it for the whole process. On Python 3.12 every string literal
of one space compiled after that comes out empty: `f"{k} {u}"` gave "pairingms" in a GPU test
process (tests/test_steps_hook.py failed that way), and torch could no longer parse its own
operator schemas there. This test makes NVRTC report a 1-byte log (patched size and log
queries that write the NUL as NVRTC does) and checks, in a child process, that the shared b" "
is untouched afterwards."""

import subprocess
import sys

import pytest

CHILD = r"""
import ctypes

from cuda.bindings import nvrtc
from gpulab import cudac


def empty_log(prog, buf):  # what NVRTC does with an empty log: it writes the terminating NUL
    ctypes.memset(ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value, 0, len(buf))
    return (nvrtc.nvrtcResult.NVRTC_SUCCESS,)


nvrtc.nvrtcGetProgramLogSize = lambda prog: (nvrtc.nvrtcResult.NVRTC_SUCCESS, 1)
nvrtc.nvrtcGetProgramLog = empty_log
report = cudac.nvrtc_compile("__global__ void k(int *x) { x[0] = 1; }", "k.cu")
assert report.ok and report.cubin
assert repr(b" ") == "b' '", "the shared b' ' was overwritten: " + repr(b" ")
print("untouched")
"""


def test_a_one_byte_nvrtc_log_does_not_overwrite_a_shared_bytes_object():
    pytest.importorskip("cuda.bindings.nvrtc")
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "untouched" in p.stdout, p.stderr[-2000:]
