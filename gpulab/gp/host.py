r"""Host side of chapter 3: limits (errors that name them), buffers, and the launch sequences.

An `Evaluator` binds a variant to a market: the market's arrays go to the device once,
in the layout the variant reads; each call evaluates one population — upload its byte code (or, for a
[`DevicePopulation`][gpulab.gp.programs.DevicePopulation] the GPU breeding left on the device,
read it where it is), launch the interpreter kernel(s), then the fitness reduction — and returns
device arrays.
That is one generation's evaluation: what the benchmark times and what the GP loop calls.

The launch sequence is written once for both backends through a kernel provider
``K(name, grid, block, *args, constant=bytes)`` (``constant``: the batch to copy into constant
memory first), so the simulator tests of the numba path run every line the CUDA C path also runs.
What a variant launches — its kernel, where the programs live, the grid, the inputs' layout, the
stacks and the limits — is its [`GPPolicy`][gpulab.gp.policy.GPPolicy], read here as data: no line
of the launch sequence names a variant.
"""

from __future__ import annotations

import weakref

import numpy as np

from gpulab import device
from gpulab.errors import DtypeError, GpulabError, LimitError
from gpulab.gp import opcodes as oc
from gpulab.gp import trading
from gpulab.gp.programs import DevicePopulation, Population, ProgramLimitError, TREES, _where
from gpulab.launch import KernelSource, ceil_div, check_block
from gpulab.launch import i32 as _i

PACKAGE = "gpulab.gp"
SOURCE = "kernels.cu"
CONST_BYTES = 65536
REGISTER_BITS = 32  # the register variant's bit-stack is one uint32
FITNESS_BLOCK = 128
# The share of the device's free memory (when an evaluator first sees a population size) that
# its day-mask cache (two buffers of 8 bytes per tree, word and stock) may take; above it, at 0,
# or when the allocation fails, reuse skips copied individuals only.
MASK_CACHE_SHARE = 0.25


# ----------------------------------------------------------------------------- limits


def check_program_bytes(pop: Population, limit: int, variant: str, per_node: int = 1, nodes=None) -> None:
    """Each individual's two trees must fit a per-warp buffer of ``limit`` opcodes."""
    if nodes is None and pop.max_program_nodes <= limit:  # O(1): the population knows its longest program
        return
    nodes = pop.nodes if nodes is None else nodes
    total = nodes.sum(axis=1)
    over = np.flatnonzero(total > limit)
    if over.size:
        i = int(over[0])
        buy = int(nodes[i, 0])
        t, pos = (0, limit) if buy > limit else (1, limit - buy)
        raise ProgramLimitError(f"individual {i}, {TREES[t]} tree, position {pos}: too long for the {variant} variant: "
                                f"its two trees have {int(total[i])} opcodes, over the CODE = {limit} "
                                f"({limit * per_node} bytes) of program a warp keeps in shared memory")


def check_limits(variant, pop: Population, params: dict) -> None:
    """Reject, naming individual, tree and position, programs a variant cannot run: the limits
    its policy ([`GPPolicy`][gpulab.gp.policy.GPPolicy]) lists, with the values of `params`."""
    pol, name, p = variant.policy, variant.name, params
    if pol.stack_limit:
        pop.check_limits(stack=p["STACK"], variant=name)
    if pol.code_limit:
        check_program_bytes(pop, p["CODE"], name)
    if pol.bool_limit is not None:
        pop.check_limits(bools=p[pol.bool_limit] if isinstance(pol.bool_limit, str) else pol.bool_limit, variant=name)
    if pol.programs == "constant":
        cap = p.get("CONST_CAPACITY", CONST_BYTES)
        cost = pop.nodes.sum(axis=1) + 4
        if pop.max_program_nodes + 6 > cap:
            i = int(np.flatnonzero(cost + 2 > cap)[0])
            raise ProgramLimitError(f"{_where(i, 1, int(pop.nodes[i, 1]))}: too long for the {name} variant: "
                                    f"{int(cost[i]) + 2} bytes with its offsets, over the {cap} bytes of "
                                    "constant memory")


