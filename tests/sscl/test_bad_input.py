"""Bad-input battery for ``jaxpapers.sscl``: malformed calls, eagerly and under
jit."""

import numpy as np
from flax import nnx

import jaxpapers.sscl as S
from tests.bad_input_util import Case, assert_covers, parametrize, run_case
from tests.sscl._tiny import tiny_clip

F32 = np.float32
_rng = np.random.default_rng(0)
G = _rng.normal(size=(4, 3)).astype(F32)
G_NAN = G.copy()
G_NAN[0, 0] = np.nan
A = np.full((4, 4), 0.25, F32)
A_BAD = np.full((4, 4), 0.5, F32)  # rows sum to 2
L = _rng.normal(size=(4, 3)).astype(F32)
L_NAN = L.copy()
L_NAN[1, 1] = np.nan
LAB = np.array([0, 1, 2, 1], np.int32)
LAB_BAD = np.array([0, 1, 3, 1], np.int32)
W = np.ones(4, F32)
LAB_MAP = np.zeros((1, 4, 4), np.int32)
Q_BAD = np.full((4, 3), 0.5, F32)
Z = _rng.normal(size=(2, 3, 5)).astype(F32)
T5 = _rng.normal(size=(2, 5)).astype(F32)
BOX = np.array([1.0, 1.0, 3.0, 3.0], F32)
BOX_BAD = np.array([3.0, 1.0, 1.0, 3.0], F32)
FEAT = _rng.normal(size=(4, 4, 2)).astype(F32)
IMG = np.zeros((8, 8, 3), F32)
IMGS = np.zeros((2, 8, 8, 3), np.uint8)
TGT = S.SGSRTargets(L[None], np.full((1, 4, 3), 1 / 3, F32), LAB[None], W[None])
MODEL = tiny_clip()
TINY_SIZES = {
  "size": 8,
  "patch": 4,
  "width": 8,
  "depth": 1,
  "embed_dim": 4,
  "heads": 2,
}
HOST = "host-side (numpy data generation and tokenisation)"
CTOR = "module or config construction"

