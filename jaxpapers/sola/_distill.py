"""Training-step pieces shared by every distillation loss: aligned-pair sampling
and student BPB."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V
from jaxpapers.sola._eval import bits_per_byte, token_logp
from jaxpapers.sola._student import StudentConfig, student_logits

__all__ = ["sample_aligned_pairs", "student_bits_per_byte"]


def sample_aligned_pairs(
  key: jax.Array, valid: ArrayLike, num_pairs: int
) -> tuple[jax.Array, jax.Array]:
  """A uniformly random subset of ``num_pairs`` aligned pairs per row, valid
  pairs first.

  Each pair gets the score ``u + valid`` with ``u ~ U[0, 1)``, and the
  ``num_pairs`` highest scores are kept: a row with at least ``num_pairs`` valid
  pairs gets a uniformly random subset of them; a row with fewer gets all of
  them, padded with invalid pairs (``mask`` False). Every distillation loss of a
  step reads the same subset (paired comparisons).

  Args:
    key: a ``jax.random.key``.
    valid: bool [B, K], which aligned pairs (MCC blocks) exist.
    num_pairs: pairs kept per row, ``1 <= num_pairs <= K``.

  Returns:
    ``(sel, mask)``: int32 [B, num_pairs] indices into ``K`` (distinct within a
    row) and bool [B, num_pairs], ``valid`` at those indices.
  """
  valid = V.check_array(valid, "valid", dtype="bool", ndim=2)
  num_pairs = V.check_int(
    num_pairs, "num_pairs", min_value=1, max_value=valid.shape[1]
  )
  score = jax.random.uniform(key, valid.shape) + valid
  _, sel = jax.lax.top_k(score, num_pairs)  # [B, num_pairs]
  return sel, jnp.take_along_axis(valid, sel, 1)


def student_bits_per_byte(
  params: dict[str, jax.Array],
  tokens: ArrayLike,
  lengths: ArrayLike,
  n_bytes: ArrayLike,
  cfg: StudentConfig,
) -> jax.Array:
  """The student's bits per byte on texts in its own tokenization.

  ``-sum_n sum_p log q(tokens[n, p+1] | tokens[n, :p+1]) / (ln 2 sum_n
  n_bytes[n])``, the tokenizer-independent score of :func:`bits_per_byte` for
  :func:`student_logits`.

  Args:
    params: from :func:`init_student`.
    tokens: int [N, T], BOS + the student's ids (0-padded),
      ``T <= cfg.max_len``.
    lengths: int [N] valid lengths (BOS included).
    n_bytes: int [N], UTF-8 bytes of each text.
    cfg: the student's :class:`StudentConfig`.

  Returns:
    float32 scalar, bits per byte over all ``N`` texts.
  """
  logits = student_logits(params, tokens, cfg)  # [N, T, V]
  return bits_per_byte(token_logp(logits, tokens, lengths).sum(1), n_bytes)
