"""Latency/accuracy profiles of model sets: what they are, where they come from, and how a
chapter chooses one.

- :mod:`~infsched.profiles.profile`: :class:`Profile` (the p95 latency ``l(m, b)`` of every model
  at every batch size, and its spread), Pareto fronts and RAMSIS's synthetic model sets;
- :mod:`~infsched.profiles.tables`: the published profiles (:func:`load_profile`) and the
  RAMSIS artifact's post-processing of profiled p95s;
- :mod:`~infsched.profiles.raw`: raw profile CSVs as ``infsched profile`` writes them
  (:func:`read_raw`);
- :mod:`~infsched.profiles.fit`: from a raw profile to what the chapters load: Shepherd's
  ``ℓ(b) = α·b + β`` (:func:`linear_fit`) and RAMSIS's monotone tables (:func:`measured_profile`);
- :mod:`~infsched.profiles.registry`: choosing a profile by name or by a reader's CSV, with a
  content key for the sweep caches.

Every chapter that needs model latencies reads them through this package; the torch profiler
that measures them (:mod:`infsched.profiling`) sits above it, and nothing below reads through it.
"""

from infsched.profiles.fit import (
                                       as_raw,
                                       fit_residuals,
                                       linear_fit,
                                       measured_profile,
                                       monotone_table,
)
from infsched.profiles.profile import (
                                       EXTRAPOLATIONS,
                                       QUANTILE_LEVELS,
                                       Profile,
                                       interpolate_models,
                                       pareto_mask,
)
from infsched.profiles.raw import MAX_LATENCY_MS, RAW_COLUMNS, STAT_COLUMNS, read_raw
from infsched.profiles.registry import (
                                       MEASURED,
                                       PUBLISHED,
                                       RawProfile,
                                       content_key,
                                       locate,
                                       measured_file,
                                       raw_profile,
                                       read_copy,
                                       snapshot,
)
from infsched.profiles.tables import (
                                       PROFILE_NAMES,
                                       TABLE_COLUMNS,
                                       fill_p95,
                                       load_profile,
                                       postprocess_p95,
                                       read_checked_csv,
)

__all__ = [
    "QUANTILE_LEVELS", "EXTRAPOLATIONS", "Profile", "pareto_mask", "fill_p95", "postprocess_p95",
    "load_profile", "interpolate_models", "PROFILE_NAMES", "read_checked_csv", "TABLE_COLUMNS",
    "RAW_COLUMNS", "STAT_COLUMNS", "MAX_LATENCY_MS", "read_raw",
    "as_raw", "linear_fit", "fit_residuals", "monotone_table", "measured_profile",
    "PUBLISHED", "MEASURED", "RawProfile", "content_key", "locate", "measured_file", "raw_profile",
    "read_copy", "snapshot",
]
