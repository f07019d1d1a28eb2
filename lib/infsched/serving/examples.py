"""The head-to-head chapter's worked example of the plug-in policy API
(:mod:`infsched.serving.plugins`): *idle-cascade*, a policy none of the papers has.

It batches like batch-greedy but spends accuracy only when there is spare capacity: the fastest
model whenever no other worker is idle and queries wait behind the batch, else the most accurate
model that serves the batch in time. It lives here, not in the chapter, so that its paper-scale
sweep points can be stored and recomputed by name (:mod:`infsched.store` refers to a policy by its
module and name; a policy defined in a notebook runs the same way, computed live). Importing this
module registers it as contender ``"idle-cascade"``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from infsched.serving import plugins

__all__ = ["idle_cascade"]


@plugins.policy("idle-cascade", label="idle-cascade (reader's)")
@njit
def idle_cascade(s, lat, by_accuracy, params):
    fast = np.argmin(lat[:, 0])
    if lat[fast, 0] > s.slack_ms:        # the head cannot make it: drop it
        return fast, 0
    b = min(s.queue_len, s.max_batch)    # the largest batch the fastest model serves in time
    while b > 1 and lat[fast, b - 1] > s.slack_ms:
        b -= 1
    if s.idle == 0 and s.queue_len > b:  # no spare worker and a backlog: be fast
        return fast, b
    for m in by_accuracy:                # else the most accurate model that makes it
        if lat[m, b - 1] <= s.slack_ms:
            return m, b
    return fast, b
