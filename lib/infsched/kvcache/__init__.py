"""Online LLM batching under a KV-cache memory limit (Jaillet et al.; ``llm-kv-cache-scheduling``).

Modules:

- ``model``: requests, memory, schedules, the feasibility check every algorithm is held to, and
  the total end-to-end latency;
- ``policies``: MC-SF (Algorithm 1) and MC-Benchmark (Algorithm 2) in rounds;
- ``instances``: the synthetic arrival models of Fig. 2 and the instances of Thms 4.1 and 4.3;
- ``hindsight``: the integer program of Section 3 (sparse, windowed by a feasible schedule) and
  its LP relaxation, behind one ``solve_hindsight(..., solver="highs" | "cpsat" | "local")``;
- ``cpsat``: the same program as a CP-SAT cumulative model, searched under deterministic work
  (run in its own process: OR-Tools and highspy cannot share one);
- ``improve``: local search over placement orders, a fast source of better schedules than MC-SF's;
- ``online``: a re-planning online policy (MC-SF's information, the local search on the waiting
  requests at each arrival), and ``online_study``, the share of MC-SF's gap it closes;
- ``bounds``: the area lower bound on the optimum (with its proof);
- ``relax``: a stronger lower bound, dual-feasible transforms of memory on one SRPT machine;
- ``tibound``: a time-indexed LP bound with ramp columns and three families of valid rows
  (exclusive phase, time cliques, triples), by column and row generation with a Lagrangian
  bound every round;
- ``regimes``: where MC-SF falls short, sweeps of prompt spread, memory and load;
- ``workload``: the lognormal stand-in for the paper's LMSYS-Chat-1M sample;
- ``timing``: the batch-time model standing in for Vidur (Llama2-70B on two A100s);
- ``sim``: the continuous-time batch simulation with MC-SF, MC-Benchmark and the α-protection
  baselines (a readable reference loop), and ``engine``, the same loop compiled with numba;
- ``experiments``: one function per figure/table (Figs. 2, 3, 5–11, Table 1, the theorems),
  registered in ``EXPERIMENTS``, with the batch-time scale κ calibrated on Table 1's MC-SF value
  and a ``claims_*`` function per figure giving the numbers set beside the paper's.
"""
