"""`gpulab.cudac.launch`'s argument packing, without a GPU: one `struct` format per tuple of
argument types, as pycuda's prepared call would pack them (numpy scalars keep their type, ints
and bools are int32, device arrays pointers), complex scalars left to pycuda's own packer, and
a clear TypeError for anything else."""

import struct

import numpy as np
import pytest

from gpulab import cudac


class _Device:
    """Anything with `__cuda_array_interface__` is a device array to `cudac.launch`."""

    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (1,), "typestr": "<f4", "version": 3}


def test_formats_per_argument_types(rng):
    types = (np.int32, int, bool, np.bool_, np.int8, np.uint64, np.float32, np.float64, np.float16, _Device)
    packer, converters, fmt = cudac._packing(types)
    assert fmt == "iiiibLfdeP" and packer.format == fmt
    p = int(rng.integers(1, 2**40)) * 256
    args = (np.int32(-3), 7, True, np.bool_(False), np.int8(-5), np.uint64(2**63 + 9), np.float32(1.5),
            np.float64(-2.25), np.float16(0.5), _Device(p))
    data = [a if c is None else c(a) for c, a in zip(converters, args)]
    assert struct.unpack(fmt, packer.pack(*data)) == (-3, 7, 1, 0, -5, 2**63 + 9, 1.5, -2.25, 0.5, p)


def test_complex_scalars_are_left_to_pycudas_packer():
    packer, converters, fmt = cudac._packing((np.complex64, np.int32))
    assert packer is None and fmt == "Fi" and converters == (None, None)


@pytest.mark.parametrize("bad", [1.5, None, "x", np.zeros(3)])
def test_anything_else_is_a_clear_type_error(bad):
    _, converters, fmt = cudac._packing((type(bad),))
    assert fmt == "P"
    with pytest.raises(TypeError, match="cannot pass a .* to a CUDA C kernel: a device array, an int or a numpy scalar"):
        converters[0](bad)
