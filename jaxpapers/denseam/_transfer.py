"""Learning-rate transfer across widths: vmapped sweeps, the optimum, and
coordinate checks.

The procedure (μTransfer, Yang et al. 2022, applied to the DenseAM as in arXiv
2605.10164): for each number of memories K train the same model under one
parametrisation over a log grid of base learning rates ``eta`` (and seeds), read
off ``eta*(K)`` as the minimiser of the final training loss, and ask whether
``eta*`` stays put as K grows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxpapers.core import validation as V
from jaxpapers.core.sweep import Sweep
from jaxpapers.denseam._model import (
  Batch,
  DenseAMConfig,
  _check_config,
  _dynamics,
  _energy_grad,
  _g,
  loss_fn,
)
from jaxpapers.denseam._param import Parametrization

_HP_KEYS = ("lr", "eps", "alpha", "gamma", "beta_scale", "init_std")


def _check_widths(widths: Any) -> tuple[int, ...]:
  if (
    isinstance(widths, (int, np.integer))
    or not isinstance(widths, Sequence)
    or not widths
  ):
    raise ValueError(
      f"widths must be a non-empty sequence of ints >= 1, got {widths!r}"
    )
  return tuple(V.check_int(k, "widths[i]", min_value=1) for k in widths)


def _check_lrs(lrs: Any) -> np.ndarray:
  V.check_array(lrs, "lrs", ndim=1, dtype="float", nonempty=True)
  lrs = np.asarray(lrs, np.float64)
  if not np.all(np.isfinite(lrs) & (lrs > 0)):
    raise ValueError(f"lrs must be finite learning rates > 0, got {lrs}")
  return lrs


def _check_data(data: Any, name: str) -> Batch:
  if not isinstance(data, Batch):
    raise TypeError(
      f"{name} must be a denseam.Batch (see load_digits_task), got {type(data)}"
    )
  return data


def _check_key(key: Any) -> jax.Array:
  if not (
    isinstance(key, jax.Array)
    and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError("key must be a typed PRNG key from jax.random.key(seed)")
  if key.shape != ():
    raise ValueError(
      f"key must be a single key (shape ()), got shape {key.shape}"
    )
  return key


def _optimizer(hp):
  return optax.inject_hyperparams(optax.adam)(
    learning_rate=hp["lr"], eps=hp["eps"]
  )


def _mult(hp):
  return {
    "alpha": hp["alpha"],
    "gamma": hp["gamma"],
    "beta_scale": hp["beta_scale"],
  }


@functools.lru_cache(maxsize=64)
def _grid_sweep(cfg: DenseAMConfig, k: int, batch_size: int, mesh) -> Sweep:
  """One :class:`Sweep` (and its compiled programs) per static setting."""

  def init_fn(hp, key, data):
    n_vis = data["train"].x0.shape[1]
    xi = (
      hp["init_std"]
      / math.sqrt(n_vis)
      * jax.random.normal(key, (k, n_vis), jnp.float32)
    )
    return xi, _optimizer(hp).init(xi)

  def step_fn(state, hp, key, step, data):
    xi, opt = state
    train = data["train"]
    idx = jax.random.randint(
      jax.random.fold_in(key, step), (batch_size,), 0, train.x0.shape[0]
    )
    batch = Batch(train.x0[idx], train.clamp, train.y[idx])
    (loss, _), grad = jax.value_and_grad(loss_fn, has_aux=True)(
      xi, batch, cfg, _mult(hp)
    )
    upd, opt = _optimizer(hp).update(grad, opt, xi)
    return (optax.apply_updates(xi, upd), opt), {"loss": loss}

  def eval_fn(state, hp, key, data):
    xi = state[0]
    out = {}
    for split in ("train", "test"):
      loss, aux = loss_fn(xi, data[split], cfg, _mult(hp))
      out[f"{split}_loss"] = loss
      out[f"{split}_metric"] = aux[
        "accuracy" if cfg.task == "classify" else "bit_error"
      ]
    return out

  return Sweep(init_fn, step_fn, eval_fn, mesh=mesh)


def train_grid(
  key: jax.Array,
  k: int,
  lrs: Any,
  cfg: DenseAMConfig,
  p: Parametrization,
  train: Batch,
  *,
  steps: int,
  seeds: int = 1,
  batch_size: int = 64,
  test: Batch | None = None,
  mesh: Any = None,
  chunk_size: int | None = None,
  checkpoint_dir: Any = None,
  show_progress: bool = False,
) -> dict[str, np.ndarray]:
  """Trains ``len(lrs) x seeds`` DenseAMs with K memories as one vmapped,
  sharded program.

  Each run: ``Xi`` from :func:`init_memories`'s law, Adam with the width-scaled
  learning rate ``eta (K/K0)^-c`` and epsilon ``eps0 (K/K0)^-d`` (see
  :func:`make_optimizer`), minibatches of ``batch_size`` drawn with
  ``fold_in(seed_key, step)``. Runs with the same seed share their initial
  ``Xi`` and batches (common random numbers across learning rates). Runs on
  ``jaxpapers.core.Sweep`` (sharded over the devices, checkpointed per chunk
  when ``checkpoint_dir`` is given).

  Args:
    key: typed PRNG key; seed ``s`` uses ``fold_in(key, s)``.
    k: number of memories K.
    lrs: ``[L]`` base learning rates ``eta`` (> 0).
    cfg: the model configuration.
    p: the parametrisation (gives every width-dependent multiplier at K).
    train: training :class:`Batch` (the full training set).
    steps: Adam steps per run. seeds: seeds per learning rate. batch_size:
      minibatch size.
    test: held-out :class:`Batch` (default: ``train``).
    mesh: a runs mesh (default: :func:`jaxpapers.core.sweep.runs_mesh`).
    chunk_size: steps per compiled chunk and checkpoint (default: ``steps``).
    checkpoint_dir: where the sweep checkpoints (resumes from it).
    show_progress: show a progress bar.

  Returns:
    ``{'final_loss', 'train_metric', 'test_loss', 'test_metric'}`` each
    ``[L, S]`` (full training-set loss after the last step; accuracy for
    classification, bit error for denoising) and ``'history'`` ``[L, S, steps]``
    (minibatch losses). Diverged runs give NaN (never a finite number).
  """
  key = _check_key(key)
  cfg = _check_config(cfg)
  if not isinstance(p, Parametrization):
    raise TypeError(f"p must be a Parametrization, got {type(p).__name__}")
  k = V.check_int(k, "k (number of memories)", min_value=1)
  lrs = _check_lrs(lrs)
  steps = V.check_int(steps, "steps", min_value=1)
  seeds = V.check_int(seeds, "seeds", min_value=1)
  batch_size = V.check_int(batch_size, "batch_size", min_value=1)
  train = _check_data(train, "train")
  test = train if test is None else _check_data(test, "test")
  # Shapes and labels are checked once, eagerly, on the data (the sweep itself
  # is traced).
  for split in (train, test):
    loss_fn(jnp.zeros((1, np.shape(split.x0)[1])), split, cfg)
  m = p.multipliers(k)
  n_l = len(lrs)
  per_run = {
    "lr": lrs * m["lr_scale"],
    "eps": np.full(n_l, p.eps0 * m["eps_scale"]),
    "alpha": np.full(n_l, m["alpha"]),
    "gamma": np.full(n_l, m["gamma"]),
    "beta_scale": np.full(n_l, m["beta_scale"]),
    "init_std": np.full(n_l, m["init_std"]),
  }
  # [L*S]
  hp = {
    name: np.repeat(v, seeds).astype(np.float32) for name, v in per_run.items()
  }
  seed_keys = jnp.stack([jax.random.fold_in(key, s) for s in range(seeds)])
  keys = jnp.tile(seed_keys, n_l)  # run i = (lr i // S, seed i % S)
  data = {
    "train": Batch(*(jnp.asarray(a) for a in train)),
    "test": Batch(*(jnp.asarray(a) for a in test)),
  }
  res = _grid_sweep(cfg, k, batch_size, mesh).run(
    hp,
    keys,
    num_steps=steps,
    chunk_size=chunk_size,
    data=data,
    checkpoint_dir=checkpoint_dir,
    desc=f"K={k}",
    show_progress=show_progress,
  )
  ev = {
    name: np.asarray(v)[:, -1].reshape(n_l, seeds)
    for name, v in res.evals.items()
  }
  return {
    "final_loss": ev["train_loss"],
    "train_metric": ev["train_metric"],
    "test_loss": ev["test_loss"],
    "test_metric": ev["test_metric"],
    "history": np.asarray(res.history["loss"]).reshape(n_l, seeds, steps),
  }


def lr_sweep(
  key: jax.Array,
  widths: Sequence[int],
  lrs: Any,
  cfg: DenseAMConfig,
  p: Parametrization,
  train: Batch,
  *,
  steps: int,
  seeds: int = 1,
  batch_size: int = 64,
  mesh: Any = None,
) -> np.ndarray:
  """Final training loss over a grid of widths x learning rates x seeds.

  One :func:`train_grid` per width (one compilation per width; the learning
  rates and seeds are a vmapped runs axis). Width ``j`` uses
  ``fold_in(key, K_j)``.

  Args:
    key: typed PRNG key.
    widths: numbers of memories K.
    lrs: ``[L]`` base learning rates.
    cfg, p: model configuration and parametrisation.
    train: the training :class:`Batch`.
    steps, seeds, batch_size, mesh: as in :func:`train_grid`.

  Returns:
    ``[len(widths), L, seeds]`` full-training-set losses after ``steps`` steps
    (NaN where a run diverged).
  """
  widths = _check_widths(widths)
  key = _check_key(key)
  out = [
    train_grid(
      jax.random.fold_in(key, kk),
      kk,
      lrs,
      cfg,
      p,
      train,
      steps=steps,
      seeds=seeds,
      batch_size=batch_size,
      mesh=mesh,
    )["final_loss"]
    for kk in widths
  ]
  return np.stack(out)


def optimal_lr(losses: Any, lrs: Any) -> np.ndarray:
  """The loss-minimising learning rate, refined by a parabola in ``log eta``.

  At the grid minimum ``i`` (non-finite losses count as +inf) with both
  neighbours finite, the parabola through ``(log eta_j, loss_j)``,
  ``j = i-1, i, i+1``, has its vertex at

    ``log eta* = x_i - 1/2 [(x_i-x_{i-1})^2 (l_i-l_{i+1}) - (x_i-x_{i+1})^2 (l_i-l_{i-1})]
    / [(x_i-x_{i-1}) (l_i-l_{i+1}) - (x_i-x_{i+1}) (l_i-l_{i-1})]``,

  which lies within ``[x_{i-1}, x_{i+1}]`` for a convex triple. At the grid
  edge, or with a non-finite neighbour, the grid value ``eta_i`` is returned.

  Args:
    losses: ``[..., L]`` losses (e.g. seed means) on the grid ``lrs``.
    lrs: ``[L]`` increasing learning rates (> 0), ``L >= 1``.

  Returns:
    ``[...]`` optimal learning rates (NaN where every loss is non-finite).
  """
  lrs = _check_lrs(lrs)
  if np.any(np.diff(lrs) <= 0):
    raise ValueError(f"lrs must be strictly increasing, got {lrs}")
  losses = np.asarray(losses, np.float64)
  if losses.ndim < 1 or losses.shape[-1] != len(lrs):
    raise ValueError(
      f"losses must have shape [..., L] with L = len(lrs) = {len(lrs)}, "
      f"got {losses.shape}"
    )
  x = np.log(lrs)
  flat = np.where(np.isfinite(losses), losses, np.inf).reshape(-1, len(lrs))
  out = np.full(flat.shape[0], np.nan)
  for r, row in enumerate(flat):
    if not np.isfinite(row).any():
      continue
    i = int(np.argmin(row))
    out[r] = x[i]
    if (
      0 < i < len(x) - 1 and np.isfinite(row[i - 1]) and np.isfinite(row[i + 1])
    ):
      a, b = x[i] - x[i - 1], x[i] - x[i + 1]
      fa, fb = row[i] - row[i + 1], row[i] - row[i - 1]
      den = a * fa - b * fb
      if den != 0:
        v = x[i] - 0.5 * (a * a * fa - b * b * fb) / den
        out[r] = float(np.clip(v, x[i - 1], x[i + 1]))
  return np.exp(out).reshape(losses.shape[:-1])


@functools.lru_cache(maxsize=64)
def _coord_program(cfg: DenseAMConfig, k: int, steps: int):
  def run(xi, batch, hp):
    opt = _optimizer(hp)
    mult = _mult(hp)
    free = ~jnp.broadcast_to(batch.clamp, batch.x0.shape)
    n_free = jnp.maximum(jnp.sum(free), 1)

    def rms_free(z):
      return jnp.sqrt(jnp.sum(jnp.where(free, z * z, 0.0)) / n_free)

    gx0 = _g(batch.x0, cfg.input_norm)

    def body(carry, _):
      xi, state = carry
      h = hp["alpha"] * gx0 @ xi.T
      x_t, _ = _dynamics(
        xi,
        batch.x0,
        batch.clamp,
        cfg,
        hp["alpha"],
        hp["gamma"],
        hp["beta_scale"],
      )

      # The first Euler step, x_1 = P(x_0 - dt grad E(x_0)).
      def first_step(w):
        grad_e = _energy_grad(
          w, batch.x0, cfg, hp["alpha"], hp["gamma"], hp["beta_scale"]
        )
        return jnp.where(batch.clamp, batch.x0, batch.x0 - cfg.dt * grad_e)

      x_1 = first_step(xi)
      grad = jax.grad(lambda w: loss_fn(w, batch, cfg, mult)[0])(xi)
      upd, state = opt.update(grad, state, xi)
      xi_new = optax.apply_updates(xi, upd)
      rec = {
        "h_rms": jnp.sqrt(jnp.mean(h * h)),
        "dx_rms": rms_free(x_1 - batch.x0),
        "xT_rms": rms_free(x_t),
        "dh_rms": jnp.sqrt(
          jnp.mean((hp["alpha"] * gx0 @ (xi_new - xi).T) ** 2)
        ),
        "ddx_rms": rms_free(first_step(xi_new) - x_1),
      }
      return (xi_new, state), rec

    _, recs = jax.lax.scan(body, (xi, opt.init(xi)), None, length=steps)
    return recs

  return jax.jit(run)


def coord_check(
  key: jax.Array,
  widths: Sequence[int],
  cfg: DenseAMConfig,
  p: Parametrization,
  data: Batch,
  *,
  steps: int = 10,
  lr: float = 1e-2,
  batch_size: int = 64,
) -> dict[str, np.ndarray]:
  """Coordinate check (as ``mup.coord_check``): activation sizes over the first
  Adam steps.

  For each width, Adam (learning rate ``lr (K/K0)^-c``) trains on the first
  ``batch_size`` examples of ``data`` for ``steps`` steps; before each update it
  records

  * ``h_rms``: RMS of the pre-activations ``h = alpha Xi g(x_0)``;
  * ``dx_rms``: RMS over free units of the first Euler increment ``x_1 - x_0``;
  * ``xT_rms``: RMS over free units of ``x_T``;
  * ``dh_rms``: RMS of ``alpha (Delta Xi) g(x_0)``, the update's effect on
    pre-activations;
  * ``ddx_rms``: RMS over free units of the change of ``x_1 - x_0`` caused by
    the update, the update's effect through the down map (up and down map
    together).

  Under a parametrisation that is right for the width, every curve is flat in K.

  Args:
    key: typed PRNG key (the init of width K uses ``fold_in(key, K)``).
    widths: numbers of memories K.
    cfg, p: model configuration and parametrisation.
    data: a :class:`Batch` with at least ``batch_size`` examples.
    steps: Adam steps recorded. lr: base learning rate ``eta``. batch_size:
      examples used.

  Returns:
    ``{'h_rms', 'dx_rms', 'xT_rms', 'dh_rms', 'ddx_rms'}`` each
    ``[len(widths), steps]`` and ``'widths'`` ``[len(widths)]``.
  """
  key = _check_key(key)
  widths = _check_widths(widths)
  cfg = _check_config(cfg)
  if not isinstance(p, Parametrization):
    raise TypeError(f"p must be a Parametrization, got {type(p).__name__}")
  data = _check_data(data, "data")
  steps = V.check_int(steps, "steps", min_value=1)
  lr = V.check_float(lr, "lr", min_value=0.0)
  batch_size = V.check_int(batch_size, "batch_size", min_value=1)
  if np.shape(data.x0)[0] < batch_size:
    raise ValueError(
      f"data must hold at least batch_size = {batch_size} examples"
    )
  batch = Batch(
    jnp.asarray(data.x0[:batch_size]),
    jnp.asarray(data.clamp),
    jnp.asarray(data.y[:batch_size]),
  )
  loss_fn(
    jnp.zeros((1, batch.x0.shape[1])),
    Batch(batch.x0[:1], batch.clamp, batch.y[:1]),
    cfg,
  )
  out = {
    name: [] for name in ("h_rms", "dx_rms", "xT_rms", "dh_rms", "ddx_rms")
  }
  for kk in widths:
    m = p.multipliers(kk)
    hp = {
      "lr": jnp.float32(lr * m["lr_scale"]),
      "eps": jnp.float32(p.eps0 * m["eps_scale"]),
      "alpha": jnp.float32(m["alpha"]),
      "gamma": jnp.float32(m["gamma"]),
      "beta_scale": jnp.float32(m["beta_scale"]),
    }
    n_vis = batch.x0.shape[1]
    xi = (
      m["init_std"]
      / math.sqrt(n_vis)
      * jax.random.normal(jax.random.fold_in(key, kk), (kk, n_vis), jnp.float32)
    )
    recs = _coord_program(cfg, kk, steps)(xi, batch, hp)
    for name in out:
      out[name].append(np.asarray(recs[name]))
  res = {name: np.stack(v) for name, v in out.items()}
  res["widths"] = np.asarray(widths)
  return res
