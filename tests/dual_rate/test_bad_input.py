"""Bad-input battery for ``jaxpapers.dual_rate``: malformed calls, eagerly and
under jit."""

import functools

import jax
import ml_collections
import numpy as np
import optax
from flax import nnx

from jaxpapers import dual_rate as dr
from tests.bad_input_util import Case, assert_covers, parametrize, run_case
from tests.dual_rate._util import tiny_dual, tiny_single

F32 = np.float32
S = dr.NoiseSchedule()
X = np.zeros((2, 8, 8, 1), F32)
HOST = "host-side (NumPy / Python) function, not traced"
FEATS = np.random.default_rng(0).normal(size=(6, 3))


def _abstract(make):
  """The module with shape-only parameters: enough for checks that fire before
  any compute."""
  return nnx.eval_shape(make)


@functools.cache
def _single(num_classes=0):
  return _abstract(lambda: tiny_single(num_classes=num_classes))


@functools.cache
def _dual():
  return _abstract(tiny_dual)


@functools.cache
def _clf():
  return _abstract(
    lambda: dr.FeatureClassifier(
      image_size=8, num_classes=2, feature_dim=4, rngs=nnx.Rngs(0)
    )
  )


@functools.cache
def _micro():
  """A real (initialised) class-conditional network, as small as the sampler
  allows."""
  return dr.SingleNetwork(
    image_size=4,
    channels=1,
    patch_size=4,
    width=4,
    depth=1,
    num_heads=1,
    mlp_ratio=1,
    num_classes=3,
    rngs=nnx.Rngs(0),
  )


def _key():
  return jax.random.key(0)


