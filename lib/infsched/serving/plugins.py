"""Bring your own policy: a reader's policy on the neutral simulator, by name (issue 33, item 5).

A policy is one function, called whenever a worker is free and its queue is not empty::

    select(s, lat, by_accuracy, params) -> (model, batch)

``s`` is a :data:`State` (a named tuple): ``slack_ms`` (the head query's time to its deadline),
``queue_len`` (queries in this worker's queue; with a central queue, the one queue),
``idle`` (other workers idle now), ``workers`` (K), ``worker`` (this worker's index),
``now_ms``, ``max_batch`` (the batch cap) and ``slo_ms`` (the SLO the policy plans for).
``lat[m, b-1]`` is ``l(m, b)`` in ms (models in the profile's order), ``by_accuracy`` the model
indices from the most to the least accurate, ``params`` the policy's knobs (a float64 array).
Return ``(m, b)`` with ``1 <= b <= min(queue_len, max_batch)`` to start the ``b`` oldest queries
on model ``m``, or ``(any, 0)`` to drop the head query (it counts as a violation; the function is
then asked again). Which queue a query joins is the policy's ``queue`` (``"central"``: one FIFO
queue, the lowest-index idle worker takes an arrival) or per-worker FIFO queues with a
``routing`` of :data:`ROUTINGS`.

Write it in plain Python to try it out, or decorate it with ``numba.njit`` (same code) and the
simulator compiles its event loop around it: about as fast as the built-in policies. Register it
by name with :func:`policy` (a decorator) or :func:`register`; the name then works wherever a
built-in policy's does: ``ServingConfig(zoo, workers=K, slo_ms=150, policy="my-policy")``, and as
a contender of the head-to-head sweeps, ``experiments.load_sweep(..., contenders=(*CONTENDERS,
"my-policy"))``, which carry the policy itself to their worker processes (or Dask workers), and
whose disk cache is keyed by the function's source and the knobs, so editing the function
recomputes its points and nothing else.

The registry follows microsoft/vidur's (``BaseRegistry`` subclasses such as
``GlobalSchedulerRegistry`` and ``ReplicaSchedulerRegistry``: ``register(key, cls)``, and a
config names its scheduler by a string key), with one difference: the registered object travels
with each sweep point, so a policy defined in a notebook runs on processes that never imported
that notebook. A compiled ``select`` must be numba-compilable as a whole (no imports inside it).

>>> import numpy as np
>>> from infsched.serving import plugins
>>> @plugins.policy("fastest-batch")
... def fastest_batch(s, lat, by_accuracy, params):
...     m = int(np.argmin(lat[:, 0]))
...     return m, min(s.queue_len, s.max_batch)
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ..des import heap_pop, heap_push
from ..errors import ConfigError, one_of, require
from .labels import LABELS
from .policies import (
    POLICIES,
    ROUTE_ROUND_ROBIN,
    ROUTINGS,
    SELECT_USER,
    SERVICE_EXPONENTIAL,
    SERVICE_JITTER,
    TAD_FAMILY,
    Policy,
    route,
)

__all__ = ["State", "UserPolicy", "PolicyError", "policy", "register", "registered", "get", "ROUTINGS",
           "run_user", "unknown_policy"]


class PolicyError(ConfigError):
    """A reader's policy misbehaved while it ran: it returned something that is not a valid
    ``(model, batch)`` (the message shows what it returned, the queue length and the batch cap),
    read outside its ``params`` or another array, or raised. The message names the policy."""


def unknown_policy(name: str, param: str, builtins) -> ConfigError:
    """The ConfigError for a policy ``name`` that is neither built in nor registered: it lists
    the built-ins and says how to register one's own."""
    return ConfigError(f"{param} = {name!r}: neither a built-in ({', '.join(map(repr, builtins))}) "
                       f"nor a registered policy ({', '.join(map(repr, _REGISTRY)) or 'none registered'}); "
                       f"register your own with @infsched.serving.plugins.policy({name!r}) (or "
                       "plugins.register(UserPolicy(...))) before naming it")

#: what a policy sees when a worker is free (see the module doc)
State = namedtuple("State", ["slack_ms", "queue_len", "idle", "workers", "worker", "now_ms",
                             "max_batch", "slo_ms"])

#: routings a per-worker user policy may name
USER_ROUTINGS = tuple(r for r in ROUTINGS if r not in TAD_FAMILY)

#: name -> UserPolicy
_REGISTRY: dict[str, UserPolicy] = {}


def _is_compiled(fn) -> bool:
    return hasattr(fn, "py_func") and hasattr(fn, "signatures")


