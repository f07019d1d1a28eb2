"""CPU worker processes holding zoo models, for real execution against the head-to-head's
simulator (:mod:`infsched.serving.realexec`, issue 33, item 7).

:class:`WorkerPool` spawns ``K`` processes (``multiprocessing``, spawn), each with ``threads``
torch threads, holding the zoo's models (:func:`.zoo.build`: architectures with random weights;
latency does not depend on the weights' values) and a random input batch of ``max_batch`` per
model. A worker executes ``("run", job, model, batch)`` on the first ``batch`` images and answers
``("done", job, model, batch, exec_ms, t_recv, t_start, t_end)`` with the model and batch size it
ran and, read from ``time.perf_counter`` (the system's monotonic clock, which every process of
the machine shares), when it received the job and when the model call began and ended (seconds):
the dispatcher places each query's execution on its own clock with them.
:func:`measure_profile` times every ``(model, batch)`` point in those same processes, all
workers timing their share at once (:func:`.timing.profile_model`), so every point is timed
while the other workers compute too, as they do under load.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from dataclasses import replace

import pandas as pd

from ..errors import require
from ..profiles import Profile

__all__ = ["DEFAULT_MODELS", "WorkerPool", "measure_profile"]

#: small ImageNet models at 224 x 224 with published accuracies far apart (58.0, 68.4, 73.0 %)
DEFAULT_MODELS = ("shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "mobilenet_v3_large")


def _worker_main(conn, names: tuple, max_batch: int, threads: int, device: str = "cpu") -> None:
    """One worker process: build the models, then execute jobs until told to stop. On
    ``device="cuda"`` the models and inputs live on the GPU (every worker shares it) and each
    call is synchronised before its end is read, so ``t_end`` is when the result exists."""
    try:
        import torch

        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set in this process
            pass
        from .zoo import build

        cuda = device == "cuda"
        built = [build(n, device=device) for n in names]
        models = [bm.module.to(device) for bm in built]
        inputs = [bm.make_input(max_batch, device) for bm in built]
        with torch.inference_mode():
            for mod, x in zip(models, inputs):  # one-off allocations are not what a server sees
                mod(x[:1])
                if cuda:
                    torch.cuda.synchronize()
        conn.send(("ready", torch.__version__, torch.get_num_threads()))
    except Exception:  # report, so the parent raises with the worker's traceback
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        msg = conn.recv()
        t_recv = time.perf_counter()
        if msg is None:
            return
        try:
            if msg[0] == "run":
                _, job, m, b = msg
                x = inputs[m][:b]
                t0 = time.perf_counter()
                with torch.inference_mode():
                    models[m](x)
                    if cuda:
                        torch.cuda.synchronize()
                t1 = time.perf_counter()
                conn.send(("done", job, m, int(x.shape[0]), (t1 - t0) * 1000.0, t_recv, t0, t1))
            elif msg[0] == "profile":
                from .timing import profile_model

                _, points, settings = msg
                rows = []
                for m, b in points:
                    rows.append(profile_model(models[m], lambda bb, dev, x=inputs[m]: x[:bb],
                                              replace(settings, batch_sizes=(b,)), name=names[m],
                                              task="image", input_desc=built[m].input_desc))
                conn.send(("profile", pd.concat(rows, ignore_index=True) if rows else None))
        except Exception:
            conn.send(("error", traceback.format_exc()))


class WorkerPool:
    """``workers`` spawned processes, each holding ``models`` (zoo names) and input batches of up
    to ``max_batch`` images, with ``threads`` torch threads, on ``device`` (``"cpu"``, or
    ``"cuda"``: every worker on the one GPU, as processes sharing it). Use as a context manager."""

    def __init__(self, workers: int, models=DEFAULT_MODELS, max_batch: int = 8, threads: int = 1,
                 start_timeout_s: float = 300.0, device: str = "cpu"):
        require(isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1,
                "workers", workers, "must be an integer >= 1")
        require(isinstance(max_batch, int) and not isinstance(max_batch, bool) and max_batch >= 1,
                "max_batch", max_batch, "must be an integer >= 1")
        require(isinstance(threads, int) and not isinstance(threads, bool) and threads >= 1,
                "threads", threads, "must be an integer >= 1")
        from ..errors import one_of
        from .zoo import ZOO, check_names

        self.device = one_of("device", device, ("cpu", "cuda"))
        self.models = check_names(list(models) if not isinstance(models, str) else [models])
        bad = [m for m in self.models if ZOO[m].task != "image"]
        require(not bad, "models", bad, "must be image models (the profile's accuracies are ImageNet top-1)")
        self.workers, self.max_batch, self.threads = workers, max_batch, threads
        self.start_timeout_s = float(start_timeout_s)
        self.conns: list = []
        self.procs: list = []
        self.torch_version = ""

    def __enter__(self) -> WorkerPool:
        ctx = mp.get_context("spawn")
        env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(self.threads)
        try:  # the children read the thread variables when torch loads
            for _ in range(self.workers):
                a, b = ctx.Pipe()
                p = ctx.Process(target=_worker_main,
                                args=(b, self.models, self.max_batch, self.threads, self.device), daemon=True)
                p.start()
                b.close()
                self.conns.append(a)
                self.procs.append(p)
        finally:
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        for c in self.conns:
            if not c.poll(self.start_timeout_s):
                self.close()
                raise RuntimeError(f"a worker did not start within {self.start_timeout_s:g} s")
            try:
                msg = c.recv()
            except EOFError:  # it died first (spawn re-imports __main__: it must be a file)
                self.close()
                raise RuntimeError("a worker exited before it was ready; see its traceback above") from None
            if msg[0] == "error":
                self.close()
                raise RuntimeError("a worker failed to start:\n" + msg[1])
            self.torch_version = msg[1]
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for c in self.conns:
            try:
                c.send(None)
            except (OSError, BrokenPipeError):
                pass
        end = time.perf_counter() + 1.0  # a worker holds nothing to save: do not wait for torch's teardown
        for p in self.procs:
            p.join(timeout=max(end - time.perf_counter(), 0.0))
        for p in self.procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=5.0)
        for c in self.conns:
            c.close()
        self.conns, self.procs = [], []

    def recv(self, w: int):
        try:
            msg = self.conns[w].recv()
        except EOFError:
            raise RuntimeError(f"worker {w} exited") from None
        if msg[0] == "error":
            raise RuntimeError(f"worker {w} failed:\n" + msg[1])
        return msg


def measure_profile(pool: WorkerPool, *, reps: int = 60, min_reps: int = 10, warmup: int = 2,
                    budget_s: float = 1.0) -> tuple[pd.DataFrame, Profile]:
    """Time every (model, batch 1..max_batch) point in the pool's workers, the points dealt out
    round-robin so that all workers time at once (each with its own thread count, as it serves).
    Returns the raw profile (:data:`infsched.profiling.RAW_COLUMNS`) and the
    :class:`~infsched.profiles.Profile` the chapters load from it (p95, post-processed, published
    accuracies: spec ramsis §5.1; ``Zoo.of`` it for the simulator)."""
    from ..profiles.fit import measured_profile
    from .timing import ProfileSettings

    settings = ProfileSettings(batch_sizes=(1,), device=pool.device, warmup=warmup, reps=reps,
                               min_reps=min_reps, budget_s=budget_s, threads=pool.threads)
    points = [(m, b) for m in range(len(pool.models)) for b in range(1, pool.max_batch + 1)]
    # the slowest points first, so the workers finish together
    points.sort(key=lambda p: -p[1])
    share = [points[w::pool.workers] for w in range(pool.workers)]
    for w, pts in enumerate(share):
        pool.conns[w].send(("profile", pts, settings))
    parts = [pool.recv(w)[1] for w in range(pool.workers)]
    raw = pd.concat([p for p in parts if p is not None], ignore_index=True)
    raw = raw.sort_values(["model", "batch"], kind="stable").reset_index(drop=True)
    return raw, measured_profile(raw, "image", max_batch=pool.max_batch)
