"""Configuration search for KAIROS (Section 5.2, Algorithm 1) and the exploration baselines of
Figs. 2, 10 and 11.

Every searcher takes the candidate configurations (an ``(n, 4)`` array, e.g.
``model.configurations(B)``) and an objective ``f``: a callable ``config tuple -> throughput``,
a mapping ``{config tuple: throughput}``, or an array of throughputs aligned with the
candidates. One *evaluation* is one call of ``f`` on a configuration the searcher has not asked
for before: :class:`Objective` caches ``f`` so that revisits are free and uncounted.

- :func:`select_config`: KAIROS's one-shot pick from the upper bounds (§5.2, no evaluation);
- :func:`kairos_plus`: Algorithm 1, the upper-bound-guided exact search (KAIROS+); with another
  policy's ``f`` it is the "Alg-1-augmented competitor" of Fig. 10;
- :func:`random_search`, :func:`genetic_search`, :func:`bayes_opt_search`: RAND, GENE and BO
  (Ribbon) of Fig. 11, each with Algorithm 1's sub-configuration pruning and the stop rule
  "stop once the optimum of the exhaustive table has been evaluated";
- :func:`simulated_annealing`: the exploration of Fig. 2.

The paper gives no hyper-parameters for GENE, BO or SA; the defaults are the spec's [A] choices
and every one of them is a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from infsched.errors import config_error, require
from infsched.kairos.model import BASE, BUDGET_TOL, PRICES, homogeneous

__all__ = ["Objective", "SearchResult", "rank_order", "select_config", "kairos_plus",
           "random_search", "genetic_search", "bayes_opt_search", "simulated_annealing",
           "SAStep", "SAResult", "matern52"]

Config = tuple[int, int, int, int]
ObjectiveLike = Callable[[Config], float] | Mapping | np.ndarray


# ------------------------------------------------------------------------------------------
# Objective with a cache and an evaluation count
# ------------------------------------------------------------------------------------------

class Objective:
    """A cached throughput oracle ``f(x)``.

    :meth:`__call__` counts an evaluation the first time a configuration is asked for and records
    it in :attr:`order`; :meth:`peek` reads ``f`` without counting (used only to find the known
    optimum of an exhaustive table for the baselines' stop rule).
    """

    def __init__(self, f: ObjectiveLike, configs: np.ndarray | None = None):
        if isinstance(f, np.ndarray):
            require(configs is not None and f.shape == (len(configs),), "f", f.shape,
                    "an array of throughputs must have one entry per candidate configuration")
            table = {tuple(int(v) for v in c): float(y) for c, y in zip(configs, f)}
            self._f: Callable[[Config], float] = table.__getitem__
        elif isinstance(f, Mapping):
            self._f = lambda x: float(f[x])
        elif callable(f):
            self._f = f
        else:
            raise config_error("f", type(f).__name__,
                               "must be a callable, a mapping config -> throughput, or an array")
        self._memo: dict[Config, float] = {}
        self._seen: set[Config] = set()
        self.order: list[Config] = []

    def peek(self, x) -> float:
        """``f(x)`` through the cache, not counted as an evaluation."""
        key = _key(x)
        if key not in self._memo:
            try:
                self._memo[key] = float(self._f(key))
            except KeyError:
                raise config_error("config", key, "is not in the throughput table f") from None
        return self._memo[key]

    def __call__(self, x) -> float:
        key = _key(x)
        value = self.peek(key)
        if key not in self._seen:
            self._seen.add(key)
            self.order.append(key)
        return value

    def fresh(self) -> Objective:
        """A new counter over the same ``f`` and the same value cache: an expensive simulator
        is run once per configuration across searches, yet each search counts its own
        evaluations."""
        twin = Objective.__new__(Objective)
        twin._f, twin._memo, twin._seen, twin.order = self._f, self._memo, set(), []
        return twin

    @property
    def evaluations(self) -> int:
        """Number of distinct configurations evaluated (the metric of Figs. 10–11)."""
        return len(self.order)


def _key(x) -> Config:
    return tuple(int(v) for v in np.asarray(x).ravel())  # type: ignore[return-value]


def _objective(f: ObjectiveLike | Objective, configs: np.ndarray) -> Objective:
    """Each search counts from zero; a shared :class:`Objective` keeps its value cache."""
    return f.fresh() if isinstance(f, Objective) else Objective(f, configs)


@dataclass
class SearchResult:
    """What a search returns.

    ``evaluations`` counts distinct configurations evaluated; ``trace`` lists them in evaluation
    order with ``values`` their throughputs (for plotting search progress). ``found_at`` is the
    1-based evaluation index at which ``optimum`` (when known) was first evaluated, ``None`` if
    it never was (``found`` False: pruning removed it, e.g. for a non-monotone ``f``).
    """

    best_value: float
    best_config: Config | None
    evaluations: int
    trace: list[Config] = field(repr=False)
    values: list[float] = field(repr=False)
    optimum: Config | None = None
    found_at: int | None = None

    @property
    def found(self) -> bool | None:
        """Whether ``optimum`` was evaluated; ``None`` when no optimum was given."""
        return None if self.optimum is None else self.found_at is not None


def _result(obj: Objective, optimum: Config | None, target: float | None) -> SearchResult:
    values = [obj.peek(x) for x in obj.order]
    if values:
        i = int(np.argmax(values))
        best_v, best_x = values[i], obj.order[i]
    else:
        best_v, best_x = 0.0, None
    found_at = None
    if target is not None:
        hits = [i for i, v in enumerate(values) if v >= target]
        found_at = hits[0] + 1 if hits else None
    return SearchResult(best_v, best_x, obj.evaluations, list(obj.order), values, optimum,
                        found_at)


# ------------------------------------------------------------------------------------------
# Ranking, one-shot selection (§5.2) and Algorithm 1
# ------------------------------------------------------------------------------------------

def _check_configs(configs) -> np.ndarray:
    arr = np.asarray(configs)
    require(arr.ndim == 2 and arr.shape[1] == 4 and arr.shape[0] >= 1, "configs", arr.shape,
            "must be a non-empty (n, 4) array of instance counts")
    return arr.astype(np.int64)


def _check_ub(ub, n: int) -> np.ndarray:
    arr = np.asarray(ub, dtype=float)
    require(arr.shape == (n,), "ub", arr.shape, f"must hold one upper bound per config ({n})")
    require(bool(np.all(np.isfinite(arr))), "ub", "<array>", "must be finite")
    return arr


def rank_order(configs, ub, decimals: int = 6) -> np.ndarray:
    """Indices of ``configs`` by UB descending, ties broken by lexicographic config order
    ([A] spec §2.3). UB is rounded to ``decimals`` first so float noise does not decide ties."""
    x = _check_configs(configs)
    key = np.round(_check_ub(ub, len(x)), decimals)
    # np.lexsort: the last key is the primary one
    return np.lexsort((x[:, 3], x[:, 2], x[:, 1], x[:, 0], -key))


def select_config(configs, ub, top_same: int = 3, top_k: int = 10) -> tuple[Config, str]:
    """KAIROS's one-shot configuration pick (§5.2), without any evaluation.

    Rank by UB. If the top ``top_same`` (3) share the base count ``n_0``, take the top-1.
    Otherwise take the top ``top_k`` (10) set T and pick the member with the least
    ``Σ_{y∈T} ‖x − y‖²`` (the "centroid with least SSE"), ties by UB rank. Returns
    ``(config, rule)`` with ``rule`` ``"top-1"`` or ``"distance"``.
    """
    x = _check_configs(configs)
    require(top_same >= 1 and top_k >= 1, "top_same/top_k", (top_same, top_k), "must be >= 1")
    order = rank_order(x, ub)
    top = x[order[:top_same]]
    if np.all(top[:, BASE] == top[0, BASE]):
        return _key(x[order[0]]), "top-1"
    T = x[order[:top_k]].astype(float)
    sse = ((T[:, None, :] - T[None, :, :]) ** 2).sum(axis=(1, 2))
    return _key(T[int(np.argmin(sse))]), "distance"   # argmin: first = best UB rank on ties


def _dominated_by(x: np.ndarray, configs: np.ndarray) -> np.ndarray:
    """Mask of the sub-configurations of ``x`` (``c ≤ x`` component-wise; ``x`` included)."""
    return np.all(configs <= x[None, :], axis=1)


def _optimum(obj: Objective, configs: np.ndarray, optimum) -> tuple[Config, float]:
    """The known optimum (argmax of the exhaustive table, first in lexicographic order on
    ties) and its value, read without counting evaluations."""
    if optimum is None:
        vals = np.array([obj.peek(c) for c in configs])
        optimum = configs[int(np.argmax(vals))]
    key = _key(optimum)
    return key, obj.peek(key)


def kairos_plus(configs, ub, f: ObjectiveLike | Objective, optimum=None) -> SearchResult:
    """Algorithm 1 (KAIROS+): evaluate configurations in UB order, skipping

    - every configuration whose UB is ≤ the best throughput found so far (it cannot win), and
    - every sub-configuration ``c ≤ x`` of an evaluated ``x`` (fewer instances cannot serve
      more, if ``f`` is monotone).

    Exact when ``UB ≥ f`` everywhere and ``f`` is monotone. ``optimum`` (a config, e.g. the
    exhaustive argmax) is only used to report ``found_at``; it does not stop the search.
    """
    x = _check_configs(configs)
    ubv = _check_ub(ub, len(x))
    obj = _objective(f, x)
    remaining = np.ones(len(x), dtype=bool)
    best = 0.0
    for i in rank_order(x, ubv):
        if not remaining[i]:
            continue
        v = obj(x[i])
        if v > best:
            best = v
            remaining &= ubv > best
        remaining &= ~_dominated_by(x[i], x)
    target = obj.peek(optimum) if optimum is not None else None
    return _result(obj, None if optimum is None else _key(optimum), target)


# ------------------------------------------------------------------------------------------
# Baselines of Fig. 11: shared pruning and stop rule
# ------------------------------------------------------------------------------------------

class _Pruned:
    """Algorithm 1's sub-configuration pruning plus the Fig. 11 stop rule, shared by RAND,
    GENE and BO: evaluate, prune ``c ≤ x``, and stop once the optimum's value is reached."""

    def __init__(self, configs: np.ndarray, obj: Objective, optimum):
        self.x = configs
        self.obj = obj
        self.index = {_key(c): i for i, c in enumerate(configs)}
        self.remaining = np.ones(len(configs), dtype=bool)
        self.opt, self.target = _optimum(obj, configs, optimum)
        require(self.opt in self.index, "optimum", self.opt, "must be one of the configs")
        self.done = False

    def evaluate(self, i: int) -> float:
        v = self.obj(self.x[i])
        self.remaining &= ~_dominated_by(self.x[i], self.x)
        # stop: reached the optimum, or pruning removed it so it can never be evaluated
        if v >= self.target or not self.remaining[self.index[self.opt]]:
            self.done = True
        if not self.remaining.any():
            self.done = True
        return v

    def result(self) -> SearchResult:
        return _result(self.obj, self.opt, self.target)


def _check_rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def random_search(configs, f: ObjectiveLike | Objective, seed=0, optimum=None) -> SearchResult:
    """RAND (Fig. 11): evaluate the remaining configurations in uniformly random order, pruning
    sub-configurations, until the optimum has been evaluated."""
    x = _check_configs(configs)
    rng = _check_rng(seed)
    state = _Pruned(x, _objective(f, x), optimum)
    for _ in range(len(x)):                     # each step prunes ≥ 1 config: at most n steps
        if state.done:
            break
        state.evaluate(int(rng.choice(np.flatnonzero(state.remaining))))
    return state.result()


def _repair(c: np.ndarray, budget: float, rng: np.random.Generator,
            keep: int | None = None) -> np.ndarray:
    """Clip counts at 0, force ``n_0 ≥ 1``, then remove random instances (never the last base
    instance, and not of type ``keep`` while others remain) until the cost fits ``budget``."""
    c = np.maximum(c, 0).astype(np.int64)
    c[BASE] = max(c[BASE], 1)
    require(PRICES[BASE] <= budget + BUDGET_TOL, "budget", budget,
            f"must buy one base instance ({PRICES[BASE]} $/hour)")
    while c @ PRICES > budget + BUDGET_TOL:
        floor = np.zeros(4, dtype=np.int64)
        floor[BASE] = 1
        removable = np.flatnonzero(c > floor)
        if keep is not None and removable.size > 1:
            removable = removable[removable != keep]
        c[rng.choice(removable)] -= 1
    return c


def genetic_search(configs, f: ObjectiveLike | Objective, seed=0, optimum=None,
                   budget: float = 2.5, population: int = 8, tournament: int = 2,
                   mutation_prob: float = 0.3, elitism: int = 1, max_retries: int = 50,
                   max_generations: int = 10_000) -> SearchResult:
    """GENE (Fig. 11; the paper cites Wortmann & Nannicini, no parameters): [A] a population of
    8 random feasible configurations; per generation keep the ``elitism`` best, then breed the
    rest by tournament selection (size 2), uniform crossover and ±1 mutation of each gene with
    probability 0.3, repaired to the budget with ``n_0 ≥ 1``. A child already pruned (a
    sub-configuration of an evaluated one) is re-mutated up to ``max_retries`` times, then
    replaced by a random remaining configuration, so every child is a new evaluation."""
    x = _check_configs(configs)
    require(population >= 2, "population", population, "must be >= 2")
    require(1 <= tournament <= population, "tournament", tournament, "must be in 1..population")
    require(0 <= mutation_prob <= 1, "mutation_prob", mutation_prob, "must lie in [0, 1]")
    require(0 <= elitism < population, "elitism", elitism, "must lie in 0..population-1")
    rng = _check_rng(seed)
    state = _Pruned(x, _objective(f, x), optimum)

    def mutate(c: np.ndarray) -> np.ndarray:
        hit = rng.random(4) < mutation_prob
        return _repair(c + hit * rng.choice((-1, 1), size=4), budget, rng)

    def place(c: np.ndarray) -> int:
        """Index of ``c`` if it is a remaining candidate, re-mutating it while it is not."""
        for _ in range(max_retries):
            i = state.index.get(_key(c))
            if i is not None and state.remaining[i]:
                return i
            c = mutate(c)
        return int(rng.choice(np.flatnonzero(state.remaining)))

    pop: list[np.ndarray] = []
    fit: list[float] = []
    for i in rng.choice(len(x), size=min(population, len(x)), replace=False):
        if state.done:
            return state.result()
        if not state.remaining[i]:            # an earlier member pruned it: draw another
            i = rng.choice(np.flatnonzero(state.remaining))
        pop.append(x[int(i)])
        fit.append(state.evaluate(int(i)))
    for _ in range(max_generations):
        if state.done:
            break
        ranked = np.argsort(fit)[::-1]
        new_pop = [pop[j] for j in ranked[:elitism]]
        new_fit = [fit[j] for j in ranked[:elitism]]
        while len(new_pop) < population and not state.done:
            a, b = (pop[_tournament(fit, tournament, rng)] for _ in range(2))
            child = np.where(rng.random(4) < 0.5, a, b)
            i = place(mutate(child))
            new_pop.append(x[i])
            new_fit.append(state.evaluate(i))
        pop, fit = new_pop, new_fit
    return state.result()


def _tournament(fit: list[float], size: int, rng: np.random.Generator) -> int:
    entrants = rng.choice(len(fit), size=size, replace=False)
    return int(entrants[np.argmax([fit[j] for j in entrants])])


def matern52(A: np.ndarray, B: np.ndarray, length_scale: float) -> np.ndarray:
    """Matérn-5/2 kernel ``(1 + √5 r/ℓ + 5r²/3ℓ²) exp(−√5 r/ℓ)`` on instance-count vectors."""
    r = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)) / length_scale
    return (1.0 + np.sqrt(5.0) * r + 5.0 / 3.0 * r ** 2) * np.exp(-np.sqrt(5.0) * r)


