"""The synthetic half-truth benchmark: its data, the fine-tuning arms' loss
terms, its metrics.

What the experiment trains and measures, on a
:class:`~jaxpapers.cs_clip.DualEncoder`: :func:`benchmark_data` renders the
training and off-prior test scenes with their captions, units, foils and
half-truth triples; :func:`arm_weights` gives each fine-tuning arm's mix of the
terms :func:`finetune_terms` computes on one batch (plain CLIP, NegCLIP on the
full caption, and CS-CLIP's unit terms); :func:`heldout_metrics` evaluates
half-truth accuracy, image <-> text R@1 and relation-foil accuracy with their
per-item outcomes.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.cs_clip._losses import CSLossConfig, clip_loss, cs_clip_loss
from jaxpapers.cs_clip._metrics import (
  half_truth_accuracy,
  half_truth_outcomes,
  pairwise_caption_accuracy,
  pairwise_caption_outcomes,
  retrieval_hits,
)
from jaxpapers.cs_clip._models import DualEncoder
from jaxpapers.cs_clip._scenes import render_scenes
from jaxpapers.cs_clip._units import (
  MAX_LEN,
  U_MAX,
  half_truth_set,
  tokenize,
  training_captions,
)

ARMS = ("clip_ft", "negclip_ft", "cs_ft")
BATCH_FIELDS = (
  "images",
  "caption",
  "caption_foil",
  "units",
  "foils",
  "unit_mask",
)
TEST_FIELDS = (
  "test_images",
  "ht_short",
  "ht_long",
  "ht_kind",
  "ht_image",
  "test_caption",
  "test_caption_id",
  "test_foil",
)


def _need(arrays: dict, fields: tuple[str, ...], name: str) -> None:
  missing = [f for f in fields if f not in arrays]
  if missing:
    raise ValueError(f"{name} lacks {missing}; it needs {fields}")


def benchmark_data(
  seed: int,
  *,
  n_train: int,
  n_test: int,
  size: int,
  prior: float,
  test_prior: float,
  distractors: int,
  vertical: bool,
  p_partial: float,
  p_paraphrase: float,
) -> tuple[dict[str, np.ndarray], dict[str, list]]:
  """Training scenes with alt-text captions, and off-prior test scenes with
  their triples.

  Args:
    seed: base seed (training scenes ``seed + 1``, test scenes ``seed + 2``,
      training captions ``seed + 3``, half-truth triples ``seed + 4``, test
      captions and foils ``seed + 5``).
    n_train, n_test: scene counts.
    size, prior, distractors, vertical: :func:`render_scenes`' settings
      (``test_prior`` for the test scenes).
    test_prior: the test scenes' co-occurrence prior.
    p_partial, p_paraphrase: :func:`training_captions`' settings of the training
      captions.

  Returns:
    ``(data, examples)``: ``data`` holds ``train_images`` [n_train, S, S, 3] and
    the training captions' token arrays (``train_caption``, ``train_units``, ...
    of ``TrainingCaptions.arrays``), ``test_images`` [n_test, S, S, 3], the 2
    n_test half-truth triples (``ht_short`` / ``ht_long`` [2 n_test, L],
    ``ht_kind``, ``ht_image``), one relation caption per test scene
    (``test_caption`` [n_test, L], ``test_caption_id``: one id per distinct
    caption) and its relation foil (``test_foil``); ``examples`` up to 8
    training captions and half-truth triples as text.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  scenes = lambda s, n, p: render_scenes(
    s, n, size=size, prior=p, distractors=distractors, vertical=vertical
  )
  tr, te = (
    scenes(seed + 1, n_train, prior),
    scenes(seed + 2, n_test, test_prior),
  )
  caps = training_captions(
    tr, seed + 3, p_partial=p_partial, p_paraphrase=p_paraphrase
  )
  ht = half_truth_set(te, seed + 4)
  test_caps = training_captions(te, seed + 5, p_partial=0.0, p_paraphrase=0.0)
  ids = {c: i for i, c in enumerate(sorted(set(ht.caption)))}
  data = {
    "train_images": tr.images,
    **{f"train_{k}": v for k, v in caps.arrays().items()},
    "test_images": te.images,
    "ht_short": tokenize(ht.short),
    "ht_long": tokenize(ht.long),
    "ht_kind": ht.kind,
    "ht_image": ht.image,
    "test_caption": tokenize(ht.caption),
    "test_caption_id": np.array([ids[c] for c in ht.caption], np.int32),
    # the relation foil of each test caption
    "test_foil": tokenize(test_caps.caption_foil),
  }
  train = ("caption", "caption_foil", "units", "foils")
  examples = {
    "train": [
      {k: getattr(caps, k)[i] for k in train} for i in range(min(8, n_train))
    ],
    "half_truth": [
      {"short": ht.short[i], "long": ht.long[i], "kind": int(ht.kind[i])}
      for i in range(min(8, len(ht.short)))
    ],
  }
  return data, examples


