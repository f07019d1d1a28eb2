"""How long one batch takes: a stand-in for the Vidur simulator the paper used (spec §6).

The paper takes batch times from Vidur for Llama2-70B on two linked A100s and gives no numbers.
Vidur's public A100 profiles of Llama-2-70B at tensor parallelism 2 give, per batch of ``N_q``
query tokens, the linear layers, norms and all-reduces as ``max(57.0, 42.0 + 0.316·N_q)`` ms;
attention was not in the public profiles and is a roofline estimate: ``1.1e-4`` ms per cached
token read by a decode step, ``4.4e-6·s²`` ms per new prompt of ``s`` tokens. So

    ``T = κ · [max(57.0, 42.0 + 0.316·N_q) + 1.1e-4·K_dec + 4.4e-6·Σ s_i²] / 1000`` seconds,

with ``N_q`` the decode requests plus the new prompts' tokens and ``K_dec`` the decode requests'
cached tokens. ``κ = 1`` is the derived model; the chapter also calibrates ``κ`` on one number of
the paper (MC-SF's mean latency in Table 1) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from infsched.errors import require

__all__ = ["BatchTimeModel"]


@dataclass(frozen=True)
class BatchTimeModel:
    """Batch time in seconds; coefficients in milliseconds (spec §6)."""

    kappa: float = 1.0
    floor_ms: float = 57.0
    intercept_ms: float = 42.0
    per_token_ms: float = 0.316
    per_kv_token_ms: float = 1.1e-4
    prefill_sq_ms: float = 4.4e-6

    def __post_init__(self) -> None:
        for name in ("kappa", "floor_ms"):
            v = getattr(self, name)
            require(isinstance(v, (int, float)) and v > 0, name, v, "must be a positive number")
        for name in ("intercept_ms", "per_token_ms", "per_kv_token_ms", "prefill_sq_ms"):
            v = getattr(self, name)
            require(isinstance(v, (int, float)) and v >= 0, name, v, "must be a number >= 0")

    def seconds(self, n_decode: int, kv_decode: float, prompt_tokens: float,
                prompt_sq: float) -> float:
        """One batch: ``n_decode`` requests in their token phase holding ``kv_decode`` cached
        tokens, and new prompts of ``prompt_tokens`` tokens in all (``prompt_sq`` = Σ s_i²)."""
        n_q = n_decode + prompt_tokens
        ms = (max(self.floor_ms, self.intercept_ms + self.per_token_ms * n_q)
              + self.per_kv_token_ms * kv_decode + self.prefill_sq_ms * prompt_sq)
        return self.kappa * ms / 1000.0

    @property
    def empty_batch_seconds(self) -> float:
        """A round in which nothing progresses (a stall): the floor."""
        return self.seconds(0, 0.0, 0.0, 0.0)
