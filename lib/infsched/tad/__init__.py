"""Latency under an accuracy constraint: LP bound, waterfilling, R-JIQ, TAD and TAD-OP.

Reproduces "Optimizing Latency in Inference Systems with Accuracy Constraints"
(``tad-latency-accuracy``). Modules:

- ``model``: validated system parameters (μ, a, α) and the paper's configurations;
- ``bound``: λ^max, the LP lower bound T_LP-LB(λ), routing tuples and waterfilling (Alg. 1);
- ``policies``: R-JIQ, TAD, TAD-OP (Alg. 2), JIQ baselines and random routing;
- ``sim``: the fast engine's API (``simulate``, ``simulate_phases``, ``SimResult``), over
  ``engine`` (a run's state), ``markov`` and ``lindley`` (the numba kernels for exponential and
  deterministic service), ``choice`` (the policies' class choice, compiled once for the
  kernels) and ``streams`` (random streams, arrival times);
- ``reference``: the simpy reference model;
- ``experiments``: one function per figure/example, registered in ``EXPERIMENTS``.
"""
