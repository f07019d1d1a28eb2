"""Batch-latency measurement of torch models on the CPU or a CUDA GPU.

:func:`profile_model` times one model's forward pass at each batch size: warm-up calls, then
repeated synchronised timings (CUDA events on a GPU, ``time.perf_counter_ns`` on the CPU), all
under ``torch.inference_mode``. It returns one row per batch size in the raw profile schema
(:data:`RAW_COLUMNS`, the same columns as ``data/profiles/ramsis_latency_raw.csv`` plus where it
was measured), which :mod:`infsched.profiling.fit` turns into the tables the chapters load.
:func:`profile_zoo` does the same for zoo models, appending each row to a CSV as it is measured
so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from infsched.errors import config_error, one_of, require

# the raw profile's schema and reader live with the profiles (nothing below reads through here)
from infsched.profiles.raw import RAW_COLUMNS, STAT_COLUMNS, read_raw

__all__ = ["ProfileSettings", "RAW_COLUMNS", "STAT_COLUMNS", "parse_batch_sizes", "resolve_device",
           "device_name", "summarise", "profile_model", "profile_zoo", "read_raw"]

DEVICES = ("auto", "cpu", "cuda")


def parse_batch_sizes(spec: str | int | Iterable[int]) -> tuple[int, ...]:
    """Batch sizes from ``"1-32"``, ``"1,2,4"``, ``"1-8,16,32"``, an int or a sequence: sorted,
    without repeats, every one an integer >= 1 (ConfigError naming ``batch_sizes`` otherwise)."""
    allowed = "must be integers >= 1, written as a list or ranges such as '1-32' or '1,2,4,8-16'"
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        items: list[int] = [int(spec)]
    elif isinstance(spec, str):
        items = []
        for part in spec.replace(" ", "").split(","):
            if not part:
                raise config_error("batch_sizes", spec, allowed)
            lo, dash, hi = part.partition("-")
            try:
                if dash:
                    a, b = int(lo), int(hi)
                    require(a <= b, "batch_sizes", spec, f"range {part!r} runs backwards; {allowed}")
                    items.extend(range(a, b + 1))
                else:
                    items.append(int(part))
            except ValueError:
                raise config_error("batch_sizes", spec, allowed) from None
    else:
        try:
            items = list(spec)
        except TypeError:
            raise config_error("batch_sizes", spec, allowed) from None
        if not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in items):
            raise config_error("batch_sizes", spec, allowed)
        items = [int(b) for b in items]
    require(len(items) > 0, "batch_sizes", spec, allowed)
    bad = [b for b in items if b < 1]
    require(not bad, "batch_sizes", spec, f"batch size {bad[0] if bad else ''} is below 1; {allowed}")
    return tuple(sorted(set(items)))


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` where a CUDA GPU is visible, else ``"cpu"``. Asking for
    ``"cuda"`` where there is none is a ConfigError that says so."""
    one_of("device", device, DEVICES)
    import torch

    has_cuda = bool(torch.cuda.is_available())
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    if device == "cuda" and not has_cuda:
        why = ("this torch is a CPU-only build" if torch.version.cuda is None
               else "no CUDA GPU is visible")
        raise config_error("device", device, f"{why} (torch {torch.__version__}); use 'cpu' or 'auto'")
    return device


