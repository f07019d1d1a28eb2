"""Bad configurations fail early with a ConfigError naming the parameter (issue 23)."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.serving import ServingConfig, Zoo, simulate


@pytest.fixture(scope="module")
def image():
    return Zoo.of("ramsis-image")


@pytest.mark.parametrize("kw,match", [
    (dict(policy="tad-op-typo"), r"^policy = 'tad-op-typo': neither a built-in \('most-accurate'"),
    (dict(slo_ms=5.0), r"^slo_ms = 5\.0: is below every model's batch-1 latency \(the fastest, shufflenet_v2_x0_5, takes 21\.921 ms\)"),
    (dict(workers=0), r"^workers = 0: must be an integer >= 1"),
    (dict(workers=2.5), r"^workers = 2\.5"),
    (dict(queue="lifo"), r"^queue = 'lifo': must be one of 'central', 'per-worker'"),
    (dict(routing="psychic"), r"^routing = 'psychic'"),
    (dict(service="gamma"), r"^service = 'gamma'"),
    (dict(max_batch=33), r"^max_batch = 33: must be an integer in \[1, 32\]"),
    (dict(model="resnet9000"), r"^model = 'resnet9000': must be 'most-accurate', 'fastest' or one of"),
    (dict(slo_ms=float("nan")), r"^slo_ms = nan"),
])
def test_bad_config_names_the_parameter(image, kw, match):
    args = dict(profile=image, workers=4, slo_ms=150.0) | kw
    with pytest.raises(ConfigError, match=match):
        ServingConfig(**args)


def test_empty_profile():
    with pytest.raises(ConfigError, match=r"^profile = '<0 models>': must hold at least one model"):
        ServingConfig(Zoo((), [], np.empty((0, 1))), workers=1, slo_ms=10.0)


def test_unknown_profile_name():
    with pytest.raises(ConfigError, match=r"^profile = 'imagenet-zoo'"):
        ServingConfig("imagenet-zoo", workers=1, slo_ms=10.0)


def test_jitter_needs_a_spread():
    with pytest.raises(ConfigError, match=r"^service = 'jitter': needs a profile with a latency spread"):
        ServingConfig(Zoo.single(10.0), workers=1, slo_ms=50.0, service="jitter")


def test_simulate_arguments(image):
    cfg = ServingConfig(image, workers=2, slo_ms=150.0)
    with pytest.raises(ConfigError, match=r"^rate_qps/load"):
        simulate(cfg, 10)
    with pytest.raises(ConfigError, match=r"^n = 0"):
        simulate(cfg, 0, load=0.5)
    with pytest.raises(ConfigError, match=r"^arrivals"):
        simulate(cfg, 3, arrivals=np.array([3.0, 1.0, 2.0]))


def test_capacity_follows_the_spec(image):
    # K * max_b b / l(fastest, b) over b with l(fastest, b) <= SLO, in queries/s
    cfg = ServingConfig(image, workers=4, slo_ms=150.0, policy="batch-greedy")
    lat = image.latency_ms[image.fastest]
    b = np.arange(1, lat.size + 1)
    assert cfg.capacity_qps() == pytest.approx(4 * 1000 * np.max((b / lat)[lat <= 150.0]))
