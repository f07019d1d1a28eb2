"""Shepherd's theory numbers (spec §2.3, §5 claims 7–8, §7 A4–A6): FLEX's competitive ratios
from the max-min programs of Eqs. 25–26 and 47, the affinity metric (Eq. 4) and Eq. 5."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.shepherd import theory as th
from infsched.shepherd.model import ModelSet, model_set


@pytest.mark.parametrize("lam", [1.3, 2.29, 3.03, 6.0])
def test_closed_forms_match_the_raw_programs(lam):
    # the raw program's p-grid makes the adversary slightly weaker: agreement to ~5e-5
    assert th.c_sgsm_numeric(lam) == pytest.approx(th.c_sgsm(lam), rel=2e-4)
    assert th.c_mgmm_numeric(lam) == pytest.approx(th.c_mgmm(lam), rel=2e-4)


@pytest.mark.parametrize("K", [2.0, 7.5])
def test_mgmm_with_affinity_matches_raw_program(K):
    assert th.c_mgmm_numeric(3.0, K) == pytest.approx(th.c_mgmm(3.0, K), rel=2e-4)
    assert th.c_mgmm(3.0, K) > th.c_mgmm(3.0, 1.0)


def test_a4_single_gpu_single_model():
    lam, c = th.best_lambda("sgsm")
    assert c == pytest.approx(10.87, rel=0.01)           # paper 10.81
    assert 2.1 <= lam <= 2.5                              # paper 2.38
    assert th.c_sgsm_numeric(lam) == pytest.approx(c, rel=2e-4)


def test_a5_multi_gpu_multi_model_k1():
    lam, c = th.best_lambda("mgmm")
    assert c == pytest.approx(12.67, rel=0.01)           # paper 12.62
    assert 2.6 <= lam <= 3.2                              # paper 3.03
    assert th.c_mgmm(3.03) <= 12.75
    assert th.c_mgmm_numeric(3.03) <= 12.75


def test_ratio_blows_up_near_one_and_grows_for_large_lambda():
    assert th.c_sgsm(1.01) > 100 and th.c_mgmm(1.01) > 100
    assert th.c_mgmm(50) > th.c_mgmm(3)


def test_bad_lambda_and_k_rejected():
    with pytest.raises(ConfigError, match="lam"):
        th.c_sgsm(1.0)
    with pytest.raises(ConfigError, match="K"):
        th.c_mgmm(2.0, 0.5)
    with pytest.raises(ConfigError, match="which"):
        th.best_lambda("sgmm")


def test_a6_affinity_of_cv16():
    models = model_set("cv16")
    A = th.affinity(models)
    assert np.allclose(np.diag(A), 1.0)
    assert th.affinity_K(models) == pytest.approx(357.14, abs=0.01)
    i, j = np.unravel_index(np.argmax(A), A.shape)
    assert (models.names[i], models.names[j]) == ("RS269", "RN18")
    assert np.all(A >= 0)


def test_affinity_branches():
    # i = 0, j = 1: α_j + β_j - β_i = 1 + 3 - 2 > 0, so the min/max branch
    ms = ModelSet(("a", "b"), np.array([2.0, 1.0]), np.array([2.0, 3.0]), np.array([1, 1]))
    A = th.affinity(ms)
    assert A[0, 1] == pytest.approx(min(4 / 1, max(2 / 2, 2 / 1)))
    # i = 1, j = 0: 2 + 2 - 3 > 0 as well
    assert A[1, 0] == pytest.approx(min(4 / 2, max(1 / 1, 1 / 2)))
    same = ModelSet(("a", "b"), np.array([1.0, 1.0]), np.array([5.0, 5.0]), np.array([1, 1]))
    assert th.affinity_K(same) == 1.0


def test_theorem_a1_bound():
    assert th.thm_a1_bound(1, 1000) == 1000
    assert math.isinf(th.thm_a1_bound(0, 1000))
    assert th.thm_a1_lower_bound(5) == 5
