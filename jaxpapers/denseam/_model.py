"""The Dense Associative Memory: energy, gradient-descent dynamics and the
training losses.

Notation (standard DenseAM forms, Krotov & Hopfield 2016/2021, Ramsauer et al.
2020; the paper's own §2 equations were not available, so the conventions are a
reconstruction):

* visible state ``x`` in R^N, memories ``Xi`` in R^{K x N} (K = number of
  memories, the "width"), input map ``g(x) = x`` or ``LayerNorm(x)``;
* role multipliers ``alpha`` (input role, the "up" map ``h = alpha Xi g(x)``)
  and ``gamma`` (output role, the weight of the hidden Lagrangian), inverse
  temperature ``beta``;
* energy ``E(x) = 1/2 ||x||^2 - gamma Phi(alpha Xi g(x))`` with the Lagrangian
  ``Phi(h) = (1/beta) log sum_mu exp(beta h_mu)`` (``'lse'``) or
  ``Phi(h) = sum_mu ReLU(h_mu)^n / n`` (``'poly'``);
* its activation ``f = grad Phi``: ``softmax(beta h)`` or ``ReLU(h)^(n-1)``;
* dynamics: explicit Euler descent on E, ``x_{t+1} = x_t - dt grad E(x_t)``,
  which for ``g = id`` is ``x_{t+1} = x_t + dt (-x_t + gamma alpha Xi^T f(alpha
  Xi x_t))``; clamped units are reset to their initial values after every step.

The same ``Xi`` is used in every step (shared across layers) and in both the up
map ``Xi x`` and the down map ``Xi^T f`` (shared within a layer), so a gradient
with respect to ``Xi`` collects 2T contributions.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpapers.core import validation as V

ENERGIES = ("lse", "poly")
INPUT_NORMS = ("none", "layernorm")
TASKS = ("classify", "denoise")
_LN_EPS = 1e-5


@dataclasses.dataclass(frozen=True)
class DenseAMConfig:
  """Static model configuration (hashable; safe to close over under
  ``jax.jit``).

  Each argument is kept as the field of the same name.

  Args:
    energy: ``'lse'`` (log-sum-exp Lagrangian, softmax activation) or ``'poly'``
      (rectified polynomial of degree ``n``).
    n: degree of the polynomial Lagrangian (``>= 2``; ignored for ``'lse'``).
    beta: base inverse temperature of the LSE Lagrangian (> 0); the effective
      value is ``beta * mult['beta_scale']``.
    dt: Euler step size (> 0). Energy descent is guaranteed for
      ``dt * Lip(grad E) < 2``.
    steps: number of unrolled steps ``T`` (>= 1), all with the same ``Xi``.
    input_norm: ``'none'`` (``g = id``) or ``'layernorm'`` (``g`` =
      parameter-free LayerNorm over the N visible units).
    task: ``'classify'`` (labels read out from the last ``num_classes`` units)
      or ``'denoise'`` (MSE of ``x_T`` against the clean pattern).
    num_classes: number of label units at the end of ``x`` (``'classify'``).
    readout_scale: ``s`` in the logits ``s * x_T[labels]`` (``'classify'``).
  """

  energy: Literal["lse", "poly"] = "lse"
  n: int = 3
  beta: float = 1.0
  dt: float = 0.5
  steps: int = 4
  input_norm: Literal["none", "layernorm"] = "none"
  task: Literal["classify", "denoise"] = "classify"
  num_classes: int = 10
  readout_scale: float = 4.0

  def __post_init__(self):
    if self.energy not in ENERGIES:
      raise ValueError(
        f"energy must be one of {list(ENERGIES)}, got {self.energy!r}"
      )
    if self.input_norm not in INPUT_NORMS:
      raise ValueError(
        f"input_norm must be one of {list(INPUT_NORMS)}, "
        f"got {self.input_norm!r}"
      )
    if self.task not in TASKS:
      raise ValueError(f"task must be one of {list(TASKS)}, got {self.task!r}")
    V.check_int(self.n, "n (polynomial degree)", min_value=2)
    V.check_float(self.beta, "beta", min_value=0.0, min_inclusive=False)
    V.check_float(self.dt, "dt", min_value=0.0, min_inclusive=False)
    V.check_int(self.steps, "steps", min_value=1)
    V.check_int(self.num_classes, "num_classes", min_value=2)
    V.check_float(
      self.readout_scale, "readout_scale", min_value=0.0, min_inclusive=False
    )


class Batch(NamedTuple):
  """One batch of a DenseAM task.

  Attributes:
    x0: ``[B, N]`` initial states (classification: ``[pixels; zeros for the
      labels]``; denoising: the corrupted patterns).
    clamp: ``[N]`` or ``[B, N]`` bool, True for units held at ``x0`` during the
      dynamics.
    y: ``[B]`` int labels in ``[0, num_classes)`` (``'classify'``) or ``[B, N]``
      clean patterns (``'denoise'``).
  """

  x0: Any
  clamp: Any
  y: Any


def _check_config(cfg: Any) -> DenseAMConfig:
  if not isinstance(cfg, DenseAMConfig):
    raise TypeError(f"cfg must be a DenseAMConfig, got {type(cfg).__name__}")
  return cfg


def _multipliers(mult: Any) -> tuple[Any, Any, Any]:
  """``(alpha, gamma, beta_scale)`` from a mapping; missing keys default to
  1."""
  if mult is None:
    return 1.0, 1.0, 1.0
  if not isinstance(mult, Mapping):
    raise TypeError(
      "mult must be a mapping with keys among 'alpha', 'gamma', 'beta_scale', "
      f"got {type(mult).__name__}"
    )
  out = []
  for k in ("alpha", "gamma", "beta_scale"):
    v = mult.get(k, 1.0)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
      V.check_float(v, f"mult[{k!r}]", min_value=0.0, min_inclusive=False)
    else:
      V.check_array(v, f"mult[{k!r}]", ndim=0, dtype="real")
    out.append(v)
  return tuple(out)


def _check_float(x: Any, name: str, **kw) -> jax.Array:
  """``check_array`` for a floating array, bfloat16 included."""
  try:
    dtype = jnp.result_type(x)
  except Exception as e:  # pylint: disable=broad-except
    raise TypeError(f"{name} must be an array, got {type(x).__name__}") from e
  if not jnp.issubdtype(dtype, jnp.floating):
    raise TypeError(
      f"{name} must have a floating dtype (float32, bfloat16, ...), got {dtype}"
    )
  arr = V.check_array(x, name, **kw)
  if not jnp.issubdtype(arr.dtype, jnp.floating):
    raise TypeError(
      f"{name} must have a floating dtype (float32, bfloat16, ...), "
      f"got {arr.dtype}"
    )
  return arr


def _check_state(
  xi: Any, x: Any, name: str = "x"
) -> tuple[jax.Array, jax.Array]:
  xi = _check_float(xi, "xi", ndim=2, nonempty=True)
  x = _check_float(x, name, ndim=2)
  if x.shape[-1] != xi.shape[1]:
    raise ValueError(
      f"{name} must have shape [B, N] with N = xi.shape[1] = {xi.shape[1]}, "
      f"got {x.shape}"
    )
  return xi, x


def _g(x: jax.Array, input_norm: str) -> jax.Array:
  if input_norm == "none":
    return x
  mu = jnp.mean(x, axis=-1, keepdims=True)
  var = jnp.var(x, axis=-1, keepdims=True)
  return (x - mu) * jax.lax.rsqrt(var + _LN_EPS)


def _lagrangian(h: jax.Array, cfg: DenseAMConfig, beta: Any) -> jax.Array:
  """``Phi(h)`` over the last axis: ``[..., K] -> [...]``."""
  if cfg.energy == "lse":
    return jax.nn.logsumexp(beta * h, axis=-1) / beta
  return jnp.sum(jnp.maximum(h, 0.0) ** cfg.n, axis=-1) / cfg.n


def _activation(h: jax.Array, cfg: DenseAMConfig, beta: Any) -> jax.Array:
  """``f(h) = grad Phi(h)``: ``[..., K] -> [..., K]``."""
  if cfg.energy == "lse":
    return jax.nn.softmax(beta * h, axis=-1)
  return jnp.maximum(h, 0.0) ** (cfg.n - 1)


def _energy(xi, x, cfg, alpha, gamma, beta_scale):
  h = alpha * _g(x, cfg.input_norm) @ xi.T  # [B, K]
  return 0.5 * jnp.sum(x * x, axis=-1) - gamma * _lagrangian(
    h, cfg, cfg.beta * beta_scale
  )


def _energy_grad(xi, x, cfg, alpha, gamma, beta_scale):
  beta = cfg.beta * beta_scale
  gx, g_vjp = jax.vjp(lambda z: _g(z, cfg.input_norm), x)
  f = _activation(alpha * gx @ xi.T, cfg, beta)  # [B, K]
  down = gamma * alpha * (f @ xi)  # [B, N]: gamma alpha Xi^T f
  return x - (down if cfg.input_norm == "none" else g_vjp(down)[0])


def energy(
  xi: ArrayLike,
  x: ArrayLike,
  cfg: DenseAMConfig,
  mult: Mapping[str, Any] | None = None,
) -> jax.Array:
  """The DenseAM energy ``E(x) = 1/2 ||x||^2 - gamma Phi(alpha Xi g(x))``.

  Args:
    xi: ``[K, N]`` float memories.
    x: ``[B, N]`` float states.
    cfg: the model configuration (energy family, ``n``, ``beta``, input map).
    mult: role multipliers ``{'alpha', 'gamma', 'beta_scale'}`` (Python floats
      or traced scalars; missing keys are 1), e.g.
      ``Parametrization.multipliers(K)``.

  Returns:
    ``[B]`` energies.

  Example:
    >>> xi = jnp.eye(3)
    >>> energy(xi, jnp.zeros((1, 3)), DenseAMConfig(energy="poly", n=2))  # ReLU(0) = 0
    Array([0.], dtype=float32)
  """
  cfg = _check_config(cfg)
  xi, x = _check_state(xi, x)
  return _energy_jit(xi, x, cfg, *_multipliers(mult))


def energy_grad(
  xi: ArrayLike,
  x: ArrayLike,
  cfg: DenseAMConfig,
  mult: Mapping[str, Any] | None = None,
) -> jax.Array:
  """``grad_x E(x) = x - gamma alpha J_g(x)^T Xi^T f(alpha Xi g(x))`` in closed form.

  For ``g = id`` the Jacobian is the identity; for LayerNorm its transpose is
  applied with a vector-Jacobian product. ``f`` is ``softmax(beta h)`` (LSE) or
  ``ReLU(h)^(n-1)`` (poly).

  Args:
    xi: ``[K, N]`` float memories.
    x: ``[B, N]`` float states.
    cfg: the model configuration.
    mult: role multipliers (see :func:`energy`).

  Returns:
    ``[B, N]`` gradients.
  """
  cfg = _check_config(cfg)
  xi, x = _check_state(xi, x)
  return _energy_grad_jit(xi, x, cfg, *_multipliers(mult))


# One compiled program per static config and shapes, shared by every eager call
# (and inlined when called under an outer jit).
_energy_jit = jax.jit(_energy, static_argnums=(2,))
_energy_grad_jit = jax.jit(_energy_grad, static_argnums=(2,))


def _check_clamp(clamp: Any, x0: jax.Array) -> jax.Array:
  clamp = V.check_array(clamp, "clamp", ndim=(1, 2), dtype="bool")
  if clamp.shape[-1] != x0.shape[-1] or (
    clamp.ndim == 2 and clamp.shape != x0.shape
  ):
    raise ValueError(
      f"clamp must have shape [N] or [B, N] matching x0 {x0.shape}, "
      f"got {clamp.shape}"
    )
  return clamp


def _dynamics(xi, x0, clamp, cfg, alpha, gamma, beta_scale):
  def step(x, _):
    x_new = x - cfg.dt * _energy_grad(xi, x, cfg, alpha, gamma, beta_scale)
    x_new = jnp.where(clamp, x0, x_new)
    return x_new, _energy(xi, x_new, cfg, alpha, gamma, beta_scale)

  # Rematerialise each step in the backward pass: activations stay O(B (N + K))
  # per step.
  x_t, e = jax.lax.scan(jax.checkpoint(step), x0, None, length=cfg.steps)
  e0 = _energy(xi, x0, cfg, alpha, gamma, beta_scale)
  return x_t, jnp.concatenate([e0[None], e], axis=0)


_dynamics_jit = jax.jit(_dynamics, static_argnums=(3,))


def run_dynamics(
  xi: Any,
  x0: Any,
  clamp: Any,
  cfg: DenseAMConfig,
  mult: Mapping[str, Any] | None = None,
) -> tuple[jax.Array, jax.Array]:
  """Unrolls ``T = cfg.steps`` Euler steps of energy descent with shared
  memories.

  ``x_{t+1} = P(x_t - dt grad E(x_t))``, where ``P`` resets the clamped units to
  ``x0``; for ``g = id``: ``x_{t+1} = x_t + dt (-x_t + gamma alpha Xi^T f(alpha
  Xi x_t))``. The step is a ``lax.scan`` body under ``jax.checkpoint``, so
  memory in the backward pass does not grow with the activations of all T steps.

  Args:
    xi: ``[K, N]`` float memories.
    x0: ``[B, N]`` float initial states.
    clamp: ``[N]`` or ``[B, N]`` bool, True where a unit is held at ``x0``.
    cfg: the model configuration (``dt``, ``steps``, energy family).
    mult: role multipliers (see :func:`energy`).

  Returns:
    ``(x_T, energies)``: ``[B, N]`` final states and the ``[T + 1, B]`` energy
    trace ``E(x_0), ..., E(x_T)`` (non-increasing for small enough ``dt``).
  """
  cfg = _check_config(cfg)
  xi, x0 = _check_state(xi, x0, "x0")
  clamp = _check_clamp(clamp, x0)
  return _dynamics_jit(xi, x0, clamp, cfg, *_multipliers(mult))


def loss_fn(
  xi: Any,
  batch: Batch,
  cfg: DenseAMConfig,
  mult: Mapping[str, Any] | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """The task loss of the unrolled DenseAM (differentiable in ``xi``).

  * ``'classify'``: logits ``s * x_T[:, N - C:]`` (the label units), mean
    cross-entropy ``-log softmax(logits)_y``; aux ``accuracy`` (argmax of the
    logits).
  * ``'denoise'``: ``mean_b (1/N) ||x_T - y||^2``; aux ``bit_error`` (fraction
    of units whose sign differs from the clean pattern's).

  Under jit: class labels outside ``[0, C)`` poison the loss with NaN (eagerly
  they raise).

  Args:
    xi: ``[K, N]`` float memories.
    batch: a :class:`Batch` (``x0`` ``[B, N]``, ``clamp`` ``[N]``/``[B, N]``,
      ``y``).
    cfg: the model configuration (``task``, ``num_classes``, ``readout_scale``).
    mult: role multipliers (see :func:`energy`).

  Returns:
    ``(loss, aux)``: scalar mean loss and a dict of scalar diagnostics
    (``accuracy`` or ``bit_error``, and ``energy_drop`` = mean
    ``E(x_0) - E(x_T)``).
  """
  cfg = _check_config(cfg)
  if not isinstance(batch, Batch):
    raise TypeError(
      f"batch must be a denseam.Batch(x0, clamp, y), got {type(batch).__name__}"
    )
  xi, x0 = _check_state(xi, batch.x0, "batch.x0")
  clamp = _check_clamp(batch.clamp, x0)
  b, n_vis = x0.shape
  if cfg.task == "classify":
    y = V.check_array(
      batch.y, "batch.y (class labels)", shape=(b,), dtype=("int")
    )
    if n_vis <= cfg.num_classes:
      raise ValueError(
        f"x0 needs more than num_classes = {cfg.num_classes} units, "
        f"got N={n_vis}"
      )
    ok = V.check_values(
      (y >= 0) & (y < cfg.num_classes),
      f"batch.y must hold labels in [0, {cfg.num_classes})",
    )
  else:
    y = _check_float(batch.y, "batch.y (clean patterns)", shape=(b, n_vis))
    ok = True
  loss, aux = _task_loss(xi, x0, clamp, y, cfg, *_multipliers(mult))
  if ok is not True:
    loss, aux = V.poison((loss, aux), ok)
  return loss, aux


@functools.partial(jax.jit, static_argnums=(4,))
def _task_loss(xi, x0, clamp, y, cfg, alpha, gamma, beta_scale):
  n_vis = x0.shape[1]
  x_t, e = _dynamics(xi, x0, clamp, cfg, alpha, gamma, beta_scale)
  aux = {"energy_drop": jnp.mean(e[0] - e[-1])}
  if cfg.task == "classify":
    logits = cfg.readout_scale * x_t[:, n_vis - cfg.num_classes :]
    logp = jax.nn.log_softmax(logits, axis=-1)
    loss = -jnp.mean(
      jnp.take_along_axis(logp, jnp.clip(y, 0, cfg.num_classes - 1)[:, None], 1)
    )
    aux["accuracy"] = jnp.mean(jnp.argmax(logits, axis=-1) == y)
  else:
    loss = jnp.mean((x_t - y) ** 2)
    aux["bit_error"] = jnp.mean(jnp.sign(x_t) != jnp.sign(y))
  return loss, aux
