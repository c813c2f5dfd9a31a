"""Shifted local linear-ICL data (reconstruction of the paper's local linear-ICL
model).

Model (every formula here is a reconstruction; the paper states only that it
works in a "local linear-ICL model" with "coupled covariate and task-prior
shifts"):

* J task clusters with centres ``wbar_j ~ N(0, I/d)`` and covariate centres
  ``m_j ~ N(0, r^2 I)``.
* Pool (source) example i: cluster ``j_i ~ U{0..J-1}``, ``w_i = wbar_{j_i} +
  tau_w xi_i`` with ``xi_i ~ N(0, I/d)``, ``x_i ~ N(m_{j_i}, I)`` and ``y_i =
  w_i^T x_i + sigma eps_i``.
* Query (target): cluster ``j_q``, ``x_q ~ N(m_{j_q} + delta_x, I)``, ``w_q =
  wbar_{j_q} + delta_w + tau_w xi_q``, with the coupled shift
  ``delta_x = s_x u`` and ``delta_w = s_w u / sqrt(d)`` along one shared unit
  vector u (a coupling of ``-1`` gives the anti-coupled ``delta_w = -s_w u /
  sqrt(d)``). The task shift is measured in units of the task prior's
  per-direction scale ``1/sqrt(d)``, the covariate shift in units of the
  covariate noise (reconstruction).
* Classification variant: ``y = sign(w^T x + sigma eps)`` in {-1, +1}.

The task noise ``xi`` is scaled by ``1/sqrt(d)`` like the centres, so ``tau_w``
is relative to the spread of the task prior (reconstruction).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import jax
import jax.numpy as jnp
from flax import struct

from jaxpapers.core import validation as V

TASKS = ("regression", "classification")


@dataclasses.dataclass(frozen=True)
class ShiftConfig:
  """Static configuration of the shifted local linear-ICL generator.

  Each argument is kept as the field of the same name.

  Args:
    d: input dimension.
    n_clusters: number of task clusters J.
    r: scale of the covariate centres, ``m_j ~ N(0, r^2 I)``.
    tau_w: within-cluster task spread (relative to the prior's ``1/sqrt(d)``
      scale).
    noise: label noise sigma.
    s_x: covariate shift size along u.
    s_w: task-prior shift size along u (in units of ``1/sqrt(d)``).
    coupling: +1 (coupled, ``delta_w = s_w u``) or -1 (anti-coupled).
    task: ``'regression'`` or ``'classification'``.
  """

  d: int = 16
  n_clusters: int = 64
  r: float = 2.0
  tau_w: float = 0.1
  noise: float = 0.1
  s_x: float = 0.0
  s_w: float = 0.0
  coupling: float = 1.0
  task: Literal["regression", "classification"] = "regression"

  def __post_init__(self):
    V.check_int(self.d, "ShiftConfig.d", min_value=1)
    V.check_int(self.n_clusters, "ShiftConfig.n_clusters", min_value=1)
    for name in ("r", "tau_w", "noise", "s_x", "s_w"):
      V.check_float(getattr(self, name), f"ShiftConfig.{name}", min_value=0.0)
    if self.coupling not in (1.0, -1.0):
      raise ValueError(
        f"ShiftConfig.coupling must be +1 or -1, got {self.coupling!r}"
      )
    if self.task not in TASKS:
      raise ValueError(
        f"ShiftConfig.task must be one of {TASKS}, got {self.task!r}"
      )


@struct.dataclass
class ICLData:
  """A retrieval pool and a set of shifted queries (a pytree; see
  :func:`check_data`).

  Each argument is kept as the field of the same name.

  Args:
    pool_x: float [P, d] pool inputs.
    pool_y: float [P] pool labels.
    pool_task: int [P] pool cluster ids.
    pool_w: float [P, d] the pool examples' task vectors.
    q_x: float [Q, d] query inputs.
    q_y: float [Q] query labels.
    q_task: int [Q] query cluster ids.
    q_w: float [Q, d] query task vectors.
    w0: float [d] the reader's prior, the mean of the cluster centres
      ``mean_j wbar_j``.
  """

  pool_x: jax.Array
  pool_y: jax.Array
  pool_task: jax.Array
  pool_w: jax.Array
  q_x: jax.Array
  q_y: jax.Array
  q_task: jax.Array
  q_w: jax.Array
  w0: jax.Array


def check_data(data) -> ICLData:
  """Shape and dtype checks of an :class:`ICLData` (trace time)."""
  if not isinstance(data, ICLData):
    raise TypeError(f"data must be an ICLData, got {type(data).__name__}")
  px = V.check_array(
    data.pool_x, "data.pool_x", ndim=2, dtype="float", nonempty=True
  )
  P, d = px.shape
  V.check_array(data.pool_y, "data.pool_y", shape=(P,), dtype="real")
  V.check_array(data.pool_task, "data.pool_task", shape=(P,), dtype="int")
  V.check_array(data.pool_w, "data.pool_w", shape=(P, d), dtype="float")
  qx = V.check_array(
    data.q_x, "data.q_x", shape=(None, d), dtype="float", nonempty=True
  )
  Q = qx.shape[0]
  V.check_array(data.q_y, "data.q_y", shape=(Q,), dtype="real")
  V.check_array(data.q_task, "data.q_task", shape=(Q,), dtype="int")
  V.check_array(data.q_w, "data.q_w", shape=(Q, d), dtype="float")
  V.check_array(data.w0, "data.w0", shape=(d,), dtype="float")
  return data


@functools.partial(
  jax.jit, static_argnames=("d", "n_clusters", "n_pool", "n_queries")
)
def _generate(key, scal, d, n_clusters, n_pool, n_queries) -> ICLData:
  # traced: one compile for every shift and task
  r, tau_w, noise, s_x, s_w, is_cls = scal
  J = n_clusters
  n = n_pool + n_queries
  # Two random draws in all (one normal blob, one uniform vector), sliced into
  # the model's variables: compiling many separate threefry calls dominates
  # small runs.
  k_norm, k_unif = jax.random.split(key)
  sizes = (J * d, J * d, d, n * d, n * d, n)
  z = jax.random.normal(k_norm, (sum(sizes),))
  parts = []
  start = 0
  for size in sizes:
    parts.append(z[start : start + size])
    start += size
  z_wbar, z_m, z_u, z_xi, z_x, z_eps = parts
  wbar = z_wbar.reshape(J, d) / jnp.sqrt(d)  # [J, d]
  m = r * z_m.reshape(J, d)  # [J, d]
  u = z_u / jnp.linalg.norm(z_u)
  task_id = jnp.minimum(
    jnp.floor(jax.random.uniform(k_unif, (n,)) * J), J - 1
  ).astype(jnp.int32)
  is_q = (jnp.arange(n) >= n_pool)[:, None]  # [n, 1]
  w = wbar[task_id] + tau_w * z_xi.reshape(n, d) / jnp.sqrt(d)
  w = w + jnp.where(is_q, s_w * u / jnp.sqrt(d), 0.0)
  x = m[task_id] + z_x.reshape(n, d) + jnp.where(is_q, s_x * u, 0.0)
  f = jnp.einsum("nd,nd->n", w, x) + noise * z_eps
  y = jnp.where(is_cls > 0, jnp.where(f >= 0, 1.0, -1.0), f)
  px, py, pt, pw = x[:n_pool], y[:n_pool], task_id[:n_pool], w[:n_pool]
  qx, qy, qt, qw = x[n_pool:], y[n_pool:], task_id[n_pool:], w[n_pool:]
  return ICLData(px, py, pt, pw, qx, qy, qt, qw, wbar.mean(0))


def make_shifted_linear_icl(
  key: jax.Array, cfg: ShiftConfig, n_pool: int, n_queries: int
) -> ICLData:
  """Draws a pool and shifted queries from the local linear-ICL model (module
  docstring).

  Args:
    key: a typed PRNG key (``jax.random.key``).
    cfg: a :class:`ShiftConfig` (static).
    n_pool: pool size P.
    n_queries: number of queries Q.

  Returns:
    :class:`ICLData` with pool arrays ``[P, ...]`` and query arrays ``[Q, ...]``
    (float32).

  Example:
    >>> data = make_shifted_linear_icl(jax.random.key(0), ShiftConfig(s_x=1.0, s_w=1.0), 500, 50)
  """
  if not isinstance(cfg, ShiftConfig):
    raise TypeError(f"cfg must be a ShiftConfig, got {type(cfg).__name__}")
  n_pool = V.check_int(n_pool, "n_pool", min_value=1)
  n_queries = V.check_int(n_queries, "n_queries", min_value=1)
  if not (
    isinstance(key, jax.Array)
    and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError("key must be a typed PRNG key from jax.random.key(seed)")
  if key.shape != ():
    raise ValueError(
      f"key must be a single key (shape ()), got shape {key.shape}"
    )
  scal = [cfg.r, cfg.tau_w, cfg.noise, cfg.s_x, cfg.coupling * cfg.s_w]
  scal = jnp.asarray(scal + [float(cfg.task == "classification")], jnp.float32)
  return _generate(key, scal, cfg.d, cfg.n_clusters, n_pool, n_queries)
