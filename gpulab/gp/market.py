r"""Markets: daily OHLCV for S stocks, their indicators, and the arrays the kernels read.

A [`Market`][gpulab.gp.market.Market] holds the whole history (``T`` days per stock) and an **evaluation window**
of ``D`` days starting at ``start`` ≥ `WARMUP`: every indicator
is defined on every evaluation day because the window has that much history before it.
[`Market.split`][gpulab.gp.market.Market.split] cuts the window in two (train, test) that share the history, so the test
period's indicators are computed from the days before it, exactly as a trader would have.

Prices are stored at float32 precision (about 7 significant digits; values are rounded to the
nearest float32 when a market is built) so that the close the trading loop uses is the same
number the indicators were computed from, and ``shares * close`` is exact in float64 (see
[`gpulab.gp.trading`][gpulab.gp.trading]). Volumes stay float64.

Three sources: [`synthetic_market`][gpulab.gp.market.synthetic_market] (seeded, any size), [`load_csv`][gpulab.gp.market.load_csv] (your data) and
[`sample_market`][gpulab.gp.market.sample_market] (AAPL, IBM, MSFT, GOOG daily 2004–2013 from the ``bokeh-sampledata``
package, no network).

The layouts the kernels read (built on first use and cached per market):

* ``"sid"`` — stock / indicator / day: ``float32 [S, 17, D]`` and ``uint8 [S, 14, D]``
  (``thread_global``, the CPU interpreters);
* ``"dis"`` — day / indicator / stock: ``[D, 17, S]``, ``[D, 14, S]`` (the paper's "CO";
  every later variant: a warp's 32 stocks read 32 consecutive values);
* bit masks for ``bitsliced``: for every ordered pair (a, b) of float terminals the days on
  which a < b, and every boolean terminal, 64 days per ``uint64`` word
  (`NMASK` = 17·17 + 14 masks), as ``[W, NMASK, S]`` (GPU) or ``[S, W, NMASK]`` (CPU).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
from dataclasses import dataclass, field

import numpy as np

from gpulab.errors import GpulabError, LimitError, ShapeError
from gpulab.gp import indicators as ind
from gpulab.gp import opcodes as oc
from gpulab.gp import trading

WARMUP = ind.WARMUP
NPAIR = oc.NF * oc.NF  # ordered pairs (a, b) of float terminals, a == b included (always false)
NMASK = NPAIR + oc.NB  # 303 bit masks per stock and 64-day word
WORD_DAYS = 64  # days per bit-sliced word (uint64)
DAY_PAD = 32  # days of zeros after the last one in the device copies of "dis" (register reads ahead)


class DataError(GpulabError, ValueError):
    """Market data that cannot be used: missing column, NaN, non-positive price, bad dates ..."""


@dataclass
class _History:
    """The full-history arrays and everything derived from them (shared by split markets)."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    overrides: dict = field(default_factory=dict)
    _terminals: tuple | None = None

    def terminals(self):
        if self._terminals is None:
            f, b = ind.terminals(self.open, self.high, self.low, self.close, self.volume)
            for k, values in self.overrides.items():
                b[:, k] = values
            self._terminals = (f, b)
        return self._terminals


def _as_host(x, name):
    from gpulab import arrays

    if arrays.is_device_array(x):
        return arrays.to_host(x), True
    return np.asarray(x), False