def check_market(market, variant_name: str) -> None:
    from gpulab.gp.market import DAY_PAD

    S, D = market.stocks, market.days
    if S * (D + DAY_PAD) * oc.NF >= 2**31 or market.words * 303 * S >= 2**31:
        raise LimitError(f"{S} stocks × {D} days: the indicator arrays exceed 2**31 elements")


def constant_batches(pop: Population, capacity: int = CONST_BYTES) -> list[tuple[int, int]]:
    """Split the population into (first, count) batches of whole individuals whose programs and
    uint16 offsets fit the 64 KiB of constant memory: 4 bytes of offsets per individual, 2 more
    per batch, and the code. (A smaller ``capacity`` lets the tests make many batches.)"""
    cost = pop.nodes.sum(axis=1).astype(np.int64) + 4
    csum = np.concatenate([[0], np.cumsum(cost)])
    out, i0, P = [], 0, len(pop)
    while i0 < P:
        # largest nb with csum[i0+nb] - csum[i0] + 2 <= capacity
        end = int(np.searchsorted(csum, csum[i0] + capacity - 2, side="right")) - 1
        nb = max(1, end - i0)
        out.append((i0, nb))
        i0 += nb
    return out


def constant_image(pop: Population, i0: int, nb: int) -> np.ndarray:
    """The bytes of one batch as the constant kernel reads them: uint16 offsets of the
    2·nb trees (relative to the code) then the code."""
    a, b = int(pop.offsets[2 * i0]), int(pop.offsets[2 * (i0 + nb)])
    offs = (pop.offsets[2 * i0:2 * (i0 + nb) + 1] - a).astype("<u2")
    img = np.zeros(CONST_BYTES, np.uint8)
    head = offs.view(np.uint8)
    img[:head.size] = head
    img[head.size:head.size + (b - a)] = pop.code[a:b]
    return img


# ----------------------------------------------------------------------------- kernels


def numba_kernel(name: str, params: dict):
    from gpulab.gp import kernels_numba as kn

    return kn.kernel_for(name.removeprefix("gp_"), params)[0]


def _sim_constant() -> np.ndarray:
    from gpulab.gp import kernels_numba as kn

    return kn.SIM_CONST


KERNELS = KernelSource(PACKAGE, numba_kernel, defines=("STACK", "WPB", "CODE", "BSTACK", "DAYS", "TW", "TRADE"),
                       source=SOURCE, constant="gp_programs", sim_constant=_sim_constant)
cuda_defines = KERNELS.cuda_defines
provider = KERNELS.provider


# ----------------------------------------------------------------------------- evaluation


def geometry(params: dict) -> dict:
    """The launch parameters (the variant's [`launch_params`][gpulab.registry.Variant.launch_params]),
    checked: blocks within the device's limit, and whole warps."""
    p = dict(params)
    if "BLOCK" in p:
        check_block(p["BLOCK"])
        if p["BLOCK"] % 32:
            raise LimitError(f"BLOCK = {p['BLOCK']}: blocks must be whole warps (a multiple of 32)")
    if "WPB" in p:
        check_block(32 * p["WPB"])
    return p


