"""The assignment KAIROS solves at each decision (Eqs. 4–8), compiled: a line-by-line numba port
of ``scipy.optimize.linear_sum_assignment`` (scipy's ``rectangular_lsap.cpp``: Crouse's shortest
augmenting path, IEEE TAES 2016, the Jonker–Volgenant family the paper names).

The engine (:func:`infsched.kairos.engines.engine_kairos`) calls it once per decision on a
matrix of at most ``2n × n``; a call into scipy from numba is not possible, and a port that
follows scipy's every tie-break returns scipy's very pairs, so the engine and the simpy
reference (which calls scipy) agree query by query. The tests check that on thousands of
matrices, ties included.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["lsa"]


@njit(cache=True)
def lsa(cost):
    """Rectangular linear sum assignment, a line-by-line port of scipy's
    ``linear_sum_assignment`` (``rectangular_lsap.cpp``: Crouse's shortest augmenting path,
    2016, the Jonker–Volgenant family) so that it returns scipy's pairs, ties included.

    Returns, for each row, its column (-1 where a tall matrix leaves the row unmatched).
    """
    nr0, nc0 = cost.shape
    transpose = nc0 < nr0
    if transpose:
        c = np.ascontiguousarray(cost.T)
    else:
        c = cost
    nr, nc = c.shape
    u = np.zeros(nr)
    v = np.zeros(nc)
    spc = np.empty(nc)
    path = np.full(nc, -1, np.int64)
    col4row = np.full(nr, -1, np.int64)
    row4col = np.full(nc, -1, np.int64)
    SR = np.zeros(nr, np.bool_)
    SC = np.zeros(nc, np.bool_)
    remaining = np.empty(nc, np.int64)
    for cur in range(nr):
        # -- augmenting_path
        min_val = 0.0
        num_rem = nc
        for it in range(nc):
            remaining[it] = nc - it - 1  # reverse order: a constant matrix gives the identity
        SR[:] = False
        SC[:] = False
        spc[:] = np.inf
        sink = -1
        i = cur
        while sink == -1:
            index = -1
            lowest = np.inf
            SR[i] = True
            for it in range(num_rem):
                j = remaining[it]
                r = min_val + c[i, j] - u[i] - v[j]
                if r < spc[j]:
                    path[j] = i
                    spc[j] = r
                # among equal lowest costs prefer one that is a new sink
                if spc[j] < lowest or (spc[j] == lowest and row4col[j] == -1):
                    lowest = spc[j]
                    index = it
            min_val = lowest
            if min_val == np.inf:
                raise ValueError("cost matrix is infeasible")
            j = remaining[index]
            if row4col[j] == -1:
                sink = j
            else:
                i = row4col[j]
            SC[j] = True
            num_rem -= 1
            remaining[index] = remaining[num_rem]
        # -- update the duals
        u[cur] += min_val
        for i in range(nr):
            if SR[i] and i != cur:
                u[i] += min_val - spc[col4row[i]]
        for j in range(nc):
            if SC[j]:
                v[j] -= min_val - spc[j]
        # -- augment
        j = sink
        while True:
            i = path[j]
            row4col[j] = i
            tmp = col4row[i]
            col4row[i] = j
            j = tmp
            if i == cur:
                break
    if not transpose:
        return col4row
    out = np.full(nr0, -1, np.int64)
    for j in range(nr):      # rows of the transposed problem are the original columns
        out[col4row[j]] = j
    return out

