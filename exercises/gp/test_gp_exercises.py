"""Tests of the chapter 3 exercises (graded per exercise by `gpulab grade gp`)."""

import math

import numpy as np
import pytest
from numba import cuda

import gpulab.gp as gp
from gpulab.checking import poisoned
from gpulab.errors import LimitError
from gpulab.gp import reference


def _market(S=3, D=60, seed=4):
    return gp.synthetic_market(S, D, seed=seed)


@pytest.mark.exercise("gp.1-rsi-terminal")
def test_rsi_on_a_hand_computed_example(impl):
    mod = impl("gp", "rsi")
    close = np.array([[10.0, 11.0, 10.0, 12.0, 12.0, 11.0]])
    # n = 2: changes +1, -1, +2, 0, -1. Index 2: gain 0.5, loss 0.5 -> 50.
    # index 3: gain (0.5 + 2)/2 = 1.25, loss 0.25 -> 83.33; index 4: 0.625, 0.125 -> 83.33;
    # index 5: 0.3125, 0.5625 -> 35.71
    r = mod.rsi(close, 2)[0]
    assert np.isnan(r[:2]).all()
    np.testing.assert_allclose(r[2:], [50.0, 100 * 1.25 / 1.5, 100 * 0.625 / 0.75, 100 * 0.3125 / 0.875], rtol=1e-12)


@pytest.mark.exercise("gp.1-rsi-terminal")
def test_rsi_matches_talib(impl, rng):
    talib = pytest.importorskip("talib", reason="TA-Lib (the ta-lib package) is not installed")
    mod = impl("gp", "rsi")
    c = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, (3, 600)), axis=1))
    r = mod.rsi(c, 14)
    for s in range(3):
        np.testing.assert_allclose(r[s, 14:], talib.RSI(c[s], 14)[14:], rtol=1e-10)
        assert np.isnan(r[s, :14]).all()


def _wilder_rsi(close, n=14):
    """The test's own RSI (Wilder's smoothing, TA-Lib's seeding), independent of the student's."""
    close = np.atleast_2d(np.asarray(close, np.float64))
    out = np.full(close.shape, np.nan)
    change = np.diff(close, axis=1)
    gain, loss = np.maximum(change, 0.0), np.maximum(-change, 0.0)
    g, l = gain[:, :n].mean(axis=1), loss[:, :n].mean(axis=1)
    for t in range(n, close.shape[1]):
        if t > n:
            g, l = (g * (n - 1) + gain[:, t - 1]) / n, (l * (n - 1) + loss[:, t - 1]) / n
        total = g + l
        out[:, t] = np.where(total > 0, 100.0 * g / np.where(total > 0, total, 1.0), 50.0)
    return out


def _market_crossing_70_and_30(rng, S=3, D=70):
    """A fresh synthetic market whose RSI(14) crosses both 70 and 30 inside its evaluation days,
    so that both terminals trade: seeds are drawn until that holds (about 1 draw in 45 misses)."""
    for _ in range(1000):
        market = _market(S, D, seed=int(rng.integers(2**31)))
        r = _wilder_rsi(market.ohlcv(window=False)["close"])[:, market.start:market.start + market.days]
        if (r > 70).any() and (r < 30).any():
            return market
    raise AssertionError("no market in 1000 seeds crosses both 70 and 30")  # pragma: no cover


@pytest.mark.exercise("gp.1-rsi-terminal")
def test_rsi_terminals_trade_on_every_variant(impl, rng):
    mod = impl("gp", "rsi")
    market = _market_crossing_70_and_30(rng)
    m2 = mod.with_rsi(market)
    hi, lo = mod.rsi_readings(market.ohlcv(window=False)["close"])
    sl = slice(market.start, market.start + market.days)
    assert np.array_equal(m2.bools()[:, gp.BOOL_TERMINALS.index("MFIG")], hi[:, sl])
    assert np.array_equal(m2.bools()[:, gp.BOOL_TERMINALS.index("MFIL")], lo[:, sl])
    assert hi[:, sl].any() and lo[:, sl].any(), "the market was drawn to cross 70 and 30: rsi_readings misses them"
    pop = gp.Population.from_individuals([("MFIL", "MFIG"), ("(AND MFIL (> MA5 MA10))", "(OR MFIG MACDL)")])
    ref = reference.evaluate(pop, m2).fitness
    np.testing.assert_allclose(gp.evaluate(pop, m2, "bitsliced"), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gp.evaluate(pop, m2, "register"), ref, rtol=1e-12, atol=1e-15)


