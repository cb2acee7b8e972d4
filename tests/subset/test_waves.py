"""Issue 31: the incremental scan's grid is capped at WAVES times what the GPU runs at once
(`gpulab.device.resident_blocks`), so that a block that waits for its slowest warp does not
leave its SM idle at the end of many short waves. The occupancy arithmetic is checked against
the CUDA occupancy calculator's rules on sm_90's limits; the plan's cap with a stand-in GPU (the
simulator has none); the answer with any cap is the reference's."""

import pytest

import gpulab.subset as ss
from gpulab import device
from gpulab.device import SMLimits, resident_blocks
from gpulab.errors import GpulabError
from gpulab.subset import host
from gpulab.subset.variants import REGISTRY
from tests.subset.test_call_cache import expect, planted

SM90 = SMLimits(threads=2048, blocks=32, shared=228 * 1024, reserved_shared=1024, registers=65536)


@pytest.mark.parametrize("threads, shared, regs, want", [
    (256, 0, 32, 8),            # threads: 2048 / 256
    (128, 0, 16, 16),           # threads again: 2048 / 128
    (32, 0, 16, 32),            # the block limit: 64 by threads, 32 blocks at most
    (1024, 0, 64, 1),           # registers: 64 x 32 = 2,048 a warp, 8 warps per quarter
    (512, 0, 64, 2),
    (512, 0, 56, 2),            # 56 x 32 = 1,792 a warp: 9 warps per quarter, 36 per SM, 2 blocks of 16
    (256, 0, 72, 3),            # 72 x 32 = 2,304: 7 per quarter, 28 warps, 3 blocks of 8
    (512, 8 * 19900 + 16 * 512, 56, 1),  # Q at n = 200: one block's 167,392 bytes fill the SM
    (512, 8 * 1225 + 16 * 512, 56, 2),   # Q at n = 50: registers limit, not shared memory
    (256, 100 * 1024, 32, 2),   # shared: 2 x (100 KiB + 1 KiB reserved) fit in 228 KiB, 3 do not
    (128, 8 * 2850 + 16 * 128, 32, 8),  # n = 76: 24,848 + 1,024 bytes = 25,872, in units of 128: 25,984; 8, not 9
    (1024, 0, 255, 1),          # cannot launch at all: still 1 (the launch says why)
])
def test_resident_blocks_follows_the_occupancy_rules(threads, shared, regs, want):
    assert resident_blocks(threads, shared, regs, SM90) == want


def test_waves_cap_the_grid_of_a_plan(monkeypatch):
    """The cap a plan computes for a stand-in GPU of 132 SMs (sm_90 limits, 56 registers):
    WAVES x 132 x the resident blocks, and no cap where WAVES is not given."""
    v = REGISTRY.get("incremental", "numba")
    p = v.launch_params(None)
    plans = {n: host.IncrementalPlan(v.policy, "numba", n, 3, p, 1000) for n in (50, 200)}
    info = device.info()
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    monkeypatch.setattr(device, "info", lambda: type(info)(**{**info.as_dict(), "sm_count": 132}))
    monkeypatch.setattr(device, "sm_limits", lambda: SM90)
    for plan in plans.values():
        plan.regs = 56
    # n = 200: Q fills an SM with the GPU's 512-thread blocks; n = 50: registers allow 2
    big = dict(p, BLOCK=512, WAVES=2)
    plans[200].block = plans[50].block = 512
    plans[200].nbytes, plans[50].nbytes = 8 * 19900 + 16 * 512, 8 * 1225 + 16 * 512
    assert plans[200].waves_cap(big) == 2 * 132 * 1
    assert plans[50].waves_cap(big) == 2 * 132 * 2
    assert plans[50].waves_cap(dict(big, WAVES=3)) == 3 * 132 * 2
    no_waves = {k: x for k, x in big.items() if k != "WAVES"}
    assert plans[50].waves_cap(no_waves) == plans[50].max_blocks

    def no_registers(name, sig=None):
        raise RuntimeError("this provider cannot say")

    monkeypatch.setattr(plans[50].K, "registers", no_registers)  # without its inputs: no cap, as before
    plans[50].regs = plans[50].registers()
    assert plans[50].regs is None and plans[50].waves_cap(big) == plans[50].max_blocks


@pytest.mark.parametrize("threads, regs, fits", [
    (512, 128, True), (512, 129, False),   # 128 x 32 = 4,096 a warp: 4 per quarter, 16 warps
    (256, 168, True), (512, 168, False),   # 168 x 32 = 5,376: 3 per quarter, 12 warps
    (1024, 64, True), (1024, 65, False),   # why 1024-thread blocks need <= 64 registers
    (32, 255, True),
])
def test_registers_fit_follows_the_register_file(threads, regs, fits):
    assert device.registers_fit(threads, regs, SM90) is fits


@pytest.mark.parametrize("name", ["incremental", "incremental_lanes"])
def test_a_block_the_registers_cannot_hold_is_halved(rng, monkeypatch, name):
    """A kernel whose registers do not allow the block asked for (incremental_lanes at k = 16
    on a GPU: more than 128 registers, so no 512-thread block) launches the largest power of
    two that fits, with its shared memory, and gives the reference's answer."""
    monkeypatch.setattr(device, "sm_limits", lambda: SM90)
    monkeypatch.setattr(host.IncrementalPlan, "registers", lambda self: 168)
    ss.clear_cache()
    n, k = int(rng.integers(9, 14)), 3
    C, S = planted(rng, n, k)
    v = REGISTRY.get(name, "numba")
    over = {"BLOCK": 512}
    plan, _, _ = host.plan_for(v.policy, "numba", n, k, v.launch_params(over))
    assert plan.block == 256 and plan.nbytes == host.shared_bytes(v.policy, n, k, 256)
    ref = expect(C, S)
    got = ss.least_correlated(C, k, variant=name, backend="numba", params=over)
    assert got.combination == ref.combination and got.rank == ref.rank
    ss.clear_cache()


def test_waves_is_a_known_parameter_and_checked():
    host.check_params({"WAVES": 1})
    with pytest.raises(GpulabError, match="WAVES"):
        host.check_params({"WAVES": 0})
    assert REGISTRY.get("incremental", "cuda-c").params["WAVES"] == 2


@pytest.mark.parametrize("cap", [1, 2])
def test_a_capped_grid_gives_the_reference_answer(rng, monkeypatch, cap):
    """A grid cut to `cap` blocks, below what the search would launch (one rank per chunk and
    32-thread blocks make 13 or more blocks; the simulator's MAX_BLOCKS is 3), still covers every
    rank: its grid-stride loop takes the rest."""
    monkeypatch.setattr(host.IncrementalPlan, "waves_cap", lambda self, params: cap)
    ss.clear_cache()
    n, k = int(rng.integers(12, 17)), 3
    C, S = planted(rng, n, k)
    ref = expect(C, S)
    v = REGISTRY.get("incremental", "numba")
    over = {"BLOCK": 32, "CHUNK": 1, "CHUNK_MIN": 1}
    plan, _, _ = host.plan_for(v.policy, "numba", n, k, v.launch_params(over))
    uncapped = min(-(-plan.nchunks // plan.block), plan.max_blocks)
    assert uncapped > cap and plan.grid == cap  # the premise: the cap cuts the grid
    got = ss.least_correlated(C, k, variant="incremental", backend="numba", params=over)
    assert got.combination == ref.combination and got.rank == ref.rank
    assert abs(got.distance - ref.distance) <= 1e-12 * max(1.0, ref.distance)
    ss.clear_cache()
