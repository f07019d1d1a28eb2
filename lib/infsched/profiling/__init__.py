"""Measure model latency on your own hardware: a torch profiler (CPU or CUDA), a model zoo
built from architecture definitions only, and the fits the chapters load (Shepherd's linear
``ℓ(b) = α·b + β``, RAMSIS's monotone p95 tables).

torch, torchvision, timm and transformers are imported only when a model is built or timed,
so ``import infsched.profiling`` is cheap.
"""

from .fit import linear_fit, measured_model_set, measured_profile, monotone_table
from .timing import (
                     RAW_COLUMNS,
                     ProfileSettings,
                     parse_batch_sizes,
                     profile_model,
                     profile_zoo,
                     read_raw,
                     resolve_device,
                     summarise,
)
from .zoo import FAMILIES, SHEPHERD_NAMES, ZOO, ModelUnavailable, availability, build, zoo_names

__all__ = ["RAW_COLUMNS", "ProfileSettings", "parse_batch_sizes", "profile_model", "profile_zoo",
           "read_raw", "resolve_device", "summarise", "ZOO", "FAMILIES", "SHEPHERD_NAMES",
           "ModelUnavailable", "availability", "build", "zoo_names", "linear_fit",
           "monotone_table", "measured_profile", "measured_model_set"]