class Market:
    """OHLCV of S stocks over T days, with an evaluation window of D days.

    ``open``, ``high``, ``low``, ``close``, ``volume`` are ``[S, T]`` arrays (or ``[T]`` for one
    stock), numpy or device arrays. Device arrays are copied to the host once, here: the
    indicators are computed on the host in float64. A market built from device arrays returns
    device results from [`gpulab.gp.evaluate`][gpulab.gp.evaluate], in the caller's library.

    Args:
        warmup: days of history before the first evaluation day (default and minimum 255).
        names: one name per stock (optional).
        dates: ``datetime64[D]`` per day (optional).

    Raises:
        ShapeError: shapes differ; DataError: NaN/inf, a non-positive price, a price beyond float32's
            range (prices are stored at float32 precision), negative volume;
        LimitError: fewer than ``warmup + 1`` days.
    """

    def __init__(self, open, high, low, close, volume, *, warmup: int = WARMUP, names=None, dates=None,
                 _history: _History | None = None, _window: tuple[int, int] | None = None):
        if _history is None:
            arrs, dev = [], []
            for x, nm in ((open, "open"), (high, "high"), (low, "low"), (close, "close"), (volume, "volume")):
                a, d = _as_host(x, nm)
                arrs.append(a)
                dev.append(d)
            self.source = close if any(dev) else None
            shapes = {a.shape for a in arrs}
            if len(shapes) != 1:
                raise ShapeError(f"open, high, low, close, volume must have one shape; got {[a.shape for a in arrs]}")
            arrs = [np.atleast_2d(np.asarray(a, np.float64)) for a in arrs]
            if arrs[0].ndim != 2:
                raise ShapeError(f"OHLCV arrays must be [S, T] (stocks × days), got shape {arrs[0].shape}")
            S, T = arrs[0].shape
            if S < 1:
                raise ShapeError("a market needs at least one stock")
            if warmup < WARMUP:
                raise LimitError(f"warmup = {warmup} days is below the indicators' minimum of {WARMUP} "
                                 "(the 255-day EMA of NVI/PVI)")
            if T < warmup + 1:
                raise LimitError(f"{T} days of data: a market needs at least warmup + 1 = {warmup + 1} days "
                                 f"(W = {warmup} days of history for the indicators, then at least one evaluation day)")
            for a, nm in zip(arrs, ("open", "high", "low", "close", "volume")):
                bad = ~np.isfinite(a)
                if bad.any():
                    s, t = np.argwhere(bad)[0]
                    raise DataError(f"{nm} has NaN/inf (first at stock {s}, day {t})")
            prices = []  # (at float32 precision)
            for a, nm in zip(arrs[:4], ("open", "high", "low", "close")):
                if (a <= 0).any():
                    s, t = np.argwhere(a <= 0)[0]
                    raise DataError(f"{nm} has a non-positive price {a[s, t]} at stock {s}, day {t}")
                with np.errstate(over="ignore", under="ignore"):  # (what leaves float32's range is refused here)
                    p = a.astype(np.float32).astype(np.float64)
                bad = ~np.isfinite(p) | (p <= 0)  # (past float32's range: inf, or a positive price that rounds to 0)
                if bad.any():
                    s, t = np.argwhere(bad)[0]
                    f32 = np.finfo(np.float32)
                    raise DataError(f"{nm} = {a[s, t]} at stock {s}, day {t} is outside the range prices are stored "
                                    f"in (float32: {f32.smallest_subnormal:.3g} to {f32.max:.3g})")
                prices.append(p)
            if (arrs[4] < 0).any():
                s, t = np.argwhere(arrs[4] < 0)[0]
                raise DataError(f"volume is negative at stock {s}, day {t}")
            self._h = _History(*prices, arrs[4])
            self._start, self._days = warmup, T - warmup
            self.names = tuple(names) if names is not None else tuple(f"S{s}" for s in range(S))
            self.dates = None if dates is None else np.asarray(dates, "datetime64[D]")
        else:
            self._h = _history
            self._start, self._days = _window
            self.names, self.dates, self.source = names, dates, None
        if len(self.names) != self.stocks:
            raise ShapeError(f"{len(self.names)} names for {self.stocks} stocks")
        self._cache: dict = {}

    # ------------------------------------------------------------------ sizes and raw data
    @property
    def stocks(self) -> int:
        return self._h.close.shape[0]

    @property
    def days(self) -> int:
        """Evaluation days D."""
        return self._days

    @property
    def start(self) -> int:
        """Index (in the full history) of the first evaluation day."""
        return self._start

    @property
    def history_days(self) -> int:
        return self._h.close.shape[1]

    @property
    def on_device(self) -> bool:
        """True when the market was built from device arrays (results come back on the device)."""
        return self.source is not None

    def ohlcv(self, window: bool = True) -> dict:
        """``{"open": ..., "volume": ...}`` (float64 ``[S, D]``, or the whole history)."""
        sl = slice(self._start, self._start + self._days) if window else slice(None)
        h = self._h
        return {k: getattr(h, k)[:, sl] for k in ("open", "high", "low", "close", "volume")}

    def split(self, train_days: int) -> tuple["Market", "Market"]:
        """(train, test): the first ``train_days`` evaluation days and the rest. Both keep the
        whole history before their window, so the test period starts with warm indicators."""
        if not 1 <= train_days < self._days:
            raise LimitError(f"train_days = {train_days} must be in [1, {self._days - 1}] "
                             f"(this market has {self._days} evaluation days)")
        a = Market(None, None, None, None, None, names=self.names, dates=self.dates, _history=self._h,
                   _window=(self._start, train_days))
        b = Market(None, None, None, None, None, names=self.names, dates=self.dates, _history=self._h,
                   _window=(self._start + train_days, self._days - train_days))
        a.source = b.source = self.source
        return a, b

    def window(self, start: int, days: int) -> "Market":
        """The same history with another evaluation window (``start`` >= warmup)."""
        if start < WARMUP or days < 1 or start + days > self.history_days:
            raise LimitError(f"window [{start}, {start + days}) must lie in [{WARMUP}, {self.history_days})")
        m = Market(None, None, None, None, None, names=self.names, dates=self.dates, _history=self._h,
                   _window=(start, days))
        m.source = self.source
        return m

    def with_booleans(self, **readings) -> "Market":
        """A market whose named boolean terminals read other values: ``bool [S, T]`` over the
        whole history (e.g. ``MFIG=rsi > 70``) — to try a new indicator without new opcodes."""
        over = dict(self._h.overrides)
        for nm, values in readings.items():
            if nm not in oc.BOOL_TERMINALS:
                raise DataError(f"{nm!r} is not a boolean terminal; known: {', '.join(oc.BOOL_TERMINALS)}")
            v = np.asarray(values, bool)
            if v.shape != self._h.close.shape:
                raise ShapeError(f"{nm} readings have shape {v.shape}; expected {self._h.close.shape} (stocks × all days)")
            over[oc.BOOL_TERMINALS.index(nm)] = v
        h = _History(self._h.open, self._h.high, self._h.low, self._h.close, self._h.volume, over)
        m = Market(None, None, None, None, None, names=self.names, dates=self.dates, _history=h,
                   _window=(self._start, self._days))
        m.source = self.source
        return m

    # ------------------------------------------------------------------ what the kernels read
    def _cached(self, key, build):
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def indicators(self) -> tuple[np.ndarray, np.ndarray]:
        """Float64 ``[S, 17, D]`` and bool ``[S, 14, D]`` terminals over the evaluation window."""
        f, b = self._h.terminals()
        sl = slice(self._start, self._start + self._days)
        return f[:, :, sl], b[:, :, sl]

    def floats(self, layout: str = "sid") -> np.ndarray:
        """Float terminals as float32, ``"sid"`` ``[S, 17, D]`` or ``"dis"`` ``[D, 17, S]``."""
        def build():
            f32 = np.ascontiguousarray(self.indicators()[0], dtype=np.float32)
            return f32 if layout == "sid" else np.ascontiguousarray(f32.transpose(2, 1, 0))
        return self._cached(("floats", _check_layout(layout)), build)

    def bools(self, layout: str = "sid") -> np.ndarray:
        """Boolean terminals as uint8 0/1, ``"sid"`` ``[S, 14, D]`` or ``"dis"`` ``[D, 14, S]``."""
        def build():
            b8 = np.ascontiguousarray(self.indicators()[1], dtype=np.uint8)
            return b8 if layout == "sid" else np.ascontiguousarray(b8.transpose(2, 1, 0))
        return self._cached(("bools", _check_layout(layout)), build)

    def close32(self) -> np.ndarray:
        """The close (float32 ``[S, D]``): the price every trade is executed at."""
        return self.floats("sid")[:, oc.OP_CP, :]

    @property
    def words(self) -> int:
        """64-day words per stock in the bit-sliced layout."""
        return -(-self._days // WORD_DAYS)

    def masks(self, layout: str = "wms") -> np.ndarray:
        """Bit masks ``uint64``: ``"wms"`` ``[W, NMASK, S]`` (GPU) or ``"swm"`` ``[S, W, NMASK]`` (CPU).
        Bit ``j`` of word ``w`` is day ``64 w + j``; bits past the last day are 0."""
        if layout not in ("wms", "swm"):
            raise ValueError(f"unknown mask layout {layout!r}; expected 'wms' or 'swm'")

        def build_swm():
            f = self.floats("sid")  # [S, 17, D]
            b = self.bools("sid")  # [S, 14, D]
            S, D = self.stocks, self._days
            lt = (f[:, :, None, :] < f[:, None, :, :]).reshape(S, NPAIR, D)  # [S, a*17+b, D]
            allm = np.concatenate([lt, b.astype(bool)], axis=1)  # [S, NMASK, D]
            W = self.words
            pad = np.zeros((S, NMASK, W * WORD_DAYS), bool)
            pad[:, :, :D] = allm
            packed = np.packbits(pad.reshape(S, NMASK, W, WORD_DAYS), axis=-1, bitorder="little")  # [S, NMASK, W, 8]
            words = packed.view("<u8").reshape(S, NMASK, W)
            return np.ascontiguousarray(words.transpose(0, 2, 1).astype(np.uint64))

        swm = self._cached(("masks", "swm"), build_swm)
        if layout == "swm":
            return swm
        return self._cached(("masks", "wms"), lambda: np.ascontiguousarray(swm.transpose(1, 2, 0)))

    def buy_and_hold(self) -> np.ndarray:
        """ROI of buy-and-hold per stock (float64 ``[S]``): buy the most shares at the first
        evaluation day's close, sell at the last, $1 per trade, the arithmetic of every kernel."""
        def build():
            close = self.close32()
            out = np.empty(self.stocks)
            for s in range(self.stocks):
                c0, c1 = float(close[s, 0]), float(close[s, -1])
                money, shares, act = trading.trade_day(True, False, c0, trading.START_MONEY, 0)
                if act == trading.OVERFLOW:
                    raise LimitError(f"buy-and-hold of stock {s} would buy 2**29 shares or more at {c0}: the "
                                     "share count must stay below 2**29 for exact money arithmetic")
                money = trading.liquidate(money, shares, c1)
                out[s] = (money - trading.START_MONEY) / trading.START_MONEY
            return out
        return self._cached("bh", build)

    def device(self, what: str):
        """Device copies of the kernel inputs, flattened (the kernels index them as 1-D arrays)
        and cached: ``"sid"``/``"dis"`` → (floats, bools) (``"dis"`` with `DAY_PAD`
        days of zeros after the last day, which the ``register`` variant may read but never
        uses), ``"wms"`` → masks, ``"close"`` → the close as ``float32 [D, S]``, ``"bh"`` →
        buy-and-hold ROI."""
        from numba import cuda

        def build():
            if what == "sid":
                return cuda.to_device(self.floats(what).ravel()), cuda.to_device(self.bools(what).ravel())
            if what == "dis":
                f, b = self.floats("dis"), self.bools("dis")
                fp = np.zeros((f.shape[0] + DAY_PAD,) + f.shape[1:], f.dtype)
                bp = np.zeros((b.shape[0] + DAY_PAD,) + b.shape[1:], b.dtype)
                fp[:f.shape[0]], bp[:b.shape[0]] = f, b
                return cuda.to_device(fp.ravel()), cuda.to_device(bp.ravel())
            if what == "wms":
                return cuda.to_device(self.masks("wms").ravel())
            if what == "close":
                return cuda.to_device(np.ascontiguousarray(self.close32().T).ravel())
            if what == "bh":
                return cuda.to_device(self.buy_and_hold())
            raise ValueError(f"unknown device array {what!r}")
        return self._cached(("device", what), build)

    def __getstate__(self) -> dict:
        """A pickled market is a host market: its history and window, without the device copies
        its evaluations cached (they belong to one process's GPU context, and on the simulator
        they do not survive a pickle) and without the caller's device array `source`."""
        state = dict(self.__dict__)
        state["_cache"] = {k: v for k, v in self._cache.items() if not (isinstance(k, tuple) and k[0] == "device")}
        state["source"] = None
        return state

    def __repr__(self) -> str:
        return f"Market({self.stocks} stocks, {self._days} evaluation days after {self._start} days of history)"


def _check_layout(layout: str) -> str:
    if layout not in ("sid", "dis"):
        raise ValueError(f"unknown layout {layout!r}; expected 'sid' (stock/indicator/day) or 'dis' (day/indicator/stock)")
    return layout


# ----------------------------------------------------------------------------- synthetic data


# --8<-- [start:synthetic]
def synthetic_market(stocks: int, days: int, seed: int = 0, warmup: int = WARMUP) -> Market:
    """A seeded synthetic market of ``stocks`` × ``days`` evaluation days (plus ``warmup``).

    Each stock's daily log return is a market factor (shared, with bull / bear / calm regimes)
    times the stock's beta, plus its own trend regime and GARCH(1,1) noise, so volatility comes
    in clusters; volume rises with the size of the move; open gaps from the previous close;
    high and low lie outside open and close (high ≥ max(open, close), low ≤ min(open, close)).
    """
    if stocks < 1 or days < 1:
        raise LimitError(f"a synthetic market needs stocks >= 1 and days >= 1, got {stocks} × {days}")
    rng = np.random.default_rng(seed)
    T, S = days + warmup, stocks
    # market regimes: 0 calm, 1 bull, 2 bear; persistent (mean length ~ 70 days)
    drift = np.array([0.0, 4e-4, -5e-4])
    vol_mult = np.array([0.8, 1.0, 1.6])
    regime = np.empty(T, np.int64)
    r = 0
    for t in range(T):
        if rng.random() < 1 / 70:
            r = int(rng.integers(3))
        regime[t] = r
    mkt = drift[regime] + 0.009 * vol_mult[regime] * rng.standard_normal(T)
    beta = rng.uniform(0.5, 1.5, S)
    sigma = rng.uniform(0.01, 0.03, S)  # long-run idiosyncratic daily volatility
    alpha_g, beta_g = 0.08, 0.90
    omega = sigma**2 * (1 - alpha_g - beta_g)
    trend = np.zeros(S)
    var = sigma**2
    eps = np.zeros(S)
    logret = np.empty((S, T))
    vols = np.empty((S, T))
    for t in range(T):
        var = omega + alpha_g * eps**2 + beta_g * var
        switch = rng.random(S) < 1 / 120
        trend = np.where(switch, rng.normal(1e-4, 4e-4, S), trend)
        eps = np.sqrt(var) * rng.standard_normal(S)
        logret[:, t] = beta * mkt[t] + trend + eps
        vols[:, t] = np.sqrt(var)
    p0 = rng.uniform(10.0, 200.0, S)
    close = p0[:, None] * np.exp(np.cumsum(logret, axis=1))
    prev = np.concatenate([p0[:, None], close[:, :-1]], axis=1)
    open_ = prev * np.exp(0.3 * vols * rng.standard_normal((S, T)))
    high = np.maximum(open_, close) * np.exp(np.abs(0.5 * vols * rng.standard_normal((S, T))))
    low = np.minimum(open_, close) * np.exp(-np.abs(0.5 * vols * rng.standard_normal((S, T))))
    base = rng.uniform(1e5, 1e7, S)
    move = np.abs(logret) / sigma[:, None]
    volume = np.round(base[:, None] * np.exp(0.6 * move + 0.25 * rng.standard_normal((S, T))))
    return Market(open_, high, low, close, volume, warmup=warmup, names=[f"SYN{s:03d}" for s in range(S)])
# --8<-- [end:synthetic]


# ----------------------------------------------------------------------------- CSV

COLUMNS = ("date", "open", "high", "low", "close", "volume")


def _read_rows(text: str, source: str) -> dict[str, list]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(f"{source}: empty file (expected a header: Date, Open, High, Low, Close, Volume)") from None
    cols = {h.strip().lower(): k for k, h in enumerate(header)}
    missing = [c for c in COLUMNS if c not in cols]
    if missing:
        raise DataError(f"{source}: missing column(s) {', '.join(c.capitalize() for c in missing)} "
                        f"(header: {', '.join(header)})")
    ticker = cols.get("ticker", cols.get("symbol"))
    out: dict[str, list] = {}
    for lineno, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        name = row[ticker].strip() if ticker is not None else ""
        vals = []
        for c in COLUMNS:
            try:
                cell = row[cols[c]].strip()
            except IndexError:
                raise DataError(f"{source}, line {lineno}: missing value for {c.capitalize()}") from None
            if c == "date":
                try:
                    vals.append(np.datetime64(cell, "D"))
                except ValueError:
                    raise DataError(f"{source}, line {lineno}: {cell!r} is not a date (expected YYYY-MM-DD)") from None
                continue
            try:
                v = float(cell)
            except ValueError:
                raise DataError(f"{source}, line {lineno}: {c.capitalize()} = {cell!r} is not a number") from None
            if not math.isfinite(v):
                raise DataError(f"{source}, line {lineno}: {c.capitalize()} is {cell!r} (NaN/inf)")
            if c != "volume" and v <= 0:
                raise DataError(f"{source}, line {lineno}: {c.capitalize()} = {v} is not a positive price")
            if c == "volume" and v < 0:
                raise DataError(f"{source}, line {lineno}: Volume = {v} is negative")
            vals.append(v)
        out.setdefault(name, []).append((lineno, vals))
    return out


def _stock_arrays(rows, source, name):
    dates = np.array([v[0] for _, v in rows], "datetime64[D]")
    d = np.diff(dates).astype(np.int64)
    if (d == 0).any():
        k = int(np.argmax(d == 0)) + 1
        raise DataError(f"{source}{' ' + name if name else ''}, line {rows[k][0]}: duplicate date {dates[k]}")
    if (d < 0).any():
        k = int(np.argmax(d < 0)) + 1
        raise DataError(f"{source}{' ' + name if name else ''}, line {rows[k][0]}: dates are not sorted "
                        f"({dates[k]} after {dates[k - 1]}); sort the file by date, oldest first")
    values = np.array([v[1:] for _, v in rows], np.float64)
    return dates, values


def load_csv(paths, warmup: int = WARMUP) -> Market:
    """A market from CSV files with columns Date, Open, High, Low, Close, Volume (any order, any
    case; other columns ignored). One file per stock, or one file with a Ticker (or Symbol)
    column holding several stocks. Stocks are aligned on the dates they all have.

    Raises:
        DataError: a missing column, a value that is not a finite number, a non-positive price,
            negative volume, unsorted or duplicate dates (the message names file and line).
        LimitError: fewer than ``warmup + 1`` common rows.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    stocks: dict[str, tuple] = {}
    for p in paths:
        p = os.fspath(p)
        opener = gzip.open if p.endswith(".gz") else open
        try:
            with opener(p, "rt", newline="") as f:
                text = f.read()
        except OSError as exc:
            raise DataError(f"{p}: cannot read it ({exc.strerror or exc})") from None
        groups = _read_rows(text, p)
        if not groups:
            raise DataError(f"{p}: no data rows")
        for name, rows in groups.items():
            key = name or os.path.splitext(os.path.basename(p))[0]
            stocks[key] = _stock_arrays(rows, p, name)
    return _align(stocks, warmup, ", ".join(map(os.fspath, paths)))


def _align(stocks: dict, warmup: int, source: str) -> Market:
    names = list(stocks)
    common = stocks[names[0]][0]
    for n in names[1:]:
        common = np.intersect1d(common, stocks[n][0])
    if common.size < warmup + 1:
        raise LimitError(f"{source}: {common.size} rows (dates common to all stocks); a market needs at least "
                         f"warmup + 1 = {warmup + 1} (W = {warmup} days of history for the indicators)")
    arrs = []
    for n in names:
        dates, values = stocks[n]
        arrs.append(values[np.isin(dates, common)])
    ohlcv = np.stack(arrs)  # [S, T, 5]
    return Market(*(ohlcv[:, :, k] for k in range(5)), warmup=warmup, names=names, dates=common)


SAMPLE_TICKERS = ("AAPL", "IBM", "MSFT", "GOOG")


def sample_market(tickers=SAMPLE_TICKERS, warmup: int = WARMUP) -> Market:
    """Real daily data, no network: AAPL, IBM, MSFT and GOOG from the ``bokeh-sampledata``
    package (Quandl WIKI prices, public domain), on the dates all four have (GOOG from
    2004-08-19 to 2013-03-01: 2148 days). Prices are split- and dividend-adjusted (open, high,
    low and close scaled by adj_close / close; volume by its inverse), so a split is not a crash.

    Raises:
        GpulabError: ``bokeh-sampledata`` is not installed (``pip install 'gpulab[sample]'``).
    """
    try:
        from importlib import resources

        data = resources.files("bokeh_sampledata").joinpath("_data", "stocks.csv.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise GpulabError(f"the sample market needs the bokeh-sampledata package ({exc}); "
                          "install it with pip install 'gpulab[sample]'") from None
    text = gzip.decompress(data).decode()
    reader = csv.DictReader(io.StringIO(text))
    rows: dict[str, list] = {t: [] for t in tickers}
    for r in reader:
        t = r["Ticker"]
        if t in rows:
            k = float(r["Adj Close"]) / float(r["Close"])
            rows[t].append((np.datetime64(r["Date"], "D"), float(r["Open"]) * k, float(r["High"]) * k,
                            float(r["Low"]) * k, float(r["Adj Close"]), float(r["Volume"]) / k))
    stocks = {}
    for t in tickers:
        if not rows[t]:
            raise DataError(f"bokeh-sampledata has no ticker {t!r}")
        rs = sorted(rows[t], key=lambda x: x[0])
        stocks[t] = (np.array([x[0] for x in rs], "datetime64[D]"), np.array([x[1:] for x in rs]))
    return _align(stocks, warmup, "bokeh-sampledata stocks.csv.gz")
