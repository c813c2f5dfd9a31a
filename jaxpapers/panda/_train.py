"""Pure full-batch training for hypergraph node classification (vmappable over
runs).

Grids of runs (splits x seeds x sweep points) train on the shared sweep engine
(``jaxpapers.core.Sweep``): :func:`sweep_fns` gives the per-run functions, and
:func:`make_trainer` wraps them in a vmapped, sharded, chunked trainer.

Optimiser: Adam with *coupled* L2 weight decay as in PyTorch
``Adam(weight_decay=wd)``: ``g <- g + wd * theta`` before Adam
(``optax.chain(add_decayed_weights(wd), adam(lr))``, not AdamW); ``lr`` and
``wd`` are traced, so a sweep over them reuses one compilation. So can be the
model's dropout rate and PhenomNN's ``lam0``/``lam1``
(:data:`TRACED_MODEL_HPARAMS`): given per run, they replace the values the model
was built with, and every configuration that shares the static structure
(layers, hidden width, heads, unrolled steps) runs on one compiled program. The
whole run (``epochs`` steps, each followed by a deterministic evaluation) is one
``lax.scan``; the reported test accuracy is the one at the best-validation epoch
(first maximum).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import optax
from flax import nnx
from jax.typing import ArrayLike

from jaxpapers import core
from jaxpapers import hypergraph as hg
from jaxpapers.core import validation as V

__all__ = [
  "init",
  "train_step",
  "eval_step",
  "sweep_fns",
  "make_trainer",
  "fit",
  "best_val_test",
  "FAST_COMPILE",
  "TRACED_MODEL_HPARAMS",
]

ModelFn = Callable[[nnx.Rngs], nnx.Module]
_ADAM = optax.scale_by_adam()

# Model hyperparameters that may be given per run as traced values (see
# :func:`with_hparams`).
TRACED_MODEL_HPARAMS = ("dropout", "lam0", "lam1")


class _TracedDropout(nnx.Dropout):
  """``nnx.Dropout`` whose ``rate`` may be a traced scalar.

  ``nnx.Dropout`` branches in Python on its rate (``rate == 0`` returns the
  input), which a traced rate cannot do; this one always draws the mask,
  ``m_i ~ Bernoulli(1 - p)``, ``y = m * x / (1 - p)`` (inverted dropout, the
  same computation as ``nnx.Dropout`` for ``0 < p < 1``; ``p = 0`` keeps every
  unit since a uniform draw is always below 1).
  """

  def __call__(self, inputs, *, deterministic=None, rngs=None):
    deterministic = (
      self.deterministic if deterministic is None else deterministic
    )
    if deterministic:
      return inputs
    rngs = self.rngs if rngs is None else rngs
    if isinstance(rngs, nnx.Rngs):
      key = rngs[self.rng_collection]()
    elif isinstance(rngs, nnx.RngStream):
      key = rngs()
    else:
      key = rngs
    if key is None:
      raise ValueError(
        "dropout with deterministic=False needs rngs (an nnx.Rngs or a key)"
      )
    keep = 1.0 - jnp.asarray(self.rate, inputs.dtype)
    shape = [
      1 if d in self.broadcast_dims else s for d, s in enumerate(inputs.shape)
    ]
    mask = jnp.broadcast_to(
      jax.random.bernoulli(key, p=keep, shape=shape), inputs.shape
    )
    return jax.lax.select(mask, inputs / keep, jnp.zeros_like(inputs))


def with_hparams(model: nnx.Module, hparams: dict | None) -> nnx.Module:
  """Sets traced model hyperparameters on a (freshly merged) ``model``, in
  place; returns it.

  ``hparams`` maps names of :data:`TRACED_MODEL_HPARAMS` to scalars (traced or
  not): ``dropout`` becomes the rate of every dropout layer (feature, classifier
  and PANDA's attention dropout, which share the model's ``dropout``),
  ``lam0``/``lam1`` PhenomNN's weights. The model must have been built with a
  non-zero dropout so that every dropout layer exists (PANDA skips its attention
  dropout when the rate is 0). Raises a ValueError naming a hyperparameter that
  no module of the model has.

  Args:
    model: the merged model.
    hparams: a dict from names of :data:`TRACED_MODEL_HPARAMS` to scalars, or
      None (no change).

  Returns:
    ``model`` itself.
  """
  if not hparams:
    return model
  bad = sorted(set(hparams) - set(TRACED_MODEL_HPARAMS))
  if bad:
    raise ValueError(
      f"traced hyperparameters must be among {TRACED_MODEL_HPARAMS}, got {bad}"
    )
  used = set()
  for _, m in nnx.iter_graph(model):
    if "dropout" in hparams and isinstance(m, nnx.Dropout):
      m.__class__ = _TracedDropout  # same fields; only __call__ differs
      m.rate = hparams["dropout"]
      used.add("dropout")
    for k in ("lam0", "lam1"):
      if k in hparams and isinstance(m, nnx.Module) and hasattr(m, k):
        setattr(m, k, hparams[k])
        used.add(k)
  missing = sorted(set(hparams) - used)
  if missing:
    raise ValueError(
      f"traced hyperparameters {missing} are not used by the "
      f"{type(model).__name__} model (dropout needs a model built with "
      "dropout > 0; lam0/lam1 a PhenomNN backbone)"
    )
  return model


def init(
  model_fn: ModelFn, key: jax.Array
) -> tuple[nnx.GraphDef, nnx.State, nnx.State, optax.OptState]:
  """Builds the model from ``key`` and returns ``(graphdef, params, rest,
  opt_state)``.

  Args:
    model_fn: a callable ``rngs -> model`` (e.g. a ``functools.partial`` of :func:`make_model`).
    key: a JAX random key for the parameters.

  Returns:
    ``(graphdef, params, rest, opt_state)``: the model split into its structure,
    its ``nnx.Param`` state and the rest, and the Adam state of ``params``.
  """
  model = model_fn(nnx.Rngs(params=key))
  graphdef, params, rest = nnx.split(model, nnx.Param, ...)
  return graphdef, params, rest, _ADAM.init(params)


def _loss(graphdef, params, rest, data, mask, key, hparams=None):
  model = with_hparams(nnx.merge(graphdef, params, rest), hparams)
  logits = model(data, deterministic=False, rngs=nnx.Rngs(dropout=key))
  ce = optax.softmax_cross_entropy_with_integer_labels(logits, data.y)
  return jnp.sum(ce * mask) / jnp.maximum(mask.sum(), 1)


def train_step(
  graphdef: nnx.GraphDef,
  params: nnx.State,
  rest: nnx.State,
  opt_state: optax.OptState,
  data: hg.HypergraphData,
  mask: jax.Array,
  key: jax.Array,
  lr: ArrayLike,
  wd: ArrayLike,
  hparams: dict[str, ArrayLike] | None = None,
) -> tuple[nnx.State, optax.OptState, jax.Array]:
  """One full-batch Adam step with coupled L2; returns
  ``(params, opt_state, loss)``.

  Args:
    graphdef: the model structure (from :func:`init`).
    params: the model's ``nnx.Param`` state.
    rest: the model's other state.
    opt_state: the Adam state of ``params``.
    data: the hypergraph dataset, n nodes.
    mask: [n] float array, 1 on the training nodes (the loss is their mean
      cross-entropy).
    key: a JAX random key for dropout.
    lr: scalar learning rate (may be traced).
    wd: scalar coupled L2 weight decay (may be traced).
    hparams: traced model hyperparameters (:func:`with_hparams`), or None.

  Returns:
    ``(params, opt_state, loss)``: the updated state and the scalar training
    loss before the update.
  """
  loss, g = jax.value_and_grad(_loss, argnums=1)(
    graphdef, params, rest, data, mask, key, hparams
  )
  g = jax.tree.map(lambda gi, p: gi + wd * p, g, params)
  u, opt_state = _ADAM.update(g, opt_state, params)
  params = jax.tree.map(lambda p, ui: p - lr * ui, params, u)
  return params, opt_state, loss


def eval_step(
  graphdef: nnx.GraphDef,
  params: nnx.State,
  rest: nnx.State,
  data: hg.HypergraphData,
  hparams: dict[str, ArrayLike] | None = None,
) -> jax.Array:
  """Deterministic logits ``[n, K]`` (``hparams`` as in :func:`train_step`).

  Args:
    graphdef: the model structure (from :func:`init`).
    params: the model's ``nnx.Param`` state.
    rest: the model's other state.
    data: the hypergraph dataset, n nodes.
    hparams: traced model hyperparameters (:func:`with_hparams`), or None.

  Returns:
    [n, K] float logits.
  """
  return with_hparams(nnx.merge(graphdef, params, rest), hparams)(
    data, deterministic=True
  )


def _acc(logits, y, mask):
  return jnp.sum((logits.argmax(-1) == y) * mask) / jnp.maximum(mask.sum(), 1)


def sweep_fns(
  model_fn: ModelFn,
) -> tuple[Callable[..., tuple], Callable[..., tuple]]:
  """Per-run ``(init_fn, step_fn)`` of one training run for
  :class:`jaxpapers.core.Sweep`.

  A run's hyperparameters are ``{'lr': [], 'wd': [], 'split': [] int}`` plus any
  of :data:`TRACED_MODEL_HPARAMS` (scalars that replace the built model's
  values); the shared ``data`` is the
  :class:`~jaxpapers.hypergraph.HypergraphData`. The run key is split into a
  parameter key and a dropout key (folded with the epoch). Each step is one
  full-batch epoch followed by a deterministic evaluation; its metrics are
  ``loss``, ``train_acc``, ``val_acc`` and ``test_acc`` (scalars). The state is
  ``(params, rest, opt_state)``.

  Args:
    model_fn: a callable ``rngs -> model`` (e.g. a ``functools.partial`` of :func:`make_model`).

  Returns:
    ``(init_fn, step_fn)``: ``init_fn(hp, key, data) -> state`` and
    ``step_fn(state, hp, key, epoch, data) -> (state, metrics)``.
  """
  if not callable(model_fn):
    raise TypeError(
      "model_fn must be a callable rngs -> model (e.g. a functools.partial of "
      f"panda.make_model), got {type(model_fn).__name__} {model_fn!r}"
    )

  # at trace time: the module structure (no parameters computed)
  def graphdef():
    return nnx.split(
      nnx.eval_shape(lambda: model_fn(nnx.Rngs(params=0))), nnx.Param, ...
    )[0]

  def init_fn(hp, key, data):
    _, params, rest, opt_state = init(model_fn, jax.random.split(key)[0])
    return params, rest, opt_state

  def step_fn(state, hp, key, epoch, data):
    params, rest, opt_state = state
    gd = graphdef()
    tr, va, te = (
      m[hp["split"]].astype(jnp.float32)
      for m in (data.train_mask, data.val_mask, data.test_mask)
    )
    dkey = jax.random.split(key)[1]
    mhp = {k: hp[k] for k in TRACED_MODEL_HPARAMS if k in hp}
    params, opt_state, loss = train_step(
      gd,
      params,
      rest,
      opt_state,
      data,
      tr,
      jax.random.fold_in(dkey, epoch),
      hp["lr"],
      hp["wd"],
      mhp,
    )
    logits = eval_step(gd, params, rest, data, mhp)
    out = dict(
      loss=loss,
      train_acc=_acc(logits, data.y, tr),
      val_acc=_acc(logits, data.y, va),
      test_acc=_acc(logits, data.y, te),
    )
    return (params, rest, opt_state), out

  return init_fn, step_fn


# XLA's CPU backend spends most of a small graph model's wall time compiling;
# these options cut compile time ~3-4x (measured on a tiny PANDA-HGNN) but
# generate slower code, which matters for large graphs or long runs: pass
# fast_compile=False there (benchmarks/panda_perf.py --compare-opt).
FAST_COMPILE = {
  "xla_backend_optimization_level": 0,
  "xla_llvm_disable_expensive_passes": True,
}


def _check_rates(values, name: str, *, allow_zero: bool) -> None:
  """Concrete learning rates (> 0) or weight decays (>= 0), finite; traced
  values pass."""
  if not V.is_concrete(values):
    return
  v = np.asarray(values, np.float64)
  ok = np.isfinite(v) & ((v >= 0) if allow_zero else (v > 0))
  if not ok.all():
    raise ValueError(
      f"{name} must hold finite numbers {'>= 0' if allow_zero else '> 0'}, got "
      f"{v[~ok].tolist()} among {v.tolist()}"
    )


def make_trainer(
  model_fn: ModelFn,
  epochs: int,
  *,
  fast_compile: bool = True,
  chunk_size: int | None = None,
  mesh: jax.sharding.Mesh | None = None,
) -> Callable[..., dict[str, np.ndarray]]:
  """Returns ``run(data, keys[B], lrs[B], wds[B], splits[B], **model_hp) -> dict of [B, epochs]``.

  The B runs train on a :class:`jaxpapers.core.Sweep` (vmapped, sharded over the
  devices, in ``lax.scan`` chunks of ``chunk_size`` epochs, default all);
  ``lr``, ``wd`` and ``split`` are traced, so later calls with the same shapes
  reuse the compiled program. The dict holds ``loss``, ``train_acc``,
  ``val_acc`` and ``test_acc`` per epoch (numpy). ``run`` also takes
  ``checkpoint_dir=`` (an orbax checkpoint per chunk; a rerun resumes there),
  and ``[B]`` arrays of any of :data:`TRACED_MODEL_HPARAMS` by name
  (``dropout=...``), traced too: one compiled program then serves every value
  (the model must be built with ``dropout > 0``). ``fast_compile`` passes
  :data:`FAST_COMPILE` to XLA (only meaningful on CPU). Concrete ``lrs`` must be
  finite and > 0 and ``wds`` finite and >= 0 (``ValueError`` otherwise).

  Args:
    model_fn: a callable ``rngs -> model`` (e.g. a ``functools.partial`` of :func:`make_model`).
    epochs: the number of epochs of every run (> 0).
    fast_compile: pass :data:`FAST_COMPILE` to XLA on CPU.
    chunk_size: epochs per ``lax.scan`` chunk (default all).
    mesh: the device mesh the runs are sharded over (default: all devices).

  Returns:
    The ``run`` function described above.
  """
  if not isinstance(epochs, (int, np.integer)) or epochs <= 0:
    raise ValueError(f"epochs must be a positive int, got {epochs!r}")
  opts = (
    FAST_COMPILE if (fast_compile and jax.default_backend() == "cpu") else None
  )
  engine = core.Sweep(*sweep_fns(model_fn), mesh=mesh, compiler_options=opts)

  def run(data, keys, lrs, wds, splits, *, checkpoint_dir=None, **model_hp):
    bad = sorted(set(model_hp) - set(TRACED_MODEL_HPARAMS))
    if bad:
      raise ValueError(
        f"run: unknown traced hyperparameters {bad}; use {TRACED_MODEL_HPARAMS}"
      )
    _check_rates(lrs, "lrs", allow_zero=False)
    _check_rates(wds, "wds", allow_zero=True)
    hp = {
      "lr": jnp.asarray(lrs, jnp.float32),
      "wd": jnp.asarray(wds, jnp.float32),
      "split": jnp.asarray(splits, jnp.int32),
      **{k: jnp.asarray(v, jnp.float32) for k, v in model_hp.items()},
    }
    res = engine.run(
      hp,
      keys,
      num_steps=int(epochs),
      chunk_size=chunk_size,
      data=data,
      checkpoint_dir=checkpoint_dir,
      show_progress=False,
    )
    return res.history

  return run


def best_val_test(
  hist: Mapping[str, npt.ArrayLike],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Per run: (best val acc, test acc at the first best-val epoch, that epoch).

  Args:
    hist: a history with ``val_acc`` and ``test_acc`` of shape [B, epochs] (as
      ``run`` of :func:`make_trainer` returns).

  Returns:
    ``(val, test, epoch)``, each [B]: the best validation accuracy, the test
    accuracy at its first epoch, and that epoch (int).
  """
  va, te = np.asarray(hist["val_acc"]), np.asarray(hist["test_acc"])
  ep = va.argmax(-1)
  idx = np.arange(va.shape[0])
  return va[idx, ep], te[idx, ep], ep


