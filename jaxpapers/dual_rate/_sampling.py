"""Refresh-set samplers (DDIM, ancestral, EDM-Heun) and exact cost accounting
[reconstruction].

Sampler of spec §3.4: grid ``1 = t_0 > ... > t_N = 0``; the heavy encoder runs
at the steps of the refresh set R (a bool array with R[0] = True), the light
denoiser at every step and reads the cached features h together with the time
tau at which they were computed:

    z ~ N(0, I)
    for i in 0..N-1:
        if R[i]: h, tau = E(z, t_i), t_i            # heavy, sparse (lax.cond on a scalar)
        x_hat = D(z, t_i, h, tau)                    # light, every step
        z = DDIM / ancestral step from t_i to t_{i+1}
    return x_hat of the last step

The loop is a ``lax.scan`` with carry (z, h, tau, x_hat, counters); the refresh
set is a traced array, so one compilation serves every refresh schedule of a
given (num_steps, shape, sampler). Call counters in the carry are incremented
inside the branches that actually execute, so the returned counts are the exact
numbers of network evaluations.

FLOPs: XLA's ``cost_analysis`` of a scan/cond program does not reflect how often
a branch runs, so FLOPs are counted per component (one E call, one D call) and
multiplied by the call counts.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.typing import ArrayLike

from jaxpapers.core import validation as val
from jaxpapers.dual_rate._networks import DualRateModel, SingleNetwork
from jaxpapers.dual_rate._schedule import (
  NoiseSchedule,
  ancestral_step,
  ddim_step,
  edm_sigma_to_t,
  karras_sigmas,
  output_to_x,
)

SAMPLERS = ("ddim", "ancestral", "heun")
REFRESH_KINDS = ("uniform", "front_loaded", "back_loaded")


def refresh_schedule(
  num_steps: int, *, interval: int = 4, kind: str = "uniform"
) -> np.ndarray:
  """Refresh set as a bool array [num_steps] with ceil(num_steps / interval)
  refreshes, R[0] = True.

  'uniform': i mod interval == 0. 'front_loaded': refreshes dense at high noise
  (positions floor(N (j/m)^2)); 'back_loaded': dense at low noise (positions
  floor(N (1 - (1 - j/m)^2))).

  Args:
    num_steps: N, the number of sampler steps (an int >= 1).
    interval: average number of steps between refreshes (an int >= 1).
    kind: 'uniform', 'front_loaded' or 'back_loaded'.

  Returns:
    [num_steps] bool NumPy array R with ``R[0] = True`` and
    ``ceil(N / interval)`` True entries (fewer only when the grid has fewer
    steps than that).
  """
  for name, v in (("num_steps", num_steps), ("interval", interval)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  if kind not in REFRESH_KINDS:
    raise ValueError(f"kind must be one of {REFRESH_KINDS}, got {kind!r}")
  r = np.zeros(num_steps, bool)
  if kind == "uniform":
    r[::interval] = True
    return r
  m = math.ceil(num_steps / interval)
  u = np.arange(m) / m
  pos = np.floor(
    num_steps * (u**2 if kind == "front_loaded" else 1 - (1 - u) ** 2)
  ).astype(int)
  for j in range(1, m):  # make strictly increasing, staying inside the grid
    pos[j] = max(pos[j], pos[j - 1] + 1)
  for j in range(m - 1, -1, -1):
    pos[j] = min(pos[j], num_steps - (m - j))
  r[pos] = True
  return r


def _check_refresh(refresh, num_steps):
  refresh = jnp.asarray(refresh)
  if refresh.shape != (num_steps,) or refresh.dtype != jnp.bool_:
    raise ValueError(
      f"refresh must be a bool array of shape [{num_steps}], "
      f"got {refresh.dtype}{refresh.shape}"
    )
  return refresh


def _model_fns(model, schedule):
  """(encode(z, t, cond) | None, denoise(z, t, h, tau, cond) -> x_hat) for either model type."""
  if isinstance(model, DualRateModel):

    def enc(z, t, cond):
      return model.encode(z, t, cond)

    def den(z, t, h, tau, cond):
      dl = schedule.logsnr(t) - schedule.logsnr(tau)
      return output_to_x(
        model.denoise(z, t, h, tau, cond, dl),
        z,
        t,
        schedule,
        model.parametrization,
      )

    return enc, den
  if isinstance(model, SingleNetwork):

    def den1(z, t, h, tau, cond):
      del h, tau
      return output_to_x(
        model(z, t, cond), z, t, schedule, model.parametrization
      )

    return None, den1
  raise TypeError(
    "model must be a DualRateModel or SingleNetwork, "
    f"got {type(model).__name__}"
  )


def _run(
  model,
  key,
  refresh,
  cond,
  *,
  shape,
  num_steps,
  sampler,
  schedule,
  sigma_min,
  sigma_max,
  rho,
  use_features=True,
):
  """Pure sampler body (traced under jit)."""
  enc, den = _model_fns(model, schedule)
  b = shape[0]
  k_init, k_loop = jax.random.split(key)
  eps = jax.random.normal(k_init, shape, jnp.float32)
  bt = lambda t: jnp.full((b,), t, jnp.float32)
  if enc is not None:
    h0 = jnp.zeros(jax.eval_shape(enc, eps, bt(1.0), cond).shape, jnp.float32)
  else:
    h0 = jnp.zeros((b, 1, 1, 1), jnp.float32)
  # the no-feature control: h = 0 and tau = t at every step, no encoder
  if not use_features:
    enc, den0 = None, den
    den = lambda z, t, h, tau, cond: den0(z, t, h, t, cond)
  zero = jnp.zeros((), jnp.int32)

  def maybe_refresh(i, z, t, h, tau, n_e):
    if enc is None:
      return h, tau, n_e
    encode = enc
    return jax.lax.cond(
      refresh[i],
      lambda: (encode(z, bt(t), cond), t, n_e + 1),
      lambda: (h, tau, n_e),
    )

  if sampler in ("ddim", "ancestral"):
    ts = jnp.linspace(1.0, 0.0, num_steps + 1)

    def body(carry, i):
      z, h, tau, _, n_e, n_d = carry
      t, s = ts[i], ts[i + 1]
      h, tau, n_e = maybe_refresh(i, z, t, h, tau, n_e)
      x_hat = den(z, bt(t), h, bt(tau), cond)
      if sampler == "ddim":
        z = ddim_step(z, x_hat, t, s, schedule)
      else:
        z = ancestral_step(
          z, x_hat, t, s, schedule, jax.random.fold_in(k_loop, i)
        )
      return (z, h, tau, x_hat, n_e, n_d + 1), None

    init = (
      eps,
      h0,
      jnp.float32(1.0),
      jnp.zeros(shape, jnp.float32),
      zero,
      zero,
    )
    (_, _, _, x_hat, n_e, n_d), _ = jax.lax.scan(
      body, init, jnp.arange(num_steps)
    )
    return x_hat, {"encoder_calls": n_e, "denoiser_calls": n_d}

  # EDM Heun (Karras et al. 2022, Alg. 1 with S_churn = 0) in x_edm = z / alpha
  # coordinates: dx/dsigma = (x - D(x; sigma)) / sigma, D(x; sigma) = x_hat(z =
  # alpha x, t(sigma)).
  sig = karras_sigmas(
    num_steps, sigma_min=sigma_min, sigma_max=sigma_max, rho=rho
  )

  def dfn(x, sg, h, tau):
    a = 1.0 / jnp.sqrt(1.0 + sg**2)
    t = edm_sigma_to_t(sg, schedule)
    return den(a * x, bt(t), h, bt(tau), cond)

  def hbody(carry, i):
    x, h, tau, _, n_e, n_d = carry
    s_i, s_n = sig[i], sig[i + 1]
    t_i = edm_sigma_to_t(s_i, schedule)
    h, tau, n_e = maybe_refresh(i, x / jnp.sqrt(1.0 + s_i**2), t_i, h, tau, n_e)
    d1 = dfn(x, s_i, h, tau)
    d = (x - d1) / s_i
    x_e = x + (s_n - s_i) * d

    def correct():
      d2 = dfn(x_e, s_n, h, tau)
      return x + (s_n - s_i) * 0.5 * (d + (x_e - d2) / s_n), n_d + 2

    x_new, n_d = jax.lax.cond(
      i < num_steps - 1, correct, lambda: (x_e, n_d + 1)
    )
    return (x_new, h, tau, d1, n_e, n_d), None

  init = (
    sigma_max * eps,
    h0,
    jnp.float32(1.0),
    jnp.zeros(shape, jnp.float32),
    zero,
    zero,
  )
  (x, _, _, _, n_e, n_d), _ = jax.lax.scan(hbody, init, jnp.arange(num_steps))
  return x, {"encoder_calls": n_e, "denoiser_calls": n_d}


@functools.partial(
  jax.jit,
  static_argnames=(
    "graphdef",
    "shape",
    "num_steps",
    "sampler",
    "schedule",
    "sigma_min",
    "sigma_max",
    "rho",
    "use_features",
  ),
)
def _sample_jit(graphdef, state, key, refresh, cond, **kw):
  return _run(nnx.merge(graphdef, state), key, refresh, cond, **kw)


def sample(
  model: DualRateModel | SingleNetwork,
  key: jax.Array,
  shape: Sequence[int],
  *,
  num_steps: int,
  refresh: ArrayLike | None = None,
  sampler: str = "ddim",
  schedule: NoiseSchedule = NoiseSchedule(),
  cond: ArrayLike | None = None,
  sigma_min: float = 0.002,
  sigma_max: float = 80.0,
  rho: float = 7.0,
  return_info: bool = False,
  use_features: bool = True,
) -> jax.Array | tuple[jax.Array, dict[str, jax.Array]]:
  """Draw samples with the dual-rate (or single-network) sampler.

  Args:
    model: a DualRateModel (encoder on the refresh set, denoiser every step) or
      a SingleNetwork (the network every step; ``refresh`` is ignored).
    key: a typed PRNG key.
    shape: static sample shape [B, H, W, C].
    num_steps: N, the number of sampler steps.
    refresh: bool array [N] with refresh[0] True (default: every step). Traced,
      so changing it does not recompile.
    sampler: 'ddim' (eta = 0), 'ancestral' or 'heun' (EDM grid
      sigma_min..sigma_max, rho; 2N - 1 denoiser calls, both Heun evaluations
      use the cached h).
    schedule: the NoiseSchedule the model was trained with.
    cond: optional int labels [B] in [0, num_classes) of a class-conditional
      model (None for unconditional sampling).
    sigma_min: smallest nonzero EDM noise level of the 'heun' grid.
    sigma_max: largest EDM noise level of the 'heun' grid.
    rho: warping exponent of the 'heun' grid.
    return_info: also return exact call counts {'encoder_calls',
      'denoiser_calls'}.
    use_features: False samples a DualRateModel as the no-feature control
      (trained with ``dual_rate_loss(..., use_features=False)``): the encoder is
      never called, the denoiser reads h = 0 with tau = t, and ``refresh`` is
      ignored (cost: N * C_D).

  Returns:
    samples, a float32 [B, H, W, C] array (the x_hat of the last step); with
    ``return_info`` the pair ``(samples, counts)`` where ``counts`` maps
    'encoder_calls' and 'denoiser_calls' to int32 scalars.

  Bad values: a label outside [0, num_classes) raises ``ValueError`` when
  ``cond`` is concrete; under an outer ``jax.jit`` the samples of the affected
  examples are NaN (wrap with ``jax.experimental.checkify.checkify`` to get the
  error).
  """
  if not isinstance(model, (DualRateModel, SingleNetwork)):
    raise TypeError(
      "model must be a DualRateModel or SingleNetwork, "
      f"got {type(model).__name__}"
    )
  if not isinstance(schedule, NoiseSchedule):
    raise TypeError(
      f"schedule must be a NoiseSchedule, got {type(schedule).__name__}"
    )
  if sampler not in SAMPLERS:
    raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
  if not isinstance(use_features, bool):
    raise TypeError(f"use_features must be a bool, got {use_features!r}")
  if (
    isinstance(num_steps, bool)
    or not isinstance(num_steps, (int, np.integer))
    or num_steps < 1
  ):
    raise ValueError(f"num_steps must be an int >= 1, got {num_steps!r}")
  shape = tuple(shape)
  if len(shape) != 4 or not all(
    isinstance(v, (int, np.integer)) and v >= 1 for v in shape
  ):
    raise ValueError(
      f"shape must be [B, H, W, C] of positive ints, got {shape}"
    )
  shape = tuple(int(v) for v in shape)
  if sampler == "heun":
    # checks the grid
    karras_sigmas(num_steps, sigma_min=sigma_min, sigma_max=sigma_max, rho=rho)
  if refresh is None:
    refresh = np.ones(num_steps, bool)
  refresh_ok = None
  if (
    isinstance(model, DualRateModel)
    and np.ndim(refresh) == 1
    and np.shape(refresh)[0]
  ):
    msg = "refresh[0] must be True: the first step needs the encoder's features"
    refresh_ok = val.debug_check_values(
      np.asarray(refresh)[0]
      if val.is_concrete(refresh)
      else jnp.asarray(refresh)[0],
      msg,
    )
  refresh = _check_refresh(refresh, num_steps)
  trunk = (
    model.encoder.trunk if isinstance(model, DualRateModel) else model.trunk
  )
  nc = trunk.num_classes
  cond_ok = None
  if cond is not None:
    if nc == 0:
      raise ValueError(
        "cond was given but the model is unconditional (num_classes=0)"
      )
    if not isinstance(cond, (jax.Array, np.ndarray)):
      cond = np.asarray(cond)
    if not jnp.issubdtype(cond.dtype, jnp.integer):
      raise TypeError(
        f"cond must be integer class labels, got dtype {cond.dtype}"
      )
    if cond.shape != (shape[0],):
      raise ValueError(
        f"cond must be int labels of shape [{shape[0]}], got {cond.shape}"
      )
    in_range = (cond >= 0) & (cond < nc)
    msg = f"cond must be class labels in [0, {nc}) (num_classes={nc})"
    if val.debug_check_values(in_range, msg) is not None:
      cond_ok = jnp.asarray(in_range)[:, None, None, None]
    cond = jnp.asarray(cond, jnp.int32)
  graphdef, state = nnx.split(model)
  x, info = _sample_jit(
    graphdef,
    state,
    key,
    refresh,
    cond,
    shape=shape,
    num_steps=num_steps,
    sampler=sampler,
    schedule=schedule,
    sigma_min=float(sigma_min),
    sigma_max=float(sigma_max),
    rho=float(rho),
    use_features=use_features,
  )
  x = val.poison_floats(val.poison_floats(x, cond_ok), refresh_ok)
  return (x, info) if return_info else x


# ------------------------------------------------------------------------------
# Cost accounting.
# ------------------------------------------------------------------------------
def xla_flops(fn: Callable[..., Any], *args: Any) -> float:
  """FLOPs of one call of ``fn(*args)`` from XLA's compiled cost analysis.

  Args:
    fn: a jittable function.
    *args: its arguments (arrays or pytrees of arrays).

  Returns:
    the 'flops' entry of the compiled program's cost analysis (0.0 where XLA
    reports none).
  """
  if not callable(fn):
    raise TypeError(f"fn must be callable, got {type(fn).__name__}")
  ca = jax.jit(fn).lower(*args).compile().cost_analysis()
  if isinstance(ca, (list, tuple)):
    ca = ca[0]
  return float(ca.get("flops", 0.0)) if ca else 0.0


def component_flops(
  model: DualRateModel | SingleNetwork,
  example_batch: ArrayLike,
  cond: ArrayLike | None = None,
  *,
  schedule: NoiseSchedule = NoiseSchedule(),
) -> dict[str, float]:
  """Per-call FLOPs of each component at the batch size of ``example_batch``.

  Pass B = 1 for per-sample costs.

  Args:
    model: a DualRateModel or a SingleNetwork.
    example_batch: [B, H, W, C] float images of the shape the model is called
      on.
    cond: [B] int class labels, or None.
    schedule: the noise schedule used to convert the output to x_hat.

  Returns:
    ``{'encoder': C_E, 'denoiser': C_D}`` for a DualRateModel (the denoiser
    includes the x_hat conversion) and ``{'network': C}`` for a SingleNetwork:
    FLOPs of one call on the batch.
  """
  if not isinstance(model, (DualRateModel, SingleNetwork)):
    raise TypeError(
      "model must be a DualRateModel or SingleNetwork, "
      f"got {type(model).__name__}"
    )
  if np.ndim(example_batch) != 4:
    raise ValueError(
      f"example_batch must be [B, H, W, C], got shape {np.shape(example_batch)}"
    )
  graphdef, state = nnx.split(model)
  z = jnp.asarray(example_batch, jnp.float32)
  t = jnp.full((z.shape[0],), 0.5, jnp.float32)

  def call(name):
    def f(st, z, t, cond):
      enc, den = _model_fns(nnx.merge(graphdef, st), schedule)
      if name == "encoder":
        assert enc is not None, "only a dual-rate model has an encoder to time"
        return enc(z, t, cond)
      h = (
        enc(z, t, cond) if enc is not None else jnp.zeros((z.shape[0], 1, 1, 1))
      )
      if name == "denoiser":
        h = jax.lax.stop_gradient(h)
      return den(z, t, h, t, cond)

    return f

  if isinstance(model, DualRateModel):
    enc_f = xla_flops(call("encoder"), state, z, t, cond)
    graphdef_d, st_d = nnx.split(model.denoiser)
    h = model.encode(z, t, cond)

    def dfn(st, z, t, h, cond):
      d = nnx.merge(graphdef_d, st)
      dl = schedule.logsnr(t) - schedule.logsnr(t)
      return output_to_x(
        d(z, t, h, t, cond, dl), z, t, schedule, model.parametrization
      )

    return {"encoder": enc_f, "denoiser": xla_flops(dfn, st_d, z, t, h, cond)}
  if isinstance(model, SingleNetwork):
    return {"network": xla_flops(call("network"), state, z, t, cond)}
  raise TypeError(
    "model must be a DualRateModel or SingleNetwork, "
    f"got {type(model).__name__}"
  )


def _host_refresh(refresh):
  r = np.asarray(refresh)
  if r.ndim != 1 or r.shape[0] < 1 or r.dtype != np.bool_:
    raise ValueError(
      f"refresh must be a non-empty 1-D bool array [N], got {r.dtype}{r.shape}"
    )
  return r


def call_counts(
  refresh: ArrayLike, *, sampler: str = "ddim", single_network: bool = False
) -> dict[str, int]:
  """Hand count of network evaluations per sample for a refresh set.

  Args:
    refresh: [N] bool refresh set, N >= 1.
    sampler: 'ddim', 'ancestral' or 'heun' (2N - 1 denoiser calls).
    single_network: count for a SingleNetwork (no encoder calls).

  Returns:
    ``{'encoder_calls': n_E, 'denoiser_calls': n_D}``, Python ints.
  """
  if sampler not in SAMPLERS:
    raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
  refresh = _host_refresh(refresh)
  n = refresh.shape[0]
  d = 2 * n - 1 if sampler == "heun" else n
  return {
    "encoder_calls": 0 if single_network else int(refresh.sum()),
    "denoiser_calls": d,
  }


def sampling_cost(
  flops: dict[str, float], refresh: ArrayLike, *, sampler: str = "ddim"
) -> dict[str, int | float]:
  """Total FLOPs per sample = n_E * C_E + n_D * C_D (or n * C for a single network).

  Args:
    flops: the dict of :func:`component_flops` (finite non-negative numbers).
    refresh: [N] bool refresh set.
    sampler: 'ddim', 'ancestral' or 'heun'.

  Returns:
    the counts of :func:`call_counts` plus 'flops', the total as a float.
  """
  if not isinstance(flops, dict) or set(flops) not in (
    {"network"},
    {"encoder", "denoiser"},
  ):
    raise ValueError(
      f"flops must be {{'encoder': C_E, 'denoiser': C_D}} or {{'network': "
      f"C}} as from component_flops, got {flops!r}"
    )
  if any(not np.isfinite(v) or v < 0 for v in flops.values()):
    raise ValueError(
      f"flops must be finite non-negative numbers, got {flops!r}"
    )
  single = "network" in flops
  c = call_counts(refresh, sampler=sampler, single_network=single)
  if single:
    total = c["denoiser_calls"] * flops["network"]
  else:
    total = (
      c["encoder_calls"] * flops["encoder"]
      + c["denoiser_calls"] * flops["denoiser"]
    )
  return {**c, "flops": float(total)}


def speedup(c_heavy: float, c_light: float, refresh: ArrayLike) -> float:
  """Cost-model speed-up over refreshing every step: (C_E + C_D) / (C_D + |R| C_E / N).

  Args:
    c_heavy: cost C_E of one encoder call, finite and >= 0.
    c_light: cost C_D of one denoiser call, finite and > 0.
    refresh: [N] bool refresh set, non-empty.

  Returns:
    the speed-up factor (>= 1).
  """
  refresh = _host_refresh(refresh)
  if not (
    np.isfinite(c_heavy)
    and np.isfinite(c_light)
    and c_heavy >= 0
    and c_light > 0
  ):
    raise ValueError(
      "need finite costs c_heavy >= 0 and c_light > 0, "
      f"got {c_heavy} and {c_light}"
    )
  return float(
    (c_heavy + c_light) / (c_light + refresh.sum() * c_heavy / refresh.shape[0])
  )


def wall_time(fn: Callable[..., Any], *args: Any, repeats: int = 5) -> float:
  """Median wall time (s) of ``fn(*args)`` after one warm-up call, blocking on
  the result.

  Args:
    fn: the function to time.
    *args: its arguments.
    repeats: number of timed calls (an int >= 1).

  Returns:
    the median of the timed calls, in seconds.
  """
  if not callable(fn):
    raise TypeError(f"fn must be callable, got {type(fn).__name__}")
  if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
    raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - t0)
  return statistics.median(times)
