"""The fits the chapters load from a raw profile, where the profiler's users look for them.

They live in :mod:`infsched.profiles.fit` (the chapters read them from there, below this
package); Shepherd's model set from the fits is :func:`infsched.shepherd.profile.measured_model_set`.
"""

from infsched.profiles.fit import (
                                   TABLE_COLUMNS,
                                   as_raw,
                                   fit_residuals,
                                   linear_fit,
                                   measured_profile,
                                   monotone_table,
)
from infsched.shepherd.profile import measured_model_set

__all__ = ["linear_fit", "fit_residuals", "monotone_table", "measured_profile", "measured_model_set",
           "as_raw", "TABLE_COLUMNS"]