class Evaluator:
    """Evaluate populations with one GPU variant on one market (inputs uploaded once).

    ``evaluator(population)`` enqueues one generation's evaluation and returns device arrays
    ``(fitness [P], money [P*S], trace [P*S*D] or None)``; it raises
    `LimitError` when a buy would reach 2**29 shares. What it launches is the variant's
    [`GPPolicy`][gpulab.gp.policy.GPPolicy]: the kernel, where the programs live, the grid, the
    inputs' layout and the stack.
    """

    def __init__(self, variant, backend: str, market, params: dict):
        self.variant, self.policy = variant, variant.policy
        self.name, self.backend, self.market = variant.name, backend, market
        self.p = geometry(params)
        self.K = provider(backend, self.p)
        check_market(market, self.name)
        pol = self.policy
        self.F, self.B = market.device(pol.layout)
        self.bh = market.device("bh")
        self.M = market.device("wms") if pol.masks else None
        self.C = market.device("close") if pol.masks else None
        self.inputs = (self.M, self.C) if pol.masks else (self.F, self.B)
        self.block = self.p["BLOCK"] if pol.block == "BLOCK" else 32 * self.p["WPB"]
        self._buffers: dict = {}
        self.programs = ProgramBuffer()
        self.compile_ms = 0.0
        self._last = None  # a weak reference to the population evaluated last (its fitness: buffer `_turn`)
        self._cached = False  # ... and whether its trees' day masks are in buffer `_turn` too
        self._turn = 0
        self._fits: dict = {}
        self.evaluated = 0  # individuals the last call interpreted (fewer than P when it reused copies)
        self.fitness_host = None  # the last launch's fitness on the host, when it asked (to_host)
        # the device array the last launch's fitness kernel writes: work queued after the launch on
        # the same stream may read it before `finish` (the GP loop queues the breeding on it)
        self.fitness_device = None

    def _buf(self, key, n, dtype):
        from numba import cuda

        b = self._buffers.get(key)
        if b is None or b.size < n:
            b = self._buffers[key] = cuda.device_array(max(n, 1), dtype)
        return b

    def _exact(self, key, n, dtype):
        """`_buf` as a view of exactly ``n`` elements, made once per buffer (what the GP loop
        hands on to the breeding, which reads the population's size from it)."""
        b = self._buf(key, n, dtype)
        if b.size == n:
            return b
        kept = self._buffers.get((key, "view"))
        if kept is None or kept[0] is not b or kept[1].size != n:
            kept = self._buffers[(key, "view")] = (b, b[:n])
        return kept[1]

    def _flags(self):
        """``int32[3]`` on the device (zeroed once: the fitness kernel clears ``flags[0]`` after
        handing it to ``flags[1]``; ``flags[2]``: the listed individuals) and its pinned
        [`Readback`][gpulab.device.Readback]; and ``count``, ``int32[1]`` (zeroed once: the
        fitness kernel sets it back to 0 after `gp_changed` counted in it)."""
        from numba import cuda

        if "flags" not in self._buffers:
            self._buffers["flags"] = cuda.to_device(np.zeros(3, np.int32))
            self._buffers["flags_back"] = device.Readback(3, np.int32)
            self._buffers["count"] = cuda.to_device(np.zeros(1, np.int32))
        return self._buffers["flags"], self._buffers["flags_back"], self._buffers["count"]

    def _copies(self, pop: Population):
        """``pop``'s ``src`` on the device (see
        [`Population.copies_of`][gpulab.gp.programs.Population.copies_of]) when it was bred from
        the population this evaluator evaluated last, whose fitness is still in the other
        fitness buffer; otherwise ``None``."""
        last = self._last() if self._last is not None else None
        src = pop.copies_of(last) if last is not None and self.policy.lists else None
        if isinstance(src, np.ndarray):  # bred on the host: 8 bytes per tree up
            dev = self._buf("src", src.size, np.int64)
            dev[:src.size].copy_to_device(src)
            src = dev
        return src

    def _mask_cache_fits(self, P: int) -> bool:
        """Whether the two day-mask buffers for ``P`` individuals fit `MASK_CACHE_SHARE` of the
        device's free memory (asked once per size; the buffers this evaluator already holds count
        as free)."""
        if P not in self._fits:
            m = self.market
            need = 2 * 2 * P * m.words * m.stocks * 8
            held = sum(self._buffers[k].nbytes for k in ("masks0", "masks1") if k in self._buffers)
            free = device.free_bytes()
            self._fits[P] = need <= MASK_CACHE_SHARE * (free + held)
        return self._fits[P]

    def _masks(self, P: int, turn: int):
        """The day-mask buffer ``turn`` for ``P`` individuals, or ``None`` (and the cache off
        for this size from now on) when the device has no room for it."""
        m = self.market
        try:
            return self._buf(f"masks{turn}", 2 * P * m.words * m.stocks, np.uint64)
        except Exception as exc:  # noqa: BLE001 (only an allocation failure is handled)
            if not device.is_out_of_memory(exc):
                raise
            self._fits[P] = False
            for k in ("masks0", "masks1"):
                self._buffers.pop(k, None)
            return None

    # --8<-- [start:evaluate]
    def __call__(self, pop: Population, trace: bool = False, poison: bool = False, timeline: list | None = None,
                 reuse: bool = False):
        """Evaluate ``pop``: [`launch`][gpulab.gp.host.Evaluator.launch], then wait for it.
        Returns ``(fitness, money, trace)`` on the device (``trace`` only with ``trace=True``)."""
        return self.launch(pop, trace, poison, timeline, reuse)()

    def launch(self, pop: Population, trace: bool = False, poison: bool = False, timeline: list | None = None,
               reuse: bool = False, to_host: bool = False):
        """Queue ``pop``'s evaluation on the device and return at once with ``finish``, the
        function that waits for it (the call's one synchronization: 12 bytes of flags, and with
        ``to_host`` the fitness, into pinned buffers), raises `LimitError` on an overflow, and
        returns ``(fitness, money, trace)``; with ``to_host``, ``fitness_host`` then holds the
        fitness on the host too (a pinned buffer the next launch reuses: copy it to keep it).
        Between the two the host is free: the GP loop queues the test period's evaluation
        behind the training one's before it waits for either. Call ``finish`` before this
        evaluator's next launch. `fitness_device` is the device array the fitness goes into, set
        before ``launch`` returns: work queued after it on the stream may read it before
        ``finish`` (the GP loop queues the breeding on it; should ``finish`` then raise, what
        that work made is dropped with the run).

        ``reuse``: an individual the breeding copied unchanged from the population this
        evaluator evaluated last takes that parent's fitness instead of being interpreted again,
        and (where the day-mask cache fits, `MASK_CACHE_SHARE`) a changed individual's tree that
        its parents had takes that tree's day masks from the last evaluation: only the changed
        tree is interpreted (variants whose policy `lists`; not with ``trace`` or ``poison``).
        Then ``money`` holds only the interpreted individuals' rows, and `evaluated` says how
        many there were. The returned fitness is also what the next call with ``reuse`` reads as
        the parents' fitness: copy it before changing it."""
        from gpulab.checking import poisoned

        pol, p, K, m = self.policy, self.p, self.K, self.market
        mark = _marker(timeline)
        P, S, D = len(pop), m.stocks, m.days
        check_limits(self.variant, pop, p)  # O(1): the population carries its maxima
        given = pop  # (the evaluator's record: the object its caller breeds from, not its host copy)
        reuse = reuse and pol.lists and not (trace or poison)
        src = self._copies(pop) if reuse else None
        # the day-mask cache: off (0), filled (1), or also read for the trees the parents had (2)
        cache = 0 if not (reuse and self._mask_cache_fits(P)) else (2 if src is not None and self._cached else 1)
        last = self._turn
        c_new = self._masks(P, 1 - last) if cache else None
        if c_new is None:
            cache = 0
        if cache == 1:  # filling the cache: every individual is interpreted (copies included) to fill it
            src = None
        prev = self._buf(f"fitness{last}", 1, np.float64)  # the last population's fitness, if any
        self._last, self._cached, self._turn = None, False, 1 - self._turn
        money = self._buf("money", P * S, np.float64)
        tr = self._buf("trace", P * S * D if trace else 1, np.uint8)
        fit = self.fitness_device = self._exact(f"fitness{self._turn}", P, np.float64)
        flags, flags_back, count = self._flags()
        if poison:
            money.copy_to_device(poisoned(money.size, np.float64))
            fit.copy_to_device(poisoned(fit.size, np.float64))
            if trace:
                tr.copy_to_device(np.full(tr.size, 0xFF, np.uint8))
        tail = (money, tr, _i(trace), flags)
        mark("start")
        if pol.programs == "compiled":  # the population is the kernel: compiled (or cached), then launched
            kern = self._compiled(pop)
            kern.launch(self.block, S, D, *self.inputs, *tail)
        elif pol.programs == "constant":  # one launch per batch that fits the 64 KiB
            for i0, nb in constant_batches(pop, p.get("CONST_CAPACITY", CONST_BYTES)):
                self._launch(nb, (_i(i0), _i(nb), _i(S), _i(D)), tail, constant=constant_image(pop, i0, nb))
        else:
            if isinstance(pop, DevicePopulation):  # overwritten since, with a host copy: that copy
                pop = pop.device_or_host()
            if isinstance(pop, DevicePopulation):  # bred on the GPU: read where it is, no copy
                code, offs = pop.device_arrays()
            else:
                code, offs = self.programs.upload(pop)  # one asynchronous copy, buffers reused
            mark("upload")
            lists = ()
            if pol.lists:  # the individuals to interpret: all, or (reuse) those that are not copies
                idx = self._buf("idx", P, np.int32)
                W = m.words
                c_new = c_new if cache else self._buf("none", 1, np.uint64)
                c_prev = self._buf(f"masks{last}", 1, np.uint64) if cache == 2 else c_new
                lists = (_i(src is not None), idx, count, _i(cache),
                         self._buf("no src", 1, np.int64) if src is None else src, c_prev, c_new)
            try:
                if src is not None:
                    K("gp_changed", (ceil_div(P, FITNESS_BLOCK),), (FITNESS_BLOCK,), src, _i(P), idx, count)
                if cache == 2:  # the copies' masks move to their own places (the kernel writes the others')
                    K("gp_copy_masks", (ceil_div(P * W * S, FITNESS_BLOCK),), (FITNESS_BLOCK,), src, _i(P), _i(W),
                      _i(S), c_prev, c_new)
                self._launch(P, (code, offs, *lists, _i(P), _i(S), _i(D)), tail)
                mark("kernel")
                self._fitness(P, S, money, fit, flags, src, prev, count)
            except BaseException:
                if src is not None:  # gp_changed counted, and the fitness kernel that resets the count did not run
                    self._reset_count(count)
                raise
        if pol.programs != "global":
            mark("kernel")
            self._fitness(P, S, money, fit, flags, None, prev, count)
        mark("fitness")
        arrived = flags_back.start(flags)  # queued behind the kernels, waited for in finish
        if to_host:
            fit_back = self._fit_back(P)
            fit_back.start(fit)

        def finish():
            back = arrived()  # the one synchronization: 12 bytes (and the fitness behind them)
            if int(back[1]):
                raise LimitError(overflow_message(self.name))
            self.evaluated = P if src is None else int(back[2])
            self._last, self._cached = weakref.ref(given), bool(cache)
            self.fitness_host = fit_back.wait() if to_host else None
            return fit, money, (tr if trace else None)

        return finish

    def _fit_back(self, P: int):
        """The pinned [`Readback`][gpulab.device.Readback] of ``P`` fitness values (made once per size)."""
        back = self._buffers.get("fit_back")
        if back is None or back.host.size != P:
            back = self._buffers["fit_back"] = device.Readback(P, np.float64)
        return back

    def _fitness(self, P, S, money, fit, flags, src, prev, count) -> None:
        """The fitness kernel: `gp_fitness`, or with a list (``src``) `gp_fitness_copies`, which
        also resets ``count``."""
        grid = (ceil_div(P, FITNESS_BLOCK),), (FITNESS_BLOCK,)
        if src is None:
            self.K("gp_fitness", *grid, money, self.bh, _i(P), _i(S), fit, flags)
        else:
            self.K("gp_fitness_copies", *grid, money, self.bh, _i(P), _i(S), fit, flags, src, prev, count)

    @staticmethod
    def _reset_count(count) -> None:
        """``count[0] = 0`` after a call that failed between `gp_changed` and the fitness kernel
        (a failure of this copy too, after a device error, leaves the original error to be seen)."""
        try:
            count.copy_to_device(np.zeros(1, np.int32))
        except Exception:  # noqa: BLE001, S110 (the error being raised is the one that matters)
            pass

    def _launch(self, individuals: int, head: tuple, tail: tuple, **constant) -> None:
        """One launch of the policy's kernel over `individuals` individuals: a thread per
        (individual, stock), or a warp per individual and 32 stocks; the float stacks, if the
        kernel keeps them in global memory, one per needed thread or one per launched thread."""
        pol, S = self.policy, self.market.stocks
        threads = individuals * (S if pol.threads == "pair" else ceil_div(S, 32) * 32)
        grid = ceil_div(threads, self.block)
        stack = ()
        if pol.stack is not None:
            slots = threads if pol.stack == "thread" else grid * self.block
            stack = (self._buf("stack", self.p["STACK"] * slots, np.float32),)
        self.K(f"gp_{pol.kernel}", (grid,), (self.block,), *head, *self.inputs, *stack, *tail, **constant)
    # --8<-- [end:evaluate]

    def _compiled(self, pop):
        from gpulab.gp import compiled

        kern = compiled.kernel(self.backend, pop, self.p)
        self.compile_ms = kern.compile_ms
        return kern


