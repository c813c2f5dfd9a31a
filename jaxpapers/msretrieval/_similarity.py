"""Fingerprint similarities: Tanimoto (float and bit-packed), continuous
Tanimoto, cosine.

Conventions (tested): every similarity lies in [0, 1] for fingerprints and
probabilities, and a pair whose union is empty (two all-zero vectors) has
similarity 0 (the reference code divides 0 by 0 there and gets NaN).
Fingerprints are binary arrays of any real dtype (``uint8`` keeps ``[B, C, F]``
candidate tensors small); probabilities are floats in [0, 1].

Bad input: shapes and dtypes are checked at trace time. Values (binary
fingerprints, probabilities in [0, 1]) are checked eagerly (``ValueError``);
under ``jax.jit`` a bad value turns every float output into NaN (policy in
:mod:`jaxpapers.core.validation`).
"""

from __future__ import annotations

import functools
from typing import Literal

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V

Similarity = Literal["cosine", "tanimoto", "cont_iou"]
SIMILARITIES: tuple[Similarity, ...] = ("cosine", "tanimoto", "cont_iou")
_EPS = 1e-8  # torch.nn.functional.cosine_similarity's eps


def _finish(out, flags, messages):
  """Raises on concrete bad flags; poisons ``out`` with NaN when the flags are
  traced."""
  ok = True
  for flag, msg in zip(flags, messages):
    ok = ok & V.check_values(flag, msg)
  return V.poison(out, ok)


def _binary_ok(x: jax.Array) -> jax.Array:
  return (x == 0) | (x == 1)


def _prob_ok(x: jax.Array) -> jax.Array:
  return (x >= 0) & (x <= 1)


def _check_pair(a, b, name_a: str, name_b: str):
  a = V.check_array(a, name_a, dtype="real")
  b = V.check_array(b, name_b, dtype="real")
  if a.ndim < 1 or b.ndim < 1 or a.shape[-1] != b.shape[-1]:
    raise ValueError(
      f"{name_a} and {name_b} must be [..., F] arrays with the same F (last "
      f"axis); got {name_a} {a.shape}, {name_b} {b.shape}"
    )
  if a.shape[-1] == 0:
    raise ValueError(
      f"{name_a} must have at least one bit (F >= 1), got shape {a.shape}"
    )
  try:
    jnp.broadcast_shapes(a.shape[:-1], b.shape[:-1])
  except ValueError:
    raise ValueError(
      f"the leading axes of {name_a} {a.shape} and {name_b} {b.shape} must "
      "broadcast"
    ) from None
  return a, b


def _ratio(num: jax.Array, den: jax.Array) -> jax.Array:
  """``num / den`` with 0 where ``den == 0`` (empty union)."""
  return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)


def tanimoto(a: jax.Array, b: jax.Array) -> jax.Array:
  """Tanimoto (Jaccard) similarity of binary fingerprints.

  ``T(a, b) = |a ∧ b| / |a ∨ b| = Σ a_j b_j / (Σ a_j + Σ b_j - Σ a_j b_j)``; 0 when both are empty.

  Args:
    a: ``[..., F]`` binary fingerprints (any real dtype, entries in {0, 1}).
    b: ``[..., F]`` binary fingerprints, broadcasting against ``a``'s leading
      axes.

  Returns:
    ``[...]`` float32 similarities in [0, 1].

  Under jit: a non-binary entry makes every output NaN.
  """
  a, b = _check_pair(a, b, "a", "b")
  out, flags = _tanimoto(a, b)
  return _finish(
    out,
    flags,
    (
      "a must be binary (entries in {0, 1})",
      "b must be binary (entries in {0, 1})",
    ),
  )


@jax.jit
def _tanimoto(a, b):
  af, bf = a.astype(jnp.float32), b.astype(jnp.float32)
  inter = (af * bf).sum(-1)
  union = af.sum(-1) + bf.sum(-1) - inter
  return _ratio(inter, union), (jnp.all(_binary_ok(a)), jnp.all(_binary_ok(b)))


