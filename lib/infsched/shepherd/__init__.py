"""Shepherd: periodic planning (HERD) and preemptive online batching (FLEX) for DNN serving
(Zhang et al., NSDI'23; ``shepherd-serving``).

Modules:

- ``model``: Table 4's linear batch-latency models, model sets, requests with deadlines;
- ``traces``: the MAF-synth stand-in for the Azure Functions trace, a loader for the real trace's
  CSV layout, and the CV analysis of Figs. 2 and 5;
- ``theory``: the competitive-ratio programs (Eqs. 25, 47) and the affinity metric (Eq. 4);
- ``herd``: the planner: the literal ILP (reconstructed Eq. 2), HERD-L, LPT;
- ``zilp``: the offline optimum (Eq. 3) for tiny instances;
- ``sim``: the numba engine for FLEX (Algorithms 1-2), SHEPHERD-NP and the Clockwork-like
  baseline; ``reference``, the same in simpy;
- ``nexus``: the Nexus-like baseline (squishy bin packing and its runtime);
- ``experiments``: one function per figure/table, registered in ``EXPERIMENTS``.
"""