def _marker(timeline):
    """``mark(label)``: records a CUDA event on the default stream into ``timeline`` (a list of
    ``(label, event)``), for the tuning script's breakdown of one evaluation; a no-op when
    ``timeline`` is None (always, in the GP loop and the benchmark)."""
    if timeline is None or device.on_simulator():
        return lambda label: None

    def mark(label):
        from numba import cuda

        ev = cuda.event()
        ev.record()
        timeline.append((label, ev))

    return mark


# --8<-- [start:upload]
class ProgramBuffer:
    """A population's byte code on the device, uploaded with one asynchronous copy.

    One device allocation holds the offsets (``int32``, at the start) and the code (after room
    for ``capacity`` individuals' offsets), and so does a pinned host buffer that mirrors it:
    each generation packs the offsets and the code into the pinned buffer (host memcpy) and
    copies the used bytes in one ``cuMemcpyHtoDAsync`` on the default stream, which the kernel
    launches that follow wait for. The two device views the kernels take are made once per
    allocation, not per generation. Both buffers grow (doubling) when a population needs more.
    """

    def __init__(self):
        self.capacity = self.code_bytes = -1

    def _allocate(self, individuals: int, code_bytes: int) -> None:
        from numba import cuda

        self.capacity, self.code_bytes = individuals, code_bytes
        self.code0 = 4 * (2 * individuals + 1)  # where the code starts, after the offsets
        total = self.code0 + code_bytes
        self.device = cuda.device_array(total, np.uint8)
        self.host = cuda.pinned_array(total, np.uint8)
        self.offs = self.device[:self.code0].view(np.int32)
        self.code = self.device[self.code0:]

    def upload(self, pop: Population):
        P, n = len(pop), pop.code.size
        if P > self.capacity or n > self.code_bytes:
            self._allocate(max(P, 2 * self.capacity, 1), max(n, 2 * self.code_bytes, 64))
        no = 4 * (2 * P + 1)
        self.host[:no] = pop.offsets.view(np.uint8)
        self.host[self.code0:self.code0 + n] = pop.code
        device.upload(self.device, self.host, self.code0 + n)  # (the used bytes only)
        return self.code, self.offs