def thresholded_tanimoto(
  pred: jax.Array, fp: jax.Array, *, threshold: float = 0.5
) -> jax.Array:
  """Tanimoto of the thresholded prediction ``1[pred > threshold]`` and a binary
  ``fp``.

  The reference's ``batch_samplewise_tanimoto`` (ms-mole ``models.py``): strict
  ``>``.

  Args:
    pred: ``[..., F]`` predicted probabilities (or any real scores).
    fp: ``[..., F]`` binary fingerprints.
    threshold: the bit threshold (static).

  Returns:
    ``[...]`` float32.
  """
  threshold = V.check_float(threshold, "threshold")
  pred, fp = _check_pair(pred, fp, "pred", "fp")
  return tanimoto((pred > threshold).astype(jnp.uint8), fp)


def pack_bits(bits: jax.Array) -> jax.Array:
  """Packs binary ``[..., F]`` into ``uint32 [..., ceil(F / 32)]`` words (bit j of word w = F-index 32 w + j).

  Trailing bits of the last word are 0, so they never count. Under jit a
  non-binary entry makes every word 0xFFFFFFFF (an impossible packing of F < 32
  w bits; :func:`packed_tanimoto` of such words is NaN-free, so check eagerly
  first if unsure).

  Args:
    bits: ``[..., F]`` binary array.

  Returns:
    ``[..., ceil(F / 32)]`` uint32.
  """
  bits = V.check_array(bits, "bits", dtype="real")
  if bits.ndim < 1 or bits.shape[-1] == 0:
    raise ValueError(
      f"bits must be a [..., F] array with F >= 1, got shape {bits.shape}"
    )
  words, ok = _pack(bits)
  ok = V.check_values(ok, "bits must be binary (entries in {0, 1})")
  if ok is True:
    return words
  return jnp.where(ok, words, jnp.uint32(0xFFFFFFFF))


