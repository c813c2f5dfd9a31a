"""Bad-input battery for jaxpapers.soda (eager and under jax.jit), plus
degenerate inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxpapers import soda
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

STUDY = (
  "the horizon study's host-side setup: static configuration, "
  "checked before tracing"
)
W = np.ones((3, 2), np.float32)
G = np.full((3, 2), 0.5, np.float32)


def _rngs():
  from flax import nnx

  return nnx.Rngs(0)


def _step(tx, params, grads):
  state = tx.init(params)
  return tx.update(grads, state, params)[0]


def _init_int(w):
  return soda.soda_adamw(1e-2).init({"w": w})


def _update_int_params(w, g):
  tx = soda.soda_adamw(1e-2)
  state = tx.init({"w": w.astype(jnp.float32)})
  return tx.update({"w": g}, state, {"w": w})[0]


def _tree_mismatch(w, g):
  return _step(
    soda.soda(optax.adamw(1e-2, weight_decay=0.0)), {"w": w}, {"v": g}
  )


def _shape_mismatch(w, g):
  return _step(soda.soda_nadam(1e-2), {"w": w}, {"w": g[:2]})


def _lmo_mismatch(w, g):
  return _step(soda.soda_lmo(1e-2, norm="sign"), {"w": w, "b": w[0]}, {"w": g})


CASES = [
  Case(
    "soda.soda_adamw",
    _init_int,
    (np.ones(3, np.int32),),
    error=TypeError,
    match=r"params\['w'\] has dtype int32; SODA needs floating-point",
    id="adamw-int-init",
  ),
  Case(
    "soda.soda_adamw",
    _update_int_params,
    (np.ones(3, np.int32), np.ones(3, np.float32)),
    error=TypeError,
    match=r"params\['w'\] has dtype int32",
    id="adamw-int-update",
  ),
  Case(
    "soda.soda",
    _tree_mismatch,
    (W, G),
    match="updates .gradients. and params must have the same pytree structure",
    id="soda-tree-mismatch",
  ),
  Case(
    "soda.soda",
    lambda: soda.soda("adam"),
    error=TypeError,
    match="base_optimizer. must be an optax.GradientTransformation",
    id="soda-base-type",
  ),
  Case(
    "soda.soda",
    lambda: soda.soda(optax.sgd(0.1), anchor="last"),
    match="anchor. must be one of",
    id="soda-anchor",
  ),
  Case(
    "soda.soda_nadam",
    _shape_mismatch,
    (W, G),
    match=(
      r"updates\['w'\] has shape \(2, 2\) but the parameter has shape \(3, 2\)"
    ),
    id="nadam-shape-mismatch",
  ),
  Case(
    "soda.soda_lion",
    lambda: soda.soda_lion(float("nan")),
    match="learning_rate. must be a finite number >= 0",
    id="lion-nan-lr",
  ),
  Case(
    "soda.soda_muon",
    lambda: soda.soda_muon("fast"),
    error=TypeError,
    match="learning_rate. must be a float or a schedule",
    id="muon-str-lr",
  ),
  Case(
    "soda.moda",
    lambda: soda.moda(-1.0),
    match="learning_rate. must be a finite number",
    id="moda-negative-lr",
  ),
  Case(
    "soda.soda_lmo",
    lambda: soda.soda_lmo(1e-2, primal_extrapolation=2.0),
    match="primal_extrapolation. must be in .0, 1.",
    id="lmo-extrapolation",
  ),
  Case(
    "soda.soda_lmo",
    _lmo_mismatch,
    (W, G),
    match="same pytree structure",
    id=("lmo-tree-mismatch"),
  ),
  Case(
    "soda.soda_eval_params",
    lambda p: soda.soda_eval_params(optax.EmptyState(), p),
    (W,),
    match="requires an optimizer state containing a SodaState",
    id="eval-params",
  ),
  Case(
    "soda.lmo_direction",
    soda.lmo_direction,
    (np.ones((3, 2), np.int32), "spectral"),
    error=TypeError,
    match="g. must be a floating-point gradient",
    id="lmo-int",
  ),
  Case(
    "soda.lmo_direction",
    soda.lmo_direction,
    (G, "frobenius"),
    match="norm. must be one of",
    id="lmo-norm",
  ),
  Case(
    "soda.lmo_direction",
    soda.lmo_direction,
    (np.ones(3, np.float32), "spectral"),
    match="needs a leaf with >= 2 dimensions",
    id="lmo-vector-spectral",
  ),
  Case(
    "soda.LmoDimensionNumbers",
    soda.lmo_direction,
    (G, "spectral"),
    kwargs=dict(
      dimension_numbers=soda.LmoDimensionNumbers(
        reduction_axis=0, output_axis=3
      )
    ),
    match="axis 3 of .* is out of range",
    id="dimension-numbers-range",
  ),
  Case(
    "soda.LmoDimensionNumbers",
    soda.lmo_direction,
    (G, "spectral"),
    kwargs=dict(
      dimension_numbers=soda.LmoDimensionNumbers(
        reduction_axis=0, output_axis=0
      )
    ),
    match="reduction and output axes overlap",
    id="dimension-numbers-overlap",
  ),
  Case(
    "soda.newton_schulz",
    soda.newton_schulz,
    (np.ones(3, np.float32),),
    match="needs a matrix",
    id="ns-vector",
  ),
  Case(
    "soda.newton_schulz",
    soda.newton_schulz,
    (np.ones((2, 2), np.int32),),
    error=TypeError,
    match="needs a floating-point x",
    id="ns-int",
  ),
  Case(
    "soda.scale_by_lmo",
    lambda: soda.scale_by_lmo("l2"),
    match="norm. must be one of",
    id="scale-by-lmo-norm",
  ),
  Case(
    "soda.scale_by_lmo",
    lambda: soda.scale_by_lmo(ns_steps=0),
    match="ns_steps. must be a positive int",
    id="scale-by-lmo-steps",
  ),
  Case(
    "soda.scale_by_optimistic_momentum",
    lambda: soda.scale_by_optimistic_momentum(float("nan")),
    match="dual_momentum1. must be in .0, 1.",
    id="momentum-nan",
  ),
  Case(
    "soda.scale_by_optimistic_momentum",
    lambda: soda.scale_by_optimistic_momentum(0.0, init="zeros"),
    match="dual_momentum1. must be > 0 with init='zeros'",
    id="momentum-zeros-alpha0",
  ),
  Case(
    "soda.scale_by_optimistic_momentum",
    lambda: soda.scale_by_optimistic_momentum(init="ones"),
    match="init. must be 'grad'",
    id="momentum-init",
  ),
  *(
    Case(
      name,
      fn,
      args,
      kwargs,
      error=err,
      match=match,
      jit=None,
      jit_reason=STUDY,
      id=cid,
    )
    for name, fn, args, kwargs, err, match, cid in (
      (
        "wsd_schedule",
        soda.wsd_schedule,
        (1e-3, 100, 1.5, 0.3),
        {},
        ValueError,
        r"warmup_frac must be a fraction in \[0, 1\]",
        "wsd_schedule",
      ),
      (
        "horizon_optimizer",
        soda.horizon_optimizer,
        ("muon", {"lr": 1e-3, "total": 10.0}),
        dict(b1=0.9, b2=0.99, warmup_frac=0.0, cooldown_frac=0.3),
        ValueError,
        "family must be one of .*need hidden_mask",
        "horizon_optimizer",
      ),
      (
        "DigitsMLP",
        soda.DigitsMLP,
        (0,),
        {"rngs": _rngs()},
        ValueError,
        "hidden must be an int >= 1",
        "DigitsMLP",
      ),
      (
        "GPT",
        soda.GPT,
        (),
        {"d": 10, "heads": 4, "rngs": _rngs()},
        ValueError,
        "d must be a multiple of heads",
        "GPT",
      ),
      (
        "digits_task",
        soda.digits_task,
        (),
        {"num_train": 1797},
        ValueError,
        "num_train must leave test rows",
        "digits_task",
      ),
      (
        "lm_task",
        soda.lm_task,
        (),
        dict(
          d_model=16,
          num_layers=1,
          num_heads=2,
          context=16,
          batch_size=4,
          val_windows=8,
          eval_batch=3,
        ),
        ValueError,
        r"eval_batch \(3\) must divide val_windows \(8\)",
        "lm_task",
      ),
      (
        "read_token_shard",
        soda.read_token_shard,
        (__file__,),
        {},
        ValueError,
        "not a token shard",
        "read_token_shard",
      ),
      (
        "load_token_shards",
        soda.load_token_shards,
        (".", "train", -1),
        {},
        ValueError,
        "max_tokens must be an int >= 0",
        "load_token_shards",
      ),
      (
        "grid_mesh",
        soda.grid_mesh,
        (3, -1, 8),
        {},
        ValueError,
        "data_parallel must be an int >= 0",
        "grid_mesh",
      ),
      (
        "horizon_hparams",
        soda.horizon_hparams,
        ([("muon", {"lr": 0.1})], [0], 0, 10, ("adamw",)),
        {},
        ValueError,
        "must be in families",
        "horizon_hparams",
      ),
      (
        "horizon_sweep",
        soda.horizon_sweep,
        ({},),
        dict(
          families=("sgd",), b1=0.9, b2=0.99, warmup_frac=0.0, cooldown_frac=0.3
        ),
        ValueError,
        "families must be a non-empty subset",
        "horizon_sweep",
      ),
    )
  ),
]

_ROWS = [
  {
    "horizon": 10,
    "family": "adamw",
    "lr": 0.1,
    "wd": 0.0,
    "metric": 1.0,
    "metric_std": 0,
  }
]
HOST = "reads host-side result rows (JSON), never traced"
CASES += [
  Case(
    "soda.best_run",
    lambda: soda.best_run([{"horizon": 10, "family": "adamw"}], 10, "adamw"),
    match=(
      r"rows\[0\] must have the keys \['horizon', 'family', 'metric'\], "
      r"lacks \['metric'\]"
    ),
    jit=None,
    jit_reason=HOST,
    id="best-run-row-keys",
  ),
  Case(
    "soda.horizon_gaps",
    lambda: soda.horizon_gaps(_ROWS, (), "adamw", "soda_adamw"),
    match="horizons must be a non-empty sequence of ints, got ()",
    jit=None,
    jit_reason=HOST,
    id="horizon-gaps-horizons",
  ),
  Case(
    "soda.wd_transfer",
    lambda: soda.wd_transfer({"rows": _ROWS}, (10,), "adamw"),
    error=TypeError,
    match="rows must be a sequence of row mappings, got dict",
    jit=None,
    jit_reason=HOST,
    id="wd-transfer-rows",
  ),
  Case(
    "soda.grid_edges",
    lambda: soda.grid_edges(_ROWS, (10.0,), "adamw", "soda_adamw"),
    match=r"horizons must be a non-empty sequence of ints, got \(10.0,\)",
    jit=None,
    jit_reason=HOST,
    id="grid-edges-horizons",
  ),
]

EXEMPT = {
  "gpt_hidden_mask": "a pure pytree predicate: every pytree is valid input",
  "mlp_hidden_mask": "a pure pytree predicate: every pytree is valid input",
  "OptimisticMomentumState": "a state container created by init",
  "SodaLmoState": "a state container created by init",
  "SodaState": "a state container created by init",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(soda, CASES, EXEMPT)


def test_nan_gradients_give_nan_updates_not_zero():
  """A NaN gradient propagates (never a silent zero update), eagerly and under
  jit."""
  tx = soda.soda_adamw(1e-2)
  params = {"w": jnp.ones(3)}
  grads = {"w": jnp.array([jnp.nan, 0.0, 1.0])}
  for fn in (_step, jax.jit(_step, static_argnums=0)):
    u = fn(tx, params, grads)["w"]
    assert np.isnan(np.asarray(u)[0]) and np.all(np.isfinite(np.asarray(u)[1:]))


def test_first_step_equals_base_step():
  """Degenerate k = 0: the anchored decay is zero, so SODA's first step is the
  base step."""
  params, grads = {"w": jnp.asarray(W)}, {"w": jnp.asarray(G)}
  u = _step(soda.soda_adamw(1e-2), params, grads)["w"]
  ref = _step(optax.adamw(1e-2, weight_decay=0.0), params, grads)["w"]
  np.testing.assert_allclose(u, ref, rtol=1e-6)
