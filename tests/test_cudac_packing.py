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


class _Function:
    """A pycuda function stand-in: records what `_launch_kernel` is given."""

    def __init__(self):
        self.calls = []

    def _launch_kernel(self, grid, block, buf, shared, stream):
        self.calls.append((grid, block, buf, shared, stream))


def test_a_launch_by_addresses_packs_the_addresses_then_the_fixed_arguments(rng):
    fn = _Function()
    work = int(rng.integers(1, 2**40)) * 256
    go = cudac.pointer_launch(fn, (3, 5), (128,), 3, np.int32(8192), np.int32(128), np.int32(127), _Device(work),
                              np.int32(-1))
    addresses = [int(rng.integers(1, 2**46)) * 256 for _ in range(3)]
    go(*addresses)
    go(addresses[1], addresses[0], addresses[2])  # each call its own addresses, the rest unchanged
    (g1, b1, buf1, s1, st1), (_, _, buf2, _, _) = fn.calls
    assert (g1, b1, s1, st1) == ((3, 5, 1), (128, 1, 1), 0, None)
    fmt = "PPPiiiPi"  # as `launch` would pack three device arrays and the same fixed arguments
    assert struct.unpack(fmt, buf1) == (*addresses, 8192, 128, 127, work, -1)
    assert struct.unpack(fmt, buf2) == (addresses[1], addresses[0], addresses[2], 8192, 128, 127, work, -1)
    packer, converters, launch_fmt = cudac._packing((_Device,) * 3 + (np.int32,) * 3 + (_Device, np.int32))
    assert launch_fmt == fmt


def test_no_launch_by_addresses_where_launch_would_not_pack():
    class Old:  # a pycuda without the packed launch
        pass

    assert cudac.pointer_launch(Old(), (1,), (1,), 1, np.int32(1)) is None
    assert cudac.pointer_launch(_Function(), (1,), (1,), 1, np.complex64(1)) is None  # pycuda's own packer's case