def device_name(device: str) -> str:
    """The GPU's name, or the CPU's model name (``/proc/cpuinfo``, else ``platform``)."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(0)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


@dataclass(frozen=True)
class ProfileSettings:
    """How to time a model.

    - ``batch_sizes``: the sizes to time (see :func:`parse_batch_sizes`);
    - ``device``: ``"auto"``, ``"cpu"`` or ``"cuda"``;
    - ``warmup``: untimed calls before the timed ones at each size (one-off allocation, kernel
      selection and caches are not what a server sees in steady state);
    - ``reps``: timed calls per size, at most; ``min_reps``: at least;
    - ``budget_s``: if set, the timed calls at one size stop once they have used this much
      (but never fewer than ``min_reps``), so a slow model at a large batch costs seconds, not
      minutes;
    - ``max_forward_s``: if set, batch sizes above the first whose warm-up call took longer are
      not timed (the RAMSIS artifact's profiles likewise stop early for slow models);
    - ``threads``: torch's intra-op threads (default: torch's own choice), recorded per row;
    - ``compile``: run ``torch.compile`` on the model first; ``half``: fp16 (CUDA only).
    """

    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    device: str = "auto"
    warmup: int = 3
    reps: int = 30
    min_reps: int = 5
    budget_s: float | None = None
    max_forward_s: float | None = None
    threads: int | None = None
    compile: bool = False
    half: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_sizes", parse_batch_sizes(self.batch_sizes))
        one_of("device", self.device, DEVICES)
        for name in ("warmup", "reps", "min_reps"):
            v = getattr(self, name)
            lo = 0 if name == "warmup" else 1
            require(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, v,
                    f"must be an integer >= {lo}")
        require(self.min_reps <= self.reps, "min_reps", self.min_reps,
                f"must not exceed reps ({self.reps})")
        for name in ("budget_s", "max_forward_s"):
            v = getattr(self, name)
            require(v is None or (isinstance(v, (int, float)) and math.isfinite(v) and v > 0), name, v,
                    "must be None or a number of seconds > 0")
        require(self.threads is None or (isinstance(self.threads, int) and self.threads >= 1),
                "threads", self.threads, "must be None or an integer >= 1")


def summarise(samples_ms: np.ndarray | Iterable[float]) -> dict[str, float]:
    """The raw-profile statistics of one batch size's timings (ms): count, mean, sample standard
    deviation, min, p50/p95/p99 (linear interpolation, as in the RAMSIS summary), max."""
    x = np.asarray(samples_ms, dtype=float).ravel()
    require(x.size >= 1 and bool(np.all(np.isfinite(x))) and bool(np.all(x >= 0)), "samples_ms",
            x[:5].tolist(), "must be one or more finite timings >= 0")
    p50, p95, p99 = np.percentile(x, [50, 95, 99])
    return {"n_samples": int(x.size), "mean_ms": float(x.mean()),
            "std_ms": float(x.std(ddof=1)) if x.size > 1 else 0.0, "min_ms": float(x.min()),
            "p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99), "max_ms": float(x.max())}


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    import torch

    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _move(x: Any, device: str, half: bool) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        x = x.to(device)
        return x.half() if half and x.is_floating_point() else x
    if isinstance(x, dict):
        return {k: _move(v, device, half) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_move(v, device, half) for v in x)
    return x


def _call(model: Any, x: Any) -> Any:
    return model(**x) if isinstance(x, dict) else model(x)


def profile_model(model: Any, make_input: Callable[[int, Any], Any], settings: ProfileSettings | None = None,
                  *, name: str = "model", task: str = "image", precision: str | None = None,
                  input_desc: str = "", on_row: Callable[[dict], None] | None = None,
                  skip: Iterable[int] = (), progress: Any = None) -> pd.DataFrame:
    """Time ``model`` at every batch size of ``settings``: one raw-profile row per size.

    ``make_input(b, device)`` returns a batch of ``b`` (a tensor, a dict of tensors passed as
    keyword arguments, or a list). Each timed call is synchronised: on CUDA with a pair of CUDA
    events and ``torch.cuda.synchronize``, on the CPU with ``time.perf_counter_ns`` (torch's CPU
    operators are synchronous). ``on_row`` sees each row as soon as it is measured (the zoo
    profiler appends it to its CSV); sizes in ``skip`` are not timed.
    """
    import torch

    s = settings or ProfileSettings()
    dev = resolve_device(s.device)
    require(not s.half or dev == "cuda", "half", s.half, "half precision is for CUDA only; "
            "on the CPU use half=False")
    one_of("task", task, ("image", "text"))
    model = model.to(dev)
    if s.half:
        model = model.half()
    if s.compile:
        model = torch.compile(model)
    prec = precision or ("fp16" if s.half else "fp32")
    meta = {"device": dev, "device_name": device_name(dev), "precision": prec,
            "compiled": bool(s.compile), "input": input_desc, "torch": torch.__version__}
    skip = set(skip)
    rows: list[dict] = []
    with _threads(s.threads), torch.inference_mode():
        meta["threads"] = torch.get_num_threads()
        for b in s.batch_sizes:
            if b in skip:  # measured before (a resumed run): already counted by the caller
                continue
            x = _move(make_input(b, "cpu"), dev, s.half)
            t_first = 0.0
            for _ in range(max(s.warmup, 1)):  # at least one untimed call: it sizes the budget
                t0 = time.perf_counter()
                _call(model, x)
                if dev == "cuda":
                    torch.cuda.synchronize()
                t_first = time.perf_counter() - t0
            samples = []
            spent = 0.0
            for _ in range(s.reps):
                if dev == "cuda":
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    _call(model, x)
                    end.record()
                    torch.cuda.synchronize()
                    ms = float(start.elapsed_time(end))
                else:
                    t0 = time.perf_counter_ns()
                    _call(model, x)
                    ms = (time.perf_counter_ns() - t0) / 1e6
                samples.append(ms)
                spent += ms / 1e3
                if s.budget_s is not None and len(samples) >= s.min_reps and spent >= s.budget_s:
                    break
            row = {"task": task, "model": name, "batch": b, **summarise(samples), **meta}
            rows.append(row)
            if on_row is not None:
                on_row(row)
            if progress is not None:
                progress.update(1)
            if s.max_forward_s is not None and t_first > s.max_forward_s:
                if progress is not None:
                    progress.update(sum(1 for bb in s.batch_sizes if bb > b and bb not in skip))
                break
            del x
    return pd.DataFrame(rows, columns=list(RAW_COLUMNS))


@dataclass
class ZooRun:
    """What :func:`profile_zoo` did: the rows (old and new) and the models it could not build."""

    raw: pd.DataFrame
    unavailable: dict[str, str] = field(default_factory=dict)
    resumed: int = 0


def profile_zoo(names: str | Iterable[str], settings: ProfileSettings | None = None, *,
                out: str | os.PathLike[str] | None = None, progress: bool = True) -> ZooRun:
    """Profile zoo models (names or family names) at every batch size of ``settings``.

    With ``out``, each row is appended to that CSV as soon as it is measured, and rows already
    there for the same (model, batch) on the same device are not measured again: an
    interrupted run resumes where it stopped. A model that cannot be built here is reported in
    :attr:`ZooRun.unavailable` with the reason, never silently skipped.
    """
    from infsched.profiling.zoo import ModelUnavailable, build, check_names

    models = check_names(names)
    s = settings or ProfileSettings()
    dev = resolve_device(s.device)
    done: dict[str, set[int]] = {}
    old = pd.DataFrame(columns=list(RAW_COLUMNS))
    path = Path(out) if out is not None else None
    if path is not None and path.exists() and path.stat().st_size > 0:
        old = read_raw(path)
        same = old[old["device"] == dev] if "device" in old else old
        for m, g in same.groupby("model"):
            done[str(m)] = set(g["batch"].astype(int))
    resumed = sum(len(done.get(m, set()) & set(s.batch_sizes)) for m in models)

    def append(row: dict) -> None:
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists() or path.stat().st_size == 0
        pd.DataFrame([row], columns=list(RAW_COLUMNS)).to_csv(path, mode="a", header=new, index=False,
                                                              float_format="%.6g")

    bar = None
    if progress:
        from tqdm import tqdm  # a text bar: ipywidgets is not a dependency

        bar = tqdm(total=len(models) * len(s.batch_sizes), desc="profiling", unit="point")
        bar.update(resumed)
    rows: list[pd.DataFrame] = []
    unavailable: dict[str, str] = {}
    try:
        for m in models:
            todo = [b for b in s.batch_sizes if b not in done.get(m, set())]
            if not todo:
                continue
            if bar is not None:
                bar.set_postfix_str(m)
            try:
                bm = build(m, device=dev)
            except ModelUnavailable as exc:
                unavailable[m] = str(exc)
                if bar is not None:
                    bar.update(len(todo))
                continue
            rows.append(profile_model(bm.module, bm.make_input, s, name=m, task=bm.entry.task,
                                      precision=bm.precision if not s.half else "fp16",
                                      input_desc=bm.input_desc, on_row=append,
                                      skip=done.get(m, set()), progress=bar))
            del bm
    finally:
        if bar is not None:
            bar.close()
    parts = [p for p in (old, *rows) if not p.empty]
    raw = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(RAW_COLUMNS))
    raw = raw[raw["model"].isin(models)].reset_index(drop=True)
    return ZooRun(raw, unavailable, resumed)
