"""The model of Shepherd (Zhang et al., NSDI'23), Sections 2.1, 5.1 and 6: models with linear
batch latency, request streams with SLOs, and the requests a simulator serves.

A batch of ``b`` requests of model ``m`` occupies one GPU for ``ℓ_m(b) = α_m b + β_m`` ms
(Eq. 1), with Table 4's α and β, measured by the paper on a V100 with PyTorch. A request arriving
at ``a`` with SLO ``L`` has deadline ``d = a + L``; a batch started at ``t`` is feasible iff every
request in it has arrived and ``t + ℓ_m(|B|) ≤ min_r d_r``. At most ``B_max = 128`` requests
per batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from infsched.errors import as_float, config_error, one_of, require

__all__ = ["TABLE4", "MODEL_SETS", "ModelSet", "model_set", "Requests", "B_MAX", "DEFAULT_SLO_MS",
           "MEMORY_MB"]

#: the largest batch (Section 5.2: "maximum batch size limit (128 by default)")
B_MAX = 128
#: the default latency SLO of every stream (Section 7)
DEFAULT_SLO_MS = 250.0

#: Table 4, quoted exactly: model -> (short name, α ms, β ms, exit points). V100, PyTorch.
TABLE4: dict[str, tuple[str, float, float, int]] = {
    "ResNet18": ("RN18", 0.22, 3.74, 40),
    "ResNet34": ("RN34", 0.38, 5.78, 46),
    "ResNet50": ("RN50", 0.75, 7.96, 46),
    "ResNet101": ("RN101", 1.25, 13.57, 39),
    "ResNet152": ("RN152", 1.77, 18.98, 84),
    "ResNeSt50": ("RS50", 1.18, 15.39, 78),
    "ResNeSt101": ("RS101", 1.91, 29.21, 57),
    "ResNeSt200": ("RS200", 3.35, 45.43, 96),
    "ResNeSt269": ("RS269", 4.37, 74.20, 128),
    "DenseNet121": ("DN121", 0.69, 19.96, 129),
    "DenseNet161": ("DN161", 1.74, 23.10, 171),
    "DenseNet169": ("DN169", 0.83, 27.47, 120),
    "DenseNet201": ("DN201", 1.12, 32.33, 142),
    "GoogLeNet": ("GN", 0.25, 8.41, 44),
    "Inception v3": ("I3", 0.96, 11.77, 122),
    "R-CNN": ("RCNN", 2.59, 14.90, 51),
    "BERT": ("BERT", 40.98, 5.67, 43),
}

#: fp32 parameter sizes (MB) from torchvision / Hugging Face defaults; not the paper's numbers,
#: used only when the planner's memory constraint is exercised (spec §4.3)
MEMORY_MB = {"RN18": 47, "RN34": 87, "RN50": 102, "RN101": 178, "RN152": 241, "RS50": 110,
             "RS101": 193, "RS200": 281, "RS269": 444, "DN121": 32, "DN161": 115, "DN169": 56,
             "DN201": 80, "GN": 26, "I3": 109, "RCNN": 167, "BERT": 440}

#: the paper says "13 profiled models" but Table 4 lists 17; the default is the 16 vision models
MODEL_SETS = ("cv16", "all17")


@dataclass(frozen=True, eq=False)
class ModelSet:
    """Models with linear batch latency ``ℓ(b) = α b + β`` (ms): arrays aligned by model index."""

    names: tuple[str, ...]
    alpha: np.ndarray
    beta: np.ndarray
    exit_points: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        a = np.asarray(self.alpha, dtype=float)
        b = np.asarray(self.beta, dtype=float)
        e = np.asarray(self.exit_points, dtype=np.int64)
        n = len(self.names)
        require(n >= 1, "names", self.names, "must name at least one model")
        for name, arr in (("alpha", a), ("beta", b), ("exit_points", e)):
            require(arr.shape == (n,), name, arr.shape, f"must have one entry per model ({n})")
        require(bool(np.all(np.isfinite(a)) and np.all(a >= 0)), "alpha", a.tolist(),
                "must be finite and >= 0 (ms per request)")
        require(bool(np.all(np.isfinite(b)) and np.all(b >= 0)), "beta", b.tolist(),
                "must be finite and >= 0 (ms)")
        require(bool(np.all(a + b > 0)), "alpha + beta", (a + b).tolist(),
                "must be > 0: a batch of one takes time")
        for name, arr in (("alpha", a), ("beta", b), ("exit_points", e)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def n(self) -> int:
        return len(self.names)

    def latency(self, m, b) -> np.ndarray:
        """``ℓ_m(b) = α_m b + β_m`` in ms (Eq. 1), broadcasting over ``m`` and ``b``."""
        m = np.asarray(m)
        return self.alpha[m] * np.asarray(b) + self.beta[m]

    def max_batch(self, slo_ms, b_max: int = B_MAX) -> np.ndarray:
        """Per model, the largest batch whose latency fits in ``slo_ms`` (0: not even one)."""
        slo = np.broadcast_to(np.asarray(slo_ms, dtype=float), (self.n,))
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(self.alpha > 0, np.floor((slo - self.beta) / np.where(self.alpha > 0,
                                                                                self.alpha, 1)),
                         np.where(self.beta <= slo, b_max, 0))
        return np.clip(b, 0, b_max).astype(np.int64)

    def check_slo(self, slo_ms: float) -> float:
        """An SLO (ms) some model can meet; an SLO below every model's batch-1 latency is an error
        (the streams are unservable), naming the fastest model."""
        try:
            s = as_float(slo_ms)  # '250' is rejected, not converted
        except (TypeError, ValueError):
            raise config_error("slo_ms", slo_ms, "must be a number (ms)") from None
        fastest = float(self.latency(np.arange(self.n), 1).min())
        require(np.isfinite(s) and s >= fastest, "slo_ms", slo_ms,
                f"must be at least the fastest model's batch-1 latency, {fastest:.2f} ms "
                f"({self.names[int(np.argmin(self.latency(np.arange(self.n), 1)))]}): below it no "
                "stream can be served")
        return s

    def unservable(self, slo_ms: float) -> list[str]:
        """Models whose batch-1 latency exceeds ``slo_ms``: their streams cannot be served."""
        lat1 = self.latency(np.arange(self.n), 1)
        return [n for n, l1 in zip(self.names, lat1) if l1 > slo_ms]

    def subset(self, idx) -> ModelSet:
        idx = np.asarray(idx, dtype=np.int64)
        return ModelSet(tuple(self.names[i] for i in idx), self.alpha[idx], self.beta[idx],
                        self.exit_points[idx])

    def replicate(self, n_instances: int) -> ModelSet:
        """``n_instances`` model instances, instance ``k`` with profile ``k mod n`` (the paper's
        "#models = #workers" at scale, Table 5)."""
        require(isinstance(n_instances, (int, np.integer)) and n_instances >= 1, "n_instances",
                n_instances, "must be an integer >= 1")
        idx = np.arange(n_instances) % self.n
        names = tuple(f"{self.names[i]}#{k // self.n}" for k, i in enumerate(idx))
        return ModelSet(names, self.alpha[idx], self.beta[idx], self.exit_points[idx])


def model_set(name: str = "cv16") -> ModelSet:
    """Table 4's models: ``"cv16"`` (all but BERT, the default) or ``"all17"``."""
    one_of("model_set", name, MODEL_SETS)
    rows = [v for k, v in TABLE4.items() if name == "all17" or k != "BERT"]
    return ModelSet(tuple(r[0] for r in rows), np.array([r[1] for r in rows]),
                    np.array([r[2] for r in rows]), np.array([r[3] for r in rows]))