CASES = [
  # schedule: value checks (NaN under jit) and static config
  Case(
    "q_sample",
    dr.q_sample,
    (X, F32([1.7, -0.5]), X, S),
    match=(r"t must lie in \[0, 1\]"),
    jit=("nan"),
  ),
  Case(
    "q_sample",
    dr.q_sample,
    (X, F32(-0.5), X, S),
    match=r"t must lie in \[0, 1\]",
    jit="checkify",
    id="q_sample-negative",
  ),
  Case(
    "q_sample",
    dr.q_sample,
    (X, F32([0.5, 0.5, 0.5]), X, S),
    match=r"t must be a scalar or",
    id="q_sample-t-shape",
  ),
  Case(
    "ddim_step",
    dr.ddim_step,
    (X, X, F32(0.3), F32(0.6), S),
    match="s <= t",
    jit=("nan"),
  ),
  Case(
    "posterior",
    dr.posterior,
    (X, X, F32(0.3), F32(0.6), S),
    match="s <= t",
    jit=("nan"),
  ),
  Case(
    "ancestral_step",
    lambda z, x, t, s: dr.ancestral_step(z, x, t, s, S, _key()),
    (X, X, F32(0.3), F32(0.6)),
    match="s <= t",
    jit="nan",
  ),
  Case(
    "karras_sigmas",
    dr.karras_sigmas,
    (2.5,),
    match="num_steps must be an int",
    jit=None,
    jit_reason="static grid size",
  ),
  Case(
    "karras_sigmas",
    dr.karras_sigmas,
    (4,),
    {"rho": 0.0},
    match="rho must be",
    jit=None,
    jit_reason="static grid parameters",
    id="karras_sigmas-rho",
  ),
  Case(
    "karras_sigmas",
    dr.karras_sigmas,
    (4,),
    {"sigma_min": 100.0},
    match="sigma_min < sigma_max",
    jit=None,
    jit_reason="static grid parameters",
    id="karras_sigmas-order",
  ),
  Case(
    "edm_sigma_to_t",
    dr.edm_sigma_to_t,
    (F32([-1.0]), S),
    match=("sigma_edm must be >= 0"),
    jit=("nan"),
  ),
  Case(
    "edm_preconditioning",
    dr.edm_preconditioning,
    (F32([0.0]),),
    match="sigma must be > 0",
    jit="nan",
  ),
  Case(
    "edm_preconditioning",
    dr.edm_preconditioning,
    (F32([1.0]),),
    {"sigma_data": 0.0},
    match="sigma_data must be",
    id="edm_preconditioning-sigma_data",
  ),
  Case(
    "NoiseSchedule",
    dr.NoiseSchedule,
    (),
    {"kind": "sigmoid"},
    match="kind must be one of",
    jit=None,
    jit_reason="frozen config dataclass",
  ),
  Case(
    "v_from_x_eps",
    dr.v_from_x_eps,
    (X, X[:1], F32(1.0), F32(0.0)),
    match="x and eps must have the same shape",
  ),
  Case(
    "x_from_v",
    dr.x_from_v,
    (X, X, F32([1, 1, 1]), F32(0.0)),
    match=r"alpha must be a scalar or shape \[B\]",
  ),
  Case(
    "eps_from_x",
    dr.eps_from_x,
    (X, X[..., :0], F32(1.0), F32(1.0)),
    match="z and x must have the same shape",
  ),
  Case(
    "x_from_eps",
    dr.x_from_eps,
    (X, X, F32(1.0), np.ones((2, 2), F32)),
    match=r"sigma must be a scalar or shape \[B\]",
  ),
  Case(
    "output_to_x",
    dr.output_to_x,
    (X, X, F32(0.5), S, "w"),
    match=("parametrization must be"),
  ),
  Case(
    "output_to_x",
    dr.output_to_x,
    (X[:1], X, F32(0.5), S, "v"),
    match="output and z must have the same shape",
    id="output_to_x-shape",
  ),
  Case(
    "loss_weight",
    dr.loss_weight,
    (F32([0.0]), "snr"),
    match=("weighting must be"),
  ),
  # networks
  Case(
    "timestep_embedding",
    dr.timestep_embedding,
    (F32([0.5]), 7),
    match=("dim must be an even"),
  ),
  Case(
    "timestep_embedding",
    dr.timestep_embedding,
    (F32(0.5), 8),
    match=r"t must have shape \[B\]",
    id="timestep_embedding-scalar",
  ),
  Case(
    "SingleNetwork",
    lambda x: _single()(x, F32(0.5), np.zeros(2, np.int32)),
    (X,),
    match="model is unconditional",
  ),
  Case(
    "SingleNetwork",
    lambda x: _single(3)(x, F32(0.5), F32([0.0, 1.7])),
    (X,),
    error=TypeError,
    match="cond must be integer",
    id="SingleNetwork-float-cond",
  ),
  Case(
    "SingleNetwork",
    lambda x: _single()(x[..., :1, :], F32(0.5)),
    (X,),
    match="z must be",
    id="SingleNetwork-shape",
  ),
  Case(
    "ContextEncoder",
    lambda: dr.ContextEncoder(image_size=8, patch_size=3, rngs=nnx.Rngs(0)),
    match="divisible by patch_size",
    jit=None,
    jit_reason="module constructor",
  ),
  Case(
    "LightDenoiser",
    lambda: dr.LightDenoiser(parametrization="score", rngs=nnx.Rngs(0)),
    match="parametrization must be",
    jit=None,
    jit_reason="module constructor",
  ),
  Case(
    "DualRateModel",
    lambda: dr.DualRateModel(parametrization="score", rngs=nnx.Rngs(0)),
    match="parametrization must be",
    jit=None,
    jit_reason="module constructor",
  ),
  Case(
    "build_networks",
    dr.build_networks,
    (ml_collections.ConfigDict({"patch_size": 2}),),
    dict(image_size=8, channels=1, num_classes=10, seed=0),
    match=r"cfg lacks the network settings \['num_heads'",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "count_params",
    dr.count_params,
    ([1, 2],),
    error=TypeError,
    match="nnx.Module",
    jit=None,
    jit_reason=HOST,
  ),
  # sampling and cost accounting
  Case(
    "sample",
    lambda key, c: dr.sample(_micro(), key, (2, 4, 4, 1), num_steps=1, cond=c),
    (jax.random.key(0), np.array([3, 5], np.int32)),
    match=r"cond must be class labels in \[0, 3\)",
    jit="nan",
  ),
  Case(
    "sample",
    lambda key: dr.sample(
      _dual(), key, (2, 8, 8, 1), num_steps=2, refresh=np.array([False, True])
    ),
    (jax.random.key(0),),
    match=r"refresh\[0\] must be True",
    id="sample-refresh",
  ),
  Case(
    "sample",
    lambda: dr.sample(
      _single(), _key(), (2, 8, 8, 1), num_steps=2, sampler=("euler")
    ),
    match="sampler must be one of",
    jit=None,
    jit_reason="static configuration",
    id="sample-sampler",
  ),
  Case(
    "refresh_schedule",
    dr.refresh_schedule,
    (4.5,),
    match="num_steps must be an int",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "call_counts",
    dr.call_counts,
    (np.ones(3, bool),),
    {"sampler": "euler"},
    match="sampler must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "sampling_cost",
    dr.sampling_cost,
    ({"encoder": 1.0}, np.ones(3, bool)),
    match="flops must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "speedup",
    dr.speedup,
    (1.0, 1.0, np.zeros(0, bool)),
    match="non-empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "wall_time",
    dr.wall_time,
    (lambda: 0,),
    {"repeats": 0},
    match="repeats must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "xla_flops",
    dr.xla_flops,
    (42,),
    error=TypeError,
    match="fn must be callable",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "component_flops",
    dr.component_flops,
    ("model", X),
    error=TypeError,
    match="model must be a DualRateModel",
    jit=None,
    jit_reason=HOST,
  ),
  # training
  Case(
    "sample_staleness",
    dr.sample_staleness,
    (jax.random.key(0), 4),
    {"max_staleness": 3, "p_fresh": 1.5},
    match=r"p_fresh must be a probability",
  ),
  Case(
    "dual_rate_loss",
    lambda x, k: dr.dual_rate_loss(_dual(), x, None, k, coupling="exact"),
    (X, jax.random.key(0)),
    match="coupling must be one of",
  ),
  Case(
    "dual_rate_loss",
    lambda x, k: dr.dual_rate_loss(_single(), x, None, k),
    (X, jax.random.key(0)),
    error=TypeError,
    match="model must be a DualRateModel",
    id="dual_rate_loss-type",
  ),
  Case(
    "diffusion_loss",
    lambda x, k: dr.diffusion_loss(_single(), x, None, k, weighting="snr"),
    (X, jax.random.key(0)),
    match="weighting must be one of",
  ),
  Case(
    "make_train_step",
    dr.make_train_step,
    (None, lambda *a: 0.0, optax.sgd(0.1)),
    {"ema_decay": 1.0},
    match=r"ema_decay must be in \[0, 1\)",
    jit=None,
    jit_reason="builds a jitted function (host side)",
  ),
  Case(
    "ema_tracker",
    dr.ema_tracker,
    (1.5,),
    match=r"decay must be in \[0, 1\)",
    jit=None,
    jit_reason="builds an optax transformation (host side)",
  ),
  Case(
    "find_ema",
    dr.find_ema,
    ((optax.EmptyState(),),),
    match="exactly one EmaState",
    jit=None,
    jit_reason="searches a pytree structure (host side)",
  ),
  Case(
    "EmaState",
    lambda: dr.ema_tracker(0.9).update(
      {"w": np.ones(1)}, dr.EmaState({"w": np.ones(1)})
    ),
    match="ema_tracker needs params",
    jit=None,
    jit_reason="optax state container",
  ),
  Case(
    "last_refresh_index",
    dr.last_refresh_index,
    (np.array([False, True]),),
    match=r"refresh\[0\] = True",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "mmd_losses",
    lambda x, k: dr.mmd_losses(_single(), _single(), _single(), x, None, k),
    (X[0], jax.random.key(0)),
    match=r"x must be \[B, H, W, C\]",
  ),
  Case(
    "mmd_pair_loss",
    lambda x, k: dr.mmd_pair_loss(
      dr.MMDPair(_single(), _single()), _single(), x, None, k
    ),
    (X[0], jax.random.key(0)),
    match=r"x must be \[B, H, W, C\]",
  ),
  Case(
    "MMDPair",
    lambda: dr.MMDPair(_single(), None),
    error=TypeError,
    match="aux must be a DualRateModel or SingleNetwork, got NoneType",
    jit=None,
    jit_reason="an nnx.Module container (host side)",
  ),
  Case(
    "training_optimizer",
    dr.training_optimizer,
    (0.0, 10, 2, 0.9),
    match="learning_rate must be > 0",
    jit=None,
    jit_reason="builds an optax transformation (host side)",
  ),
  # evaluation
  Case(
    "FeatureClassifier",
    lambda x: _clf().features(x),
    (X[0],),
    match=(r"x must be \[B, H, W, C\]"),
  ),
  Case(
    "classifier_accuracy",
    lambda: dr.classifier_accuracy(_clf(), X, np.zeros(3, np.int32)),
    match=r"labels \[N\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "extract_features",
    lambda: dr.extract_features(_clf(), X[0]),
    match=r"images must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "train_classifier",
    dr.train_classifier,
    (X, np.array([0, 1])),
    {"num_classes": 2, "learning_rate": -2e-3},
    match=r"learning_rate must be a finite number > 0, got -0.002",
    jit=None,
    jit_reason=HOST,
    id="train_classifier-negative-lr",
  ),
  Case(
    "train_classifier",
    dr.train_classifier,
    (X, np.array([0, 1])),
    {"num_classes": 2, "steps": 0},
    match=r"steps must be an int >= 1, got 0",
    jit=None,
    jit_reason=HOST,
    id="train_classifier-zero-steps",
  ),
  Case(
    "train_classifier",
    dr.train_classifier,
    (X, np.array([0, 7])),
    {"num_classes": 2},
    match=r"labels must lie in \[0, num_classes=2\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "frechet_distance",
    dr.frechet_distance,
    (FEATS, np.full((6, 3), np.nan)),
    match="must be finite",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "fd_metric",
    dr.fd_metric,
    (FEATS, FEATS[:, :2]),
    match="features must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "kernel_inception_distance",
    dr.kernel_inception_distance,
    (FEATS, FEATS[:1]),
    match="at least two",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "kid_metric",
    dr.kid_metric,
    (FEATS, FEATS * np.inf),
    match="must be finite",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "precision_recall_knn",
    dr.precision_recall_knn,
    (FEATS, FEATS),
    {"k": 6},
    match=r"k must be an int in \[1, 5\]",
    jit=None,
    jit_reason=HOST,
  ),
  # data
  Case(
    "render_shapes",
    dr.render_shapes,
    (np.array([0, 4]),),
    match=r"labels must lie in \[0, 4\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "shapes",
    dr.shapes,
    (),
    {"num_train": 0},
    match="num_train must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "digits",
    dr.digits,
    (),
    {"num_test": 5000},
    match="num_test must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "load_numpy",
    dr.load_numpy,
    ("mnist",),
    match="name must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "num_classes",
    dr.num_classes,
    ("mnist",),
    match="name must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "load_tfds",
    dr.load_tfds,
    ("mnist", "/nonexistent"),
    match="name must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "tfds_builder",
    dr.tfds_builder,
    ("mnist", "/nonexistent"),
    match="name must be one of",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "SourceImages",
    dr.SourceImages,
    ([{"image": np.zeros((2, 2, 3)), "label": 0}], "pixels"),
    match="key must be 'image' or 'label'",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "load_imagenet64",
    dr.load_imagenet64,
    ("/nonexistent",),
    {"num_test": -1},
    match="num_test must be >= 0",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "fit",
    dr.fit,
    (_single(), lambda *a: None, X, np.zeros(2, np.int32)),
    dict(
      name="t",
      steps=0,
      learning_rate=1e-3,
      warmup_steps=0,
      ema_decay=0.9,
      batch_size=2,
      seed=0,
      workdir="/nonexistent",
    ),
    match="num_steps must be >= 1",
    jit=None,
    jit_reason="host-side training driver (the loop over steps)",
  ),
  Case(
    "fit_step",
    dr.fit_step,
    (nnx.graphdef(_single()), "not a loss"),
    error=TypeError,
    match="loss_fn must be callable",
    jit=None,
    jit_reason="builds the jitted step",
  ),
  Case(
    "make_losses",
    dr.make_losses,
    (S,),
    dict(
      weighting="v",
      train_grid_steps=(8,),
      max_staleness=2,
      p_fresh=0.5,
      coupling="euler",
      rollout_frac=0.0,
    ),
    match="coupling must be one of",
    jit=None,
    jit_reason="builds the loss functions",
  ),
  Case(
    "mmd_step_loss",
    dr.mmd_step_loss,
    (nnx.graphdef(_single()), S, 0, None),
    match="num_student_steps must be >= 1",
    jit=None,
    jit_reason="builds the loss function",
  ),
  Case(
    "FDProxy",
    lambda: dr.FDProxy.build(
      {
        k: np.zeros((4, 8, 8, 1), np.float32)
        for k in ("train_images", "test_images")
      }
      | {k: np.zeros(4, np.int32) for k in ("train_labels", "test_labels")},
      num_classes=2,
      classifier_steps=1,
      splits={"reference": ("test", 0, 2), "compared": ("heldout", 0, 2)},
    ),
    match=r"splits\['reference'\] must be \('train' or 'heldout'",
    jit=None,
    jit_reason="trains a classifier and scores on the host",
  ),
  Case(
    "fd_splits",
    dr.fd_splits,
    (10, 8, 5, "heldout"),
    match="needs 10 held-out images",
    jit=None,
    jit_reason="host-side index ranges",
  ),
  Case(
    "matched_quality",
    dr.matched_quality,
    (
      [
        {
          "method": "dual-rate",
          "steps": 4,
          "interval_K": 2,
          "fd_mean": 1.0,
          "fd_std": 0.1,
          "mflops_per_sample": 1.0,
          "wall_s": None,
        }
      ],
      {"dual": {"denoiser": 1.0, "encoder": 2.0}},
    ),
    match="no row of base_methods",
    jit=None,
    jit_reason="host-side selection over result rows",
  ),
  Case(
    "matched_quality",
    dr.matched_quality,
    ([{"method": "baseline", "fd_mean": 1.0}], {}),
    match="a row lacks",
    jit=None,
    jit_reason="host-side selection over result rows",
    id="matched_quality-row-fields",
  ),
  Case(
    "measure_sampler",
    dr.measure_sampler,
    (None, None),
    kwargs=dict(
      num_steps=2,
      refresh=np.ones(2, bool),
      sampler="ddim",
      schedule=S,
      use_features=True,
      flops={},
      eval_seeds=(),
      grid_samples=1,
    ),
    match="eval_seeds must name at least one sampling seed",
    jit=None,
    jit_reason="host-side loop over sampling seeds and scoring",
  ),
  Case(
    "aggregate_rows",
    dr.aggregate_rows,
    ([],),
    match="at least one training seed",
    jit=None,
    jit_reason="host-side aggregation over result rows",
  ),
  Case(
    "gain_in_std",
    dr.gain_in_std,
    ({"fd_mean": 2.0}, {"fd_mean": 1.0, "fd_std": 0.1}),
    match="a row lacks",
    jit=None,
    jit_reason="host-side arithmetic on result rows",
  ),
  Case(
    "gain_at_equal_cost",
    dr.gain_at_equal_cost,
    ([{"fd_mean": 1.0}], "no-features"),
    match="a row lacks",
    jit=None,
    jit_reason="host-side selection over result rows",
  ),
  Case(
    "paired_gain",
    dr.paired_gain,
    ([{"fd_mean": 1.0}], "dual-rate", "fresh-only"),
    match="a row lacks",
    jit=None,
    jit_reason="host-side selection over result rows",
  ),
]

EXEMPT = {}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(dr, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_ddim_step_with_s_equal_t_is_the_identity():
  z = np.random.default_rng(0).normal(size=(2, 4)).astype(F32)
  x = np.random.default_rng(1).normal(size=(2, 4)).astype(F32)
  step = jax.jit(lambda z, x, t: dr.ddim_step(z, x, t, t, S))
  np.testing.assert_allclose(step(z, x, F32(0.4)), z, rtol=1e-5, atol=1e-5)


def test_edm_sigma_zero_maps_to_the_data_end():
  t = float(dr.edm_sigma_to_t(0.0, S))
  assert 0.0 <= t < 1e-3


def test_karras_one_step_grid_is_sigma_max_then_zero():
  np.testing.assert_allclose(dr.karras_sigmas(1), [80.0, 0.0], rtol=1e-6)


def test_q_sample_poisons_only_the_bad_examples_under_jit():
  z = jax.jit(lambda x, t: dr.q_sample(x, t, x, S))(
    np.ones((2, 3), F32), F32([1.7, 0.5])
  )
  assert (
    np.isnan(np.asarray(z[0])).all() and np.isfinite(np.asarray(z[1])).all()
  )
