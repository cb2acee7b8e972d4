"""The pieces of a CuPy stand-in that the tests of the calls by addresses share (chapters 1 and
4: `tests/matmul/test_call_by_pointers.py`, `tests/radix/test_by_addresses.py`): the few
attributes of a CuPy array that a short way reads, and a stand-in module around an array type."""

import types
from itertools import count


class Flags:
    """`ndarray.flags`: only C-contiguity is read."""

    def __init__(self, c):
        self.c_contiguous = c


class Memory:
    """`ndarray.data`: the address and the device."""

    def __init__(self, ptr, device_id):
        self.ptr, self.device_id = ptr, device_id


def addresses():
    """A new device address per array (64 KiB apart)."""
    return (0x10000 * i for i in count(1))


def module(ndarray, empty, current_device=0, stream=0):
    """A `cupy` module with `ndarray`, `empty`, `cuda.runtime.getDevice` (`current_device`) and
    `cuda.get_current_stream()` (whose `ptr` is `stream`; 0: CuPy's null stream)."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray, cupy.empty = ndarray, empty
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: current_device),
                                      get_current_stream=lambda: types.SimpleNamespace(ptr=stream))
    return cupy