def _source(fn) -> str:
    f = getattr(fn, "py_func", fn)
    try:
        return inspect.getsource(f)
    except (OSError, TypeError):  # no source (built in a string): its bytecode and constants
        code = f.__code__
        return repr((code.co_code, code.co_consts, code.co_names))


@dataclass(frozen=True, eq=False)
class UserPolicy:
    """A reader's policy: its ``name``, its ``select`` function (module doc), the ``queue``
    (``"central"`` or ``"per-worker"``) and, per worker, the ``routing``; its knobs ``params``;
    the batch cap ``max_batch`` (None: the profile's largest batch) and a display ``label``."""

    name: str
    select: Callable
    queue: str = "central"
    routing: str = "jiq"
    params: tuple = ()
    max_batch: int | None = None
    label: str | None = None
    key: str = field(init=False)

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name.strip() != "", "name", self.name,
                "must be a non-empty string")
        require(callable(self.select), "select", self.select,
                "must be a function select(state, lat, by_accuracy, params) -> (model, batch)")
        one_of("queue", self.queue, ("central", "per-worker"))
        one_of("routing", self.routing, USER_ROUTINGS)
        try:
            p = np.asarray(self.params, dtype=float).ravel()
        except (TypeError, ValueError):
            p = np.array([np.nan])
        require(bool(np.all(np.isfinite(p))), "params", self.params, "must be finite numbers")
        object.__setattr__(self, "params", tuple(float(x) for x in p))
        require(self.max_batch is None or (isinstance(self.max_batch, (int, np.integer))
                                          and not isinstance(self.max_batch, bool) and self.max_batch >= 1),
                "max_batch", self.max_batch, "must be None or an integer >= 1")
        blob = repr((self.name, self.queue, self.routing, self.params, self.max_batch,
                     _is_compiled(self.select), _source(self.select)))
        object.__setattr__(self, "key", hashlib.sha256(blob.encode()).hexdigest()[:16])

    @property
    def compiled(self) -> bool:
        """True if ``select`` is a numba-compiled function (the fast path)."""
        return _is_compiled(self.select)

    def with_params(self, *params: float, name: str | None = None) -> UserPolicy:
        """The same policy with other knobs (and, to run both in one sweep, another name)."""
        return UserPolicy(name or self.name, self.select, self.queue, self.routing, tuple(params),
                          self.max_batch, self.label if name is None else None)

    def _store_state(self) -> dict:
        """What :mod:`infsched.store` keeps of this policy: ``select`` by module and name (only a
        module-level function of the library, such as :mod:`infsched.serving.examples`, can be
        imported back to recompute a point), the other fields, and the key of its code."""
        fn = getattr(self.select, "py_func", self.select)
        module, qual = getattr(fn, "__module__", "") or "", getattr(fn, "__qualname__", "") or ""
        if not module.startswith("infsched.") or "<" in qual:
            raise TypeError(f"cannot store policy {self.name!r}: its select function is not a "
                            "module-level function of the library (a reader's policy is computed "
                            "live, never stored)")
        return {"select": f"{module}:{qual}", "key": self.key, "name": self.name,
                "queue": self.queue, "routing": self.routing, "params": self.params,
                "max_batch": self.max_batch, "label": self.label}

    @classmethod
    def _from_store_state(cls, state: dict) -> UserPolicy:
        """The policy :meth:`_store_state` describes; ValueError if its code changed since."""
        module, _, qual = state["select"].partition(":")
        target: Any = importlib.import_module(module)
        for part in qual.split("."):
            target = getattr(target, part)
        select = target.select if isinstance(target, cls) else target
        p = cls(state["name"], select, state["queue"], state["routing"], tuple(state["params"]),
                state["max_batch"], state["label"])
        if p.key != state["key"]:
            raise ValueError(f"policy {state['select']}: its code changed since it was stored "
                             f"(key {p.key}, stored {state['key']})")
        return p

    def __repr__(self) -> str:  # part of a sweep point's cache key: the name and the code's hash
        return f"UserPolicy({self.name!r}, key={self.key})"


def register(p: UserPolicy) -> UserPolicy:
    """Make ``p`` a policy (and a head-to-head contender) by its name. Registering the same
    policy again is a no-op (it returns the registered object, whose compiled loop is reused);
    a different policy under a registered user name replaces it; a built-in's name is refused."""
    require(isinstance(p, UserPolicy), "policy", type(p).__name__, "must be a UserPolicy")
    old = _REGISTRY.get(p.name)
    if old is not None and old.key == p.key:
        return old
    require(p.name not in POLICIES or POLICIES[p.name].select == SELECT_USER, "name", p.name,
            "is a built-in policy's name; choose another")
    require(p.name not in LABELS or p.name in _REGISTRY, "name", p.name,
            "is a built-in contender's name; choose another")
    _REGISTRY[p.name] = p
    POLICIES[p.name] = Policy(p.name, SELECT_USER, p.queue, p.routing, "fastest", p.max_batch,
                              constraint="a reader's policy (infsched.serving.plugins)")
    LABELS[p.name] = p.label or p.name
    return p