def fit(
  data: hg.HypergraphData,
  model_fn: ModelFn,
  *,
  epochs: int = 200,
  lr: float = 5e-3,
  weight_decay: float = 5e-4,
  seed: int = 0,
  split: int = 0,
) -> dict[str, object]:
  """Trains one model on one split; returns test accuracy at the best-validation
  epoch.

  Args:
    data: the hypergraph dataset.
    model_fn: a callable ``rngs -> model`` (e.g. a ``functools.partial`` of :func:`make_model`).
    epochs: the number of full-batch epochs.
    lr: the Adam learning rate (> 0).
    weight_decay: the coupled L2 weight decay (>= 0).
    seed: the seed of the parameters and dropout.
    split: index of the split to train on.

  Returns:
    A dict with ``test_acc``, ``val_acc`` (floats), ``best_epoch`` (int),
    ``history`` (per-epoch numpy arrays of ``loss``, ``train_acc``, ``val_acc``,
    ``test_acc``) and ``wall_s``.
  """
  if not 0 <= split < data.num_splits:
    raise ValueError(f"split must be in [0, {data.num_splits}), got {split}")
  core.validate_positive(lr, name="lr")
  core.validate_positive(weight_decay, name="weight_decay", allow_zero=True)
  t0 = time.perf_counter()
  run = make_trainer(model_fn, epochs)
  hist = run(
    data,
    jax.random.key(seed)[None],
    jnp.array([lr]),
    jnp.array([weight_decay]),
    jnp.array([split]),
  )
  hist = jax.tree.map(np.asarray, hist)
  va, te, ep = best_val_test(hist)
  return dict(
    test_acc=float(te[0]),
    val_acc=float(va[0]),
    best_epoch=int(ep[0]),
    history={k: v[0] for k, v in hist.items()},
    wall_s=time.perf_counter() - t0,
  )
