"""The chapter "Measuring your own hardware": one function per table or figure, each returning
a DataFrame, and the ``claims_*`` that set our numbers beside the papers' (``data/paper/profiling.csv``).

The papers' profiles were measured on hardware the reader does not have: the TAD paper's Fig. 2
on a TitanX, Shepherd's Table 4 on a V100, RAMSIS's tables on a 4-vCPU GCP n1 machine. This
module measures the same models on the machine at hand (:func:`measure_live`), sets a stored or
fresh profile beside the published ones, and re-runs the RAMSIS and Shepherd chapters on it
(:func:`rerun_chapters`). The profiles stored from one NVIDIA H100 (:data:`GPU_FILES`) are read
by :func:`gpu_profiles`; :func:`floor_fit`, :func:`gpu_fit_table`, :func:`precision_table` and
:func:`claims_table` describe them beside Shepherd's Table 4 without verdicts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import ConfigError, one_of, require
from infsched.profiles import (
    as_raw,
    fit_residuals,
    linear_fit,
    load_profile,
    locate,
    measured_file,
    measured_profile,
)
from infsched.profiling.timing import ProfileSettings, profile_zoo
from infsched.profiling.zoo import SHEPHERD_NAMES, check_names, zoo_names

__all__ = ["SCALE_NAMES", "Scale", "SCALES", "get_scale", "measured_path", "measure_live",
           "family_fits", "claims_fig2", "shepherd_table", "claims_shepherd", "ramsis_table",
           "claims_ramsis", "GPU_FILES", "gpu_profiles", "floor_fit", "gpu_fit_table",
           "throughput_gain", "precision_table", "claims_table", "rerun_chapters",
           "conclusions_changed", "changed_table", "zoo_table", "EXPERIMENTS"]

SCALE_NAMES = ("smoke", "default", "paper")


@dataclass(frozen=True)
class Scale:
    """The live measurement behind one scale: which models, which batch sizes, how many calls."""

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    reps: int
    min_reps: int
    budget_s: float


SCALES = {
    # seconds: two small models, three sizes
    "smoke": Scale(("resnet18", "mobilenet_v2"), (1, 2, 4), reps=5, min_reps=3, budget_s=0.3),
    # the ResNet family of the TAD paper's Fig. 2 up to batch 8, about 40 CPU seconds on one
    # core (the chapter's verdicts read the stored profile, not this live measurement)
    "default": Scale(zoo_names("tad"), (1, 2, 4, 8), reps=10, min_reps=3, budget_s=0.5),
    # the same at every size the RAMSIS artifact's table reaches, with more calls
    "paper": Scale(zoo_names("tad"), (1, 2, 4, 8, 12, 16, 24, 32), reps=40, min_reps=8, budget_s=3.0),
}


def get_scale(scale: str) -> Scale:
    return SCALES[one_of("scale", scale, SCALE_NAMES)]


def measured_path(profile: str | os.PathLike[str] | None = None) -> Path:
    """The raw profile to study: ``profile`` if given (a path, relative to the working
    directory or to the repository root), else the one stored for this project's CPU machine."""
    from infsched.report import find_data_dir

    if profile is None:
        return measured_file()
    found, _ = locate(profile, roots=(Path.cwd(), find_data_dir().parent))  # the profile registry's rule
    if found is not None:
        return found
    raise ConfigError(f"profile = {str(profile)!r}: no such file (looked in {Path.cwd()} and in the "
                      f"repository root); give the path of a CSV written by `infsched profile`")


def measure_live(scale: str = "default", *, models=None, batch_sizes=None, device: str = "auto",
                 threads: int | None = None, progress: bool = False) -> pd.DataFrame:
    """Time ``models`` (default: the scale's) on this machine now: the raw profile rows."""
    sc = get_scale(scale)
    s = ProfileSettings(batch_sizes=batch_sizes or sc.batch_sizes, device=device, warmup=2,
                        reps=sc.reps, min_reps=sc.min_reps, budget_s=sc.budget_s, threads=threads)
    run = profile_zoo(check_names(models or sc.models), s, progress=progress)
    if run.unavailable:
        raise ConfigError("models: cannot be built here: " + "; ".join(run.unavailable.values()))
    return run.raw


