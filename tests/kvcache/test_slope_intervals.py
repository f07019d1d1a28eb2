"""Fig. 3's printed slopes are unit fractions: their tolerances are the ranges those fractions
stand for, and the ratio's is carried through by interval arithmetic (never linearised)."""

import math

import pytest

from infsched import report


def _outward(lo: float, hi: float) -> tuple[float, float]:
    """The range rounded outward to four significant digits, as the CSV writes it."""
    def digits(x, f):
        e = math.floor(math.log10(abs(x))) - 3
        return f(x / 10 ** e) * 10 ** e
    return digits(lo, math.floor), digits(hi, math.ceil)


def _unit_fraction_range(d: int) -> tuple[float, float]:
    """The slopes that print as 1/d among unit fractions: midway to 1/(d+1) and to 1/(d-1)."""
    return (1 / (d + 1) + 1 / d) / 2, (1 / d + 1 / (d - 1)) / 2


def test_fig3_slope_ranges_are_derived():
    df = report.paper_numbers("kvcache").set_index("quantity")
    fig3 = df[df["item"] == "fig3"]

    def rng(q):
        r = fig3.loc[q]
        return r["paper_value"] - r["tol_below"], r["paper_value"] + r["tol_above"]

    mc, best = _unit_fraction_range(6), _unit_fraction_range(2)
    ratio = (best[0] / mc[1], best[1] / mc[0])  # the ratio of two intervals of positive numbers
    expected = {"slope_mcsf_high": mc, "slope_best_high": best, "slope_ratio_high": ratio,
                "slope_mcsf_low": (1 / 850, 1 / 750), "slope_best_low": (1 / 150, 1 / 50)}
    for q, (lo, hi) in expected.items():
        assert rng(q) == pytest.approx(_outward(lo, hi), rel=1e-9), q
    # the numbers: the ratio's range is about [2.27, 4.85], not 3 +- 1.3
    assert rng("slope_ratio_high")[0] == pytest.approx(2.27, abs=0.01)
    assert rng("slope_ratio_high")[1] == pytest.approx(4.85, abs=0.01)
