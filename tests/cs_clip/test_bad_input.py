"""Bad-input battery for ``jaxpapers.cs_clip``: malformed calls, eagerly and
under jit."""

import numpy as np
import pytest
from flax import nnx

import jaxpapers.cs_clip as C
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
_rng = np.random.default_rng(0)


def _unit(x):
  return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(F32)


I = _unit(_rng.normal(size=(4, 3)))
T = _unit(_rng.normal(size=(4, 3)))
UN = _unit(_rng.normal(size=(4, 2, 3)))
FO = _unit(_rng.normal(size=(4, 2, 3)))
M = np.ones((4, 2), bool)
M_BAD = np.full((4, 2), 2, np.int32)
KIND = np.array([0, 1, 0, 1])
SCENE = C.Scene((0, 1), (0, 1), 0)
HOST = "host-side (numpy scene and text construction)"
UNIT = "unit-norm"
BENCH = dict(
  n_train=2,
  n_test=2,
  size=24,
  prior=0.8,
  test_prior=0.0,
  distractors=0,
  vertical=False,
  p_partial=0.1,
  p_paraphrase=0.5,
)
LAM = dict(lambda_comp=0.5, lambda_align=0.25, lambda_rank=0.1)
DUAL = C.DualEncoder(len(C.VOCAB), 8, rngs=nnx.Rngs(0))
MODULE = (
  "takes a Flax module; the embeddings' checks run inside the losses and "
  "metrics (jitted)"
)