def family_fits(raw: pd.DataFrame | str | os.PathLike[str], models=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The linear fit per model (mean latency) and every point's residual, for ``models``
    (default: all in ``raw``)."""
    df = as_raw(raw)
    if models is not None:
        df = df[df["model"].isin(check_names(models))]
    fits = linear_fit(df)
    return fits, fit_residuals(df, fits)


def claims_fig2(raw: pd.DataFrame | str | os.PathLike[str]) -> dict:
    """The TAD paper's reading of its Fig. 2 (§2): a deeper ResNet takes longer at every batch
    size, and the time is reliable enough to model as deterministic (we read that as the p95
    within 10 % of the median at every size)."""
    df = as_raw(raw)
    res = df[df["model"].isin(zoo_names("tad"))]
    order = {m: i for i, m in enumerate(zoo_names("tad"))}
    deeper_slower = True
    for _, g in res.groupby("batch"):
        if len(g) < 2:
            continue
        lat = g.assign(k=g["model"].map(order)).sort_values("k")["mean_ms"].to_numpy()
        deeper_slower &= bool(np.all(np.diff(lat) > 0))
    spread = float((res["p95_ms"] / res["p50_ms"]).max() - 1.0)
    return {"deeper_is_slower": bool(deeper_slower), "p95_within_10pct_of_median": spread <= 0.10,
            "_spread": spread}


def shepherd_table(raw: pd.DataFrame | str | os.PathLike[str], stat: str = "mean_ms") -> pd.DataFrame:
    """Table 4 (V100) beside our fit of the same models, one row per Table 4 model: α, β, R²,
    the largest relative residual, and the model's batch-1 latency, ours over theirs. Models
    not measured (or that cannot be built here) have NaN in our columns."""
    from infsched.shepherd.model import TABLE4

    fits = linear_fit(raw, stat=stat).set_index("model")
    rows = []
    for name, (short, a, b, _) in TABLE4.items():
        z = SHEPHERD_NAMES[short]
        f = fits.loc[z] if z in fits.index else None
        rows.append({"model": name, "zoo name": z, "alpha V100 (ms)": a, "beta V100 (ms)": b,
                     "alpha ours (ms)": np.nan if f is None else f["alpha_ms"],
                     "beta ours (ms)": np.nan if f is None else f["beta_ms"],
                     "R2": np.nan if f is None else f["r2"],
                     "max rel. residual": np.nan if f is None else f["max_rel_residual"],
                     "sizes fitted": 0 if f is None else int(f["n_batches"]),
                     "l(1) ours / V100": np.nan if f is None else (f["alpha_ms"] + f["beta_ms"]) / (a + b)})
    return pd.DataFrame(rows)


def claims_shepherd(raw: pd.DataFrame | str | os.PathLike[str], min_r2: float = 0.99) -> dict:
    """Shepherd Eq. 1 (§3.1): "a simple linear model can accurately describe the execution
    latency" — every measured Table 4 model's fit has R² ≥ ``min_r2``; and larger batches give
    more throughput (b / ℓ(b) non-decreasing in the measured means). Plus the rank agreement
    of α with Table 4 (Spearman), for the note."""
    t = shepherd_table(raw).dropna(subset=["R2"])
    df = as_raw(raw)
    df = df[df["model"].isin(t["zoo name"])]
    tput_up = all(bool(np.all(np.diff(g.sort_values("batch").eval("batch / mean_ms")) >= -1e-12))
                  for _, g in df.groupby("model"))
    rho = float(t[["alpha V100 (ms)", "alpha ours (ms)"]].rank().corr().iloc[0, 1]) if len(t) > 2 else np.nan
    name = dict(zip(t["zoo name"], t["model"]))
    tput_drops = [name[m] for m, g in df.groupby("model", sort=False)
                  if np.any(np.diff(g.sort_values("batch").eval("batch / mean_ms")) < -1e-12)]
    return {"linear_fits": bool((t["R2"] >= min_r2).all()) and len(t) > 0,
            "larger_batches_more_throughput": bool(tput_up), "_min_r2": float(t["R2"].min()),
            "_n_linear": int((t["R2"] >= min_r2).sum()), "_tput_drops": tput_drops,
            "_worst": str(t.loc[t["R2"].idxmin(), "model"]) if len(t) else "", "_alpha_rank_corr": rho,
            "_n": int(len(t))}


def ramsis_table(raw: pd.DataFrame | str | os.PathLike[str]) -> pd.DataFrame:
    """RAMSIS's image models: the artifact's batch-1 p95 (GCP n1, 4 vCPUs) beside ours, the
    published accuracy, and whether each model is on the accuracy-latency Pareto front of the
    published profile and of ours."""
    pub = load_profile("ramsis-image")
    ours = measured_profile(raw, "image")
    pub_front = set(pub.pareto_front().models)
    our_front = set(ours.pareto_front().models)
    rows = []
    for m, acc in zip(pub.models, pub.accuracy):
        i = pub.index(m)
        mine = ours.latency(ours.index(m), 1) if m in ours.models else np.nan
        rows.append({"model": m, "accuracy (%)": acc, "p95 b=1 artifact (ms)": pub.latency(i, 1),
                     "p95 b=1 ours (ms)": mine, "ours / artifact": mine / pub.latency(i, 1),
                     "front (artifact)": m in pub_front, "front (ours)": m in our_front})
    return pd.DataFrame(rows).sort_values("p95 b=1 artifact (ms)").reset_index(drop=True)


def claims_ramsis(raw: pd.DataFrame | str | os.PathLike[str]) -> dict:
    """RAMSIS Fig. 3: the Pareto front of the 26 image models holds 9 models; on our profile
    it holds how many, and are they the same ones? Also the rank correlation of batch-1
    latency with the artifact's, for the note."""
    t = ramsis_table(raw)
    measured = t.dropna(subset=["p95 b=1 ours (ms)"])
    rho = float(measured[["p95 b=1 artifact (ms)", "p95 b=1 ours (ms)"]].rank().corr().iloc[0, 1])
    return {"pareto_models": float(t["front (ours)"].sum()),
            "same_front": bool((t["front (ours)"] == t["front (artifact)"]).all()),
            "_rank_corr": rho, "_median_ratio": float(measured["ours / artifact"].median()),
            "_n": int(len(measured))}


#: The profiles measured on one NVIDIA H100 80GB HBM3 (``data/profiles/README.md``): the zoo in
#: fp32 and Shepherd's Table 4 models in fp16, batch 1..128, eager PyTorch.
GPU_FILES = {"fp32": "measured_cuda_h100.csv", "fp16": "measured_cuda_h100_fp16.csv"}


def gpu_profiles(data_dir: str | os.PathLike[str] | None = None) -> dict[str, pd.DataFrame]:
    """The stored H100 profiles, ``{"fp32": raw, "fp16": raw}`` (:data:`GPU_FILES`)."""
    from infsched.profiles import read_raw
    from infsched.report import find_data_dir

    folder = find_data_dir(data_dir) / "profiles"
    return {prec: read_raw(folder / name) for prec, name in GPU_FILES.items()}


def _floor_then_proportional(b: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least squares in log space of ``y ≈ max(c, c·b/k)``: the floor ``c`` and knee ``k``
    (``k = inf`` where no size rises above the floor). Exact: for each split of the sorted sizes
    into a flat part and a rising part, the best ``log c`` and ``log k`` are means of the logs;
    the knee is kept inside the split's interval of sizes, and the best split wins."""
    lb, ly = np.log(b), np.log(y)
    best = (np.sum((ly - ly.mean()) ** 2), ly.mean(), np.inf)  # flat at every size
    for j in range(len(b) - 1):  # sizes 0..j flat, j+1.. rising
        rise = np.arange(len(b)) > j
        lc = ly[~rise].mean()
        lk = lc - (ly[rise] - lb[rise]).mean()   # c / k = a, the rising part's slope
        lk = float(np.clip(lk, lb[j], lb[j + 1]))
        over = np.where(rise, lb - lk, 0.0)
        lc = (ly - over).mean()                  # the floor, given the knee
        sse = float(np.sum((ly - lc - over) ** 2))
        if sse < best[0] - 1e-12:
            best = (sse, lc, lk)
    return float(np.exp(best[1])), float(np.exp(best[2]))


def floor_fit(raw: pd.DataFrame | str | os.PathLike[str], stat: str = "mean_ms") -> pd.DataFrame:
    """Per model, where the flat (launch-bound) region ends: the two-regime fit
    ``ℓ(b) ≈ max(c, c·b/k)`` in log space (relative error), a floor ``c`` up to the knee ``k``,
    then latency proportional to ``b``. Same number of parameters as the line. Columns:
    ``model, floor_ms, knee`` (inf: flat at every size measured), ``flat_through`` (the largest
    measured size ``<= knee``), ``r2`` (of the two-regime fit, on ``stat`` itself, comparable
    with :func:`infsched.profiles.linear_fit`'s), ``b_max``."""
    df = as_raw(raw)
    rows = []
    for model, g in df.groupby("model", sort=False):
        g = g.sort_values("batch")
        b = g["batch"].to_numpy(dtype=float)
        y = g[stat].to_numpy(dtype=float)
        require(bool(np.all(y > 0)), "raw", model, f"{stat} must be > 0 at every size")
        c, k = _floor_then_proportional(b, y) if b.size > 1 else (float(y[0]), np.inf)
        fit = np.maximum(c, c * b / k)
        ss = float(np.sum((y - y.mean()) ** 2))
        rows.append({"model": model, "floor_ms": c, "knee": k,
                     "flat_through": int(b[b <= k * (1 + 1e-9)].max()),  # k >= the smallest size
                     "r2": 1.0 - float(np.sum((y - fit) ** 2)) / ss if ss > 0 else np.nan,
                     "b_max": int(b.max())})
    return pd.DataFrame(rows)


def _table4_rows(raw: pd.DataFrame) -> pd.DataFrame:
    """``raw`` restricted to Shepherd's Table 4 models, with their Table 4 names."""
    from infsched.shepherd.model import TABLE4

    name = {SHEPHERD_NAMES[short]: n for n, (short, *_) in TABLE4.items()}
    df = as_raw(raw)
    return df[df["model"].isin(name)].assign(name=lambda d: d["model"].map(name))


def throughput_gain(raw: pd.DataFrame | str | os.PathLike[str]) -> pd.Series:
    """Per Table 4 model (by its Table 4 name): the throughput ``b / ℓ(b)`` (mean latency) at its
    largest measured size over that at its smallest."""
    out = {}
    for n, g in _table4_rows(raw).groupby("name", sort=False):
        g = g.sort_values("batch")
        out[n] = (g["batch"].iloc[-1] / g["mean_ms"].iloc[-1]) / (g["batch"].iloc[0] / g["mean_ms"].iloc[0])
    return pd.Series(out, name="throughput gain", dtype=float)


def gpu_fit_table(profiles: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per Table 4 model and precision of ``profiles`` (``{"fp32": raw, ...}``): the line's R²
    (Shepherd's Eq. 1, :func:`shepherd_table`), the two-regime fit's floor, knee and R²
    (:func:`floor_fit`), and the throughput at the largest size over that at the smallest."""
    from infsched.shepherd.model import TABLE4

    out = pd.DataFrame({"model": list(TABLE4)})
    for prec, raw in profiles.items():
        line = shepherd_table(raw).set_index("model")
        df = _table4_rows(raw)
        fl = floor_fit(df).set_index("model")
        fl.index = fl.index.map(dict(zip(df["model"], df["name"])))
        tput = throughput_gain(df)
        out[f"R2 line {prec}"] = out["model"].map(line["R2"])
        out[f"floor {prec} (ms)"] = out["model"].map(fl["floor_ms"])
        out[f"knee {prec}"] = out["model"].map(fl["knee"])
        out[f"flat through {prec}"] = out["model"].map(fl["flat_through"]).astype("Int64")
        out[f"R2 floor {prec}"] = out["model"].map(fl["r2"])
        out[f"tput gain {prec}"] = out["model"].map(tput)
    return out


def precision_table(fp32: pd.DataFrame | str | os.PathLike[str],
                    fp16: pd.DataFrame | str | os.PathLike[str]) -> pd.DataFrame:
    """Per Table 4 model measured in both precisions: the mean latency at the smallest and the
    largest size both profiles share, in fp32 and fp16, and fp16 over fp32."""
    a, h = _table4_rows(fp32), _table4_rows(fp16)
    both = a.merge(h, on=["name", "batch"], suffixes=(" fp32", " fp16"))
    require(not both.empty, "fp16", "profile", "shares no (Table 4 model, batch) with the fp32 profile")
    lo, hi = int(both["batch"].min()), int(both["batch"].max())
    rows = []
    for n, g in both.groupby("name", sort=False):
        g = g.set_index("batch")
        row = {"model": n}
        for b in (lo, hi):
            if b in g.index:
                row[f"b={b} fp32 (ms)"] = g.at[b, "mean_ms fp32"]
                row[f"b={b} fp16 (ms)"] = g.at[b, "mean_ms fp16"]
                row[f"b={b} fp16 / fp32"] = g.at[b, "mean_ms fp16"] / g.at[b, "mean_ms fp32"]
        rows.append(row)
    return pd.DataFrame(rows)


#: Shepherd's two claims about its Eq. 1, in words, for :func:`claims_table`
SHEPHERD_CLAIMS = {
    "linear_fits": "ℓ(b) = αb + β fits every Table 4 model, R² ≥ 0.99 (Eq. 1)",
    "larger_batches_more_throughput": "larger batches give more throughput (§3.1)",
}


def claims_table(profiles: dict[str, pd.DataFrame | str | os.PathLike[str]]) -> pd.DataFrame:
    """Shepherd's two claims (:func:`claims_shepherd`) on each profile of ``profiles``
    (``{label: raw}``), one column per profile, each cell "holds" or "fails" with what it rests
    on. No verdicts: a table to read, not a scorecard row."""
    cells: dict[str, list[str]] = {}
    for label, raw in profiles.items():
        c = claims_shepherd(raw)
        drops = c["_tput_drops"]
        cells[label] = [
            f"{'holds' if c['linear_fits'] else 'fails'}: {c['_n_linear']} of {c['_n']} models; "
            f"smallest R² {c['_min_r2']:.2f} ({c['_worst']})",
            ("holds" if c["larger_batches_more_throughput"] else "fails") + ": throughput "
            + ("never falls with b" if not drops else f"falls at some step for {len(drops)} of {c['_n']} "
               "models" + (f" ({', '.join(drops)})" if len(drops) <= 4 else ""))]
    return pd.DataFrame({"claim": list(SHEPHERD_CLAIMS.values()), **cells})


def rerun_chapters(profile: str | os.PathLike[str], *, chapters=("ramsis", "shepherd"),
                   scale: str = "smoke") -> pd.DataFrame:
    """Re-run each chapter through papermill twice, on its published profile and on
    ``profile``, and read back both verdict tables: one row per (chapter, item, quantity)
    with the paper's number, ours on each profile, and each verdict."""
    from infsched.runner import run_chapter

    one_of("scale", scale, SCALE_NAMES)
    path = str(measured_path(profile))
    parts = []
    for ch in chapters:
        one_of("chapter", ch, ("ramsis", "shepherd"))
        tables = {}
        for label, params in (("published", {}), ("measured", {"profile": path})):
            nb = run_chapter(ch, params, scale=scale)
            v = nb.parent / "verdicts.csv"
            require(v.is_file(), "chapter", ch, f"wrote no verdict table ({v})")
            tables[label] = pd.read_csv(v)[["item", "quantity", "paper", "ours", "verdict"]]
        m = tables["published"].merge(tables["measured"], on=["item", "quantity", "paper"], how="outer",
                                      suffixes=(" (published)", " (measured)"))
        parts.append(m.assign(chapter=ch))
    out = pd.concat(parts, ignore_index=True)
    return out[["chapter", "item", "quantity", "paper", "ours (published)", "verdict (published)",
                "ours (measured)", "verdict (measured)"]]


def conclusions_changed(reruns: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`rerun_chapters` whose verdict differs between the two profiles."""
    return reruns[reruns["verdict (published)"] != reruns["verdict (measured)"]].reset_index(drop=True)


def _short(v) -> str:
    """A value of a verdict table as a reader wants it: 4 significant digits, claims as words."""
    if isinstance(v, (bool, np.bool_)) or v in ("True", "False"):
        return "holds" if v in (True, "True") else "fails"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "" if v is None else str(v)
    return "—" if not np.isfinite(f) else f"{f:.4g}"


def changed_table(changed: pd.DataFrame) -> pd.DataFrame:
    """:func:`conclusions_changed` for the page: one row per result, the number and verdict on
    each profile in one column each ("78.57, reproduced"), numbers to 4 significant digits."""
    out = pd.DataFrame({
        "result": changed["chapter"] + " " + changed["item"].astype(str),
        "quantity": changed["quantity"].astype(str).str.replace("_", " "),
        "paper": [("claim" if _short(v) == "—" else _short(v)) for v in changed["paper"]]})
    for side in ("published", "measured"):
        out[f"on the {side} profile"] = [f"{_short(o)}, {v}" for o, v in
                                         zip(changed[f"ours ({side})"], changed[f"verdict ({side})"])]
    return out


def zoo_table(zoo: pd.DataFrame) -> pd.DataFrame:
    """:func:`infsched.profiling.availability` in brief: one row per model family, with how many
    of its models build here and the inputs they take."""
    rows = []
    for fam, g in zoo.groupby("family", sort=False):
        params = g["params_M"].dropna()
        rows.append({"family": fam, "source": ", ".join(dict.fromkeys(g["source"])),
                     "models": len(g), "build here": int(g["available"].sum()),
                     "inputs": ", ".join(dict.fromkeys(i for i in g["input"] if i)) or "—",
                     "params (M)": "—" if params.empty else
                     (f"{params.min():.1f}" if len(params) == 1 else f"{params.min():.1f}–{params.max():.1f}")})
    return pd.DataFrame(rows)


EXPERIMENTS = {"measure_live": measure_live}