def policy(name: str, *, queue: str = "central", routing: str = "jiq", params=(),
           max_batch: int | None = None, label: str | None = None):
    """Decorator: register ``select`` as policy ``name``; returns the :class:`UserPolicy`."""
    def wrap(select: Callable) -> UserPolicy:
        return register(UserPolicy(name, select, queue, routing, tuple(params), max_batch, label))
    return wrap


def registered() -> tuple[str, ...]:
    """The names of the registered user policies."""
    return tuple(_REGISTRY)


def get(name: str) -> UserPolicy:
    """The registered user policy ``name``."""
    one_of("policy", name, tuple(_REGISTRY) or ("<none registered>",))
    return _REGISTRY[name]


# ------------------------------------------------------------------ the event loop around select
# One source, run as plain Python (a Python select) or compiled by numba with the user's
# compiled select as an argument (numba specialises the loop for it). The rules are the neutral
# engine's (:func:`.engine.run`): completions before arrivals at the same instant; a central
# queue's arrival goes to the lowest-index idle worker; per-worker queues route on arrival.

def _loop(arr, slo, lat, by_acc, K, central, routing, cap, u, service, svc, spread, levels,
          start, finish, model, bsize, fn, params, err):
    n = arr.size
    M = lat.shape[0]
    qhead = np.full(K + 1, -1, np.int64)
    qtail = np.full(K + 1, -1, np.int64)
    qlen = np.zeros(K + 1, np.int64)
    nxt = np.full(n, -1, np.int64)
    busy = np.zeros(K, np.bool_)
    load = np.zeros(K, np.int64)
    inserv = np.zeros(K, np.int64)
    n_idle = K
    ht = np.empty(K, np.float64)
    hs = np.empty(K, np.int64)
    hsize = 0
    nb = 0
    i = 0
    while i < n or hsize > 0:
        if hsize > 0 and (i >= n or ht[0] <= arr[i]):
            now = ht[0]
            w = hs[0]
            hsize = heap_pop(ht, hs, hsize)
            busy[w] = False
            n_idle += 1
            load[w] -= inserv[w]
            inserv[w] = 0
        else:
            now = arr[i]
            if central:
                q = K
                w = -1
                if n_idle > 0:
                    for v in range(K):
                        if not busy[v]:
                            w = v
                            break
            else:
                if routing == ROUTE_ROUND_ROBIN:
                    w = i % K
                else:
                    w = route(routing, load, busy, n_idle, u[i] if u.size > 0 else 0.0)
                q = w
                load[w] += 1
            if qlen[q] == 0:
                qhead[q] = i
            else:
                nxt[qtail[q]] = i
            qtail[q] = i
            qlen[q] += 1
            i += 1
            if w < 0 or busy[w]:
                continue
        q = K if central else w
        while qlen[q] > 0:
            s = State(slo - (now - arr[qhead[q]]), qlen[q], n_idle - 1, K, w, now, cap, slo)
            m, b = fn(s, lat, by_acc, params)
            if b == 0:  # drop the head
                j = qhead[q]
                start[j] = now
                finish[j] = np.nan
                model[j] = -1
                qhead[q] = nxt[j]
                qlen[q] -= 1
                if not central:
                    load[w] -= 1
                continue
            if b < 0 or b > qlen[q] or b > cap or m < 0 or m >= M:
                # what it returned and what it saw, for the caller's named error (a compiled
                # loop cannot format a message)
                err[0] = m
                err[1] = b
                err[2] = qlen[q]
                return -1
            mult = 1.0
            if service == SERVICE_EXPONENTIAL:
                mult = svc[nb % svc.size]
            elif service == SERVICE_JITTER:
                qq = spread[m, b - 1]
                uu = svc[nb % svc.size]
                jj = 0
                while jj < levels.size - 2 and uu > levels[jj + 1]:
                    jj += 1
                mult = qq[jj] + (qq[jj + 1] - qq[jj]) * (uu - levels[jj]) / (levels[jj + 1] - levels[jj])
            end = now + lat[m, b - 1] * mult
            nb += 1
            for _ in range(b):
                j = qhead[q]
                start[j] = now
                finish[j] = end
                model[j] = m
                bsize[j] = b
                qhead[q] = nxt[j]
            qlen[q] -= b
            busy[w] = True
            n_idle -= 1
            inserv[w] = b
            hsize = heap_push(ht, hs, hsize, end, w)
            break
    return nb


