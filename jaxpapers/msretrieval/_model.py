"""The spectrum encoder, the loss mixture that selects a training objective, and
evaluation.

Reference: gdewael/ms-mole ``models.py`` (``MLP``, ``FingerprintPredicter``) and
the loss classes of ``loss.py``. The encoder maps a binned spectrum to an
embedding with blocks ``Linear -> GELU -> Dropout -> LayerNorm`` and a final
``Linear``; the fingerprint head (owned by the loss module in the reference) is
a ``Linear`` to ``F`` logits here.

Every training objective of the study is a fixed weighting of six base losses,
so a grid over objectives is a traced hyperparameter (one compiled program
trains every objective):

  ``L = Σ_i w_i L_i`` over ``BASE_LOSSES = (bce, fl, cosine, iou, list_fp_cos, pair_fp_cos)``;
  ``combined`` (the reference's ``CombinedLoss``) is ``w · list_fp_cos + (1 - w) · iou``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxpapers.core import validation as V
from jaxpapers.msretrieval import _losses as L
from jaxpapers.msretrieval._metrics import fingerprint_metrics, hit_rate_at_k
from jaxpapers.msretrieval._similarity import (
  SIMILARITIES,
  Similarity,
  candidate_scores,
)

BASE_LOSSES = ("bce", "fl", "cosine", "iou", "list_fp_cos", "pair_fp_cos")
LOSSES = (*BASE_LOSSES, "combined")


class FingerprintMLP(nnx.Module):
  """Binned spectrum -> embedding -> fingerprint logits (the reference's MLP +
  linear head).

  Args:
    n_in: number of spectrum bins.
    n_bits: fingerprint size ``F``.
    hidden: widths of the ``Linear -> GELU -> Dropout -> LayerNorm`` blocks
      (reference: ``(1024, 1024)`` for ``n_layers = 3``).
    embed_dim: embedding width (reference 1024).
    dropout: dropout rate (reference 0.25).
    rngs: ``nnx.Rngs`` for the parameters.
  """

  def __init__(
    self,
    n_in: int,
    n_bits: int,
    *,
    hidden: Sequence[int] = (1024, 1024),
    embed_dim: int = 1024,
    dropout: float = 0.25,
    rngs: nnx.Rngs,
  ):
    n_in = V.check_int(n_in, "n_in", min_value=1)
    n_bits = V.check_int(n_bits, "n_bits", min_value=1)
    embed_dim = V.check_int(embed_dim, "embed_dim", min_value=1)
    self.dropout = V.check_float(
      dropout, "dropout", min_value=0.0, max_value=1.0, max_inclusive=False
    )
    widths = [V.check_int(h, "hidden", min_value=1) for h in hidden]
    dims = [n_in, *widths]
    self.linears = nnx.List(
      [nnx.Linear(a, b, rngs=rngs) for a, b in zip(dims[:-1], dims[1:])]
    )
    self.norms = nnx.List([nnx.LayerNorm(b, rngs=rngs) for b in widths])
    self.out = nnx.Linear(dims[-1], embed_dim, rngs=rngs)
    self.head = nnx.Linear(embed_dim, n_bits, rngs=rngs)
    self.n_in = n_in

  def embed(self, x: jax.Array, *, key: jax.Array | None = None) -> jax.Array:
    """The embedding before the fingerprint head; dropout is on when ``key`` is
    given.

    Args:
      x: ``[B, n_in]`` float binned spectra.
      key: PRNG key of the dropout masks, or None for evaluation (no dropout).

    Returns:
      ``[B, embed_dim]`` float embeddings.
    """
    x = V.check_array(x, "x", ndim=2, dtype="float")
    if x.shape[1] != self.n_in:
      raise ValueError(
        f"x must have shape [B, {self.n_in}] (n_in bins), got {x.shape}"
      )
    h = x
    for i, (lin, norm) in enumerate(zip(self.linears, self.norms)):
      h = jax.nn.gelu(lin(h), approximate=False)
      if key is not None and self.dropout > 0:
        keep = jax.random.bernoulli(
          jax.random.fold_in(key, i), 1.0 - self.dropout, h.shape
        )
        h = jnp.where(keep, h / (1.0 - self.dropout), 0.0)
      h = norm(h)
    return self.out(h)

  def __call__(
    self, x: jax.Array, *, key: jax.Array | None = None
  ) -> jax.Array:
    """``[B, n_in]`` spectra -> ``[B, F]`` fingerprint logits."""
    return self.head(self.embed(x, key=key))


def loss_weights(name: str, *, comb_weight: float = 0.5) -> np.ndarray:
  """The weights ``w [6]`` over :data:`BASE_LOSSES` that make up objective
  ``name``.

  Args:
    name: one of :data:`LOSSES`.
    comb_weight: ``w`` of ``combined`` on the listwise term (reference default
      0.5).

  Returns:
    ``[6]`` float32 numpy weights.
  """
  if name not in LOSSES:
    raise ValueError(f"name must be one of {LOSSES}, got {name!r}")
  comb_weight = V.check_float(
    comb_weight, "comb_weight", min_value=0.0, max_value=1.0
  )
  w = np.zeros(len(BASE_LOSSES), np.float32)
  if name == "combined":
    w[BASE_LOSSES.index("list_fp_cos")] = comb_weight
    w[BASE_LOSSES.index("iou")] = 1.0 - comb_weight
  else:
    w[BASE_LOSSES.index(name)] = 1.0
  return w


def weighted_loss(
  logits: jax.Array,
  fp: jax.Array,
  cand_fp: jax.Array,
  labels: jax.Array,
  cand_mask: jax.Array,
  weights: jax.Array,
  *,
  gamma: float = 5.0,
  temperature: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
  """``Σ_i w_i L_i`` over :data:`BASE_LOSSES` (weights may be traced: one
  program, any objective).

  Args:
    logits: ``[B, F]`` float fingerprint logits.
    fp: ``[B, F]`` binary target fingerprints.
    cand_fp: ``[B, C, F]`` binary candidate fingerprints.
    labels: ``[B, C]`` bool, True at the candidates equal to the true molecule.
    cand_mask: ``[B, C]`` bool, True at real (not padded) candidates.
    weights: ``[6]`` float (from :func:`loss_weights`).
    gamma: focal exponent (reference script default 5).
    temperature: contrastive ``τ``.

  Returns:
    ``(loss, parts)``: the scalar loss and the ``[6]`` values of the base
    losses.
  """
  weights = V.check_array(
    weights, "weights", shape=(len(BASE_LOSSES),), dtype=("float")
  )
  p = jax.nn.sigmoid(logits)
  s = candidate_scores(p, cand_fp, cand_mask, sim="cosine")
  # finite for the contrastive masks (which drop padding)
  s = jnp.where(cand_mask, s, 0.0)
  parts = jnp.stack(
    [
      L.bce_loss(logits, fp),
      L.focal_loss(logits, fp, gamma=gamma),
      L.cosine_loss(logits, fp),
      L.soft_iou_loss(logits, fp),
      L.listwise_contrastive_loss(
        s, labels, cand_mask, temperature=temperature
      ),
      L.pairwise_contrastive_loss(
        s, labels, cand_mask, temperature=temperature
      ),
    ]
  )
  return (weights * parts).sum(), parts


def make_optimizer(
  lr: float = 1e-4, *, warmup_steps: int = 500, clip_norm: float = 1.0
) -> optax.GradientTransformation:
  """Adam with linear warm-up over ``warmup_steps`` (``lr · min(1,
  (t+1)/warmup)``, as the reference's ``optimizer_step``) after clipping the
  global gradient norm at ``clip_norm``.

  Args:
    lr: the peak learning rate (> 0).
    warmup_steps: steps of the linear warm-up (>= 1).
    clip_norm: the global gradient-norm clip (> 0).

  Returns:
    ``optax.chain(clip_by_global_norm(clip_norm), adam(schedule))``.
  """
  lr = V.check_float(lr, "lr", min_value=0.0, min_inclusive=False)
  warmup_steps = V.check_int(warmup_steps, "warmup_steps", min_value=1)
  clip_norm = V.check_float(
    clip_norm, "clip_norm", min_value=0.0, min_inclusive=False
  )
  sched = lambda t: lr * jnp.minimum(1.0, (t + 1.0) / warmup_steps)
  return optax.chain(optax.clip_by_global_norm(clip_norm), optax.adam(sched))


def retrieval_metrics(
  probs: jax.Array,
  fp: jax.Array,
  cand_fp: jax.Array,
  labels: jax.Array,
  cand_mask: jax.Array,
  *,
  key: jax.Array,
  ks: Sequence[int] = (1, 5, 20),
  sims: Sequence[Similarity] = SIMILARITIES,
) -> dict:
  """Fingerprint accuracy and HR@k under each similarity (the reference's
  validation metrics).

  One tie-breaking noise draw per similarity, shared by every ``k`` (as the
  reference).

  Args:
    probs: ``[B, F]`` predicted probabilities.
    fp: ``[B, F]`` binary targets.
    cand_fp: ``[B, C, F]`` binary candidates.
    labels: ``[B, C]`` bool, True at the candidates equal to the true molecule.
    cand_mask: ``[B, C]`` bool, True at real (not padded) candidates.
    key: typed PRNG key for the tie-breaking noise.
    ks: cut-offs.
    sims: similarity names (see :func:`candidate_scores`).

  Returns:
    ``{'fp/<metric>': [B] (or scalar F1s), 'hr/<sim>@<k>': [B]}``.
  """
  for s in sims:
    if s not in SIMILARITIES:
      raise ValueError(f"sims must be drawn from {SIMILARITIES}, got {s!r}")
  out = {f"fp/{k}": v for k, v in fingerprint_metrics(probs, fp).items()}
  for i, sim in enumerate(sims):
    s = candidate_scores(probs, cand_fp, cand_mask, sim=sim)
    sk = jax.random.fold_in(key, i)
    for k in ks:
      out[f"hr/{sim}@{k}"] = hit_rate_at_k(s, labels, cand_mask, k, key=sk)
  return out
