"""Chapter 3's launch policy: what one variant's evaluation needs, as data.

Each registry entry (`gpulab.gp.variants`) carries a
[`GPPolicy`][gpulab.gp.policy.GPPolicy]; the one launch sequence of
`gpulab.gp.host`, the limit checks, the compile checks and the benchmark
read its fields, never the variant's name (CUB's policy → agent → dispatch). A new variant is
one registry entry with its policy (and its kernel, when it brings a new one).
"""

from __future__ import annotations

from dataclasses import dataclass

REFERENCE_MAX_WORK = 2e6  # the pure-Python reference is timed only up to this many (individual, stock, day)s
INTERPRETER_MAX_WORK = 1e10  # the CPU interpreter record beyond this many GP operations: its time is the peer column
COMPILED_MAX_POPULATION = 1024  # the compiled variant is benchmarked up to this many individuals


@dataclass(frozen=True)
class BenchCap:
    """The largest benchmark case a variant is timed at, and why not beyond.

    Attributes:
        measure: what is bounded: ``"pair_days"`` (individuals × stocks × days), ``"ops"`` (tree
            nodes × stocks × days, the case's work) or ``"population"`` (individuals).
        limit: the largest value timed.
        reason: the skip message, a format string of ``value`` and ``limit``.
    """

    measure: str
    limit: float
    reason: str


@dataclass(frozen=True)
class GPPolicy:
    """How one chapter-3 variant is launched and checked.

    Attributes:
        path: ``"gpu"`` (the device evaluator: kernels, then the fitness reduction) or ``"cpu"``
            (host arrays).
        kernel: the kernel table's key: on the GPU the numba builder
            (`gpulab.gp.kernels_numba.kernel_for`) and the CUDA C kernel ``gp_<kernel>``; on
            the CPU the entry of `gpulab.gp.host.CPU_KERNELS`. ``None`` for a population
            compiled to its own kernels (``programs="compiled"``).
        programs: where the kernels read the programs: ``"global"`` (one upload per generation),
            ``"constant"`` (batches of whole individuals copied into the 64 KiB of constant
            memory, one launch each) or ``"compiled"`` (the population compiled per generation).
        threads: ``"pair"``: one thread per (individual, stock); ``"warp"``: a warp per
            individual and 32 stocks.
        block: the block's size parameter: ``"BLOCK"`` (threads) or ``"WPB"`` (warps).
        layout: the indicators' order on the device: ``"sid"`` (stock, indicator, day) or
            ``"dis"`` (day, indicator, stock).
        masks: the kernel reads the comparison bit-masks and the close prices instead of the
            indicators (the bit-sliced evaluation).
        stack: a float stack in global memory, ``STACK`` slots per thread: ``"thread"`` (one
            contiguous stack per needed thread), ``"grid"`` (interleaved depth-major over every
            launched thread) or ``None`` (none).
        stack_limit: programs are bounded by the ``STACK`` float slots (booleans count too).
        code_limit: both trees must fit the ``CODE`` opcodes a warp keeps in shared memory.
        bool_limit: the boolean stack's depth: a parameter's name (``"BSTACK"``), a fixed
            number of bits, or ``None``.
        word_ops: evaluates 64 days per word operation (its benchmark records also count
            word operations).
        lists: the kernel takes a list of the individuals to evaluate and the day-mask cache
            (``listed, idx, count, cache, src, Cprev, Cnew`` after the offsets), so that an
            evaluation can skip the individuals a breeding copied unchanged and read the trees
            it did not change (`gpulab.gp.host.Evaluator`'s ``reuse``).
        same_algorithm_cpu: the CPU variant running the same algorithm (the benchmark's
            ``speedup_same_algorithm``).
        bench_cap: the largest benchmark case it is timed at, or ``None``.
    """

    path: str = "gpu"
    kernel: str | None = None
    programs: str = "global"
    threads: str = "warp"
    block: str = "WPB"
    layout: str = "dis"
    masks: bool = False
    stack: str | None = None
    stack_limit: bool = False
    code_limit: bool = False
    bool_limit: str | int | None = None
    word_ops: bool = False
    lists: bool = False
    same_algorithm_cpu: str = "interpreter"
    bench_cap: BenchCap | None = None

    def __post_init__(self):
        allowed = {"path": ("gpu", "cpu"), "programs": ("global", "constant", "compiled"),
                   "threads": ("pair", "warp"), "block": ("BLOCK", "WPB"), "layout": ("sid", "dis"),
                   "stack": (None, "thread", "grid")}
        for field, values in allowed.items():
            if getattr(self, field) not in values:
                raise ValueError(f"GPPolicy.{field} = {getattr(self, field)!r}; expected one of {values}")
        if self.lists and (self.path != "gpu" or self.programs != "global"):
            raise ValueError("GPPolicy.lists: only a GPU kernel that reads the programs from global memory takes a list")
        if self.kernel is None and (self.path == "cpu" or self.programs != "compiled"):
            raise ValueError("GPPolicy.kernel names the kernel of every variant but a compiled population's")

    @property
    def compiled(self) -> bool:
        """The population is compiled to its own kernels (per generation)."""
        return self.programs == "compiled"