@dataclass(frozen=True, eq=False)
class Requests:
    """Requests for a simulator, sorted by arrival: ``arrival`` and ``deadline`` in ms (float64),
    ``model`` the model index (int64). ``deadline = arrival + SLO``."""

    arrival: np.ndarray
    model: np.ndarray
    deadline: np.ndarray

    def __post_init__(self) -> None:
        a = np.ascontiguousarray(self.arrival, dtype=float)
        m = np.ascontiguousarray(self.model, dtype=np.int64)
        d = np.ascontiguousarray(self.deadline, dtype=float)
        require(a.ndim == 1 and a.shape == m.shape == d.shape, "arrival/model/deadline",
                (a.shape, m.shape, d.shape), "must be 1-D arrays of the same length")
        require(bool(np.all(np.isfinite(a)) and np.all(np.isfinite(d))), "arrival/deadline",
                "non-finite", "must be finite (ms)")
        require(a.size == 0 or bool(np.all(np.diff(a) >= 0)), "arrival", "unsorted",
                "must be sorted ascending")
        require(bool(np.all(d >= a)), "deadline", "before arrival", "must be >= arrival")
        require(bool(np.all(m >= 0)), "model", "negative", "must be model indices >= 0")
        for name, arr in (("arrival", a), ("model", m), ("deadline", d)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def n(self) -> int:
        return int(self.arrival.size)

    @classmethod
    def with_slo(cls, arrival, model, slo_ms) -> Requests:
        """Requests whose deadline is arrival + ``slo_ms`` (a scalar or one SLO per request)."""
        a = np.asarray(arrival, dtype=float)
        order = np.argsort(a, kind="stable")
        slo = np.broadcast_to(np.asarray(slo_ms, dtype=float), a.shape)
        require(bool(np.all(slo > 0)), "slo_ms", slo_ms, "must be > 0 (ms)")
        return cls(a[order], np.asarray(model)[order], (a + slo)[order])