CASES = [
  Case("vfm_affinity", S.vfm_affinity, (G[0],), match="g must have rank"),
  Case(
    "vfm_affinity",
    S.vfm_affinity,
    (G,),
    {"gamma": 0.0},
    match="gamma",
    id=("vfm-gamma"),
  ),
  Case(
    "vfm_affinity",
    S.vfm_affinity,
    (G_NAN,),
    match="g must be finite",
    jit=("nan"),
    id=("vfm-nan"),
  ),
  Case(
    "refine_logits",
    S.refine_logits,
    (L, A[:3]),
    match=(r"affinity must have shape \[4, 4\]"),
  ),
  Case(
    "refine_logits",
    S.refine_logits,
    (L, A_BAD),
    match="row-stochastic",
    jit="nan",
    id="refine-rows",
  ),
  Case(
    "refine_logits",
    S.refine_logits,
    (L, A),
    {"steps": -1},
    match="steps",
    id=("refine-k"),
  ),
  Case(
    "proxy_attention",
    S.proxy_attention,
    (G, A[:, :3]),
    match=("affinity must have shape"),
  ),
  Case(
    "patch_text_logits",
    S.patch_text_logits,
    (G, T5),
    match=(r"text must have shape \[C, 3\]"),
  ),
  Case(
    "dense_pseudolabels",
    S.dense_pseudolabels,
    (L[:, :1],),
    match=("at least 2 classes"),
  ),
  Case(
    "dense_pseudolabels",
    S.dense_pseudolabels,
    (L_NAN,),
    match="refined must be finite",
    jit="nan",
    id="pseudo-nan",
  ),
  Case(
    "dense_pseudolabels",
    S.dense_pseudolabels,
    (L,),
    {"confidence": 1.0},
    match="confidence",
    id="pseudo-kappa",
  ),
  Case(
    "sgsr_targets",
    S.sgsr_targets,
    (L[None], G[None], L, "default"),
    error=TypeError,
    match="cfg must be an SSCLConfig",
  ),
  Case(
    "sgsr_targets",
    S.sgsr_targets,
    (L[None], G[None, :3], L),
    match="vfm must have shape",
    id="sgsr-vfm",
  ),
  Case(
    "dense_pseudolabel_ce",
    S.dense_pseudolabel_ce,
    (L, LAB_BAD, W),
    match=r"labels must be in \[0, 3\)",
    jit="nan",
  ),
  Case(
    "dense_pseudolabel_ce",
    S.dense_pseudolabel_ce,
    (L, LAB.astype(F32), W),
    error=TypeError,
    match="labels must have a integer dtype|labels must have an? integer",
    id="ce-dtype",
  ),
  Case(
    "dense_pseudolabel_ce",
    S.dense_pseudolabel_ce,
    (L, LAB, -W),
    match="non-negative",
    jit="nan",
    id="ce-weights",
  ),
  Case("dense_kl", S.dense_kl, (L, Q_BAD, W), match="distributions", jit="nan"),
  Case(
    "region_consistency_loss",
    S.region_consistency_loss,
    (Z,),
    {"mode": "mse"},
    match="mode must be one of",
  ),
  Case(
    "region_consistency_loss",
    S.region_consistency_loss,
    (Z[:, :1],),
    {"mode": "infonce"},
    match="at least 2 views",
    id="cisc-views",
  ),
  Case(
    "region_consistency_loss",
    S.region_consistency_loss,
    (Z,),
    {"mode": "teacher"},
    match="teacher must be given",
    id="cisc-teacher",
  ),
  Case(
    "keep_loss",
    S.keep_loss,
    (T5, T5[:1]),
    match=("teacher_cls must have shape"),
  ),
  Case(
    "sscl_loss",
    S.sscl_loss,
    (L[None], TGT, Z, T5, T5, T5, "cfg"),
    error=TypeError,
    match="cfg must be an SSCLConfig",
  ),
  Case(
    "sscl_loss",
    S.sscl_loss,
    (L[None], (1, 2), Z, T5, T5, T5),
    error=TypeError,
    match="targets must be SGSRTargets",
    id="sscl-targets",
  ),
  Case(
    "SSCLConfig",
    S.SSCLConfig,
    (),
    {"tau_c": 0.0},
    match="tau_c",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "roi_align",
    S.roi_align,
    (FEAT, BOX[:3]),
    {"coords": "patch"},
    match=r"box must have shape \[4\]",
  ),
  Case(
    "roi_align",
    S.roi_align,
    (FEAT, BOX_BAD),
    {"coords": "patch"},
    match="x1 >= x0",
    jit="nan",
    id="roi-inverted",
  ),
  Case(
    "roi_align",
    S.roi_align,
    (FEAT, BOX),
    match="image_size must be given",
    id=("roi-pixel"),
  ),
  Case(
    "make_context_views",
    S.make_context_views,
    (None, IMG[:, :4], BOX),
    {"n_views": 2},
    match=r"image must have shape \[S, S, 3\]",
    jit=None,
    jit_reason=(
      "the key argument is not an array here; the image shape check is static"
    ),
  ),
  Case(
    "segment", S.segment, (G[None], T5, (8, 8)), match=(r"text must have shape")
  ),
  Case(
    "upsample_logits",
    S.upsample_logits,
    (L[None, :3], (8, 8)),
    match=("square number"),
  ),
  Case(
    "segmentation_miou",
    S.segmentation_miou,
    (LAB_BAD, LAB, 3),
    match=r"pred must be in \[0, 3\)",
    jit="nan",
  ),
  Case(
    "segmentation_miou",
    S.segmentation_miou,
    (LAB, LAB[:3], 3),
    match="target must have shape",
    id="miou-shape",
  ),
  Case(
    "region_embeddings",
    S.region_embeddings,
    (G[None], np.zeros((1, 2, 3), F32), (8, 8)),
    match=r"boxes must have shape \(1, \?, 4\)",
  ),
  Case(
    "feature_drift",
    S.feature_drift,
    (T5, T5[:, :2]),
    match=("z_b must have shape"),
  ),
  Case(
    "dense_features",
    S.dense_features,
    (MODEL, IMGS),
    {"readout": "cls"},
    match="readout must be one of",
  ),
  Case(
    "dense_features",
    S.dense_features,
    ("vit", IMGS),
    error=TypeError,
    match="model must be a TinyCLIP",
    id="dense-model",
  ),
  Case(
    "dense_features",
    S.dense_features,
    (MODEL, IMGS[:, :6, :6]),
    match="divisible by the patch",
    id="dense-size",
  ),
  Case(
    "handcrafted_vfm",
    S.handcrafted_vfm,
    (IMGS, 3),
    match=("divisible by the patch size 3"),
  ),
  Case(
    "TinyCLIP",
    S.TinyCLIP,
    (1,),
    # the image tower is built before the text encoder checks vocab: the tiny
    # model's sizes
    {**TINY_SIZES, "rngs": nnx.Rngs(0)},
    match="vocab",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "TinyViT",
    S.TinyViT,
    (),
    {"size": 10, "patch": 4, "rngs": nnx.Rngs(0)},
    match="size must be divisible by patch",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "TinyTextEncoder",
    S.TinyTextEncoder,
    (5,),
    {"max_len": 0, "rngs": nnx.Rngs(0)},
    match="max_len",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "render_shapes_world",
    S.render_shapes_world,
    (0, 4),
    {"size": 20},
    match="multiple of 8",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "tokenize",
    S.tokenize,
    (["a red dog"],),
    match="'dog'",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "class_prompts",
    S.class_prompts,
    ("size",),
    match="kind must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "label_maps",
    S.label_maps,
    (S.render_shapes_world(0, 1, size=16), "size"),
    match="kind must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "instance_vfm",
    S.instance_vfm,
    (LAB_MAP, 3, 4),
    match=("divisible by the patch size 3"),
  ),
  Case(
    "patch_labels",
    S.patch_labels,
    (LAB_MAP, 3),
    match=("divisible by the patch size 3"),
  ),
  Case(
    "linear_probe_accuracy",
    S.linear_probe_accuracy,
    (G, LAB, G[:, :2], LAB, 3),
    match=r"test_x must have shape",
  ),
]

