"""The component-supervised (CS-CLIP) multi-caption loss.

Restated from the authors' ``alignment/losses.py``
(``multi_caption_contrastive_loss``):

  L = λ_full L_full + λ_comp L_comp + λ_align L_align + λ_rank L_rank + λ_text L_text + λ_para L_para

Notation (all embeddings L2-normalised, ``s(a, b) = <a, b>``): image embeddings
``I [B, D]``, full captions ``t0 [B, D]``, their foils ``t0~ [B, D]``,
unit (component) captions ``t [B, U, D]`` with validity mask ``m [B, U]`` and
one minimally edited foil per unit ``t~ [B, U, D]``. Logits are
``logit_scale * s`` with ``logit_scale = 1 / τ`` (the reference divides by
``τ``; the CLIP parametrisation multiplies by ``exp(log_scale)``: the same
number).

Padding: units per caption vary, so they are padded to ``U`` with ``m = 0``;
every contrastive term of slot ``u`` uses only the rows (and the positive
columns) with ``m[:, u] = 1``, exactly as the reference compresses each slot to
its valid rows. Empty slots contribute 0 and are still counted in the mean over
slots (as in the reference).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from jaxpapers.core import validation as V

COMP_TYPES = ("clip", "negclip", "negclip_hard")
ALIGN_TYPES = ("margin", "cosine")
RANK_REDUCTIONS = ("mean", "max")
_NEG = -1e9  # masked logit: exp underflows to 0, gradients stay finite


@dataclasses.dataclass(frozen=True)
class CSLossConfig:
  """Weights and options of :func:`cs_clip_loss` (the reference's
  ``ComponentLossConfig``).

  Defaults are the reference's documented "full spectrum" mix (λ_full 1 with
  NegCLIP on the full caption, λ_comp 0.5 with ``negclip_hard``, λ_align 0.25
  margin 0.1, λ_rank 0.1 margin 0.1); the reference's own dataclass defaults
  have every optional term at 0.

  Attributes:
    lambda_full: weight of the full-caption contrastive term.
    negatives_full: use the full caption's foil as an extra negative (NegCLIP)
      in that term.
    lambda_comp: weight of the per-unit component term (:func:`component_loss`).
    comp_type: the component term's form, ``'clip'``, ``'negclip'`` or
      ``'negclip_hard'``.
    lambda_align: weight of the unit/foil alignment term
      (:func:`alignment_loss`).
    align_type: ``'margin'`` or ``'cosine'``.
    align_margin: margin of the alignment term.
    lambda_rank: weight of the full-caption-over-units ranking term
      (:func:`rank_loss`).
    rank_margin: margin of the ranking term.
    rank_reduction: ``'mean'`` or ``'max'`` over units.
    lambda_text: weight of the text-side margin term (:func:`text_margin_loss`).
    text_margin: margin of the text-side term.
    lambda_para: weight of the paraphrase term (:func:`paraphrase_loss`).
  """

  lambda_full: float = 1.0
  negatives_full: bool = True
  lambda_comp: float = 0.5
  comp_type: Literal["clip", "negclip", "negclip_hard"] = "negclip_hard"
  lambda_align: float = 0.25
  align_type: Literal["margin", "cosine"] = "margin"
  align_margin: float = 0.1
  lambda_rank: float = 0.1
  rank_margin: float = 0.1
  rank_reduction: Literal["mean", "max"] = "mean"
  lambda_text: float = 0.0
  text_margin: float = 0.1
  lambda_para: float = 0.0

  def __post_init__(self):
    for f in dataclasses.fields(self):
      v = getattr(self, f.name)
      if f.name.startswith("lambda_"):
        V.check_float(v, f"CSLossConfig.{f.name}", min_value=0.0)
      elif f.name.endswith("_margin"):
        V.check_float(v, f"CSLossConfig.{f.name}")
    _choice(self.comp_type, "CSLossConfig.comp_type", COMP_TYPES)
    _choice(self.align_type, "CSLossConfig.align_type", ALIGN_TYPES)
    _choice(self.rank_reduction, "CSLossConfig.rank_reduction", RANK_REDUCTIONS)
    if not isinstance(self.negatives_full, bool):
      raise TypeError(
        "CSLossConfig.negatives_full must be a bool, "
        f"got {self.negatives_full!r}"
      )


def _choice(value, name, allowed):
  if value not in allowed:
    raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


# ------------------------------------------------------------------ checks --


def _emb(x, name, ndim=2):
  return V.check_array(x, name, ndim=ndim, dtype="float", nonempty=False)


def _unit_flag(x, name, mask=None):
  """Value check: rows of ``x`` (those with ``mask``, if given) are unit-norm
  (tol. 1e-3)."""
  n = jnp.linalg.norm(x.astype(jnp.float32), axis=-1)
  ok = jnp.abs(n - 1.0) < 1e-3
  if mask is not None:
    ok = ok | ~mask
  where = " (at unit_mask = 1)" if mask is not None else ""
  return V.debug_check_values(
    ok, f"{name} must hold L2-normalised (unit-norm) rows{where}"
  )


def _check_batch(img, name_shapes):
  B, D = img.shape
  for name, x, shape in name_shapes:
    if (
      x.shape[: len(shape)] != shape
      or x.shape[-1] != D
      or x.ndim != len(shape) + 1
    ):
      want = "[" + ", ".join(map(str, (*shape, D))) + "]"
      raise ValueError(
        f"{name} must have shape {want} (matching img [B, D]), got {x.shape}"
      )


def _scale(logit_scale):
  s = V.check_array(logit_scale, "logit_scale", ndim=0, dtype="real").astype(
    jnp.float32
  )
  ok = V.debug_check_values(
    jnp.isfinite(s) & (s > 0), "logit_scale must be finite and > 0"
  )
  return s, ok


def _mask(unit_mask, shape):
  m = V.check_array(unit_mask, "unit_mask", ndim=2, dtype="intbool")
  if m.shape != shape:
    raise ValueError(
      f"unit_mask must have shape [B, U] = {list(shape)}, got {m.shape}"
    )
  ok = V.debug_check_values(
    (m == 0) | (m == 1), "unit_mask must be binary (entries 0 or 1)"
  )
  return m.astype(bool), ok


# -------------------------------------------------------------- primitives --


def _ce_rows(logits, valid_cols, label_cols, row_valid):
  """Mean over valid rows of cross-entropy with the positive at column
  ``row index``."""
  logits = jnp.where(valid_cols, logits, _NEG)
  lse = jax.nn.logsumexp(logits, axis=-1)
  pos = jnp.take_along_axis(logits, label_cols[:, None], axis=-1)[:, 0]
  n = row_valid.sum()
  return jnp.where(
    n > 0,
    jnp.sum(jnp.where(row_valid, lse - pos, 0.0)) / jnp.maximum(n, 1),
    0.0,
  )


def _masked_lse(x, keep, axis):
  """``logsumexp`` of ``x`` over ``axis`` with the entries where ``keep`` is
  False left out."""
  return jax.nn.logsumexp(jnp.where(keep, x, _NEG), axis=axis)


def _masked_clip(img, txt, valid, scale, extra=None, extra_valid=None):
  """Symmetric InfoNCE on the valid rows of ``(img, txt)``; ``extra`` adds i2t
  columns only.

  One ``[B, B]`` similarity matrix serves both directions: image->text reduces
  its rows over the valid columns, text->image its columns over the valid rows
  (no transposed copy), and the extra columns enter through ``logaddexp`` of
  their own masked ``logsumexp`` (no concatenated ``[B, B + E]`` copy). The
  positives are the diagonal.

  Args:
    img, txt: ``[B, D]``. valid: ``[B]`` bool. scale: ``1 / τ``.
    extra: ``[B, E]`` extra image->text logits (already scaled), e.g. foils.
    extra_valid: ``[B, E]`` bool mask of ``extra``.

  Returns:
    ``(L_i2t + L_t2i) / 2`` (0 when no row is valid).
  """
  sim = scale * (img @ txt.T)  # [B, B]
  pos = jnp.diagonal(sim)  # [B]
  # [B]: image b over the valid texts
  lse_i2t = _masked_lse(sim, valid[None, :], axis=1)
  if extra is not None:
    lse_i2t = jnp.logaddexp(lse_i2t, _masked_lse(extra, extra_valid, axis=1))
  # [B]: text b over the valid images
  lse_t2i = _masked_lse(sim, valid[:, None], axis=0)
  n = valid.sum()
  total = jnp.sum(jnp.where(valid, lse_i2t + lse_t2i - 2.0 * pos, 0.0))
  return jnp.where(n > 0, 0.5 * total / jnp.maximum(n, 1), 0.0)


# ------------------------------------------------------------------ public --


def clip_loss(
  img: jax.Array,
  txt: jax.Array,
  logit_scale: jax.Array,
  *,
  validate: bool = True,
) -> jax.Array:
  """Symmetric CLIP InfoNCE loss (the reference's L_full without negatives).

  L = ½ [ CE(σ_row(τ⁻¹ I tᵀ), diag) + CE(σ_row(τ⁻¹ t Iᵀ), diag) ].

  Args:
    img: ``[B, D]`` unit-norm image embeddings.
    txt: ``[B, D]`` unit-norm text embeddings; row b is the positive of image b.
    logit_scale: scalar ``1 / τ`` (> 0).
    validate: run the value checks (unit norms, ``logit_scale`` > 0); False
      skips them (shape checks stay), e.g. inside a training step where a
      poisoned loss would end the run.

  Returns:
    Scalar loss (float32).

  Under jit: rows that are not unit-norm or a non-positive ``logit_scale`` give
  NaN.
  """
  img, txt = _emb(img, "img"), _emb(txt, "txt")
  _check_batch(img, [("txt", txt, (img.shape[0],))])
  s, ok_s = _scale(logit_scale)
  ok = (
    V.all_flags(ok_s, _unit_flag(img, "img"), _unit_flag(txt, "txt"))
    if validate
    else None
  )
  valid = jnp.ones(img.shape[0], bool)
  out = _masked_clip(img.astype(jnp.float32), txt.astype(jnp.float32), valid, s)
  return V.poison_floats(out, ok)


def negclip_loss(
  img: jax.Array, txt: jax.Array, txt_foil: jax.Array, logit_scale: jax.Array
) -> jax.Array:
  """NegCLIP loss: CLIP with the B foil captions appended as extra image->text
  columns.

  Image b's softmax runs over ``[t_1..t_B, t~_1..t~_B]`` (2B columns);
  text->image is plain CLIP (the foils are not rows: the two directions are not
  symmetric).

  Args:
    img: ``[B, D]``; txt: ``[B, D]``; txt_foil: ``[B, D]`` (all unit-norm).
    logit_scale: scalar ``1 / τ``.

  Returns:
    Scalar loss.

  Under jit: non-unit rows or a bad ``logit_scale`` give NaN.
  """
  img, txt, foil = (
    _emb(img, "img"),
    _emb(txt, "txt"),
    _emb(txt_foil, "txt_foil"),
  )
  B = img.shape[0]
  _check_batch(img, [("txt", txt, (B,)), ("txt_foil", foil, (B,))])
  s, ok_s = _scale(logit_scale)
  ok = V.all_flags(
    ok_s,
    _unit_flag(img, "img"),
    _unit_flag(txt, "txt"),
    _unit_flag(foil, "txt_foil"),
  )
  img, txt, foil = (x.astype(jnp.float32) for x in (img, txt, foil))
  valid = jnp.ones(B, bool)
  extra = s * (img @ foil.T)
  out = _masked_clip(img, txt, valid, s, extra, jnp.ones((B, B), bool))
  return V.poison_floats(out, ok)


def _unit_inputs(img, units, foils, unit_mask, need_foils=True):
  img = _emb(img, "img")
  units = _emb(units, "units", 3)
  B, U = units.shape[:2]
  checks = [("units", units, (B, U))]
  if need_foils:
    foils = _emb(foils, "foils", 3)
    checks.append(("foils", foils, (B, U)))
  _check_batch(img, checks)
  m, ok_m = _mask(unit_mask, (B, U))
  flags = [ok_m, _unit_flag(img, "img"), _unit_flag(units, "units", m)]
  if need_foils:
    flags.append(_unit_flag(foils, "foils", m))
    foils = foils.astype(jnp.float32)
  return img.astype(jnp.float32), units.astype(jnp.float32), foils, m, flags


def _component(img, units, foils, m, s, kind):
  U = units.shape[1]
  if U == 0:
    return jnp.zeros((), jnp.float32)

  def slot(t_u, f_u, v_u):
    if kind == "clip":
      return _masked_clip(img, t_u, v_u, s)
    if kind == "negclip":
      extra = s * (img @ f_u.T)  # [B, B]: every valid row's foil is a column
      return _masked_clip(
        img, t_u, v_u, s, extra, jnp.broadcast_to(v_u[None, :], extra.shape)
      )
    # [B, 1]: the sample's own foil only
    hard = s * jnp.sum(img * f_u, -1, keepdims=True)
    return _masked_clip(img, t_u, v_u, s, hard, jnp.ones_like(hard, bool))

  per_slot = jax.vmap(slot, in_axes=(1, 1, 1))(units, foils, m)  # [U]
  return per_slot.mean()


def component_loss(
  img: jax.Array,
  units: jax.Array,
  foils: jax.Array,
  unit_mask: jax.Array,
  logit_scale: jax.Array,
  *,
  kind: str = "negclip_hard",
) -> jax.Array:
  """Component contrastive loss L_comp: per unit slot, a (Neg)CLIP loss on its
  valid rows.

  For slot u with valid rows V_u (``unit_mask[:, u]``), image b ∈ V_u and logits
  τ⁻¹ s:

  * ``clip``: i2t softmax over the units t_{j,u}, j ∈ V_u; t2i over images of
    V_u.
  * ``negclip``: i2t columns also hold the foils t~_{j,u}, j ∈ V_u (B+B scores).
  * ``negclip_hard``: i2t columns also hold only the sample's own foil t~_{b,u}
    (B+1 scores).

  Each slot loss is ``(L_i2t + L_t2i) / 2`` (0 for a slot without valid rows)
  and L_comp is the mean over the U slots.

  Args:
    img: ``[B, D]``; units: ``[B, U, D]``; foils: ``[B, U, D]`` (all unit-norm).
    unit_mask: ``[B, U]`` binary, 1 for real units.
    logit_scale: scalar ``1 / τ``.
    kind: ``'clip'``, ``'negclip'`` or ``'negclip_hard'``.

  Returns:
    Scalar loss (0 when U = 0).

  Under jit: non-unit rows, a non-binary mask or a bad ``logit_scale`` give NaN.
  """
  _choice(kind, "kind", COMP_TYPES)
  img, units, foils, m, flags = _unit_inputs(img, units, foils, unit_mask)
  s, ok_s = _scale(logit_scale)
  out = _component(img, units, foils, m, s, kind)
  return V.poison_floats(out, V.all_flags(ok_s, *flags))


def _masked_mean(x, m):
  n = m.sum()
  return jnp.where(
    n > 0, jnp.sum(jnp.where(m, x, 0.0)) / jnp.maximum(n, 1), 0.0
  )


def _alignment(img, units, foils, m, kind, margin):
  s_pos = jnp.clip(jnp.einsum("bd,bud->bu", img, units), -1.0, 1.0)
  if kind == "cosine":
    return _masked_mean(1.0 - s_pos, m)
  s_neg = jnp.clip(jnp.einsum("bd,bud->bu", img, foils), -1.0, 1.0)
  return _masked_mean(jax.nn.relu(margin - s_pos + s_neg), m)


def alignment_loss(
  img: jax.Array,
  units: jax.Array,
  foils: jax.Array,
  unit_mask: jax.Array,
  *,
  kind: str = "margin",
  margin: float = 0.1,
) -> jax.Array:
  """Alignment loss L_align over the valid (b, u) pairs.

  * ``margin``: mean of max(0, m_a − s(I_b, t_{b,u}) + s(I_b, t~_{b,u})).
  * ``cosine``: mean of 1 − s(I_b, t_{b,u}) (``foils`` unused).

  Similarities are clipped to [−1, 1] as in the reference.

  Args:
    img: ``[B, D]``; units, foils: ``[B, U, D]``; unit_mask: ``[B, U]`` binary.
    kind: ``'margin'`` or ``'cosine'``. margin: m_a.

  Returns:
    Scalar loss (0 without valid pairs).

  Under jit: non-unit rows or a non-binary mask give NaN.
  """
  _choice(kind, "kind", ALIGN_TYPES)
  margin = V.check_float(margin, "margin")
  img, units, foils, m, flags = _unit_inputs(
    img, units, foils, unit_mask, kind == "margin"
  )
  out = _alignment(img, units, foils, m, kind, margin)
  return V.poison_floats(out, V.all_flags(*flags))


def _rank(img, full, units, m, margin, reduction):
  s_full = jnp.sum(img * full, -1)  # [B]
  s_comp = jnp.einsum("bd,bud->bu", img, units)  # [B, U]
  viol = jnp.where(m, jax.nn.relu(margin + s_comp - s_full[:, None]), 0.0)
  if units.shape[1] == 0:
    return jnp.zeros((), jnp.float32)
  if reduction == "max":
    per = viol.max(1)
  else:
    per = viol.sum(1) / jnp.maximum(m.sum(1), 1)
  return per.mean()


def rank_loss(
  img: jax.Array,
  full: jax.Array,
  units: jax.Array,
  unit_mask: jax.Array,
  *,
  margin: float = 0.1,
  reduction: str = "mean",
) -> jax.Array:
  """Ranking loss L_rank: the full caption must beat each of its units by
  ``margin``.

  v_{b,u} = max(0, m_r + s(I_b, t_{b,u}) − s(I_b, t0_b)) on valid pairs (0
  elsewhere); per sample the mean over its valid units (``mean``) or the max
  over slots (``max``); then the mean over all B samples (a sample without units
  contributes 0).

  Args:
    img: ``[B, D]``; full: ``[B, D]``; units: ``[B, U, D]``; unit_mask:
      ``[B, U]``.
    margin: m_r. reduction: ``'mean'`` or ``'max'``.

  Returns:
    Scalar loss.

  Under jit: non-unit rows or a non-binary mask give NaN.
  """
  _choice(reduction, "reduction", RANK_REDUCTIONS)
  margin = V.check_float(margin, "margin")
  full = _emb(full, "full")
  img, units, _, m, flags = _unit_inputs(
    img, units, None, unit_mask, need_foils=False
  )
  _check_batch(img, [("full", full, (img.shape[0],))])
  out = _rank(img, full.astype(jnp.float32), units, m, margin, reduction)
  return V.poison_floats(out, V.all_flags(*flags, _unit_flag(full, "full")))


def _text_margin(full, units, foils, m, margin):
  s_pos = jnp.clip(jnp.einsum("bd,bud->bu", full, units), -1.0, 1.0)
  s_neg = jnp.clip(jnp.einsum("bd,bud->bu", full, foils), -1.0, 1.0)
  return _masked_mean(jax.nn.relu(margin - s_pos + s_neg), m)


def text_margin_loss(
  full: jax.Array,
  units: jax.Array,
  foils: jax.Array,
  unit_mask: jax.Array,
  *,
  margin: float = 0.1,
) -> jax.Array:
  """Text-space margin L_text: mean over valid pairs of max(0, m_t − s(t0, t) +
  s(t0, t~)).

  Args:
    full: ``[B, D]``; units, foils: ``[B, U, D]``; unit_mask: ``[B, U]``.
      margin: m_t.

  Returns:
    Scalar loss (0 without valid pairs).

  Under jit: non-unit rows or a non-binary mask give NaN.
  """
  margin = V.check_float(margin, "margin")
  full, units, foils, m, flags = _unit_inputs(full, units, foils, unit_mask)
  return V.poison_floats(
    _text_margin(full, units, foils, m, margin), V.all_flags(*flags)
  )


def _paraphrase(full, para, valid, s):
  B = full.shape[0]
  logits = s * (full @ para.T)
  cols = jnp.broadcast_to(valid[None, :], (B, B))
  return _ce_rows(logits, cols, jnp.arange(B), valid)


def paraphrase_loss(
  full: jax.Array,
  paraphrase: jax.Array,
  paraphrase_mask: jax.Array,
  logit_scale: jax.Array,
) -> jax.Array:
  """Paraphrase loss L_para: one-directional InfoNCE from captions to their
  paraphrases.

  CE over valid rows of τ⁻¹ s(t0_b, p_j), j valid, positive j = b.

  Args:
    full: ``[B, D]``; paraphrase: ``[B, D]``; paraphrase_mask: ``[B]`` binary.
    logit_scale: scalar ``1 / τ``.

  Returns:
    Scalar loss (0 without valid rows).

  Under jit: non-unit rows, a non-binary mask or a bad ``logit_scale`` give NaN.
  """
  full, para = _emb(full, "full"), _emb(paraphrase, "paraphrase")
  _check_batch(full, [("paraphrase", para, (full.shape[0],))])
  pm = V.check_array(
    paraphrase_mask, "paraphrase_mask", ndim=1, dtype=("intbool")
  )
  if pm.shape != (full.shape[0],):
    raise ValueError(
      f"paraphrase_mask must have shape [B] = [{full.shape[0]}], got {pm.shape}"
    )
  ok_m = V.debug_check_values(
    (pm == 0) | (pm == 1), "paraphrase_mask must be binary"
  )
  s, ok_s = _scale(logit_scale)
  out = _paraphrase(
    full.astype(jnp.float32), para.astype(jnp.float32), pm.astype(bool), s
  )
  ok = V.all_flags(
    ok_s, ok_m, _unit_flag(full, "full"), _unit_flag(para, "paraphrase")
  )
  return V.poison_floats(out, ok)


TERMS = ("full", "comp", "align", "rank", "text", "para")


def cs_clip_loss(
  img: jax.Array,
  full: jax.Array,
  full_foil: jax.Array | None,
  units: jax.Array,
  foils: jax.Array,
  unit_mask: jax.Array,
  logit_scale: jax.Array,
  cfg: CSLossConfig = CSLossConfig(),
  *,
  paraphrase: jax.Array | None = None,
  paraphrase_mask: jax.Array | None = None,
  validate: bool = True,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """The CS-CLIP loss L = Σ λ_k L_k (see the module docstring and each term's
  function).

  L_full is NegCLIP when ``cfg.negatives_full`` and ``full_foil`` is given, else
  CLIP. A term whose λ is 0 is not computed (reported as 0). With no units (U =
  0, or an all-zero mask) every unit term is 0 and L reduces to λ_full L_full.

  Args:
    img: ``[B, D]`` unit-norm image embeddings.
    full: ``[B, D]`` full-caption embeddings. full_foil: ``[B, D]`` or None.
    units: ``[B, U, D]`` unit embeddings; foils: ``[B, U, D]`` one foil per
      unit.
    unit_mask: ``[B, U]`` binary.
    logit_scale: scalar ``1 / τ``.
    cfg: a :class:`CSLossConfig`.
    paraphrase: optional ``[B, D]`` paraphrase embeddings (needed when λ_para >
      0).
    paraphrase_mask: optional ``[B]`` binary (default all ones).
    validate: run the value checks; False skips them (shape and config checks
      stay), for training steps where one degenerate embedding must not poison
      the run.

  Returns:
    ``(L, terms)`` with ``terms`` mapping ``'full', 'comp', 'align', 'rank',
    'text', 'para'`` to the unweighted scalar terms.

  Under jit: non-unit rows, non-binary masks or a bad ``logit_scale`` give NaN.
  """
  if not isinstance(cfg, CSLossConfig):
    raise TypeError(f"cfg must be a CSLossConfig, got {type(cfg).__name__}")
  if cfg.lambda_para > 0 and paraphrase is None:
    raise ValueError(
      "paraphrase must be given ([B, D]) when cfg.lambda_para > 0"
    )
  img, units, foils, m, flags = _unit_inputs(img, units, foils, unit_mask)
  full = _emb(full, "full")
  B = img.shape[0]
  _check_batch(img, [("full", full, (B,))])
  flags.append(_unit_flag(full, "full"))
  full = full.astype(jnp.float32)
  s, ok_s = _scale(logit_scale)
  flags.append(ok_s)
  zero = jnp.zeros((), jnp.float32)
  terms = dict.fromkeys(TERMS, zero)
  all_rows = jnp.ones(B, bool)
  if cfg.lambda_full > 0:
    if cfg.negatives_full and full_foil is not None:
      ff = _emb(full_foil, "full_foil")
      _check_batch(img, [("full_foil", ff, (B,))])
      flags.append(_unit_flag(ff, "full_foil"))
      extra = s * (img @ ff.astype(jnp.float32).T)
      terms["full"] = _masked_clip(
        img, full, all_rows, s, extra, jnp.ones((B, B), bool)
      )
    else:
      terms["full"] = _masked_clip(img, full, all_rows, s)
  if cfg.lambda_comp > 0:
    terms["comp"] = _component(img, units, foils, m, s, cfg.comp_type)
  if cfg.lambda_align > 0:
    terms["align"] = _alignment(
      img, units, foils, m, cfg.align_type, cfg.align_margin
    )
  if cfg.lambda_rank > 0:
    terms["rank"] = _rank(
      img, full, units, m, cfg.rank_margin, cfg.rank_reduction
    )
  if cfg.lambda_text > 0:
    terms["text"] = _text_margin(full, units, foils, m, cfg.text_margin)
  if cfg.lambda_para > 0:
    p = _emb(paraphrase, "paraphrase")
    _check_batch(img, [("paraphrase", p, (B,))])
    pm = (
      jnp.ones(B, bool)
      if paraphrase_mask is None
      else jnp.asarray(paraphrase_mask, bool)
    )
    flags.append(_unit_flag(p, "paraphrase"))
    terms["para"] = _paraphrase(full, p.astype(jnp.float32), pm, s)
  lam = dict(
    full=cfg.lambda_full,
    comp=cfg.lambda_comp,
    align=cfg.lambda_align,
    rank=cfg.lambda_rank,
    text=cfg.lambda_text,
    para=cfg.lambda_para,
  )
  total = sum(lam[k] * terms[k] for k in TERMS)
  ok = V.all_flags(*flags) if validate else None
  return V.poison_floats(total, ok), V.poison_floats(terms, ok)
