"""Fitting free embeddings with gradient descent, and the WBNL critical-n
protocol."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxpapers.margins import _losses, _margins, _relevance
from jaxpapers.margins import _validation as val

LOSSES = ("sigmoid", "infonce", "margin")


class FitResult(NamedTuple):
  """Free embeddings fitted to a relevance matrix.

  With a batch of keys every field has a leading seed axis ``[S, ...]``.

  Attributes:
    U: ``[N, d]`` unit query embeddings.
    V: ``[n, d]`` unit document embeddings.
    log_t: final ``log t`` (sigmoid / InfoNCE; unused for the margin loss).
    b: final sigmoid bias (0 for the other losses).
    history: ``[steps]`` loss value at every step.
  """

  U: jax.Array
  V: jax.Array
  log_t: jax.Array
  b: jax.Array
  history: jax.Array


def _run_fns(*, loss, steps, learn_temperature, learn_bias, variant):
  """Per-run ``(init_fn, step_fn, finish)`` of one fit (one seed, one
  dimension).

  A run's hyperparameters are ``{'U0': [N, d], 'V0': [n, d], 'mask': [d]}``
  (standard-normal draws and the 0/1 mask of the coordinates in use); the shared
  data is ``{'A': [N, n] bool, 'lr', 'log_t0', 'b0', 'beta0', 'beta1'}`` (the
  scalars traced, so other values reuse the compiled program). Masked
  coordinates start at 0 and get exactly zero gradients (the normalised scores
  do not depend on them), so Adam never moves them: one program serves every
  dimension up to d.
  """

  def objective(p, t, data):
    A, beta0, beta1 = data["A"], data["beta0"], data["beta1"]
    log_t = (
      p["log_t"] if learn_temperature else jax.lax.stop_gradient(p["log_t"])
    )
    b = p["b"] if learn_bias else jax.lax.stop_gradient(p["b"])
    if loss == "sigmoid":
      return _losses.sigmoid_loss(
        p["U"], p["V"], A, log_temperature=log_t, bias=b
      )
    if loss == "infonce":
      return _losses.infonce_loss(
        p["U"], p["V"], A, log_temperature=log_t, variant=variant
      )
    beta = beta0 * (beta1 / beta0) ** (t / max(steps - 1, 1))
    return _losses.margin_loss(p["U"], p["V"], A, beta=beta)

  def init_fn(hp, key, data):
    p = {
      "U": hp["U0"] * hp["mask"],
      "V": hp["V0"] * hp["mask"],
      "log_t": jnp.asarray(data["log_t0"], jnp.float32),
      "b": jnp.asarray(data["b0"], jnp.float32),
    }
    return p, optax.adam(data["lr"]).init(p)

  def step_fn(state, hp, key, t, data):
    p, opt = state
    value, g = jax.value_and_grad(objective)(
      p, jnp.asarray(t, jnp.float32), data
    )
    upd, opt = optax.adam(data["lr"]).update(g, opt, p)
    return (optax.apply_updates(p, upd), opt), value

  def finish(p, history):
    return FitResult(
      U=val.normalize_rows(p["U"]),
      V=val.normalize_rows(p["V"]),
      log_t=p["log_t"],
      b=p["b"],
      history=history,
    )

  return init_fn, step_fn, finish


@functools.partial(
  jax.jit,
  static_argnames=(
    "loss",
    "steps",
    "learn_temperature",
    "learn_bias",
    "variant",
  ),
)
def _fit(
  inits,
  A,
  *,
  loss,
  steps,
  lr,
  learn_temperature,
  learn_bias,
  log_t0,
  b0,
  beta0,
  beta1,
  variant,
):
  # inits = (U0 [S, N, d], V0 [S, n, d]) standard normal, d the run's width; one
  # lax.scan of Adam steps, the seeds vmapped. (The initial draws are made on
  # the host: random number generation inside this vmapped program multiplies
  # its compile time.) A sequence of dimensions calls this program once per
  # width: one program holding a scan per width ran no faster (the fits'
  # arithmetic is the floor) and compiled every new set of widths anew; see
  # benchmarks/margins_throughput.py.
  init_fn, step_fn, finish = _run_fns(
    loss=loss,
    steps=steps,
    learn_temperature=learn_temperature,
    learn_bias=learn_bias,
    variant=variant,
  )
  data = dict(A=A, lr=lr, log_t0=log_t0, b0=b0, beta0=beta0, beta1=beta1)

  def fit_one(U0, V0):  # one seed: [N, d], [n, d] -> FitResult
    hp = {"U0": U0, "V0": V0, "mask": jnp.ones(U0.shape[-1], jnp.float32)}
    state = init_fn(hp, None, data)
    (p, _), hist = jax.lax.scan(
      lambda s, t: step_fn(s, hp, None, t, data),
      state,
      jnp.arange(steps, dtype=jnp.int32),
    )
    return finish(p, hist)

  return jax.vmap(fit_one)(*inits)  # [S, ...]


def _fit_dims(inits, A, dims, statics):
  """:func:`_fit` for each width in ``dims`` from the first ``d`` columns of the
  draws.

  Args:
    inits: host (numpy) draws ``(U0 [S, N, d_max], V0 [S, n, d_max])``.

  Returns:
    The results as host arrays stacked ``[D, S, ...]``, ``U``/``V`` padded with
    zeros to ``d_max`` columns. (Slicing, padding and stacking on the host: as
    device operations each new shape would compile a program of its own.)
  """
  d_max = inits[0].shape[-1]
  per_dim = []
  for d in dims:
    res = _fit(
      (jnp.asarray(inits[0][..., :d]), jnp.asarray(inits[1][..., :d])),
      A,
      **statics,
    )
    res = jax.tree.map(np.asarray, res)
    pad = ((0, 0), (0, 0), (0, d_max - d))  # [S, rows, d] -> [S, rows, d_max]
    per_dim.append(res._replace(U=np.pad(res.U, pad), V=np.pad(res.V, pad)))
  return jax.tree.map(lambda *xs: np.stack(xs), *per_dim)


_ENGINES: dict[tuple, tuple] = {}


def _fit_on_sweep(
  keys, inits, A, masks, *, chunk_size, checkpoint_dir, statics
):
  """The same fit as :func:`_fit` with the (dimension, seed) grid on
  ``core.Sweep``."""
  from jaxpapers import core  # the library's shared engine

  static_names = ("loss", "steps", "learn_temperature", "learn_bias", "variant")
  cache_key = tuple(statics[k] for k in static_names)
  if cache_key not in _ENGINES:
    init_fn, step_fn, finish = _run_fns(**{k: statics[k] for k in static_names})
    _ENGINES[cache_key] = (core.Sweep(init_fn, step_fn), finish)
  engine, finish = _ENGINES[cache_key]
  num_d, num_s = masks.shape[0], inits[0].shape[0]
  # runs: dimension major, seed minor (R = D * S)
  hp = {
    "U0": jnp.tile(inits[0], (num_d, 1, 1)),
    "V0": jnp.tile(inits[1], (num_d, 1, 1)),
    "mask": jnp.repeat(masks, num_s, axis=0),
  }
  run_keys = jnp.tile(keys, num_d)
  data = dict(
    A=A,
    **{
      k: jnp.float32(statics[k])
      for k in ("lr", "log_t0", "b0", "beta0", "beta1")
    },
  )
  res = engine.run(
    hp,
    run_keys,
    num_steps=statics["steps"],
    chunk_size=chunk_size,
    data=data,
    checkpoint_dir=checkpoint_dir,
    show_progress=False,
  )
  out = finish(res.state[0], jnp.asarray(res.history))
  return jax.tree.map(lambda x: x.reshape((num_d, num_s) + x.shape[1:]), out)


def fit_free_embeddings(
  key: jax.Array,
  A: ArrayLike,
  d: int | Sequence[int],
  *,
  loss: str = "sigmoid",
  steps: int = 3000,
  lr: float = 1e-2,
  learn_temperature: bool = True,
  learn_bias: bool = True,
  init_log_temperature: float = math.log(10.0),
  init_bias: float | str = "prior",
  beta: tuple[float, float] = (10.0, 100.0),
  infonce_variant: str = "all",
  sweep: bool = False,
  chunk_size: int | None = None,
  checkpoint_dir: str | os.PathLike | None = None,
) -> FitResult:
  r"""Optimises unconstrained ``U [N, d]``, ``V [n, d]`` (full batch, Adam) on a
  loss.

  The free-embedding model of WBNL25 and arXiv:2605.23556: every query and
  document vector is a free parameter; rows are normalised inside the losses and
  in the result.

  * ``'sigmoid'``: :func:`sigmoid_loss`; ``log t`` starts at
    ``init_log_temperature`` (log 10) and ``b`` at ``log(p / (1 - p))`` with
    ``p = mean(A)`` (``init_bias='prior'``) or at the given number; each is
    learned unless ``learn_temperature`` / ``learn_bias`` is False.
  * ``'infonce'``: :func:`infonce_loss` with ``infonce_variant``; the
    temperature as above.
  * ``'margin'``: :func:`margin_loss` with ``beta`` annealed geometrically from
    ``beta[0]`` to ``beta[1]`` over the run.

  Args:
    key: a ``jax.random.key``, or a batch ``[S]`` of keys: the seeds are fitted
      in one compiled, vmapped program and every result field gets a leading
      ``[S]`` axis.
    A: ``[N, n]`` binary relevance.
    d: embedding dimension, or a sequence of dimensions: the results then get a
      leading ``[len(d)]`` axis (before any seed axis) and ``U``/``V`` have
      ``max(d)`` columns, zero beyond each run's own ``d``. Each dimension is
      its own fit at its own width (one compiled program per width, reused by
      every call with that width and data shape), from the first ``d`` columns
      of ``max(d)``-column initial draws.
    loss: one of ``'sigmoid'``, ``'infonce'``, ``'margin'``.
    steps: Adam steps.
    lr: Adam learning rate.
    learn_temperature: learn ``log t`` (else it stays at
      ``init_log_temperature``).
    learn_bias: learn the sigmoid bias ``b`` (else it stays at its initial
      value).
    init_log_temperature: initial ``log t``.
    init_bias: initial ``b``: a number, or ``'prior'`` for ``log(p / (1 - p))``.
    beta: ``(start, end)`` of the margin loss's annealed ``β``.
    infonce_variant: the ``variant`` of :func:`infonce_loss`.
    sweep: run the (dimension, seed) grid on :class:`jaxpapers.core.Sweep` (one
      runs axis sharded over the devices, ``lax.scan`` chunks of ``chunk_size``
      steps, an orbax checkpoint per chunk in ``checkpoint_dir`` that a rerun
      resumes from). Same result up to float rounding; the default is one jitted
      program on the default device.
    chunk_size: steps per ``lax.scan`` chunk with ``sweep=True``.
    checkpoint_dir: the checkpoint folder with ``sweep=True`` (None: no
      checkpoints).

  Returns:
    :class:`FitResult` with unit-row ``U [..., N, d]``, ``V [..., n, d]`` and
    the loss ``history [..., steps]``.
  """
  if loss not in LOSSES:
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
  if infonce_variant not in _losses.INFONCE_VARIANTS:
    raise ValueError(
      f"infonce_variant must be one of {_losses.INFONCE_VARIANTS}, "
      f"got {infonce_variant!r}."
    )
  dims = [d] if isinstance(d, (int, np.integer)) else list(d)
  for name, v in [("d", x) for x in dims] + [("steps", steps)]:
    if not isinstance(v, (int, np.integer)) or v <= 0:
      raise ValueError(
        f"{name} must be a positive int (d may also be a sequence of them), "
        f"got {v!r}."
      )
  if not dims:
    raise ValueError(
      "d must be a positive int or a non-empty sequence of them."
    )
  if not lr > 0:
    raise ValueError(f"lr must be positive, got {lr!r}.")
  A = jnp.asarray(A)
  if A.ndim != 2:
    raise ValueError(
      f"A must be a 2-D binary matrix [N, n], got shape {A.shape}."
    )
  val.check_binary(A)
  A = A.astype(bool)
  N, n = A.shape
  if init_bias == "prior":
    p = float(np.clip(np.mean(np.asarray(A)), 1e-6, 1 - 1e-6))
    b0 = math.log(p / (1 - p))
  else:
    b0 = float(init_bias)
  if loss != "sigmoid":
    b0 = 0.0
  single = jnp.ndim(key) == 0
  keys = key[None] if single else key
  d_max = max(int(x) for x in dims)
  U0, V0 = [], []
  for kk in keys:  # host-side draws, deterministic in each key
    rng = np.random.default_rng(
      np.asarray(jax.random.key_data(kk)).ravel().tolist()
    )
    U0.append(rng.standard_normal((N, d_max), dtype=np.float32))
    V0.append(rng.standard_normal((n, d_max), dtype=np.float32))
  host_inits = (np.stack(U0), np.stack(V0))
  statics = dict(
    loss=loss,
    steps=int(steps),
    lr=float(lr),
    learn_temperature=bool(learn_temperature),
    learn_bias=bool(learn_bias) and loss == "sigmoid",
    log_t0=float(init_log_temperature),
    b0=b0,
    beta0=float(beta[0]),
    beta1=float(beta[1]),
    variant=infonce_variant,
  )
  if sweep:
    masks = jnp.asarray(
      np.arange(d_max)[None, :] < np.asarray(dims)[:, None], jnp.float32
    )
    res = _fit_on_sweep(
      keys,
      tuple(jnp.asarray(x) for x in host_inits),
      A,
      masks,
      chunk_size=chunk_size,
      checkpoint_dir=checkpoint_dir,
      statics=statics,
    )  # [D, S, ...]
  elif isinstance(d, (int, np.integer)):
    # [S, ...]
    res = _fit(tuple(jnp.asarray(x) for x in host_inits), A, **statics)
    return jax.tree.map(lambda x: x[0], res) if single else res
  else:
    res = _fit_dims(host_inits, A, dims, statics)  # [D, S, ...] on the host
    return jax.device_put(jax.tree.map(lambda x: x[:, 0] if single else x, res))
  if single:
    res = jax.tree.map(lambda x: x[:, 0], res)
  if isinstance(d, (int, np.integer)):
    res = jax.tree.map(lambda x: x[0], res)
  return res


def critical_n_grid(n_max: int, k: int) -> list[int]:
  """The n values :func:`critical_n` scans: every n from ``k + 1`` to 12, then
  steps of 25%.

  Args:
    n_max: the largest n (always on the grid when it exceeds 12).
    k: subset size; the grid starts at ``k + 1``.

  Returns:
    The increasing list ``[k + 1, ..., min(n_max, 12)]`` followed by
    ``n <- ceil(1.25 n)`` from 12, capped at ``n_max``.
  """
  if not 1 <= k < n_max:
    raise ValueError(
      f"critical_n_grid needs 1 <= k < n_max, got k={k!r}, n_max={n_max!r}."
    )
  grid = list(range(k + 1, min(n_max, 12) + 1))
  n = 12
  while n < n_max:
    n = min(n_max, int(math.ceil(n * 1.25)))
    grid.append(n)
  return sorted(set(grid))


def critical_n(
  key: jax.Array,
  d: int | Sequence[int],
  k: int = 2,
  *,
  n_max: int = 64,
  n_min: int | None = None,
  n_grid: Sequence[int] | None = None,
  restarts: int = 3,
  steps: int = 1000,
  loss: str = "infonce",
  lr: float = 5e-2,
  return_trace: bool = False,
) -> int | dict[int, int] | tuple[int | dict[int, int], dict]:
  """Largest n for which free embeddings in R^d retrieve every k-subset exactly
  (WBNL25).

  For a candidate n the all-k-subsets matrix is fitted (``restarts`` seeds,
  vmapped, ``steps`` full-batch Adam steps on ``loss``); n counts as solved when
  some seed reaches 100% top-k accuracy, i.e. per-query margin ``m_q > 0``. The
  result depends on the optimisation budget, as in WBNL25 (arXiv:2508.21038);
  their protocol used InfoNCE, so that is the default here [reconstruction].

  * ``d`` an int and no ``n_grid``: binary search over ``[n_min, n_max]``
    (assumes monotonicity: a solution for n restricts to any n' < n).
  * ``d`` a sequence, or ``n_grid`` given: scan the increasing ``n_grid``
    (default ``n_min..n_max``) fitting every d in one compiled program per n;
    each d's answer is the last grid value before its first failure.

  Args:
    key: a ``jax.random.key``; candidate n uses ``fold_in(key, n)`` split into
      the restarts.
    d: embedding dimension, or a sequence of them.
    k: subset size of the relevance matrix ``k_sparse_relevance(n, k)``.
    n_max: largest n tried.
    n_min: smallest n tried (default ``k + 1``).
    n_grid: the increasing n values to scan instead of the binary search.
    restarts: seeds per n (the best one counts).
    steps: Adam steps per fit.
    loss: the loss of :func:`fit_free_embeddings`.
    lr: Adam learning rate.
    return_trace: also return the trace.

  Returns:
    The critical n (``n_min - 1`` / one below the grid if the first value
    fails), or a dict ``{d: critical n}`` for a sequence of d; with
    ``return_trace=True`` also the trace of best top-k accuracies per tried n.
  """
  scalar = isinstance(d, (int, np.integer))
  dims = [int(d)] if scalar else [int(x) for x in d]
  if not dims or any(x <= 0 for x in dims):
    raise ValueError(
      f"d must be a positive int or a non-empty sequence of them, got {d!r}."
    )
  n_min = k + 1 if n_min is None else n_min
  if not k + 1 <= n_min <= n_max:
    raise ValueError(
      f"need k + 1 <= n_min <= n_max, got k={k}, n_min={n_min}, n_max={n_max}."
    )
  trace = {}

  def accuracies(n):
    A = _relevance.k_sparse_relevance(n, k)
    keys = jax.random.split(jax.random.fold_in(key, n), restarts)
    res = fit_free_embeddings(keys, A, dims, loss=loss, steps=steps, lr=lr)
    # [D, R, N, n]
    S = np.einsum("dsjc,dsic->dsji", np.asarray(res.U), np.asarray(res.V))
    pos_min = np.where(A, S, np.inf).min(-1)
    neg_max = np.where(A, -np.inf, S).max(-1)
    # best restart per dimension
    acc = (pos_min > neg_max).mean(-1).max(-1).tolist()
    trace[n] = acc[0] if scalar else dict(zip(dims, acc))
    return acc

  if scalar and n_grid is None:
    solved = lambda n: accuracies(n)[0] == 1.0
    # answer in [lo, hi]; lo is solved (or below the range)
    lo, hi = n_min - 1, n_max
    if solved(n_max):
      lo = n_max
    else:
      hi = n_max - 1
      while lo < hi:
        mid = (lo + hi + 1) // 2
        if solved(mid):
          lo = mid
        else:
          hi = mid - 1
    return (lo, trace) if return_trace else lo

  grid = sorted(
    set(range(n_min, n_max + 1) if n_grid is None else [int(x) for x in n_grid])
  )
  if grid[0] < k + 1:
    raise ValueError(
      f"n_grid values must be >= k + 1 = {k + 1}, got {grid[0]}."
    )
  best = {x: grid[0] - 1 for x in dims}
  alive = set(dims)
  for n in grid:
    acc = accuracies(n)
    for x, a in zip(dims, acc):
      if x in alive:
        if a == 1.0:
          best[x] = n
        else:
          alive.discard(x)
    if not alive:
      break
  out = best[dims[0]] if scalar else best
  return (out, trace) if return_trace else out


def fit_free_embeddings_minibatch(
  key: jax.Array,
  A: ArrayLike,
  d: int,
  *,
  batch_size: int,
  mesh: jax.sharding.Mesh | None = None,
  axis: str | None = None,
  loss: str = "sigmoid",
  steps: int = 3000,
  lr: float = 1e-2,
  learn_temperature: bool = True,
  learn_bias: bool = True,
  init_log_temperature: float = math.log(10.0),
  init_bias: float | str = "prior",
  beta: tuple[float, float] = (10.0, 100.0),
  infonce_variant: str = "all",
) -> FitResult:
  r"""Free-embedding fit on minibatches of query rows, sharded over a device
  mesh.

  For N much larger than 1e4 queries, where a full-batch step over ``[N, n]``
  scores is too large: every Adam step evaluates the loss of
  :func:`fit_free_embeddings` on ``batch_size`` query rows drawn uniformly with
  replacement (``jax.random.randint`` on ``fold_in(key, step)``), against all n
  documents, and updates every parameter (dense Adam: rows outside the batch get
  a zero gradient, their moments decay). With ``batch_size == N`` the batch is
  all rows in order and the fit is the full-batch fit of
  :func:`fit_free_embeddings` (same initial draws, same steps).

  The sigmoid and InfoNCE losses are means over query rows, so a minibatch gives
  an unbiased gradient. The margin loss :math:`\frac{1}{\beta}\log\sum e^{-\beta
  Y S}` is a soft-min over all pairs: on a minibatch it is the soft-min over the
  batch's pairs (a biased estimate, exact in the full-batch limit).

  Sharding: ``U``, ``A``, their Adam moments and every batch are split by rows
  over ``axis`` of ``mesh`` (``NamedSharding(mesh, P(axis))``); ``V``, ``log t``
  and ``b`` are replicated. The result does not depend on the mesh (up to float
  reduction order).

  Args:
    key: a ``jax.random.key`` (initial draws and batch sampling).
    A: ``[N, n]`` binary relevance; N must be divisible by the mesh axis size.
    d: embedding dimension.
    batch_size: query rows per step, ``1 <= batch_size <= N``, divisible by the
      axis size.
    mesh: a ``jax.sharding.Mesh`` (e.g. ``jax.make_mesh((8,), ('data',))``), or
      None for the default device.
    axis: the mesh axis to shard rows over (default: the mesh's first axis).
    loss: one of ``'sigmoid'``, ``'infonce'``, ``'margin'`` (as in
      :func:`fit_free_embeddings`).
    steps: Adam steps.
    lr: Adam learning rate.
    learn_temperature: learn ``log t``.
    learn_bias: learn the sigmoid bias ``b``.
    init_log_temperature: initial ``log t``.
    init_bias: initial ``b``: a number, or ``'prior'`` for ``log(p / (1 - p))``.
    beta: ``(start, end)`` of the margin loss's annealed ``β``.
    infonce_variant: the ``variant`` of :func:`infonce_loss`.

  Returns:
    :class:`FitResult` with ``U [N, d]``, ``V [n, d]`` (unit rows) and
    ``history [steps]`` (the minibatch loss of every step).
  """
  from jax.sharding import NamedSharding
  from jax.sharding import PartitionSpec as P

  if loss not in LOSSES:
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
  if infonce_variant not in _losses.INFONCE_VARIANTS:
    raise ValueError(
      f"infonce_variant must be one of {_losses.INFONCE_VARIANTS}, "
      f"got {infonce_variant!r}."
    )
  for name, v in (("d", d), ("steps", steps), ("batch_size", batch_size)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
      raise ValueError(f"{name} must be a positive int, got {v!r}.")
  if not lr > 0:
    raise ValueError(f"lr must be positive, got {lr!r}.")
  if jnp.ndim(key) != 0:
    raise ValueError(
      "key must be a single jax.random.key (fit seeds one call each)."
    )
  A = jnp.asarray(A)
  if A.ndim != 2:
    raise ValueError(
      f"A must be a 2-D binary matrix [N, n], got shape {A.shape}."
    )
  val.check_binary(A)
  A = A.astype(bool)
  N, n = A.shape
  if batch_size > N:
    raise ValueError(f"batch_size must be <= N = {N}, got {batch_size}.")
  if mesh is not None:
    axis = mesh.axis_names[0] if axis is None else axis
    if axis not in mesh.axis_names:
      raise ValueError(
        f"axis must be one of the mesh axes {mesh.axis_names}, got {axis!r}."
      )
    size = mesh.shape[axis]
    if N % size or batch_size % size:
      raise ValueError(
        f"N ({N}) and batch_size ({batch_size}) must be divisible by the size "
        f"of mesh axis {axis!r} ({size})."
      )
  if init_bias == "prior":
    p = float(np.clip(np.mean(np.asarray(A)), 1e-6, 1 - 1e-6))
    b0 = math.log(p / (1 - p))
  else:
    b0 = float(init_bias)
  if loss != "sigmoid":
    b0 = 0.0
  learn_bias = bool(learn_bias) and loss == "sigmoid"
  # The same host-side draws as fit_free_embeddings (so the full-batch limit is
  # that fit).
  rng = np.random.default_rng(
    np.asarray(jax.random.key_data(key)).ravel().tolist()
  )
  U0 = rng.standard_normal((N, d), dtype=np.float32)
  V0 = rng.standard_normal((n, d), dtype=np.float32)
  params = {
    "U": jnp.asarray(U0),
    "V": jnp.asarray(V0),
    "log_t": jnp.float32(init_log_temperature),
    "b": jnp.float32(b0),
  }
  if mesh is not None:
    rows, rep = NamedSharding(mesh, P(axis)), NamedSharding(mesh, P())
    params = {
      k: jax.device_put(v, rows if k == "U" else rep) for k, v in params.items()
    }
    # device_put's return is typed as its argument's
    A = cast(jax.Array, jax.device_put(A, rows))
    batch_spec = rows
  else:
    batch_spec = None
  # bound after the conversion: the step closure would see the parameter's
  # ArrayLike
  A_all = A
  opt = optax.adam(lr)
  full = batch_size == N

  def objective(p, U_b, A_b, t):
    q = dict(p, U=U_b)
    log_t = (
      q["log_t"] if learn_temperature else jax.lax.stop_gradient(q["log_t"])
    )
    b = q["b"] if learn_bias else jax.lax.stop_gradient(q["b"])
    if loss == "sigmoid":
      return _losses.sigmoid_loss(
        q["U"], q["V"], A_b, log_temperature=log_t, bias=b
      )
    if loss == "infonce":
      return _losses.infonce_loss(
        q["U"], q["V"], A_b, log_temperature=log_t, variant=infonce_variant
      )
    b_t = beta[0] * (beta[1] / beta[0]) ** (t / max(steps - 1, 1))
    return _losses.margin_loss(q["U"], q["V"], A_b, beta=b_t)

  def step(state, t):
    p, o = state
    if full:
      idx = jnp.arange(N)
    else:
      idx = jax.random.randint(jax.random.fold_in(key, t), (batch_size,), 0, N)

    def batch_loss(p):
      if batch_spec is None:
        U_b, A_b = p["U"][idx], A_all[idx]
      # the gathered batch is split by rows like U (explicit output sharding)
      else:
        U_b = p["U"].at[idx].get(out_sharding=batch_spec)
        A_b = A_all.at[idx].get(out_sharding=batch_spec)
      return objective(p, U_b, A_b, t.astype(jnp.float32))

    value, g = jax.value_and_grad(batch_loss)(p)
    upd, o = opt.update(g, o, p)
    return (optax.apply_updates(p, upd), o), value

  @jax.jit
  def run(params):
    (p, _), hist = jax.lax.scan(
      step, (params, opt.init(params)), jnp.arange(steps)
    )
    return p, hist

  p, hist = run(params)
  return FitResult(
    U=val.normalize_rows(p["U"]),
    V=val.normalize_rows(p["V"]),
    log_t=p["log_t"],
    b=p["b"],
    history=hist,
  )


def half_margin_dimensions(
  key: jax.Array,
  A: ArrayLike,
  m0: ArrayLike,
  ds: Sequence[int],
  m_inf: float,
  *,
  steps: int = 3000,
  lr: float = 1e-2,
) -> dict[str, Any]:
  """Per seed, the smallest integer d whose fitted margin reaches half the
  optimum [ours].

  ``d_half`` = the smallest d with ``m_0 >= m_inf / 2`` for the direct margin
  objective (:func:`fit_free_embeddings`, ``loss='margin'``), found by bisection
  inside the bracket that a coarse grid ``ds`` gives (from d = 0 when the first
  grid point already reaches half). Each midpoint is a fresh fit with the seed's
  own key; the seeds' midpoints of one round (and the bracket's top) are fitted
  as one vmapped program, compiled once per width. Assumes the margin grows with
  d (one optimisation run need not; the answer is then one crossing of the
  level).

  Args:
    key: one PRNG key, split into one key per seed (as the grid's fits were).
    A: ``[N, n]`` binary relevance matrix.
    m0: ``[S, D]`` the margin ``m_0`` of each seed's fit at each grid dimension.
    ds: the ``D`` grid dimensions, strictly increasing.
    m_inf: the unrestricted optimum ``m^rd(inf, A)``.
    steps: optimisation steps per fit.
    lr: Adam learning rate.

  Returns:
    ``{"d_half": [S] (None for a seed that never reaches half on the grid),
    "censored": [S] ("never" or None), "rounds": bisection rounds}``.
  """
  m0 = np.asarray(m0, np.float64)
  ds = [int(d) for d in ds]
  if (
    m0.ndim != 2 or m0.shape[1] != len(ds) or ds != sorted(set(ds)) or ds[0] < 1
  ):
    raise ValueError(
      "m0 must be [S, D] over a strictly increasing positive grid ds of D "
      f"dimensions, got m0 of shape {m0.shape} and ds={ds}"
    )
  S, half = m0.shape[0], 0.5 * m_inf
  lo, hi, censored = [], [], []
  for s in range(S):
    # the first d reaching half
    i = next((i for i, m in enumerate(m0[s]) if m >= half), None)
    if i is None:
      lo.append(None), hi.append(None), censored.append("never")
    elif i == 0:
      # d = 0 has no margin
      lo.append(0), hi.append(ds[0]), censored.append(None)
    else:
      lo.append(ds[i - 1]), hi.append(ds[i]), censored.append(None)
  live = [s for s in range(S) if hi[s] is not None]
  if not live:
    return {"d_half": [None] * S, "censored": censored, "rounds": 0}
  cap = max(hi[s] for s in live)
  keys = jax.random.split(key, S)
  rounds = 0
  while any(hi[s] - lo[s] > 1 for s in live):
    mids = [
      (lo[s] + hi[s]) // 2 if s in live and hi[s] - lo[s] > 1 else cap
      for s in range(S)
    ]
    res = fit_free_embeddings(
      keys, A, mids + [cap], loss="margin", steps=steps, lr=lr
    )
    # [S + 1, S, N, cap]
    U, V = np.asarray(res.U, np.float64), np.asarray(res.V, np.float64)
    for s in live:
      if hi[s] - lo[s] > 1:
        m = _margins.margins_float64(
          U[s, s, :, : mids[s]], V[s, s, :, : mids[s]], A
        )["m0"]
        if m >= half:
          hi[s] = mids[s]
        else:
          lo[s] = mids[s]
    rounds += 1
  return {"d_half": hi, "censored": censored, "rounds": rounds}