_SETUP = "configuration checked when the function or its program is built"
_FT_DATA = {"train_images": IMGS, "train_valid": np.ones((2, 4), bool)}
_FT_KW = {"batch": 1, "n_views": 1, "view_scales": (1.5, 3.0), "diverse": 1.0}
_BATCH = {"views": np.zeros((1, 1, 8, 8, 3), F32), "imgs": IMGS[:1]}
CASES += [
  Case(
    "num_classes",
    S.num_classes,
    ("texture",),
    match="classes must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "vfm_features",
    S.vfm_features,
    ("dino", 4, IMGS, LAB_MAP),
    match="vfm must be one of",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "benchmark_data",
    S.benchmark_data,
    (0,),
    dict(
      n_train=2, n_test=1, size=16, patch=4, classes="colour", probe_images=0
    ),
    match="probe_images must be >= 1",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_evaluate",
    S.make_evaluate,
    (None,),
    dict(size=8, patch=4, classes="colour", vfm="dino", config=S.SSCLConfig()),
    match="vfm must be one of",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "finetune_batch",
    lambda: S.finetune_batch(None, _FT_DATA, **(_FT_KW | {"n_views": 0})),
    match="n_views must be >= 1",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "teacher_targets",
    lambda: S.teacher_targets(
      MODEL, {}, {}, vfm="dino", patch=4, config=S.SSCLConfig()
    ),
    match="vfm must be one of",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "arm_loss",
    lambda: S.arm_loss(MODEL, {"keep": 1.0}, _BATCH, {}, config=S.SSCLConfig()),
    match="w must weight every loss term",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "trainable_mask",
    S.trainable_mask,
    ({}, 0),
    match="depth must be >= 1",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "masked_adam",
    S.masked_adam,
    (0.0,),
    match="lr must be > 0",
    jit=None,
    jit_reason=_SETUP,
  ),
  Case(
    "trivial_baselines",
    S.trivial_baselines,
    (
      {
        "test_target": np.zeros((2, 4, 4), np.int32),
        "test_valid": np.ones((2, 3), bool),
        "test_labels": np.zeros((2, 2), np.int32),
      },
      0,
      6,
    ),
    match=r"test_labels must have test_valid's shape \(2, 3\)",
    jit=None,
    jit_reason="host-side NumPy on the benchmark's arrays",
  ),
]

EXEMPT = {
  "SGSRTargets": "a NamedTuple data container",
  "ShapesData": "a NamedTuple data container",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(S, CASES, EXEMPT)


def test_make_context_views_poisons_an_inverted_box_under_jit():
  import jax

  f = jax.jit(
    lambda b: S.make_context_views(jax.random.key(0), IMG, b, n_views=2)
  )
  views, boxes = f(BOX_BAD)
  assert np.all(np.isnan(views)) and np.all(np.isnan(boxes))
  views, _ = f(BOX)
  assert np.all(np.isfinite(views))


def test_degenerate_inputs_give_documented_values():
  import jax

  # no confident patch: 0
  assert float(jax.jit(S.dense_pseudolabel_ce)(L, LAB, 0 * W)) == 0.0
  ignored = np.full(4, -1, np.int32)  # everything ignored
  miou, iou = jax.jit(S.segmentation_miou, static_argnums=2)(LAB, ignored, 3)
  assert np.isnan(float(miou)) and np.all(np.isnan(iou))