def arm_weights(
  arm: str, *, lambda_comp: float, lambda_align: float, lambda_rank: float
) -> dict[str, float]:
  """A fine-tuning arm's weights of the :func:`finetune_terms`.

  ``clip_ft``: L_CLIP alone; ``negclip_ft``: NegCLIP on the full caption alone;
  ``cs_ft``: NegCLIP + λ_comp L_comp + λ_align L_align + λ_rank L_rank
  (CS-CLIP).

  Args:
    arm: one of ``ARMS``.
    lambda_comp, lambda_align, lambda_rank: the CS arm's unit-term weights.

  Returns:
    ``{"clip", "neg", "comp", "align", "rank"}`` floats.
  """
  if arm not in ARMS:
    raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
  w = dict(clip=0.0, neg=0.0, comp=0.0, align=0.0, rank=0.0)
  if arm == "clip_ft":
    w["clip"] = 1.0
  elif arm == "negclip_ft":
    w["neg"] = 1.0
  else:
    w.update(neg=1.0, comp=lambda_comp, align=lambda_align, rank=lambda_rank)
  return w


# The CS arm's unit terms at unit weight; the arms weight them (arm_weights).
_TERMS_CFG = CSLossConfig(
  lambda_full=1.0,
  negatives_full=True,
  lambda_comp=1.0,
  lambda_align=1.0,
  lambda_rank=1.0,
)


def finetune_terms(
  model: DualEncoder, order: jax.Array, batch: dict
) -> dict[str, jax.Array]:
  """Every fine-tuning loss term of one batch, each at unit weight
  (:func:`arm_weights`).

  The captions, their foils, the units and the unit foils go through the text
  tower in one call (``order_strength=order``); the terms are :func:`clip_loss`
  and the terms of :func:`cs_clip_loss` (NegCLIP on the full caption with its
  foil as extra negative, and the unit terms L_comp, L_align, L_rank).

  Args:
    model: the dual encoder.
    order: scalar order strength of the text tower.
    batch: ``images`` ``[B, H, W, 3]``, token ids ``caption`` / ``caption_foil``
      ``[B, L]`` and ``units`` / ``foils`` ``[B, U, L]``, ``unit_mask``
      ``[B, U]``.

  Returns:
    Scalars ``clip`` (L_CLIP), ``neg`` (NegCLIP on the full caption) and the CS
    unit terms ``comp``, ``align``, ``rank``.
  """
  _need(batch, BATCH_FIELDS, "batch")
  B, L, U = batch["caption"].shape[0], MAX_LEN, U_MAX
  if (
    batch["units"].shape[1:] != (U, L)
    or batch["foils"].shape != batch["units"].shape
  ):
    raise ValueError(
      f"batch units and foils must be [B, {U}, {L}], got {batch['units'].shape}"
    )
  img = model.image(batch["images"])
  toks = jnp.concatenate(
    [
      batch["caption"],
      batch["caption_foil"],
      batch["units"].reshape(-1, L),
      batch["foils"].reshape(-1, L),
    ]
  )
  txt = model.text(toks, order_strength=order)
  full, ffoil = txt[:B], txt[B : 2 * B]
  units = txt[2 * B : 2 * B + B * U].reshape(B, U, -1)
  foils = txt[2 * B + B * U :].reshape(B, U, -1)
  s = model.logit_scale()
  _, terms = cs_clip_loss(
    img,
    full,
    ffoil,
    units,
    foils,
    batch["unit_mask"],
    s,
    _TERMS_CFG,
    validate=False,
  )
  return {
    "clip": clip_loss(img, full, s, validate=False),
    "neg": terms["full"],
    **{k: terms[k] for k in ("comp", "align", "rank")},
  }


def heldout_metrics(
  model: DualEncoder, order: jax.Array, data: dict[str, Any]
) -> dict:
  """Half-truth accuracy, R@1 and relation-foil accuracy on the test set,
  per-item outcomes.

  Args:
    model: the dual encoder.
    order: scalar order strength of the text tower.
    data: :func:`benchmark_data`'s test arrays (``test_images``, ``ht_*``,
      ``test_caption``, ``test_caption_id``, ``test_foil``).

  Returns:
    ``ht_all`` / ``ht_entity`` / ``ht_relation`` / ``ht_ties``
    (:func:`half_truth_accuracy`), ``r1_i2t``, ``r1_t2i``, their mean ``r1``,
    ``relation_foil_acc``, and ``items``: the outcomes of the relation triples
    ``[2N]`` (0 where ``ht_kind != 1``), of one image->text and one text->image
    query per test scene ``[N]`` and of the foil pairs ``[N]``.
  """
  _need(data, TEST_FIELDS, "data")
  img = model.image(data["test_images"])
  enc = lambda t: model.text(t, order_strength=order)
  short, long = enc(data["ht_short"]), enc(data["ht_long"])
  img_ht = img[data["ht_image"]]
  ht = half_truth_accuracy(img_ht, short, long, data["ht_kind"])
  cap, foil = enc(data["test_caption"]), enc(data["test_foil"])
  i2t, t2i = retrieval_hits(img, cap, data["test_caption_id"])
  return {
    **{f"ht_{k}": ht[k] for k in ("all", "entity", "relation", "ties")},
    "r1_i2t": i2t.mean(),
    "r1_t2i": t2i.mean(),
    "r1": 0.5 * (i2t.mean() + t2i.mean()),
    "relation_foil_acc": pairwise_caption_accuracy(img, cap, foil),
    "items": {
      "ht_relation": jnp.where(
        data["ht_kind"] == 1, half_truth_outcomes(img_ht, short, long), 0.0
      ),
      "r1_i2t": i2t,
      "r1_t2i": t2i,
      "relation_foil_acc": pairwise_caption_outcomes(img, cap, foil),
    },
  }
