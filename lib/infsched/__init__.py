"""infsched: policies, solvers and simulators for scheduling ML inference.

One package per reproduced paper (``infsched.tad`` ...), plus the shared modules every
chapter uses: errors, workload, optim, metrics, report, plotting, runner and cli.
"""

__version__ = "0.1.0"
