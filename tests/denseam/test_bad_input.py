"""Bad-input battery for ``jaxpapers.denseam``: malformed calls, eagerly and
under jit."""

import jax
import numpy as np
import pytest

from jaxpapers import denseam as D
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
_rng = np.random.default_rng(0)
XI = (_rng.normal(size=(4, 5)) / 3).astype(F32)
X = _rng.normal(size=(3, 5)).astype(F32)
CLAMP = np.array([True, True, True, False, False])
CFG = D.DenseAMConfig(energy="lse", steps=2, num_classes=2)
CFG_DN = D.DenseAMConfig(energy="poly", steps=2, task="denoise")
GOOD = D.Batch(X, CLAMP, np.array([0, 1, 1], np.int32))
BAD_LABEL = D.Batch(X, CLAMP, np.array([0, 2, 1], np.int32))
P = D.Parametrization.standard(4)
KEY = jax.random.key(0)
HOST = "host-side loop over widths / grids (each width runs a compiled program)"

CASES = [
  Case(
    "DenseAMConfig",
    D.DenseAMConfig,
    (),
    {"energy": "relu"},
    match="energy must be one of",
    jit=None,
    jit_reason="static configuration",
  ),
  Case(
    "DenseAMConfig",
    D.DenseAMConfig,
    (),
    {"dt": 0.0},
    match="dt must be > 0",
    jit=None,
    jit_reason="static configuration",
    id="DenseAMConfig-dt",
  ),
  Case(
    "DenseAMConfig",
    D.DenseAMConfig,
    (),
    {"n": 1},
    match="n .polynomial degree. must be >= 2",
    jit=None,
    jit_reason="static configuration",
    id="DenseAMConfig-n",
  ),
  Case(
    "Parametrization",
    D.Parametrization,
    (),
    {"beta_rule": "log"},
    match="beta_rule must be",
    jit=None,
    jit_reason="static configuration",
  ),
  Case(
    "Parametrization",
    D.Parametrization,
    (),
    {"sigma0": float("nan")},
    match="sigma0 must be a finite number",
    jit=None,
    jit_reason="static configuration",
    id="Parametrization-nan",
  ),
  Case(
    "energy",
    D.energy,
    (XI, X[:, :4], CFG),
    match=(r"x must have shape \[B, N\] with N"),
  ),
  Case(
    "energy",
    D.energy,
    (XI, X.astype(np.int32), CFG),
    error=TypeError,
    match="x must have a floating dtype",
    id="energy-int",
  ),
  Case(
    "energy",
    D.energy,
    (XI, X, CFG, {"alpha": -1.0}),
    match=r"mult\['alpha'\] must be > 0",
    id="energy-mult",
  ),
  Case(
    "energy",
    D.energy,
    (XI, X, "lse"),
    error=TypeError,
    match="cfg must be a DenseAMConfig",
    id="energy-cfg",
  ),
  Case(
    "energy_grad", D.energy_grad, (XI[0], X, CFG), match=("xi must have rank 2")
  ),
  Case(
    "run_dynamics",
    D.run_dynamics,
    (XI, X, CLAMP[:4], CFG),
    match=("clamp must have shape"),
  ),
  Case(
    "run_dynamics",
    D.run_dynamics,
    (XI, X, CLAMP.astype(F32), CFG),
    error=TypeError,
    match="clamp must have a bool dtype",
    id="run_dynamics-clamp-dtype",
  ),
  Case(
    "loss_fn",
    D.loss_fn,
    (XI, BAD_LABEL, CFG),
    match=r"labels in \[0, 2\)",
    jit=("nan"),
  ),
  Case(
    "loss_fn",
    D.loss_fn,
    (XI, GOOD, CFG_DN),
    error=TypeError,
    match="batch.y .clean patterns. must have a floating dtype",
    id="loss_fn-denoise-y",
  ),
  Case(
    "loss_fn",
    D.loss_fn,
    (XI, (X, CLAMP, GOOD.y), CFG),
    error=TypeError,
    match="batch must be a denseam.Batch",
    id="loss_fn-tuple",
  ),
  Case(
    "init_memories",
    D.init_memories,
    (0, 4, 5, P),
    error=TypeError,
    match=("typed PRNG key"),
  ),
  Case(
    "init_memories",
    D.init_memories,
    (KEY, 0, 5, P),
    match=r"k \(number of memories\)",
    id="init_memories-k",
  ),
  Case(
    "make_optimizer",
    D.make_optimizer,
    (P, 4, -0.1),
    match=("base_lr must be >= 0"),
  ),
  Case(
    "make_optimizer",
    D.make_optimizer,
    ("standard", 4, 0.1),
    error=TypeError,
    match="p must be a Parametrization",
    id="make_optimizer-p",
  ),
  Case(
    "optimal_lr",
    D.optimal_lr,
    (np.ones((2, 3)), np.array([0.1, 0.01, 0.2])),
    match="strictly increasing",
    jit=None,
    jit_reason="host-side NumPy fit",
  ),
  Case(
    "optimal_lr",
    D.optimal_lr,
    (np.ones((2, 4)), np.array([0.1, 0.2, 0.4])),
    match=r"losses must have shape \[..., L\]",
    jit=None,
    jit_reason="host-side NumPy fit",
    id="optimal_lr-shape",
  ),
  Case(
    "optimal_lr",
    D.optimal_lr,
    (np.ones(2), np.array([0.0, 0.1])),
    match="finite learning rates > 0",
    jit=None,
    jit_reason="host-side NumPy fit",
    id="optimal_lr-zero",
  ),
  Case(
    "train_grid",
    D.train_grid,
    (KEY, 4, np.array([0.1]), CFG, P, BAD_LABEL),
    {"steps": 2},
    match=r"labels in \[0, 2\)",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "train_grid",
    D.train_grid,
    (KEY, 4, [0.1], CFG, P, GOOD),
    {"steps": 0},
    match="steps must be >= 1",
    jit=None,
    jit_reason=HOST,
    id="train_grid-steps",
  ),
  Case(
    "lr_sweep",
    D.lr_sweep,
    (KEY, 16, np.array([0.1]), CFG, P, GOOD),
    {"steps": 2},
    match="widths must be a non-empty sequence",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "coord_check",
    D.coord_check,
    (KEY, [4], CFG, P, GOOD),
    {"batch_size": 8},
    match="at least batch_size = 8 examples",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "load_digits_task",
    D.load_digits_task,
    ("segment",),
    match="task must be one of",
    jit=None,
    jit_reason="host-side data loader",
  ),
  Case(
    "load_digits_task",
    D.load_digits_task,
    ("denoise",),
    {"corruption": 1.5},
    match="corruption must be <= 1",
    jit=None,
    jit_reason="host-side data loader",
    id="load_digits_task-corruption",
  ),
  Case(
    "parse_setting",
    D.parse_setting,
    ("poly3:mup",),
    {"base_width": 16},
    match="parametrisation must be",
    jit=None,
    jit_reason="host-side: names a static configuration",
  ),
  Case(
    "digits_baselines",
    D.digits_baselines,
    (GOOD, D.Batch(X, CLAMP, np.array([0.0, 1.0, 1.0], F32))),
    match=r"test.y must be \[B\] integer class labels",
    jit=None,
    jit_reason="host-side data baseline",
  ),
  Case(
    "transfer_summary",
    D.transfer_summary,
    (np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.array([0.1, 0.2])),
    match=r"same shape \[W, L, S\] with L = len\(lrs\)",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
  Case(
    "log_drift",
    D.log_drift,
    (np.ones(3), np.ones(2)),
    match=r"must both have shape \[S\]",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
  Case(
    "seed_mean",
    D.seed_mean,
    (np.float64(1.0),),
    match="trailing seed axis",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
  Case(
    "transfer_metrics",
    D.transfer_metrics,
    ({"poly3_standard": {}},),
    match="settings must be named",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
]

EXEMPT = {
  "Batch": (
    "a NamedTuple data container (checked by every function that takes one)"
  )
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(D, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_no_clamped_units_and_no_multipliers_is_the_plain_model():
  """``mult=None`` means alpha = gamma = beta_scale = 1; an all-False clamp
  moves every unit."""
  x_t, e = D.run_dynamics(XI, X, np.zeros(5, bool), CFG)
  x_t1, e1 = D.run_dynamics(XI, X, np.zeros(5, bool), CFG, {})
  np.testing.assert_array_equal(np.asarray(x_t), np.asarray(x_t1))
  assert not np.any(np.asarray(x_t) == X)


def test_fully_clamped_state_does_not_move():
  x_t, e = D.run_dynamics(XI, X, np.ones(5, bool), CFG)
  np.testing.assert_array_equal(np.asarray(x_t), X)
  np.testing.assert_allclose(
    np.asarray(e), np.broadcast_to(np.asarray(e[0]), e.shape)
  )


def test_optimal_lr_single_grid_point():
  assert D.optimal_lr(np.array([[0.3]]), np.array([0.01]))[0] == pytest.approx(
    0.01
  )