@pytest.mark.exercise("gp.2-block-per-individual")
@pytest.mark.parametrize("S", [1, 33, 70])
def test_block_per_individual_matches_the_reference(impl, rng, S):
    mod = impl("gp", "block_kernel")
    market = _market(S, 12, seed=int(rng.integers(1000)))
    pop = gp.Population.from_individuals([("(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))", "MACDL"),
                                          ("NVIG", "NVIL"), ("(NOT (< CP TP))", "(OR CCIG (> MA1 MA5))")])
    out = cuda.to_device(poisoned(len(pop) * S, np.float64))
    money = mod.evaluate_block(pop, market, out=out)
    ref = reference.evaluate(pop, market).money
    assert money.shape == (len(pop), S)
    assert np.array_equal(money.view(np.uint64), ref.view(np.uint64))
    assert not np.isnan(out.copy_to_host()).any()


@pytest.mark.exercise("gp.2-block-per-individual")
def test_block_per_individual_rejects_long_programs(impl):
    mod = impl("gp", "block_kernel")
    long = "(NOT " * (mod.CODE + 1) + "NVIG" + ")" * (mod.CODE + 1)
    with pytest.raises(LimitError):
        mod.evaluate_block(gp.Population.from_individuals([(long, "NVIL")]), _market(1, 3))


@pytest.mark.exercise("gp.3-short-selling")
def test_shorts_on_a_hand_computed_example(impl):
    mod = impl("gp", "shorts")
    close = [100.0, 80.0, 90.0, 120.0, 110.0]
    buy = [0, 1, 0, 0, 0]
    sell = [1, 0, 0, 1, 0]
    money, actions = mod.trade_with_shorts(buy, sell, close)
    # day 0 short 99 shares at 100: +9900 - 1 = 19899; day 1 cover at 80: -7920 - 1 = 11978;
    # day 3 short floor(11977 / 120) = 99 at 120: 11978 + 11880 - 1 = 23857; end: cover at 110:
    # 23857 - 10890 - 1 = 12966
    assert actions == [3, 4, 0, 3, 0]
    assert money == 12966.0


@pytest.mark.exercise("gp.3-short-selling")
def test_shorts_without_short_signals_is_the_long_only_loop(impl, rng):
    mod = impl("gp", "shorts")
    for _ in range(20):
        D = int(rng.integers(1, 60))
        close = np.round(rng.uniform(20, 300, D), 2).astype(np.float32)
        buy = rng.random(D) < 0.3
        sell = rng.random(D) < 0.3
        # a sell signal while flat would go short: suppress those to compare with the long-only
        # loop. "Flat" is what the long-only loop says (a buy it cannot afford leaves it flat), and
        # the long-only loop ignores a sell while flat, so suppressing one changes none of its actions
        b2, s2 = buy.copy(), sell.copy()
        _, long_only = reference.trade(b2, s2, close)
        holding = False
        for d in range(D):
            if not holding and s2[d] and not b2[d]:
                s2[d] = False
            holding = (holding or long_only[d] == 1) and long_only[d] != 2
        money, actions = mod.trade_with_shorts(b2, s2, close)
        ref_money, ref_actions = reference.trade(b2, s2, close)
        assert money == ref_money and actions == ref_actions


@pytest.mark.exercise("gp.3-short-selling")
def test_a_short_that_falls_makes_money_and_one_that_rises_loses(impl):
    mod = impl("gp", "shorts")
    down, _ = mod.trade_with_shorts([0, 0], [1, 0], [50.0, 40.0])
    up, _ = mod.trade_with_shorts([0, 0], [1, 0], [50.0, 60.0])
    n = math.floor(9999.0 / 50.0)
    assert down == 10000.0 + n * 10.0 - 2.0 and up == 10000.0 - n * 10.0 - 2.0
    assert mod.trade_with_shorts([0], [1], [20000.0]) == (10000.0, [0])  # 0 shares: no order, no fee
