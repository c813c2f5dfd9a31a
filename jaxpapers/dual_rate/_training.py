"""Training objectives: the stale-context dual-rate loss [reconstruction] and
the standard loss.

Stale-context training (spec §3.3, a reconstruction: the paper's objective is
not public):

1. sample x, c, t ~ U(0, 1) and a staleness k in {0, ..., K_max - 1}: k = 0 with
   probability p_fresh, otherwise uniform on {1, ..., K_max - 1};
2. tau = min(1, t + k / N): the features are k sampler-grid steps noisier than
   z_t;
3. draw (z_tau, z_t) on one trajectory:
   (a) 'ancestral' (default): z_t ~ q(z_t | z_tau, x) (the posterior with (t, s) -> (tau, t));
   (b) 'ddim': one eps for both, z_tau = a_tau x + s_tau eps, z_t = a_t x + s_t eps. This has a
       shortcut: for tau > t the pair determines x exactly,
       x = (s_tau z_t - s_t z_tau) / (a_t s_tau - a_tau s_t), and the encoder's features can
       carry z_tau. On digits (3000 steps) the stale examples' training MSE fell to a quarter of
       the fresh ones' (0.026 vs 0.105; with 'ancestral' 0.101 vs 0.100) and sampling quality
       was far worse (FD-proxy 19.3 vs 10.6 at 16 steps with fresh features; see
       experiments/dual_rate/README.md). Kept for comparison;
   (c) 'rollout': like (a), but for a fraction ``rollout_frac`` of the batch z_t
       is produced by running the light denoiser from z_tau for k DDIM steps
       with h = sg(E(z_tau, tau)), under stop-gradient (removes the exposure
       bias of (a) and (b)). The rest of the batch uses the ancestral draw of
       (a), never the shared-eps pair of (b), so it has no shortcut;
4. L = w(lambda_t) || D_psi(z_t, t, E_phi(z_tau, tau), tau) - x ||^2, gradients into E and D.

Control: ``use_features=False`` trains the light denoiser alone with
constant (zero) context features and tau = t: the encoder is never called and
gets no gradient. It isolates what the encoder's features add at the light
denoiser's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.typing import ArrayLike

from jaxpapers.dual_rate._networks import DualRateModel, SingleNetwork
from jaxpapers.dual_rate._schedule import (
  NoiseSchedule,
  ddim_step,
  loss_weight,
  output_to_x,
  posterior,
  q_sample,
)

COUPLINGS = ("ddim", "ancestral", "rollout")

PyTree = Any  # a nested structure of arrays (e.g. an nnx.State)


def _per_example_mse(a, b):
  return jnp.mean((a - b) ** 2, axis=tuple(range(1, a.ndim)))


def _check_static(**kw):
  for name, v in kw.items():
    if name in ("p_fresh", "rollout_frac"):
      if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not 0.0 <= v <= 1.0
      ):
        raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
    elif isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")


def sample_staleness(
  key: jax.Array, batch: int, *, max_staleness: int, p_fresh: float
) -> jax.Array:
  """Staleness k: 0 with probability p_fresh, else uniform on
  {1..max_staleness-1}.

  Static arguments, checked always: batch and max_staleness ints >= 1, p_fresh
  in [0, 1].

  Args:
    key: PRNG key.
    batch: B, the number of draws.
    max_staleness: K_max; with K_max = 1 every k is 0.
    p_fresh: P(k = 0).

  Returns:
    [B] int32 array of staleness values in {0, ..., K_max - 1}.
  """
  _check_static(batch=batch, max_staleness=max_staleness, p_fresh=p_fresh)
  if max_staleness <= 1:
    return jnp.zeros((batch,), jnp.int32)
  k1, k2 = jax.random.split(key)
  k = jax.random.randint(k1, (batch,), 1, max_staleness)
  return jnp.where(jax.random.bernoulli(k2, p_fresh, (batch,)), 0, k).astype(
    jnp.int32
  )


def dual_rate_loss(
  model: DualRateModel,
  x: jax.Array,
  cond: ArrayLike | None,
  key: jax.Array,
  *,
  schedule: NoiseSchedule = NoiseSchedule(),
  num_grid_steps: int | Sequence[int] = 16,
  max_staleness: int = 4,
  p_fresh: float = 0.5,
  coupling: str = "ancestral",
  rollout_frac: float = 0.2,
  weighting: str = "v",
  use_features: bool = True,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """Stale-context loss of spec §3.3 [reconstruction].

  Args:
    model: DualRateModel.
    x: [B, H, W, C] float data.
    cond: [B] int class labels, or None.
    key: typed PRNG key.
    schedule: noise schedule.
    num_grid_steps: N of the sampler grid that sets tau = t + k/N, or a sequence
      of N values (one drawn per example) to cover several sampler step counts.
    max_staleness: K_max; k in {0..K_max-1}.
    p_fresh: P(k = 0).
    coupling: 'ddim' | 'ancestral' | 'rollout'.
    rollout_frac: batch fraction rolled out.
    weighting: 'v' | 'x' | 'eps' loss weight w(lambda_t) on ||x_hat - x||^2.
    use_features: False trains the no-feature control: D(z_t, t, h = 0, tau = t), no encoder
      call (staleness and coupling are then irrelevant: k = 0 for every example).

  Returns:
    ``(loss, aux)``: the weighted loss, a float scalar, and a dict of float
    scalars 'mse_fresh' and 'mse_stale' (unweighted MSE of the examples with k =
    0 and k > 0) and 'mean_k'.
  """
  if not isinstance(model, DualRateModel):
    raise TypeError(
      f"model must be a DualRateModel, got {type(model).__name__}"
    )
  if coupling not in COUPLINGS:
    raise ValueError(f"coupling must be one of {COUPLINGS}, got {coupling!r}")
  if x.ndim != 4:
    raise ValueError(f"x must be [B, H, W, C], got {x.shape}")
  grids = (
    tuple(num_grid_steps)
    if isinstance(num_grid_steps, Sequence)
    else (num_grid_steps,)
  )
  if max_staleness < 1 or not grids or min(grids) < 1:
    raise ValueError(
      f"max_staleness and num_grid_steps must be >= 1, got {max_staleness}, "
      f"{num_grid_steps}"
    )
  _check_static(
    max_staleness=max_staleness, p_fresh=p_fresh, rollout_frac=rollout_frac
  )
  if not isinstance(use_features, bool):
    raise TypeError(f"use_features must be a bool, got {use_features!r}")
  loss_weight(0.0, weighting)  # checks the weighting name
  if not use_features:
    max_staleness, p_fresh = 1, 1.0
  b = x.shape[0]
  k_t, k_k, k_eps, k_post, k_sel = jax.random.split(key, 5)
  t = jax.random.uniform(k_t, (b,))
  k = sample_staleness(k_k, b, max_staleness=max_staleness, p_fresh=p_fresh)
  if len(grids) == 1:
    n_grid = jnp.full((b,), grids[0], jnp.float32)
  # one grid per example, so a single model serves several sampler step counts
  else:
    n_grid = jnp.asarray(grids, jnp.float32)[
      jax.random.randint(jax.random.fold_in(key, 99), (b,), 0, len(grids))
    ]
  tau = jnp.minimum(1.0, t + k / n_grid)
  eps = jax.random.normal(k_eps, x.shape)
  z_tau = q_sample(x, tau, eps, schedule)
  # shared eps: leaks x for tau > t (kept for comparison)
  if coupling == "ddim":
    z_t = q_sample(x, t, eps, schedule)
  else:  # 'ancestral', and the part of a 'rollout' batch that is not rolled out
    # q(z_t | z_tau, x), t <= tau
    mean, var = posterior(z_tau, x, tau, t, schedule)
    z_t = mean + jnp.sqrt(var) * jax.random.normal(k_post, x.shape)

  if use_features:
    h = model.encode(z_tau, tau, cond)
  else:
    h = jnp.zeros(jax.eval_shape(model.encode, z_tau, tau, cond).shape, x.dtype)
  dl = schedule.logsnr(t) - schedule.logsnr(tau)

  if coupling == "rollout" and max_staleness > 1 and rollout_frac > 0:
    hs = jax.lax.stop_gradient(h)
    kf = jnp.maximum(k, 1).astype(jnp.float32)

    def roll(j, z):
      tj = tau - j * (tau - t) / kf
      tn = tau - (j + 1) * (tau - t) / kf
      x_hat = output_to_x(
        model.denoise(
          z, tj, hs, tau, cond, schedule.logsnr(tj) - schedule.logsnr(tau)
        ),
        z,
        tj,
        schedule,
        model.parametrization,
      )
      z_new = ddim_step(z, x_hat, tj, tn, schedule)
      return jnp.where((j < k)[:, None, None, None], z_new, z)

    z_roll = jax.lax.stop_gradient(
      jax.lax.fori_loop(0, max_staleness - 1, roll, z_tau)
    )
    sel = jax.random.bernoulli(k_sel, rollout_frac, (b,))[:, None, None, None]
    z_t = jnp.where(sel, z_roll, z_t)

  out = model.denoise(z_t, t, h, tau, cond, dl)
  x_hat = output_to_x(out, z_t, t, schedule, model.parametrization)
  w = loss_weight(schedule.logsnr(t), weighting)
  mse = _per_example_mse(x_hat, x)
  loss = jnp.mean(w * mse)
  fresh = (k == 0).astype(jnp.float32)
  aux = {
    "mse_fresh": jnp.sum(fresh * mse) / jnp.maximum(fresh.sum(), 1.0),
    "mse_stale": jnp.sum((1 - fresh) * mse)
    / jnp.maximum((1 - fresh).sum(), 1.0),
    "mean_k": jnp.mean(k.astype(jnp.float32)),
  }
  return loss, aux


def diffusion_loss(
  model: SingleNetwork,
  x: jax.Array,
  cond: ArrayLike | None,
  key: jax.Array,
  *,
  schedule: NoiseSchedule = NoiseSchedule(),
  weighting: str = "v",
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """Standard loss of the single-network baseline: w(lambda_t) ||x_hat(z_t, t) - x||^2.

  Args:
    model: the SingleNetwork.
    x: [B, H, W, C] float data.
    cond: [B] int class labels, or None.
    key: PRNG key for t ~ U(0, 1) and the noise.
    schedule: noise schedule.
    weighting: 'v' | 'x' | 'eps' loss weight w(lambda_t) on ||x_hat - x||^2.

  Returns:
    ``(loss, aux)``: the weighted loss, a float scalar, and
    ``{'mse': unweighted MSE}``.
  """
  if not isinstance(model, SingleNetwork):
    raise TypeError(
      f"model must be a SingleNetwork, got {type(model).__name__}"
    )
  if x.ndim != 4:
    raise ValueError(f"x must be [B, H, W, C], got {x.shape}")
  loss_weight(0.0, weighting)  # checks the weighting name
  k_t, k_eps = jax.random.split(key)
  t = jax.random.uniform(k_t, (x.shape[0],))
  z_t = q_sample(x, t, jax.random.normal(k_eps, x.shape), schedule)
  x_hat = output_to_x(
    model(z_t, t, cond), z_t, t, schedule, model.parametrization
  )
  mse = _per_example_mse(x_hat, x)
  return jnp.mean(loss_weight(schedule.logsnr(t), weighting) * mse), {
    "mse": jnp.mean(mse)
  }


def make_train_step(
  graphdef: nnx.GraphDef,
  loss_fn: Callable[..., tuple[jax.Array, dict[str, jax.Array]]],
  tx: optax.GradientTransformation,
  *,
  ema_decay: float = 0.999,
) -> Callable[..., tuple[PyTree, optax.OptState, PyTree, dict[str, jax.Array]]]:
  """A pure jitted step over pytrees (nnx.split state) with an EMA of the
  parameters.

  The returned step merges the module inside the trace (functional at the jit
  boundary) and donates ``params``, ``opt_state`` and ``ema``.

  Args:
    graphdef: the model's graph definition from ``nnx.split``.
    loss_fn: ``loss_fn(model, x, cond, key) -> (loss, aux)``, e.g. :func:`dual_rate_loss`.
    tx: the optimizer.
    ema_decay: EMA decay in [0, 1).

  Returns:
    ``step(params, opt_state, ema, x, cond, key) -> (params, opt_state, ema,
    metrics)``, where ``metrics`` holds 'loss', 'grad_norm' and the entries of
    ``aux``.
  """
  if not callable(loss_fn):
    raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
  if not isinstance(tx, optax.GradientTransformation):
    raise TypeError(
      f"tx must be an optax.GradientTransformation, got {type(tx).__name__}"
    )
  if not 0.0 <= ema_decay < 1.0:
    raise ValueError(f"ema_decay must be in [0, 1), got {ema_decay}")

  def step(params, opt_state, ema, x, cond, key):
    def lf(p):
      return loss_fn(nnx.merge(graphdef, p), x, cond, key)

    (loss, aux), grads = jax.value_and_grad(lf, has_aux=True)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    ema = jax.tree.map(
      lambda e, p: ema_decay * e + (1 - ema_decay) * p, ema, params
    )
    return (
      params,
      opt_state,
      ema,
      {"loss": loss, "grad_norm": optax.global_norm(grads), **aux},
    )

  return jax.jit(step, donate_argnums=(0, 1, 2))


class EmaState(NamedTuple):
  """State of :func:`ema_tracker`: the exponential moving average of the
  parameters."""

  ema: Any


def ema_tracker(decay: float) -> optax.GradientTransformation:
  """Leaves updates unchanged and tracks ``ema <- decay ema + (1 - decay)
  (params + updates)``.

  Chain it last (``optax.chain(..., ema_tracker(0.999))``) so the EMA of the
  parameters lives in the optimizer state and is checkpointed with it; read it
  back with :func:`find_ema`.

  Args:
    decay: EMA decay in [0, 1).

  Returns:
    an optax transformation whose state is an :class:`EmaState`; its ``update``
    needs ``params``.
  """
  if not 0.0 <= decay < 1.0:
    raise ValueError(f"decay must be in [0, 1), got {decay}")

  def init(params):
    return EmaState(ema=jax.tree.map(jnp.asarray, params))

  def update(updates, state, params=None):
    if params is None:
      raise ValueError("ema_tracker needs params")
    new = optax.apply_updates(params, updates)
    ema = jax.tree.map(
      lambda e, p: decay * e + (1.0 - decay) * p, state.ema, new
    )
    return updates, EmaState(ema=ema)

  return optax.GradientTransformation(init, update)


def find_ema(opt_state: optax.OptState) -> PyTree:
  """The EMA parameters from an optimizer state that contains an
  :func:`ema_tracker` state.

  Args:
    opt_state: an optimizer state holding exactly one :class:`EmaState`.

  Returns:
    the EMA pytree, of the parameters' structure.

  Raises:
    ValueError: there is no EmaState, or more than one.
  """
  found = [
    s
    for s in jax.tree.leaves(
      opt_state, is_leaf=lambda s: isinstance(s, EmaState)
    )
    if isinstance(s, EmaState)
  ]
  if len(found) != 1:
    raise ValueError(
      "expected exactly one EmaState in the optimizer state, "
      f"found {len(found)}"
    )
  return found[0].ema


def training_optimizer(
  learning_rate: float, num_steps: int, warmup_steps: int, ema_decay: float
) -> optax.GradientTransformation:
  """The networks' optimizer: clipping, AdamW with warmup + cosine decay, and
  the EMA tracker.

  ``chain(clip_by_global_norm(1), adamw(lr_t, weight_decay=0),
  ema_tracker(ema_decay))`` with lr_t rising linearly from 0 to
  ``learning_rate`` over ``min(warmup_steps, num_steps - 1)`` steps (at least
  1), then decaying as a cosine to 0 at ``max(num_steps, 2)``. The EMA of the
  parameters is read back with :func:`find_ema`.

  Args:
    learning_rate: the peak learning rate (> 0).
    num_steps: the training steps (>= 1).
    warmup_steps: the warmup steps (>= 0; capped at ``num_steps - 1``, raised to
      1).
    ema_decay: EMA decay in [0, 1).

  Returns:
    a fresh optax transformation on every call; its ``update`` needs ``params``.

  Raises:
    ValueError: a value outside its range.
  """
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
  if int(num_steps) < 1 or int(warmup_steps) < 0:
    raise ValueError(
      "num_steps must be >= 1 and warmup_steps >= 0, "
      f"got {num_steps} and {warmup_steps}"
    )
  schedule = optax.warmup_cosine_decay_schedule(
    0.0,
    learning_rate,
    min(warmup_steps, max(num_steps - 1, 1)),
    max(num_steps, 2),
  )
  return optax.chain(
    optax.clip_by_global_norm(1.0),
    optax.adamw(schedule, weight_decay=0.0),
    ema_tracker(ema_decay),
  )
