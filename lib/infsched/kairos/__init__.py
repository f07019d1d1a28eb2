"""KAIROS: cost-efficient inference serving on heterogeneous cloud instances (Li et al., HPDC'23;
``kairos-heterogeneous``).

Modules:

- ``model``: instance types and prices (Table 4), models and QoS (Table 3), the artifact's latency
  table per (model, type, batch), and the configurations a budget allows;
- ``batches``: the query-size distributions (the artifact's lognormal mix; a clipped Gaussian);
"""
