"""RAMSIS: MDP model selection for latency-critical inference serving.

Reproduces Mendoza, Romero, Trippel, "Model Selection for Latency-Critical Inference Serving"
(EuroSys '24; ``ramsis-model-selection``). Modules:

- ``model``: validated MDP parameters (SLO, workers, load, discretisation), the slack grid and
  the feasibility checks;
- ``kernel``: the transition probabilities of Eqs. 1–3, factorised by round-robin phase, and Eq. 2
  summed literally as a test oracle;
- ``mdp``: the worker MDP, value iteration and the expected accuracy/violation of §5.1;
- ``variable``: variable batching (§4.3.2), its exact transitions and policy iteration;
- ``headlaw``: the new head's slack-bucket law under variable batching, applied factor by
  factor (incomplete-beta recurrence in compiled loops);
- ``objective``: accuracy per query by Dinkelbach iterations (our extension);
- ``policy``: the policy table the online phase looks up;
- ``baselines``: Jellyfish+ and ModelSwitching;
- ``sim``: the fast (numba) serving simulators; ``reference``: the simpy reference model;
- ``trace``: the Twitter trace as a piecewise-constant arrival rate;
- ``experiments``: one function per figure/table, registered in ``EXPERIMENTS``.
"""
