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
- ``workload``: the common random numbers of a seed (arrivals at any rate, sizes, service draws);
- ``lsa``: the numba port of scipy's ``linear_sum_assignment`` the engine solves Eqs. 4–8 with;
- ``engines``: the numba event loops (KAIROS, Ribbon's FCFS, DRS, CLKWRK) and the Oracle's;
- ``sim``: the serving simulator's API on those engines (one run, the allowable throughput by
  bisection, DRS's threshold, the Oracle); ``reference``, the same serving in simpy;
- ``ranking``: every configuration of a budget ranked by Eq. 15, and the one-shot picks;
- ``scales``: the chapter's scales; ``tables``: the exhaustive tables (computed, stored, read);
- ``experiments``: one function per figure/table, registered in ``EXPERIMENTS``, each with a
  ``claims_*`` function giving the numbers set beside the paper's (Figs. 10–12 in
  ``search_cost``, Figs. 15–16 in ``robustness``, re-exported there).
"""
