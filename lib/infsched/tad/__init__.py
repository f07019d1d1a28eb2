"""Latency under an accuracy constraint: LP bound, waterfilling, R-JIQ, TAD and TAD-OP.

Reproduces "Optimizing Latency in Inference Systems with Accuracy Constraints"
(``tad-latency-accuracy``). Modules:

- ``model``: validated system parameters (μ, a, α) and the paper's configurations;
- ``bound``: λ^max, the LP lower bound T_LP-LB(λ), routing tuples and waterfilling (Alg. 1);
- ``policies``: R-JIQ, TAD, TAD-OP (Alg. 2), JIQ baselines and random routing;
- ``sim``: the fast (numba) engine; ``reference``: the simpy reference model;
- ``experiments``: one function per figure/example, registered in ``EXPERIMENTS``.
"""
