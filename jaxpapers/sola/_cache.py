"""A compact teacher cache: top-K_c ids and log-probabilities per position,
stored once on disk."""

from __future__ import annotations

import hashlib
import pathlib
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from jaxpapers.core import cache as cache_lib
from jaxpapers.core import progress

__all__ = ["TeacherCache", "cache_teacher", "gather_cache"]


class TeacherCache(NamedTuple):
  """Teacher predictions for ``N`` sequences of ``T`` positions (host numpy).

  Position ``p`` holds the distribution predicting token ``p + 1``.

  Attributes:
    ids: int32 [N, T, K_c], the top-K_c ids (most probable first).
    logp: float16 [N, T, K_c], their log-probabilities (normalised over the full
      vocabulary, so renormalising on any subset of cached ids is exact).
    tok_logp: float32 [N, T], log-probability of the realised next token (0 past
      the end).
  """

  ids: np.ndarray
  logp: np.ndarray
  tok_logp: np.ndarray

  @property
  def bytes_per_token(self) -> float:
    return (self.ids[0, 0].nbytes + self.logp[0, 0].nbytes + 4) * 1.0


def _topk_fn(top_k):
  @jax.jit
  def f(logits, tokens):
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
    v, i = jax.lax.top_k(logp, top_k)
    nxt = jnp.concatenate([tokens[:, 1:], jnp.zeros_like(tokens[:, :1])], 1)
    tl = jnp.take_along_axis(logp, nxt[..., None], -1)[..., 0]
    return i.astype(jnp.int32), v.astype(jnp.float16), tl

  return f


def cache_teacher(
  logits_fn: Callable[[jax.Array], jax.Array],
  tokens: np.ndarray,
  lengths: np.ndarray,
  *,
  top_k: int = 64,
  batch_size: int = 8,
  directory: str | pathlib.Path | None = None,
  show_progress: bool = True,
) -> TeacherCache:
  """Runs the teacher once over ``tokens`` and keeps its top-``top_k``
  predictions.

  With ``directory``, every batch is saved as ``shard_<i>.npz`` next to a
  ``meta.json`` fingerprint of the inputs, both through
  :mod:`jaxpapers.core.cache` (atomic writes by process 0, a SHA-256 digest
  checked on read); a rerun loads finished shards and computes only the missing
  ones (resumable), and a shard that was cut off or altered is computed again
  with a warning naming it. A directory holding another cache is an error.

  Args:
    logits_fn: ``tokens [b, T] -> logits [b, T, V_T]`` (e.g. a jitted ``jaxpapers.lm.forward``).
    tokens: int [N, T], BOS-prefixed teacher ids (0-padded).
    lengths: int [N], valid lengths.
    top_k: K_c (>= 1).
    batch_size: sequences per call; the last batch is padded with copies (one
      compile).
    directory: optional cache directory.
    show_progress: show a progress bar over the batches.

  Returns:
    A :class:`TeacherCache` (``tok_logp`` is 0 at positions ``>= length - 1``).
  """
  tokens = np.asarray(tokens)
  lengths = np.asarray(lengths)
  if (
    tokens.ndim != 2
    or not np.issubdtype(tokens.dtype, np.integer)
    or tokens.shape[0] == 0
  ):
    raise ValueError(
      "tokens must be a non-empty int array [N, T], "
      f"got {tokens.dtype}{tokens.shape}"
    )
  if lengths.shape != tokens.shape[:1]:
    raise ValueError(
      f"lengths must have shape [N={tokens.shape[0]}], got {lengths.shape}"
    )
  if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
    raise ValueError(f"top_k must be a positive int, got {top_k!r}")
  if (
    isinstance(batch_size, bool)
    or not isinstance(batch_size, int)
    or batch_size < 1
  ):
    raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
  n, t = tokens.shape
  d = None
  if directory is not None:
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(
      tokens.astype(np.int32).tobytes() + lengths.astype(np.int32).tobytes()
    )
    meta = {
      "fingerprint": h.hexdigest(),
      "top_k": top_k,
      "batch_size": batch_size,
    }
    mp = d / "meta.json"
    try:
      old = cache_lib.read_json(mp)
    except FileNotFoundError:
      old = None
    # the shards are checked one by one below
    except cache_lib.CorruptFileError as e:
      logging.warning("%s; writing it again", e)
      old = None
    if old is not None and old != meta:
      raise ValueError(
        f"directory {d} holds a teacher cache of other inputs; use another one"
      )
    if old is None:
      cache_lib.write_json(mp, meta)
  f = _topk_fn(top_k)
  ids, logp, tl = [], [], []
  starts = list(range(0, n, batch_size))
  for s0 in progress(
    starts, desc="teacher cache", disable=None if show_progress else True
  ):

    def compute(s0: int = s0) -> dict[str, np.ndarray]:
      b = tokens[s0 : s0 + batch_size]
      nb = len(b)
      if nb < batch_size:
        b = np.concatenate([b, np.repeat(b[-1:], batch_size - nb, 0)])
      bj = jnp.asarray(b, jnp.int32)
      out = f(logits_fn(bj), bj)
      return dict(
        zip(("ids", "logp", "tok_logp"), (np.asarray(x)[:nb] for x in out))
      )

    if d is None:
      z = compute()
    else:
      z = cache_lib.cached_arrays(
        d / f"shard_{s0 // batch_size:05d}.npz", compute
      )
    bi, bl, bt = z["ids"], z["logp"], z["tok_logp"]
    ids.append(bi)
    logp.append(bl)
    tl.append(bt)
  tok_logp = np.concatenate(tl).astype(np.float32)
  tok_logp = np.where(
    np.arange(t)[None, :] < lengths[:, None] - 1, tok_logp, 0.0
  )
  return TeacherCache(
    np.concatenate(ids), np.concatenate(logp), tok_logp.astype(np.float32)
  )


def gather_cache(
  cache: TeacherCache, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
  """The cache rows at chosen positions of every sequence.

  Args:
    cache: the teacher cache (``N`` sequences of ``T`` positions).
    positions: int [N, K], positions in ``[0, T)`` per sequence.

  Returns:
    ``(ids int32 [N, K, K_c], logp float32 [N, K, K_c])``.
  """
  positions = np.asarray(positions)
  if positions.ndim != 2 or positions.shape[0] != cache.ids.shape[0]:
    raise ValueError(
      f"positions must have shape [N={cache.ids.shape[0]}, K], "
      f"got {positions.shape}"
    )
  if positions.min() < 0 or positions.max() >= cache.ids.shape[1]:
    raise ValueError(f"positions must lie in [0, {cache.ids.shape[1]})")
  ids = np.take_along_axis(cache.ids, positions[..., None], 1)
  lp = np.take_along_axis(cache.logp, positions[..., None], 1).astype(
    np.float32
  )
  return ids, lp