_loop_compiled = njit(_loop)


_CHECKED: dict = {}  # policy key -> its select compiled with bounds checks


def _bounds_checked(p: UserPolicy):
    """``p``'s compiled select recompiled with numba's bounds checks, so that reading
    ``params[k]`` past the declared knobs (or any array out of range) raises IndexError instead
    of reading whatever lies beyond; the checks cost little beside the event loop."""
    f = _CHECKED.get(p.key)
    if f is None:
        opts = {k: v for k, v in getattr(p.select, "targetoptions", {}).items()
                if k not in ("nopython", "boundscheck")}
        f = _CHECKED[p.key] = njit(boundscheck=True, **opts)(p.select.py_func)
    return f


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_return(p: UserPolicy, out, queue_len: int, cap: int) -> None:
    if not (isinstance(out, tuple) and len(out) == 2 and _is_int(out[0]) and _is_int(out[1])):
        raise PolicyError(f"policy {p.name!r}: select returned {out!r} (types "
                          f"{tuple(type(x).__name__ for x in out) if isinstance(out, tuple) else type(out).__name__})"
                          f" with queue_len = {queue_len} and max_batch = {cap}; it must return two "
                          "integers (model, batch)")


def _python_checked(p: UserPolicy):
    """A Python select wrapped so that each call's return is checked (the Python loop is slow
    anyway; a compiled select is checked once, by :func:`_probe`, as numba fixes its types)."""
    fn = p.select

    def checked(s, lat, by_acc, params):
        out = fn(s, lat, by_acc, params)
        _check_return(p, out, int(s.queue_len), int(s.max_batch))
        return out
    return checked


def _explain(p: UserPolicy, e: Exception) -> PolicyError:
    if isinstance(e, IndexError):
        return PolicyError(f"policy {p.name!r} read outside an array ({e}); it declares "
                           f"{len(p.params)} params {p.params}: declare the knobs it reads with "
                           "plugins.policy(name, params=(...)) or UserPolicy(..., params=(...))")
    return PolicyError(f"policy {p.name!r} raised {type(e).__name__}: {e}")


def _probe(p: UserPolicy, fn, slo, lat, by_acc, K, cap, params) -> None:
    """Call ``select`` once, before the run, on a state of the types the loop passes (a queue
    of ``min(2, cap)`` queries with the whole SLO as slack), so that a return of the wrong type
    (a float batch), a read past ``params`` or a compile error is reported with the policy's name
    rather than from deep inside the compiled loop."""
    q = int(min(2, cap))
    s = State(float(slo), np.int64(q), np.int64(K - 1), np.int64(K), np.int64(0), 0.0, np.int64(cap), float(slo))
    try:
        out = fn(s, lat, by_acc, params)
    except PolicyError:
        raise
    except Exception as e:  # numba's typing errors included: name the policy
        raise _explain(p, e) from e
    _check_return(p, out, q, int(cap))


def run_user(p: UserPolicy, arr, slo, lat, by_acc, K, central, routing, cap, u, service, svc,
             spread, levels, start, finish, model, bsize) -> int:
    """Run ``p``'s event loop (compiled if its select is); fills the per-query arrays and
    returns the number of batches. Called by :func:`.sim.simulate`. A policy that returns an
    invalid ``(model, batch)``, reads outside an array or raises stops the run with a
    :class:`PolicyError` naming it."""
    loop = _loop_compiled if p.compiled else _loop
    fn = _bounds_checked(p) if p.compiled else _python_checked(p)
    params = np.asarray(p.params, dtype=np.float64)
    _probe(p, fn, slo, lat, by_acc, int(K), int(cap), params)
    err = np.zeros(3, np.int64)
    try:
        nb = int(loop(arr, float(slo), lat, by_acc, int(K), bool(central), int(routing), int(cap), u,
                      int(service), svc, spread, levels, start, finish, model, bsize, fn, params, err))
    except PolicyError:
        raise
    except Exception as e:
        raise _explain(p, e) from e
    if nb < 0:
        m, b, q = (int(x) for x in err)
        raise PolicyError(f"policy {p.name!r}: select returned (model, batch) = ({m}, {b}) with "
                          f"queue_len = {q}, max_batch = {int(cap)} and {lat.shape[0]} models; it must "
                          "return 0 <= model < models and 0 <= batch <= min(queue_len, max_batch)")
    return nb