def _gp_posterior(X: np.ndarray, y: np.ndarray, Xs: np.ndarray, length_scale: float,
                  noise: float) -> tuple[np.ndarray, np.ndarray, float]:
    """GP mean and std at ``Xs`` and the log marginal likelihood of ``(X, y)``."""
    K = matern52(X, X, length_scale) + noise * np.eye(len(X))
    Lc = np.linalg.cholesky(K)
    alpha = np.linalg.solve(Lc.T, np.linalg.solve(Lc, y))
    Ks = matern52(Xs, X, length_scale)
    mu = Ks @ alpha
    v = np.linalg.solve(Lc, Ks.T)
    var = np.maximum(1.0 - (v ** 2).sum(0), 1e-12)
    lml = -0.5 * y @ alpha - np.log(np.diag(Lc)).sum() - 0.5 * len(X) * np.log(2 * np.pi)
    return mu, np.sqrt(var), float(lml)


def _expected_improvement(mu: np.ndarray, sd: np.ndarray, best: float, xi: float) -> np.ndarray:
    """EI for maximisation with exploration margin ξ (as in ``bayes_opt``)."""
    z = (mu - best - xi) / sd
    from scipy import stats  # here, not at the top: it costs a sweep worker ~1 s to import
    return (mu - best - xi) * stats.norm.cdf(z) + sd * stats.norm.pdf(z)


