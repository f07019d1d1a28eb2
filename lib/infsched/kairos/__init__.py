"""KAIROS: cost-efficient inference serving on heterogeneous cloud instances (Li et al., HPDC'23;
``kairos-heterogeneous``).

Modules:

- ``model``: instance types and prices (Table 4), models and QoS (Table 3), the artifact's latency
  table per (model, type, batch), and the configurations a budget allows;
- ``batches``: the query-size distributions (the artifact's lognormal mix; a clipped Gaussian);
- ``matching``: KAIROS's query distribution, the min-cost bipartite matching of Eqs. 1–8;
- ``bound``: the throughput upper bound of Eqs. 9–15 (vectorised over configurations) and a fluid
  LP bound beside it;
- ``search``: the one-shot configuration choice of Sec. 5.2, KAIROS+ (Algorithm 1), and the search
  baselines (random, genetic, Bayesian optimisation, simulated annealing);
- ``sim``: the numba serving simulator (KAIROS, Ribbon's FCFS, DRS, CLKWRK), the allowable
  throughput by bisection, and the Oracle; ``reference``, the same serving in simpy;
- ``experiments``: one function per figure/table, registered in ``EXPERIMENTS``, each with a
  ``claims_*`` function giving the numbers set beside the paper's.
"""