# --8<-- [end:upload]


def overflow_message(variant: str) -> str:
    return (f"variant {variant}: a buy would have reached 2**29 shares or more (money / close too large): "
            "shares * close would no longer be exact in float64; use prices above 1e-5 of the money")


# ----------------------------------------------------------------------------- CPU variants


class CpuEvaluator:
    """The CPU backends, with the `Evaluator` interface (host arrays): the policy's `kernel`
    names the entry of `CPU_KERNELS` that evaluates."""

    def __init__(self, variant, backend: str, market, params: dict):
        self.variant, self.name, self.market, self.p = variant, variant.name, market, dict(params)
        self.compile_ms = 0.0
        self.evaluated = 0
        self.fitness_host = None
        self.fitness_device = None  # (never: the fitness is a host array)

    def __call__(self, pop: Population, trace: bool = False, poison: bool = False, reuse: bool = False):
        """``reuse`` is accepted and ignored: the CPU variants interpret every individual."""
        check_limits(self.variant, pop, self.p)
        out = CPU_KERNELS[self.variant.policy.kernel](self, pop, trace)
        self.evaluated = len(pop)
        return out

    def launch(self, pop: Population, trace: bool = False, poison: bool = False, timeline: list | None = None,
               reuse: bool = False, to_host: bool = False):
        """`Evaluator.launch`'s interface: the evaluation runs now, ``finish`` returns it."""
        out = self(pop, trace, poison, reuse)
        self.fitness_host = out[0] if to_host else None
        return lambda: out