def bayes_opt_search(configs, f: ObjectiveLike | Objective, seed=0, optimum=None,
                     n_init: int = 2, xi: float = 0.1,
                     length_scale: float | str = 2.0,
                     length_grid: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0),
                     noise: float = 1e-6) -> SearchResult:
    """BO, Ribbon's search (Fig. 11): a numpy GP with a Matérn-5/2 kernel on raw instance counts
    and normalised ``y``, Expected Improvement with ξ = 0.1, 2 random initial points (Ribbon's
    ``bayes_opt`` settings); EI is maximised over the discrete remaining candidates. The length
    scale is fixed (default 2 instances, [A]) or, with ``length_scale="fit"``, chosen each step
    from ``length_grid`` by marginal likelihood. Same pruning and stop rule as RAND."""
    x = _check_configs(configs)
    require(n_init >= 1, "n_init", n_init, "must be >= 1")
    fit = length_scale == "fit"
    require(fit or (isinstance(length_scale, (int, float)) and length_scale > 0),
            "length_scale", length_scale, "must be a positive number or 'fit'")
    rng = _check_rng(seed)
    state = _Pruned(x, _objective(f, x), optimum)
    evaluated: list[int] = []
    ys: list[float] = []
    for _ in range(n_init):
        if state.done:
            return state.result()
        i = int(rng.choice(np.flatnonzero(state.remaining)))
        evaluated.append(i)
        ys.append(state.evaluate(i))
    X = x.astype(float)
    for _ in range(len(x)):
        if state.done:
            break
        y = np.asarray(ys)
        sd_y = y.std() if y.std() > 0 else 1.0
        yn = (y - y.mean()) / sd_y                       # normalised y, as bayes_opt does
        cand = np.flatnonzero(state.remaining)
        scales = length_grid if fit else (float(length_scale),)
        post = [_gp_posterior(X[evaluated], yn, X[cand], ell, noise) for ell in scales]
        mu, sd, _ = max(post, key=lambda p: p[2])
        ei = _expected_improvement(mu, sd, yn.max(), xi)
        i = int(cand[int(np.argmax(ei))])
        evaluated.append(i)
        ys.append(state.evaluate(i))
    return state.result()


