"""Shepherd: periodic planning (HERD) and preemptive online batching (FLEX) for DNN serving
(Zhang et al., NSDI'23; ``shepherd-serving``).

Modules:

- ``model``: Table 4's linear batch-latency models, request streams with SLOs, requests;
"""
