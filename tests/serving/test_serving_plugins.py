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
    with pytest.raises(plugins.PolicyError, match=r"^policy 'too-big': select returned \(model, batch\) = "
                       r"\(0, \d+\) with queue_len = \d+, max_batch = \d+ and \d+ models"):
        simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="too-big"), 200, load=0.5)


def test_a_readers_policy_never_fails_in_silence():
    """A compiled policy that reads a knob it never declared, one that returns a float batch and
    one that raises (compiled or not) each stop the run with a PolicyError naming the policy;
    an unknown name says how to register one."""
    cfg = dict(workers=K, slo_ms=SLO)

    @njit
    def reads_knob(s, lat, by_accuracy, params):
        return 0, min(s.queue_len, int(params[0]))

    plugins.register(plugins.UserPolicy("reads-knob", reads_knob))
    with pytest.raises(plugins.PolicyError, match=r"^policy 'reads-knob' read outside an array.*declares 0 params"):
        simulate(ServingConfig(ZOO, policy="reads-knob", **cfg), 300, load=0.5)
    # declared, it runs (and serves queries: no silent all-dropped run)
    plugins.register(plugins.UserPolicy("reads-knob-2", reads_knob, params=(2.0,)))
    r = simulate(ServingConfig(ZOO, policy="reads-knob-2", **cfg), 300, load=0.5)
    assert r.served.all() and r.bsize.max() == 2

    @njit
    def float_batch(s, lat, by_accuracy, params):
        return 0, s.queue_len / 2

    plugins.register(plugins.UserPolicy("float-batch", float_batch))
    with pytest.raises(plugins.PolicyError, match=r"^policy 'float-batch': select returned \(0, 1\.0\) "
                       r"\(types \('int', 'float'\)\) with queue_len = 2"):
        simulate(ServingConfig(ZOO, policy="float-batch", **cfg), 300, load=0.5)

    def boom(s, lat, by_accuracy, params):
        if s.now_ms > 100.0:
            raise RuntimeError("boom")
        return 0, 1

    for name, fn in (("boom-py", boom), ("boom-nb", njit(boom))):
        plugins.register(plugins.UserPolicy(name, fn))
        with pytest.raises(plugins.PolicyError, match=rf"^policy '{name}' raised RuntimeError: boom"):
            simulate(ServingConfig(ZOO, policy=name, **cfg), 3000, load=0.5)
    with pytest.raises(ConfigError, match=r"^policy = 'mine': neither a built-in .*plugins\.policy\('mine'\)"):
        ServingConfig(ZOO, policy="mine", **cfg)
    with pytest.raises(ConfigError, match=r"^contenders = 'mine': neither a built-in .*plugins\.policy"):
        ex.load_sweep("smoke", 0, contenders=("mine",), cache=False)


@pytest.mark.parametrize("routing", ["jiq", "random", "round-robin"])
def test_user_policy_routes_as_the_built_in_routings(routing):
    name = f"fast-{routing}"
    plugins.register(plugins.UserPolicy(name, njit(fastest), queue="per-worker", routing=routing, max_batch=1))
    a = simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fastest", routing=routing), 5000, load=0.6, seed=2)
    b = simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy=name), 5000, load=0.6, seed=2)
    _same(a, b)


def _cascade_source(threshold: int) -> str:
    return f"""
import numpy as np

def cascade(s, lat, by_accuracy, params):
    fast = np.argmin(lat[:, 0])
    b = min(s.queue_len, s.max_batch)
    if s.queue_len > {threshold}:
        return fast, b
    for m in by_accuracy:
        if lat[m, b - 1] <= s.slack_ms:
            return m, b
    return fast, b
"""


def test_the_guides_example_recomputes_only_the_edited_policy(tmp_path):
    """The guide's pattern: the built-ins in one sweep, the reader's policy in a sweep of its
    own. Editing the policy recomputes its points only: every built-in point is read back from
    the cache (its file untouched), and the edited policy's points are new files."""
    kw = dict(workloads=("poisson",), K=K, slo_ms=SLO, loads=(0.8,), cache=tmp_path, workers=1)
    builtins = ("fastest", "batch-greedy")

    def mine(threshold):
        ns: dict = {}
        exec(_cascade_source(threshold), ns)
        return plugins.register(plugins.UserPolicy("guide-cascade", njit(ns["cascade"])))

    a = ex.load_sweep("smoke", 0, contenders=builtins, **kw)
    m1 = ex.load_sweep("smoke", 0, contenders=(mine(4),), **kw)
    before = {f: f.stat().st_mtime_ns for f in tmp_path.rglob("*.pkl")}
    b = ex.load_sweep("smoke", 0, contenders=builtins, **kw)
    m2 = ex.load_sweep("smoke", 0, contenders=(mine(1),), **kw)  # the edit
    after = {f: f.stat().st_mtime_ns for f in tmp_path.rglob("*.pkl")}
    assert a.equals(b)
    assert all(after[f] == t for f, t in before.items())  # nothing recomputed in place
    new = set(after) - set(before)
    assert len(new) == len(m2) == ex.get_scale("smoke").seeds  # one point per seed: the edited policy's
    assert not m1["attainment"].equals(m2["attainment"]) or not m1["mean_batch"].equals(m2["mean_batch"])


def test_sensitivity_runs_take_a_readers_policy(tmp_path):
    """A reader's policy runs in the sensitivity sweep's stream settings and sits out the
    switch and dispatch overheads (its loop does not charge them)."""
    from infsched.serving.sensitivity import SETTINGS

    settings = tuple(x for x in SETTINGS if x.group in ("baseline", "switch"))[:2]
    df = ex.sensitivity_runs("smoke", 0, K=K, slo_ms=SLO, contenders=("fastest", USER["bg-nb"]),
                             settings=settings, loads=(0.7,), cache=tmp_path, workers=1)
    per = df.groupby("setting")["contender"].apply(set).to_dict()
    assert per[settings[0].name] == {"fastest", "bg-nb"} and per[settings[1].name] == {"fastest"}
    base = df[df["setting"] == settings[0].name]
    assert (base["attainment"].between(0, 1)).all()