@jax.jit
def _pack(bits):
  f = bits.shape[-1]
  w = -(-f // 32)
  b = jnp.pad(
    bits.astype(jnp.uint32), [(0, 0)] * (bits.ndim - 1) + [(0, 32 * w - f)]
  )
  b = b.reshape(*bits.shape[:-1], w, 32)
  words = (b << jnp.arange(32, dtype=jnp.uint32)).sum(-1, dtype=jnp.uint32)
  return words, jnp.all(_binary_ok(bits))


def packed_tanimoto(a_words: jax.Array, b_words: jax.Array) -> jax.Array:
  """Tanimoto of bit-packed fingerprints with ``lax.population_count``.

  ``T = Σ_w popcount(a_w & b_w) / Σ_w popcount(a_w | b_w)``; 0 when both are
  empty. Equal to :func:`tanimoto` on the unpacked bits (tested).

  Args:
    a_words: ``[..., W]`` unsigned-integer words from :func:`pack_bits`.
    b_words: ``[..., W]`` words, broadcasting against ``a_words``.

  Returns:
    ``[...]`` float32.
  """
  for name, x in (("a_words", a_words), ("b_words", b_words)):
    dt = getattr(x, "dtype", None)
    if dt is None or not jnp.issubdtype(dt, jnp.unsignedinteger):
      raise TypeError(
        f"{name} must be unsigned-integer words from pack_bits, got dtype {dt}"
      )
  a_words, b_words = _check_pair(a_words, b_words, "a_words", "b_words")
  return _packed_tanimoto(a_words, b_words)


@jax.jit
def _packed_tanimoto(a_words, b_words):
  inter = jax.lax.population_count(a_words & b_words).astype(jnp.int32).sum(-1)
  union = jax.lax.population_count(a_words | b_words).astype(jnp.int32).sum(-1)
  return _ratio(inter.astype(jnp.float32), union.astype(jnp.float32))


def continuous_tanimoto(p: jax.Array, y: jax.Array) -> jax.Array:
  """Continuous Tanimoto ("cont-IoU" of the reference) of non-negative vectors.

  ``cont(p, y) = (Σ(p + y) - Σ|p - y|) / (Σ(p + y) + Σ|p - y|) = Σ min(p, y) / Σ
  max(p, y)`` (the weighted Jaccard / Ruzicka similarity); 0 when both are
  all-zero.

  Args:
    p: ``[..., F]`` values in [0, 1] (probabilities or bits).
    y: ``[..., F]`` values in [0, 1], broadcasting against ``p``.

  Returns:
    ``[...]`` float32 in [0, 1].

  Under jit: an entry outside [0, 1] makes every output NaN.
  """
  p, y = _check_pair(p, y, "p", "y")
  out, flags = _continuous(p, y)
  return _finish(
    out,
    flags,
    ("p must have entries in [0, 1]", "y must have entries in [0, 1]"),
  )


@jax.jit
def _continuous(p, y):
  pf, yf = p.astype(jnp.float32), y.astype(jnp.float32)
  total = (pf + yf).sum(-1)
  diff = jnp.abs(pf - yf).sum(-1)
  return _ratio(total - diff, total + diff), (
    jnp.all(_prob_ok(p)),
    jnp.all(_prob_ok(y)),
  )


def cosine_similarity(a: jax.Array, b: jax.Array) -> jax.Array:
  """Cosine similarity ``a·b / max(‖a‖ ‖b‖, eps)`` (eps = 1e-8, as torch's); 0 for a zero vector.

  Args:
    a: ``[..., F]`` real vectors.
    b: ``[..., F]`` real vectors, broadcasting against ``a``.

  Returns:
    ``[...]`` float32 in [-1, 1] (in [0, 1] for non-negative inputs).
  """
  a, b = _check_pair(a, b, "a", "b")
  return _cosine(a, b)


@jax.jit
def _cosine(a, b):
  af, bf = a.astype(jnp.float32), b.astype(jnp.float32)
  na = jnp.sqrt((af * af).sum(-1))
  nb = jnp.sqrt((bf * bf).sum(-1))
  return (af * bf).sum(-1) / jnp.maximum(na * nb, _EPS)


def candidate_scores(
  pred: jax.Array,
  cand_fp: jax.Array,
  cand_mask: jax.Array,
  *,
  sim: Similarity = "cosine",
  threshold: float = 0.5,
) -> jax.Array:
  """Scores of padded candidate sets against predicted fingerprints, by matmul.

  For binary candidates ``y``, every similarity reduces to ``Σ p y``, ``Σ p``
  and ``Σ y``: cosine ``Σpy / (‖p‖ ‖y‖)``; Tanimoto of ``b = 1[p > threshold]``
  ``Σby / (Σb + Σy - Σby)``; continuous Tanimoto ``Σpy / (Σp + Σy - Σpy)``
  (since ``|p - y| = p + y - 2py`` for binary y). ``cand_fp`` stays in its own
  dtype (e.g. uint8): a loop over chunks of query rows converts about 4 MB of
  candidates to float32 at a time for the matrix-vector products ``Σ p y`` (and
  the value check reads the same chunk), so no float32 copy of all ``[B, C, F]``
  candidates is formed; the backward pass re-reads ``cand_fp`` instead of saving
  the float copy. With the rows split over an explicit mesh axis
  (``jax.make_mesh`` and ``NamedSharding`` on the first axis), each device loops
  over its own rows (``jax.shard_map``); the scores are the same numbers on one
  device or many.

  Args:
    pred: ``[B, F]`` predicted probabilities in [0, 1].
    cand_fp: ``[B, C, F]`` binary candidate fingerprints.
    cand_mask: ``[B, C]`` bool, True for real candidates (False = padding).
    sim: ``'cosine'``, ``'tanimoto'`` (thresholded) or ``'cont_iou'``.
    threshold: the bit threshold for ``'tanimoto'``.

  Returns:
    ``[B, C]`` float32 scores; padded candidates score ``-inf``.

  Under jit: a non-binary candidate or a probability outside [0, 1] makes every
  score NaN.
  """
  if sim not in SIMILARITIES:
    raise ValueError(f"sim must be one of {SIMILARITIES}, got {sim!r}")
  threshold = V.check_float(threshold, "threshold")
  pred = V.check_array(pred, "pred", ndim=2, dtype="real")
  b, f = pred.shape
  cand_fp = V.check_array(cand_fp, "cand_fp", shape=(b, None, f), dtype="real")
  cand_mask = V.check_array(
    cand_mask, "cand_mask", shape=cand_fp.shape[:2], dtype=("bool")
  )
  if cand_fp.shape[1] == 0:
    raise ValueError(
      "cand_fp must hold at least one candidate slot, "
      f"got shape {cand_fp.shape}"
    )
  out, flags = _candidate_scores(
    pred, cand_fp, cand_mask, sim=sim, threshold=threshold
  )
  return _finish(
    out,
    flags,
    (
      "pred must be probabilities in [0, 1]",
      "cand_fp must be binary (entries in {0, 1})",
    ),
  )


# Candidate entries converted to float32 per step of the row loop: 2^20 entries
# (4 MB) stay in a CPU core's cache between the conversion and the product. One
# batched product over all rows instead writes and reads a float32 copy of the
# whole [B, C, F] tensor (4x uint8's bytes).
_CHUNK_ENTRIES = 1 << 20


def _all_binary(y: jax.Array) -> jax.Array:
  """Scalar bool: every entry of ``y`` is 0 or 1.

  For integer dtypes this is a range check, one max (and for signed ones one
  min) reduction over the stored entries; the elementwise form
  ``(y == 0) | (y == 1)`` materialises a bool tensor and reduces it in a second
  pass, which cost as much CPU time as the scores themselves at B=64, C=256,
  F=4096 (``benchmarks/msretrieval_perf.py``). Floats keep the elementwise form
  (it also rejects NaN).
  """
  if jnp.issubdtype(y.dtype, jnp.unsignedinteger):
    return jnp.max(y, initial=0) <= 1
  if jnp.issubdtype(y.dtype, jnp.signedinteger):
    return (jnp.max(y, initial=0) <= 1) & (jnp.min(y, initial=0) >= 0)
  return jnp.all(_binary_ok(y))


def _rowwise_sums(
  p: jax.Array, cand_fp: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """``(Σ_f p y [B, C], Σ_f y [B, C], row binary [B])`` in one pass over
  ``cand_fp [B, C, F]``."""
  rows = max(
    1, min(p.shape[0], _CHUNK_ENTRIES // (cand_fp.shape[1] * cand_fp.shape[2]))
  )

  @jax.checkpoint  # residuals are the uint8 rows, not their float32 copy
  def one_row(args):
    p_b, y_b = args  # [F], [C, F]
    y = y_b.astype(jnp.float32)
    # Σ y as a second matrix-vector product with ones, not ``y.sum(-1)``:
    # XLA:CPU's row reduction over the float32 chunk cost more than the product
    # (about a quarter of the call's CPU time at B=64, C=256, F=4096,
    # benchmarks/msretrieval_perf.py). The sums are integers, exact in float32
    # in any order for F < 2^24, so the scores are bitwise the same.
    return y @ p_b, y @ jnp.ones_like(p_b), _all_binary(y_b)

  return jax.lax.map(one_row, (p, cand_fp), batch_size=rows)


def _sharded_rowwise_sums(p: jax.Array, cand_fp: jax.Array):
  """:func:`_rowwise_sums`, per device when the rows are split over explicit
  mesh axes."""
  sharding = jax.typeof(cand_fp).sharding
  row_axes = sharding.spec[0] if len(sharding.spec) else None
  if row_axes is None:
    return _rowwise_sums(p, cand_fp)
  rows = jax.sharding.PartitionSpec(row_axes)
  return jax.shard_map(
    _rowwise_sums,
    mesh=sharding.mesh,
    in_specs=(rows, rows),
    out_specs=(rows, rows, rows),
  )(p, cand_fp)


@functools.partial(jax.jit, static_argnames=("sim", "threshold"))
def _candidate_scores(pred, cand_fp, cand_mask, *, sim, threshold):
  p = pred.astype(jnp.float32)
  if sim == "tanimoto":
    p = (p > threshold).astype(jnp.float32)
  py, sy, binary = _sharded_rowwise_sums(p, cand_fp)  # [B, C], [B, C], [B]
  if sim == "cosine":
    s = py / jnp.maximum(
      jnp.sqrt((p * p).sum(-1))[:, None] * jnp.sqrt(sy), _EPS
    )
  else:
    s = _ratio(py, p.sum(-1)[:, None] + sy - py)
  s = jnp.where(cand_mask, s, -jnp.inf)
  return s, (jnp.all(_prob_ok(pred)), jnp.all(binary))
