"""Variance-preserving diffusion process: schedules, parametrisations and
sampler steps.

Conventions (Dual-Rate Diffusion spec §3.1, following VDM / simple diffusion):
time ``t`` in [0, 1] with ``t = 0`` data and ``t = 1`` noise; ``z_t = alpha_t
x + sigma_t eps`` with ``alpha_t^2 + sigma_t^2 = 1``; the schedule is given by
the log signal-to-noise ratio ``lambda_t = log(alpha_t^2 / sigma_t^2)`` so that
``alpha_t^2 = sigmoid(lambda_t)`` and ``sigma_t^2 = sigmoid(-lambda_t)``.

References:
  Kingma et al., Variational Diffusion Models, arXiv:2107.00630. Hoogeboom et
  al., simple diffusion, arXiv:2301.11093. Salimans & Ho, Progressive
  Distillation (v-prediction), arXiv:2202.00512. Karras et al., Elucidating the
  Design Space of Diffusion Models (EDM), arXiv:2206.00364.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpapers.core import validation as val

_KINDS = ("cosine", "linear")
PARAMETRIZATIONS = ("x", "v", "eps")
WEIGHTINGS = ("x", "v", "eps")


@dataclasses.dataclass(frozen=True)
class NoiseSchedule:
  """Log-SNR noise schedule of a variance-preserving process.

  ``kind='cosine'``: ``lambda_t = -2 log tan(pi t / 2) + shift``, clipped to
  ``[logsnr_min, logsnr_max]`` so that ``t = 0`` and ``t = 1`` are finite.
  ``kind='linear'``: ``lambda_t = logsnr_max + t (logsnr_min - logsnr_max) +
  shift``, clipped. ``shift`` is the simple-diffusion resolution shift, e.g.
  ``2 log(base / res)``.

  :meth:`logsnr` clips its input to the schedule's range (it is an internal
  building block and does not check t); the public functions that take a time
  (:func:`q_sample`, :func:`posterior`, :func:`ddim_step`,
  :func:`ancestral_step`) check t in [0, 1] first.

  Args:
    kind: 'cosine' or 'linear'.
    logsnr_min: lower clip of lambda (the noise end).
    logsnr_max: upper clip of lambda (the data end); must exceed ``logsnr_min``.
    shift: additive log-SNR shift.

  Raises:
    ValueError: ``kind`` is not one of the two names, or
      ``logsnr_min >= logsnr_max``.
  """

  kind: str = "cosine"
  logsnr_min: float = -15.0
  logsnr_max: float = 15.0
  shift: float = 0.0

  def __post_init__(self):
    if self.kind not in _KINDS:
      raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
    if not self.logsnr_min < self.logsnr_max:
      raise ValueError(
        f"need logsnr_min < logsnr_max, got {self.logsnr_min} and "
        f"{self.logsnr_max}"
      )

  def logsnr(self, t: ArrayLike) -> jax.Array:
    """lambda_t for t in [0, 1].

    Args:
      t: times of any shape, float; values outside [0, 1] are clipped, not
        checked.

    Returns:
      float32 array of ``t``'s shape, in ``[logsnr_min, logsnr_max]``.
    """
    t = jnp.asarray(t, jnp.float32)
    if self.kind == "cosine":
      # Clip t first so that the gradient is finite at both ends; equivalent to
      # clipping lambda.
      t_lo = (2 / math.pi) * math.atan(
        math.exp(-0.5 * (self.logsnr_max - self.shift))
      )
      t_hi = (2 / math.pi) * math.atan(
        math.exp(-0.5 * (self.logsnr_min - self.shift))
      )
      tc = jnp.clip(t, t_lo, t_hi)
      lam = -2.0 * jnp.log(jnp.tan(0.5 * math.pi * tc)) + self.shift
    else:
      lam = (
        self.logsnr_max + t * (self.logsnr_min - self.logsnr_max) + self.shift
      )
    return jnp.clip(lam, self.logsnr_min, self.logsnr_max)

  def t_from_logsnr(self, logsnr: ArrayLike) -> jax.Array:
    """Inverse of :meth:`logsnr` on the unclipped range.

    Args:
      logsnr: log-SNR values of any shape; clipped to
        ``[logsnr_min, logsnr_max]`` first.

    Returns:
      float32 array of times in [0, 1], of ``logsnr``'s shape.
    """
    lam = jnp.clip(
      jnp.asarray(logsnr, jnp.float32), self.logsnr_min, self.logsnr_max
    )
    lam = lam - self.shift
    if self.kind == "cosine":
      return (2 / math.pi) * jnp.arctan(jnp.exp(-0.5 * lam))
    return (self.logsnr_max - lam) / (self.logsnr_max - self.logsnr_min)

  def alpha_sigma(self, t: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """(alpha_t, sigma_t) with alpha^2 = sigmoid(lambda), sigma^2 = sigmoid(-lambda).

    Args:
      t: times of any shape in [0, 1] (clipped as in :meth:`logsnr`).

    Returns:
      ``(alpha, sigma)``, two float32 arrays of ``t``'s shape with ``alpha^2 + sigma^2 = 1``.
    """
    lam = self.logsnr(t)
    return jnp.sqrt(jax.nn.sigmoid(lam)), jnp.sqrt(jax.nn.sigmoid(-lam))


def _bcast(a, like):
  """Reshape per-example [B] (or scalar) coefficients to broadcast against
  [B, ...]."""
  a = jnp.asarray(a)
  if a.ndim == 0:
    return a
  return a.reshape(a.shape + (1,) * (like.ndim - a.ndim))


def _check_schedule(schedule):
  if not isinstance(schedule, NoiseSchedule):
    raise TypeError(
      f"schedule must be a NoiseSchedule, got {type(schedule).__name__}"
    )


def _check_time(t, like, name):
  """``t`` scalar or ``[B]`` with ``B = like.shape[0]``; a float array
  (trace-time check)."""
  t = jnp.asarray(t)
  if not (
    jnp.issubdtype(t.dtype, jnp.floating)
    or jnp.issubdtype(t.dtype, jnp.integer)
  ):
    raise TypeError(
      f"{name} must be a real time in [0, 1], got dtype {t.dtype}"
    )
  if not (
    t.ndim == 0
    or (t.ndim == 1 and like.ndim >= 1 and t.shape[0] == like.shape[0])
  ):
    b = like.shape[0] if like.ndim else "?"
    raise ValueError(
      f"{name} must be a scalar or shape [B] = [{b}], got shape {t.shape}"
    )
  return t


def _times_ok(like, t, s=None):
  """Per-example validity of t (and s <= t) in [0, 1]: eager ValueError, traced mask."""
  ok = (t >= 0) & (t <= 1)
  msg = "t must lie in [0, 1] (t = 0 data, t = 1 noise)"
  if s is not None:
    ok = ok & (s >= 0) & (s <= 1) & (s <= t)
    msg = (
      "t and s must lie in [0, 1] with s <= t (a step moves from noise toward "
      "data)"
    )
  if val.debug_check_values(ok, msg) is None:
    return None
  return _bcast(ok, like) if jnp.ndim(ok) else ok


def q_sample(
  x: jax.Array, t: ArrayLike, noise: jax.Array, schedule: NoiseSchedule
) -> jax.Array:
  """Forward process ``z_t = alpha_t x + sigma_t eps``.

  Args:
    x: [B, ...] float array, clean data.
    t: scalar or [B] times in [0, 1].
    noise: [B, ...] float array of ``x``'s shape, the Gaussian ``eps``.
    schedule: the noise schedule giving ``alpha_t`` and ``sigma_t``.

  Returns:
    ``z_t``, a [B, ...] float array of ``x``'s shape.

  Bad values: ``t`` outside [0, 1] raises ``ValueError`` eagerly; under
  ``jax.jit`` the affected examples of ``z_t`` are NaN
  (``jax.experimental.checkify.checkify`` surfaces the error). The schedule is
  never extrapolated or clamped silently.
  """
  _check_schedule(schedule)
  if (
    not hasattr(x, "shape")
    or not hasattr(noise, "shape")
    or x.shape != noise.shape
  ):
    raise ValueError(
      f"x and noise must have the same shape, got {getattr(x, 'shape', x)} and "
      f"{getattr(noise, 'shape', noise)}"
    )
  t = _check_time(t, x, "t")
  ok = _times_ok(x, t)
  a, s = schedule.alpha_sigma(t)
  return val.poison_floats(_bcast(a, x) * x + _bcast(s, x) * noise, ok)


# ------------------------------------------------------------------------------
# Parametrisations. v = alpha eps - sigma x (Salimans & Ho 2022).
# ------------------------------------------------------------------------------
def _check_same(a, b, na, nb):
  if not hasattr(a, "shape") or not hasattr(b, "shape") or a.shape != b.shape:
    raise ValueError(
      f"{na} and {nb} must have the same shape, got "
      f"{getattr(a, 'shape', type(a))} and {getattr(b, 'shape', type(b))}"
    )


def _check_coef(c, like, name):
  c = jnp.asarray(c)
  if not (c.ndim == 0 or (c.ndim == 1 and c.shape[0] == like.shape[0])):
    raise ValueError(
      f"{name} must be a scalar or shape [B] = [{like.shape[0]}], "
      f"got shape {c.shape}"
    )


def v_from_x_eps(
  x: jax.Array, eps: jax.Array, alpha: ArrayLike, sigma: ArrayLike
) -> jax.Array:
  """v = alpha eps - sigma x.

  Args:
    x: [B, ...] float array, the data.
    eps: [B, ...] float array of ``x``'s shape, the noise.
    alpha: scalar or [B] signal coefficient.
    sigma: scalar or [B] noise coefficient.

  Returns:
    ``v``, a [B, ...] float array of ``x``'s shape.
  """
  _check_same(x, eps, "x", "eps")
  _check_coef(alpha, x, "alpha")
  _check_coef(sigma, x, "sigma")
  return _bcast(alpha, x) * eps - _bcast(sigma, x) * x


def x_from_v(
  z: jax.Array, v: jax.Array, alpha: ArrayLike, sigma: ArrayLike
) -> jax.Array:
  """x = alpha z - sigma v (inverse of v given z = alpha x + sigma eps).

  Args:
    z: [B, ...] float array, the noisy input ``alpha x + sigma eps``.
    v: [B, ...] float array of ``z``'s shape, the v-prediction.
    alpha: scalar or [B] signal coefficient.
    sigma: scalar or [B] noise coefficient.

  Returns:
    the data prediction ``x``, a [B, ...] float array of ``z``'s shape.
  """
  _check_same(z, v, "z", "v")
  _check_coef(alpha, z, "alpha")
  _check_coef(sigma, z, "sigma")
  return _bcast(alpha, z) * z - _bcast(sigma, z) * v


def eps_from_x(
  z: jax.Array, x: jax.Array, alpha: ArrayLike, sigma: ArrayLike
) -> jax.Array:
  """eps = (z - alpha x) / sigma (sigma = 0 gives inf: eps is undefined at the
  data end).

  Args:
    z: [B, ...] float array, the noisy input.
    x: [B, ...] float array of ``z``'s shape, the data prediction.
    alpha: scalar or [B] signal coefficient.
    sigma: scalar or [B] noise coefficient.

  Returns:
    the noise prediction ``eps``, a [B, ...] float array of ``z``'s shape.
  """
  _check_same(z, x, "z", "x")
  _check_coef(alpha, z, "alpha")
  _check_coef(sigma, z, "sigma")
  return (z - _bcast(alpha, z) * x) / _bcast(sigma, z)


def x_from_eps(
  z: jax.Array, eps: jax.Array, alpha: ArrayLike, sigma: ArrayLike
) -> jax.Array:
  """x = (z - sigma eps) / alpha (alpha = 0 gives inf).

  Args:
    z: [B, ...] float array, the noisy input.
    eps: [B, ...] float array of ``z``'s shape, the noise prediction.
    alpha: scalar or [B] signal coefficient.
    sigma: scalar or [B] noise coefficient.

  Returns:
    the data prediction ``x``, a [B, ...] float array of ``z``'s shape.
  """
  _check_same(z, eps, "z", "eps")
  _check_coef(alpha, z, "alpha")
  _check_coef(sigma, z, "sigma")
  return (z - _bcast(sigma, z) * eps) / _bcast(alpha, z)


def output_to_x(
  output: jax.Array,
  z: jax.Array,
  t: ArrayLike,
  schedule: NoiseSchedule,
  parametrization: str,
) -> jax.Array:
  """Convert a network output in the given parametrisation into the data
  prediction x_hat.

  Args:
    output: [B, ...] float array, the network output.
    z: [B, ...] float array of ``output``'s shape, the noisy input the network
      saw.
    t: scalar or [B] times of ``z``.
    schedule: the noise schedule.
    parametrization: what ``output`` predicts: 'x', 'v' or 'eps'.

  Returns:
    ``x_hat``, a [B, ...] float array of ``z``'s shape (``output`` itself for
    'x').
  """
  if parametrization not in PARAMETRIZATIONS:
    raise ValueError(
      f"parametrization must be one of {PARAMETRIZATIONS}, "
      f"got {parametrization!r}"
    )
  _check_schedule(schedule)
  _check_same(output, z, "output", "z")
  t = _check_time(t, z, "t")
  if parametrization == "x":
    return output
  a, s = schedule.alpha_sigma(t)
  if parametrization == "v":
    return x_from_v(z, output, a, s)
  return x_from_eps(z, output, a, s)


def loss_weight(logsnr: ArrayLike, weighting: str) -> jax.Array:
  """w(lambda) that turns ||x_hat - x||^2 into the loss of the named parametrisation.

  'x': 1;  'eps': e^lambda  (||eps_hat - eps||^2 = (alpha/sigma)^2 ||x_hat - x||^2);
  'v': 1 + e^lambda         (||v_hat - v||^2 = ||x_hat - x||^2 / sigma^2).

  Args:
    logsnr: log-SNR values lambda of any shape.
    weighting: 'x', 'v' or 'eps'.

  Returns:
    float array of ``logsnr``'s shape, the weights w(lambda).
  """
  if weighting not in WEIGHTINGS:
    raise ValueError(
      f"weighting must be one of {WEIGHTINGS}, got {weighting!r}"
    )
  logsnr = jnp.asarray(logsnr)
  if weighting == "x":
    return jnp.ones_like(logsnr)
  if weighting == "eps":
    return jnp.exp(logsnr)
  return 1.0 + jnp.exp(logsnr)


# ------------------------------------------------------------------------------
# Posterior and sampler steps.
# ------------------------------------------------------------------------------
def posterior(
  z_t: jax.Array,
  x_hat: jax.Array,
  t: ArrayLike,
  s: ArrayLike,
  schedule: NoiseSchedule,
) -> tuple[jax.Array, jax.Array]:
  """q(z_s | z_t, x = x_hat) for s < t.

  alpha_{t|s} = alpha_t/alpha_s, sigma_{t|s}^2 = sigma_t^2 - alpha_{t|s}^2 sigma_s^2,
  mean = (alpha_{t|s} sigma_s^2 / sigma_t^2) z_t + (alpha_s sigma_{t|s}^2 / sigma_t^2) x,
  var = sigma_{t|s}^2 sigma_s^2 / sigma_t^2.

  Args:
    z_t: [B, ...] float array, the noisy sample at time ``t``.
    x_hat: [B, ...] float array of ``z_t``'s shape, the data prediction.
    t: scalar or [B] current times in [0, 1].
    s: scalar or [B] target times in [0, 1], ``s <= t``.
    schedule: the noise schedule.

  Returns:
    ``(mean, var)``: ``mean`` a [B, ...] float array of ``z_t``'s shape; ``var``
    the variance, broadcastable to ``z_t`` (a scalar, or [B, 1, ...] when ``t``
    or ``s`` is [B]).

  Bad values: t, s outside [0, 1] or s > t raise ``ValueError`` eagerly; under
  ``jax.jit`` the affected examples of mean and var are NaN
  (``checkify.checkify`` surfaces the error).
  """
  _check_schedule(schedule)
  _check_same(z_t, x_hat, "z_t", "x_hat")
  t, s = _check_time(t, z_t, "t"), _check_time(s, z_t, "s")
  ok = _times_ok(z_t, t, s)
  a_t, s_t = schedule.alpha_sigma(t)
  a_s, s_s = schedule.alpha_sigma(s)
  # sigma_{t|s}^2 via expm1 for accuracy when t and s are close:
  # sigma_t^2 - (alpha_t/alpha_s)^2 sigma_s^2 = sigma_t^2 (1 - e^{lambda_t - lambda_s}).
  lam_t, lam_s = schedule.logsnr(t), schedule.logsnr(s)
  s2_ts = -jnp.expm1(lam_t - lam_s) * s_t**2
  a_ts = a_t / a_s
  c_z = a_ts * s_s**2 / s_t**2
  c_x = a_s * s2_ts / s_t**2
  var = s2_ts * s_s**2 / s_t**2
  mean = _bcast(c_z, z_t) * z_t + _bcast(c_x, z_t) * x_hat
  var = _bcast(var, z_t)
  if ok is not None:
    var = jnp.where(ok, var, jnp.nan)
  return val.poison_floats(mean, ok), var


def ddim_step(
  z: jax.Array,
  x_hat: jax.Array,
  t: ArrayLike,
  s: ArrayLike,
  schedule: NoiseSchedule,
) -> jax.Array:
  """Deterministic DDIM (eta = 0) step: eps_hat = (z - alpha_t x_hat)/sigma_t,
  z_s = alpha_s x_hat + sigma_s eps_hat (Song et al. 2020, arXiv:2010.02502).

  Bad values: t, s outside [0, 1] or s > t (a step toward noise) raise
  ``ValueError`` eagerly; under ``jax.jit`` the affected examples are NaN
  (``jax.experimental.checkify.checkify`` surfaces the error).

  Args:
    z: [B, ...] float array, the sample at time ``t``.
    x_hat: [B, ...] float array of ``z``'s shape, the data prediction.
    t: scalar or [B] current times in [0, 1].
    s: scalar or [B] target times in [0, 1], ``s <= t``.
    schedule: the noise schedule.

  Returns:
    ``z_s``, a [B, ...] float array of ``z``'s shape.
  """
  _check_schedule(schedule)
  _check_same(z, x_hat, "z", "x_hat")
  t, s = _check_time(t, z, "t"), _check_time(s, z, "s")
  ok = _times_ok(z, t, s)
  a_t, s_t = schedule.alpha_sigma(t)
  a_s, s_s = schedule.alpha_sigma(s)
  eps_hat = eps_from_x(z, x_hat, a_t, s_t)
  return val.poison_floats(
    _bcast(a_s, z) * x_hat + _bcast(s_s, z) * eps_hat, ok
  )


def ancestral_step(
  z: jax.Array,
  x_hat: jax.Array,
  t: ArrayLike,
  s: ArrayLike,
  schedule: NoiseSchedule,
  key: jax.Array,
) -> jax.Array:
  """Ancestral step z_s ~ q(z_s | z_t, x = x_hat) = mean + sqrt(var) xi.

  Bad values as in :func:`posterior` (NaN under ``jax.jit``, ``ValueError``
  eagerly).

  Args:
    z: [B, ...] float array, the sample at time ``t``.
    x_hat: [B, ...] float array of ``z``'s shape, the data prediction.
    t: scalar or [B] current times in [0, 1].
    s: scalar or [B] target times in [0, 1], ``s <= t``.
    schedule: the noise schedule.
    key: PRNG key for the Gaussian ``xi``.

  Returns:
    ``z_s``, a [B, ...] array of ``z``'s shape and dtype.
  """
  mean, var = posterior(z, x_hat, t, s, schedule)
  xi = jax.random.normal(key, z.shape, z.dtype)
  return mean + jnp.sqrt(var) * xi


# ------------------------------------------------------------------------------
# EDM (Karras et al. 2022) in VP coordinates: sigma_edm = sigma/alpha = exp(-lambda/2),
# x_edm = z / alpha.
# ------------------------------------------------------------------------------
def karras_sigmas(
  num_steps: int,
  *,
  sigma_min: float = 0.002,
  sigma_max: float = 80.0,
  rho: float = 7.0,
) -> jax.Array:
  """EDM grid sigma_i = (s_max^{1/rho} + i/(N-1) (s_min^{1/rho} -
  s_max^{1/rho}))^rho, i < N, followed by sigma_N = 0.

  Static arguments, checked always: num_steps an int >= 1, 0 < sigma_min <
  sigma_max (finite), rho > 0.

  Args:
    num_steps: number of sampler steps N >= 1.
    sigma_min: smallest nonzero EDM noise level.
    sigma_max: largest EDM noise level.
    rho: the grid's warping exponent (7 in EDM).

  Returns:
    [num_steps + 1] float32 array, decreasing from ``sigma_max`` to
    ``sigma_min``, then 0.
  """
  if (
    isinstance(num_steps, bool)
    or not isinstance(num_steps, (int, np.integer))
    or num_steps < 1
  ):
    raise ValueError(f"num_steps must be an int >= 1, got {num_steps!r}")
  for name, v in (
    ("sigma_min", sigma_min),
    ("sigma_max", sigma_max),
    ("rho", rho),
  ):
    if (
      not isinstance(v, (int, float, np.floating, np.integer))
      or not math.isfinite(v)
      or v <= 0
    ):
      raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
  if not sigma_min < sigma_max:
    raise ValueError(
      f"need sigma_min < sigma_max, got {sigma_min} and {sigma_max}"
    )
  i = jnp.arange(num_steps, dtype=jnp.float32)
  denom = max(num_steps - 1, 1)
  sig = (
    sigma_max ** (1 / rho)
    + i / denom * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))
  ) ** rho
  return jnp.concatenate([sig, jnp.zeros((1,), jnp.float32)])


def edm_sigma_to_t(sigma_edm: ArrayLike, schedule: NoiseSchedule) -> jax.Array:
  """Time t whose VP schedule has sigma_t/alpha_t = sigma_edm, i.e. lambda = -2
  log sigma_edm.

  sigma_edm = 0 maps to the data end (the clipped t). A negative or NaN sigma
  raises ``ValueError`` eagerly and gives NaN under ``jax.jit``
  (``checkify.checkify`` surfaces it).

  Args:
    sigma_edm: EDM noise levels >= 0, any shape.
    schedule: the VP noise schedule.

  Returns:
    float32 times in [0, 1] of ``sigma_edm``'s shape.
  """
  _check_schedule(schedule)
  sigma_edm = jnp.asarray(sigma_edm)
  ok = val.debug_check_values(
    sigma_edm >= 0, "sigma_edm must be >= 0 (an EDM noise level)"
  )
  t = schedule.t_from_logsnr(-2.0 * jnp.log(sigma_edm))
  return t if ok is None else jnp.where(sigma_edm >= 0, t, jnp.nan)


def edm_preconditioning(
  sigma: ArrayLike, sigma_data: float = 0.5
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
  """EDM preconditioning (Karras et al. 2022, Table 1), ported by hand.

  c_skip = s_d^2/(s^2+s_d^2), c_out = s s_d/sqrt(s^2+s_d^2), c_in =
  1/sqrt(s^2+s_d^2), c_noise = log(s)/4. With sigma_data = 1 and sigma =
  sigma_t/alpha_t this is exactly the v-parametrisation: D(x_edm) = alpha z -
  sigma v_hat with F = -v_hat and c_in x_edm = z.

  sigma must be > 0 and sigma_data a number > 0: a bad sigma raises
  ``ValueError`` eagerly and gives NaN coefficients under ``jax.jit``
  (``checkify.checkify`` surfaces the error).

  Args:
    sigma: EDM noise levels > 0, any shape.
    sigma_data: standard deviation of the data, a number > 0.

  Returns:
    ``(c_skip, c_out, c_in, c_noise)``, four float arrays of ``sigma``'s shape.
  """
  if (
    not isinstance(sigma_data, (int, float, np.floating)) or not sigma_data > 0
  ):
    raise ValueError(f"sigma_data must be a number > 0, got {sigma_data!r}")
  sigma = jnp.asarray(sigma)
  if (
    val.debug_check_values(sigma > 0, "sigma must be > 0 (an EDM noise level)")
    is not None
  ):
    sigma = jnp.where(sigma > 0, sigma, jnp.nan)
  r = jnp.sqrt(sigma**2 + sigma_data**2)
  return (
    sigma_data**2 / r**2,
    sigma * sigma_data / r,
    1.0 / r,
    0.25 * jnp.log(sigma),
  )