CASES = [
  Case("clip_loss", C.clip_loss, (3 * I, T, F32(10.0)), match=UNIT, jit="nan"),
  Case(
    "clip_loss",
    C.clip_loss,
    (I, T[:3], F32(10.0)),
    match=r"txt must have shape \[4, 3\]",
    id="clip_loss-shape",
  ),
  Case(
    "negclip_loss",
    C.negclip_loss,
    (I, T, T, F32(-1.0)),
    match="logit_scale",
    jit=("nan"),
  ),
  Case(
    "component_loss",
    C.component_loss,
    (I, UN, FO, M, F32(10.0)),
    {"kind": "hard"},
    match="kind must be one of",
  ),
  Case(
    "component_loss",
    C.component_loss,
    (I, UN, FO, M_BAD, F32(10.0)),
    match="binary",
    jit="nan",
    id="component_loss-mask",
  ),
  Case(
    "alignment_loss",
    C.alignment_loss,
    (I, UN, FO[:, :1], M),
    match=("foils must have shape"),
  ),
  Case(
    "rank_loss",
    C.rank_loss,
    (I, T, UN, M),
    {"reduction": "sum"},
    match=("reduction"),
  ),
  Case(
    "text_margin_loss",
    C.text_margin_loss,
    (T, UN, FO, M[:, :1]),
    match=("unit_mask"),
  ),
  Case(
    "paraphrase_loss",
    C.paraphrase_loss,
    (T, T, np.ones(3, bool), F32(10.0)),
    match="paraphrase_mask",
  ),
  Case(
    "cs_clip_loss",
    C.cs_clip_loss,
    (I, T, T, UN, FO, M, F32(10.0), "default"),
    error=TypeError,
    match="cfg must be a CSLossConfig",
  ),
  Case(
    "cs_clip_loss",
    C.cs_clip_loss,
    (I, T, T, UN, FO, M, F32(10.0)),
    {"cfg": C.CSLossConfig(lambda_para=0.1)},
    match="paraphrase must be given",
    id="cs_clip_loss-para",
  ),
  Case(
    "CSLossConfig",
    C.CSLossConfig,
    (),
    {"lambda_comp": -0.5},
    match="lambda_comp",
    jit=None,
    jit_reason="static configuration",
  ),
  Case(
    "half_truth_accuracy",
    C.half_truth_accuracy,
    (I, T, T, np.array([0, 1, 2, 1])),
    match="kind must hold 0",
    jit="nan",
  ),
  Case(
    "half_truth_accuracy",
    C.half_truth_accuracy,
    (I, T[:2], T, KIND),
    match=r"short must have shape",
    id="half_truth_accuracy-shape",
  ),
  Case(
    "pairwise_caption_accuracy",
    C.pairwise_caption_accuracy,
    (I, T, np.full((4, 3), np.nan, F32)),
    match="finite",
    jit="nan",
  ),
  Case(
    "half_truth_outcomes",
    C.half_truth_outcomes,
    (I, T, np.full((4, 3), np.inf, F32)),
    match="finite",
    jit="nan",
  ),
  Case(
    "half_truth_outcomes",
    C.half_truth_outcomes,
    # finite, but its squared norm overflows float32
    (I, T, np.full((4, 3), 1e20, F32)),
    match="squared norms within float32 range",
    jit="nan",
    id="half_truth_outcomes-overflow",
  ),
  Case(
    "pairwise_caption_outcomes",
    C.pairwise_caption_outcomes,
    (I, T[:3], T),
    match=r"pos must have shape",
  ),
  Case(
    "retrieval_hits",
    C.retrieval_hits,
    (I, np.full((4, 3), np.nan, F32), np.arange(4)),
    match="finite",
    jit="nan",
  ),
  Case(
    "retrieval_hits",
    C.retrieval_hits,
    (I, T, np.arange(3)),
    match=r"ids must have shape \[N\] = \[4\]",
    id="retrieval_hits-ids",
  ),
  Case(
    "render_scenes",
    C.render_scenes,
    (0, 4),
    {"size": 25},
    match="multiple of 3",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "units_and_foils",
    C.units_and_foils,
    (SCENE, _rng),
    {"form": "sentence"},
    match="form must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "half_truth_pairs",
    C.half_truth_pairs,
    ("scene", _rng),
    error=TypeError,
    match="scene must be a Scene",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "training_captions",
    C.training_captions,
    (C.render_scenes(0, 2), 0),
    {"p_partial": 1.5},
    match="p_partial",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "half_truth_set",
    C.half_truth_set,
    (C.render_scenes(0, 2), -1),
    match="seed",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "tokenize",
    C.tokenize,
    ("a red circle",),
    error=TypeError,
    match="sequence of strings",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "entity_foil",
    C.entity_foil,
    (SCENE, 5, _rng),
    match=r"i \(a mentioned object",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "relation_foil",
    C.relation_foil,
    ((0, 0), 7, (1, 1), np.random.default_rng(1)),
    match=r"rel \(an index",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "relation_holds",
    C.relation_holds,
    (SCENE, (0, 0), 9, (1, 1)),
    match=r"rel \(an index",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "TextEncoder",
    C.TextEncoder,
    (17, 8),
    {"kind": "lstm", "rngs": nnx.Rngs(0)},
    match="kind must be one of",
    jit=None,
    jit_reason="module construction",
  ),
  Case(
    "DualEncoder",
    C.DualEncoder,
    (17, 8),
    {"order_strength": -1.0, "rngs": nnx.Rngs(0)},
    match="order_strength",
    jit=None,
    jit_reason="module construction",
  ),
  Case(
    "pack_bits",
    lambda: C.pack_bits([0, 2]),
    match="0/1 outcomes",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "unpack_bits",
    lambda: C.unpack_bits("b080", 17),
    match="cannot hold",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "item_seed_interval",
    lambda: C.item_seed_interval(np.ones((2, 3)), np.ones((2, 4))),
    match="one shape",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "benchmark_data",
    lambda: C.benchmark_data(-1, **BENCH),
    match="seed",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "arm_weights",
    lambda: C.arm_weights("cs", **LAM),
    match="arm must be one of",
    jit=None,
    jit_reason="static configuration (a Python dict of floats)",
  ),
  Case(
    "finetune_terms",
    lambda: C.finetune_terms(DUAL, 1.0, {"caption": T}),
    match="batch lacks",
    jit=None,
    jit_reason=MODULE,
  ),
  Case(
    "heldout_metrics",
    lambda: C.heldout_metrics(DUAL, 1.0, {}),
    match="data lacks",
    jit=None,
    jit_reason=MODULE,
  ),
]

EXEMPT = {
  "ImageEncoder": "a plain Flax module (convolutions on any image batch)",
  "Scene": "a NamedTuple data container",
  "SceneBatch": "a NamedTuple data container",
  "TrainingCaptions": "a NamedTuple data container",
  "HalfTruthSet": "a NamedTuple data container",
  "partner": "a total function on integer entity ids",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(C, CASES, EXEMPT)


def test_empty_mask_is_a_documented_zero():
  out = C.component_loss(I, UN, FO, np.zeros((4, 2), bool), F32(10.0))
  assert float(out) == 0.0
  assert float(C.alignment_loss(I, UN, FO, np.zeros((4, 2), bool))) == 0.0


def test_a_tracer_scale_is_checked_under_jit():
  import jax

  out = jax.jit(lambda s: C.clip_loss(I, T, s))(F32(0.0))
  assert np.isnan(float(out))
  with pytest.raises(ValueError, match="logit_scale"):
    C.clip_loss(I, T, F32(0.0))