# ------------------------------------------------------------------------------------------
# Simulated annealing for Fig. 2
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SAStep:
    """One explored configuration: the step, the candidate, its throughput, whether the walk
    moved there."""

    step: int
    config: Config
    value: float
    accepted: bool


@dataclass
class SAResult:
    """The explored sequence (``steps``), the best configuration seen, the homogeneous
    throughput T0 was derived from, and how many candidates were filtered (``f < min_qps``)."""

    steps: list[SAStep]
    best_config: Config
    best_value: float
    homogeneous_value: float
    filtered: int
    evaluations: int


def _neighbour(c: np.ndarray, budget: float, rng: np.random.Generator) -> np.ndarray:
    """Change one random type by ±1, repaired to the budget and ``n_0 ≥ 1`` (removing other
    types' instances first, so an addition is not simply undone)."""
    n = c.copy()
    k = int(rng.integers(4))
    n[k] += int(rng.choice((-1, 1)))
    return _repair(n, budget, rng, keep=k)


def simulated_annealing(f: ObjectiveLike | Objective, seed=0, budget: float = 2.5,
                        steps: int = 50, t0: float | None = None, t0_fraction: float = 0.1,
                        cooling: float = 0.9, min_qps: float = 20.0, start=None,
                        max_resample: int = 100, configs=None) -> SAResult:
    """Simulated annealing over configurations (Fig. 2; the paper cites Van Laarhoven & Aarts
    and gives no parameters). [A] Start at a random feasible configuration (or ``start``); each
    step proposes a ±1 neighbour on a random type (repaired to the budget, ``n_0 ≥ 1``),
    resampled while ``f < min_qps`` (the paper filters such configurations out), and moves there
    with the Metropolis probability ``min(1, exp(Δf / T))``. ``T`` starts at
    ``t0 = t0_fraction × homogeneous-scaled throughput`` and is multiplied by ``cooling`` every
    step. ``configs`` (for the random start) defaults to ``model.configurations(budget)``."""
    from infsched.kairos.model import configurations
    require(steps >= 1, "steps", steps, "must be >= 1")
    require(0 < cooling <= 1, "cooling", cooling, "must lie in (0, 1]")
    rng = _check_rng(seed)
    cand = _check_configs(configurations(budget) if configs is None else configs)
    obj = _objective(f, cand)
    u, scale = homogeneous(budget)
    homo = obj.peek(u) * scale
    T = t0_fraction * homo if t0 is None else float(t0)
    require(np.isfinite(T) and T > 0, "t0", T, "must be > 0 (QPS)")
    if start is None:
        # random feasible start, redrawn (in random order, without repeats) while f < min_qps
        for i in rng.permutation(len(cand)):
            if obj(cand[i]) >= min_qps:
                start = cand[i]
                break
        require(start is not None, "min_qps", min_qps, "no configuration reaches it")
    cur = np.asarray(start, dtype=np.int64)
    cur_v = obj(cur)
    best_x, best_v = _key(cur), cur_v
    out = [SAStep(0, _key(cur), cur_v, True)]
    filtered = 0
    for step in range(1, steps + 1):
        for _ in range(max_resample):
            nb = _neighbour(cur, budget, rng)
            if not np.array_equal(nb, cur) and (v := obj(nb)) >= min_qps:
                break
            filtered += int(not np.array_equal(nb, cur))
        else:
            T *= cooling                    # no admissible neighbour: stay, keep cooling
            continue
        accept = v >= cur_v or rng.random() < np.exp((v - cur_v) / T)
        out.append(SAStep(step, _key(nb), v, bool(accept)))
        if accept:
            cur, cur_v = nb, v
        if v > best_v:
            best_x, best_v = _key(nb), v
        T *= cooling
    return SAResult(out, best_x, best_v, homo, filtered, obj.evaluations)