def _cpu_reference(ev: CpuEvaluator, pop: Population, trace: bool):
    from gpulab.gp import reference

    r = reference.evaluate(pop, ev.market, trace=trace)
    return r.fitness, r.money.ravel(), (r.trace.ravel() if trace else None)


def _cpu_pairs(interpret):
    """A numba CPU interpreter over the (individual, stock) pairs, then the fitness:
    ``interpret(cpu, pop, market, params, money, trace, trace_on)`` returns the overflow count."""

    def run(ev: CpuEvaluator, pop: Population, trace: bool):
        from gpulab.gp import cpu

        m = ev.market
        P, S, D = len(pop), m.stocks, m.days
        money = np.full(P * S, np.nan)
        tr = np.full((P * S, D) if trace else (1, 1), 0xFF, np.uint8)
        if interpret(cpu, pop, m, ev.p, money, tr, trace):
            raise LimitError(overflow_message(ev.name))
        fit = np.empty(P)
        cpu.fitness(money, m.buy_and_hold(), P, S, fit)
        return fit, money, (tr.ravel() if trace else None)

    return run


# The CPU variants' evaluations, by their policy's `kernel`.
CPU_KERNELS = {
    "reference": _cpu_reference,
    "interpret": _cpu_pairs(lambda cpu, pop, m, p, money, tr, on: cpu.interpret(
        pop.code, pop.offsets, m.floats("sid"), m.bools("sid"), p["STACK"], money, tr, on)),
    "interpret_bitsliced": _cpu_pairs(lambda cpu, pop, m, p, money, tr, on: cpu.interpret_bitsliced(
        pop.code, pop.offsets, m.masks("swm"), m.close32(), m.days, p["BSTACK"], money, tr, on)),
}


