"""A reader's policy through the plug-in API (issue 33, item 5): a policy written against
:mod:`infsched.serving.plugins` that re-implements a built-in one gives identical outcomes,
query by query, in plain Python and compiled by numba; it runs as a contender of the sweeps
(on worker processes too) with its code in the cache key; bad policies fail clearly."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from infsched.errors import ConfigError
from infsched.serving import ServingConfig, Zoo, experiments as ex, plugins, simulate

ZOO = Zoo.of("ramsis-image")
K, SLO = 8, 150.0


def batch_greedy(s, lat, by_accuracy, params):
    """The built-in "batch-greedy", re-implemented: drop a head the fastest model cannot serve in
    time; the largest batch the fastest model serves in the head's slack; then the most
    accurate model that serves that batch in it."""
    fast = np.argmin(lat[:, 0])
    if lat[fast, 0] > s.slack_ms:
        return fast, 0
    b = min(s.queue_len, s.max_batch)
    while b > 1 and lat[fast, b - 1] > s.slack_ms:
        b -= 1
    for m in by_accuracy:
        if lat[m, b - 1] <= s.slack_ms:
            return m, b
    return fast, b


def fastest(s, lat, by_accuracy, params):
    """The built-in "fastest": one model, batch 1 (per-worker queues, least-loaded routing)."""
    return np.argmin(lat[:, 0]), 1


USER = {
    "bg-py": plugins.UserPolicy("bg-py", batch_greedy),
    "bg-nb": plugins.UserPolicy("bg-nb", njit(batch_greedy)),
    "fast-py": plugins.UserPolicy("fast-py", fastest, queue="per-worker", routing="least-loaded", max_batch=1),
    "fast-nb": plugins.UserPolicy("fast-nb", njit(fastest), queue="per-worker", routing="least-loaded",
                                  max_batch=1),
}
for _p in USER.values():
    plugins.register(_p)


def _same(a, b):
    np.testing.assert_array_equal(a.model, b.model)
    np.testing.assert_array_equal(a.bsize, b.bsize)
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.finish, b.finish)  # NaN where dropped, in both


@pytest.mark.parametrize("user", ["bg-py", "bg-nb"])
@pytest.mark.parametrize("load", [0.7, 1.2])
def test_user_batch_greedy_is_the_built_in(user, load):
    built = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="batch-greedy")
    mine = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy=user)
    n = 4000 if user.endswith("py") else 30_000
    a = simulate(built, n, load=load, seed=3)
    b = simulate(mine, n, load=load, seed=3)
    _same(a, b)
    if load > 1:
        assert (~a.served).any()  # the drop path was compared too


@pytest.mark.parametrize("user", ["fast-py", "fast-nb"])
@pytest.mark.parametrize("service", ["deterministic", "jitter"])
def test_user_fastest_per_worker_is_the_built_in(user, service):
    built = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fastest", service=service)
    mine = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy=user, service=service)
    a, b = simulate(built, 3000, load=0.5, seed=4), simulate(mine, 3000, load=0.5, seed=4)
    _same(a, b)


def test_user_policy_runs_as_a_contender_on_worker_processes(tmp_path):
    """Through the sweep (two processes, its disk cache): the reader's re-implementation gives
    the built-in's row, and a second run is served from the cache."""
    kw = dict(workloads=("poisson",), K=K, slo_ms=SLO, loads=(0.8,), cache=tmp_path, workers=2)
    df = ex.load_sweep("smoke", 0, contenders=("batch-greedy", "bg-nb"), **kw)
    a = df[df["contender"] == "batch-greedy"].reset_index(drop=True)
    b = df[df["contender"] == "bg-nb"].reset_index(drop=True)
    assert len(a) == 2 and len(b) == 2
    for col in ("attainment", "accuracy_served", "dropped", "mean_batch"):
        np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy())
    files = {f: f.stat().st_mtime_ns for f in tmp_path.rglob("*.pkl")}
    assert files
    again = ex.load_sweep("smoke", 0, contenders=("batch-greedy", USER["bg-nb"]), **kw)
    assert again[["contender", "attainment"]].equals(df[["contender", "attainment"]])
    assert {f: f.stat().st_mtime_ns for f in tmp_path.rglob("*.pkl")} == files  # loaded, not recomputed


def test_the_cache_key_follows_the_code_and_the_knobs():
    a = plugins.UserPolicy("x", batch_greedy)
    assert plugins.UserPolicy("x", batch_greedy).key == a.key
    assert plugins.UserPolicy("x", fastest).key != a.key
    assert a.with_params(1.0).key != a.key
    assert plugins.UserPolicy("x", njit(batch_greedy)).key != a.key


def test_bad_user_policies_fail_clearly():
    with pytest.raises(ConfigError, match=r"^name = 'batch-greedy'.*built-in"):
        plugins.register(plugins.UserPolicy("batch-greedy", fastest))
    with pytest.raises(ConfigError, match=r"^queue = 'lifo'"):
        plugins.UserPolicy("y", fastest, queue="lifo")
    with pytest.raises(ConfigError, match=r"^routing = 'tad'"):
        plugins.UserPolicy("y", fastest, queue="per-worker", routing="tad")
    with pytest.raises(ConfigError, match=r"^select = "):
        plugins.UserPolicy("y", 3)

    def too_big(s, lat, by_accuracy, params):
        return 0, s.queue_len + 1

    plugins.register(plugins.UserPolicy("too-big", too_big))
    with pytest.raises(ConfigError, match=r"^policy = 'too-big': select returned an invalid"):
        simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="too-big"), 200, load=0.5)


@pytest.mark.parametrize("routing", ["jiq", "random", "round-robin"])
def test_user_policy_routes_as_the_built_in_routings(routing):
    name = f"fast-{routing}"
    plugins.register(plugins.UserPolicy(name, njit(fastest), queue="per-worker", routing=routing, max_batch=1))
    a = simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fastest", routing=routing), 5000, load=0.6, seed=2)
    b = simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy=name), 5000, load=0.6, seed=2)
    _same(a, b)