def evaluator_factory(backend: str):
    """The ``run`` callable of a registry entry: ``(variant, market, params) -> evaluator``, the
    variant's policy choosing the device or the host path."""

    def make(variant, market, params: dict):
        if variant.policy.path == "cpu":
            return CpuEvaluator(variant, backend, market, params)
        return Evaluator(variant, backend, market, params)

    make.backend = backend
    return make


# ----------------------------------------------------------------------------- the API's argument checks


def check_market_arg(market, name: str = "market") -> None:
    """A [`Market`][gpulab.gp.Market], or a [`GpulabError`][gpulab.errors.GpulabError] that names the argument."""
    from gpulab.gp.market import Market

    if not isinstance(market, Market):
        raise DtypeError(f"{name} must be a gpulab.gp.Market (e.g. gp.synthetic_market(stocks, days)), "
                          f"got {type(market).__name__}")


def check_variant_args(variant, backend, params=None) -> None:
    """``variant``: a name or ``None`` (the backend's best); ``backend``: one of the backends;
    ``params``: a dict or ``None``."""
    from gpulab.registry import BACKENDS

    if not isinstance(backend, str) or backend not in BACKENDS:
        raise GpulabError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    if variant is not None and not isinstance(variant, str):
        raise GpulabError(f"variant must be a variant's name (see gp.variants()) or None, got {type(variant).__name__}")
    if params is not None and not isinstance(params, dict):
        raise DtypeError(f"params must be a dict of compile-time parameters or None, got {type(params).__name__}")


def check_int(value, name: str, minimum: int) -> int:
    """A whole number >= ``minimum`` (bools and floats rejected), else a GpulabError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise GpulabError(f"{name} must be a whole number, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise GpulabError(f"{name} = {value} is below the minimum of {minimum}")
    return int(value)
