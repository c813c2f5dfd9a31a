"""Linear minimisation oracles (LMOs) and optimistic momentum for SODA / MODA.

Sign convention: in the paper ``lmo(g) = -s(g)`` with
``s(g) = argmax_{||s|| <= 1} <g, s>``. Here (optax convention) the
transformations return the *ascent* direction ``s(g)``; a later
``optax.scale_by_learning_rate`` supplies the minus sign.

References:
  Pethick, Xie, Machacek, Cevher. *Optimistic Dual Averaging Unifies Modern
  Optimizers*, arXiv:2605.11172, 2026.
  Pethick et al. *Training Deep Learning Models with Norm-Constrained LMOs*
  (Scion), arXiv:2502.07529, 2025.
  Jordan et al. *Muon: An optimizer for hidden layers in neural networks*, 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, cast

import jax
import jax.numpy as jnp
import optax

NORMS = ("spectral", "sign", "colnorm", "rownorm", "bias_rms")

# Quintic Newton-Schulz coefficients of Muon (Jordan et al., 2024).
NS_COEFFS = (3.4445, -4.7750, 2.0315)


class LmoDimensionNumbers(NamedTuple):
  """Which axes of a weight are its input (``d_in``) and output (``d_out``)
  axes.

  Remaining axes are batch axes (e.g. heads, or stacked layers): the LMO is
  applied independently to every ``[d_in, d_out]`` slice. The default matches
  Flax kernels, ``[d_in, d_out]``; use ``LmoDimensionNumbers(1, 0)`` for
  PyTorch-layout ``[d_out, d_in]`` weights.
  """

  reduction_axis: int | Sequence[int] = 0
  output_axis: int | Sequence[int] = 1


def newton_schulz(
  x: jax.Array,
  ns_steps: int = 5,
  eps: float = 1e-7,
  coeffs: tuple[float, float, float] = NS_COEFFS,
) -> jax.Array:
  r"""Approximate polar factor ``U V^T`` of a matrix by Newton-Schulz.

  ``X_0 = G / (||G||_F + eps)``; tall matrices are transposed so that
  ``X X^T`` is the small Gram matrix; then ``ns_steps`` times

  .. math::  X \leftarrow a X + b (X X^T) X + c (X X^T)^2 X .

  With Muon's quintic coefficients ``(3.4445, -4.7750, 2.0315)`` the singular
  values of the result lie roughly in [0.7, 1.2], not exactly 1 (fast but
  approximate). With ``coeffs=(1.5, -0.5, 0.0)`` (the cubic iteration) and
  many steps it converges to the exact polar factor.

  Args:
    x: ``[..., m, n]`` array; leading axes are batch axes.
    ns_steps: number of iterations (static).
    eps: added to the Frobenius norm.
    coeffs: ``(a, b, c)``.

  Returns:
    ``[..., m, n]`` array in the dtype of ``x``.
  """
  x = jnp.asarray(x)
  if x.ndim < 2:
    raise ValueError(f"newton_schulz needs a matrix; got shape {x.shape}.")
  if not jnp.issubdtype(x.dtype, jnp.floating):
    raise TypeError(f"newton_schulz needs a floating-point x; got {x.dtype}.")
  if (
    isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 0
  ):
    raise ValueError(
      f"`ns_steps` must be a non-negative int; got {ns_steps!r}."
    )
  if len(coeffs) != 3:
    raise ValueError(f"`coeffs` must be (a, b, c); got {coeffs!r}.")
  a, b, c = coeffs
  dtype = x.dtype
  x = x.astype(jnp.promote_types(dtype, jnp.float32))
  transpose = x.shape[-2] > x.shape[-1]
  if transpose:
    x = jnp.swapaxes(x, -1, -2)
  norm = jnp.sqrt(jnp.sum(jnp.square(x), axis=(-2, -1), keepdims=True))
  x = x / (norm + eps)

  def body(_, x):
    gram = x @ jnp.swapaxes(x, -1, -2)
    poly = b * gram + c * (gram @ gram)
    return a * x + poly @ x

  x = jax.lax.fori_loop(0, ns_steps, body, x)
  if transpose:
    x = jnp.swapaxes(x, -1, -2)
  return x.astype(dtype)


def _as_tuple(a) -> tuple[int, ...]:
  return (a,) if isinstance(a, int) else tuple(a)


def _to_matrix(x: jax.Array, dn: LmoDimensionNumbers):
  """Reshapes ``x`` to ``[batch, d_in, d_out]``; returns it and an inverse."""
  for a in _as_tuple(dn.reduction_axis) + _as_tuple(dn.output_axis):
    if not -x.ndim <= a < x.ndim:
      raise ValueError(
        f"axis {a} of {dn} is out of range for a leaf of shape {x.shape}."
      )
  red = tuple(a % x.ndim for a in _as_tuple(dn.reduction_axis))
  out = tuple(a % x.ndim for a in _as_tuple(dn.output_axis))
  if set(red) & set(out):
    raise ValueError(f"reduction and output axes overlap: {dn}.")
  batch = tuple(a for a in range(x.ndim) if a not in red + out)
  perm = batch + red + out
  xt = jnp.transpose(x, perm)
  bshape = [x.shape[a] for a in batch]
  d_in = math.prod(x.shape[a] for a in red)
  d_out = math.prod(x.shape[a] for a in out)
  mat = xt.reshape((math.prod(bshape), d_in, d_out))
  inv_perm = [perm.index(i) for i in range(x.ndim)]

  def back(m):
    return jnp.transpose(m.reshape(xt.shape), inv_perm)

  return mat, back


def lmo_direction(
  g: jax.Array,
  norm: str,
  *,
  ns_steps: int = 5,
  dimension_numbers: LmoDimensionNumbers | None = None,
  eps: float = 1e-8,
) -> jax.Array:
  r"""The ascent direction ``s(g) = argmax_{||s|| <= 1} <g, s>`` for one leaf.

  Norms (``d_in``, ``d_out`` from ``dimension_numbers``, default
  ``[d_in, d_out]`` for 2-D leaves; 1-D leaves count as ``d_in = 1``):

  * ``'spectral'``: ``sqrt(d_out/d_in) * U V^T`` (``U V^T`` by Newton-Schulz);
    needs a leaf with at least 2 dimensions.
  * ``'sign'``: ``sign(g) / d_in`` (the max-norm ball, scaled as in Scion).
  * ``'colnorm'``: every input row ``g[i, :]`` rescaled to Euclidean norm
    ``sqrt(d_out)`` (unit RMS per input feature).
  * ``'rownorm'``: every output column ``g[:, j]`` rescaled to Euclidean norm
    ``1/sqrt(d_in)``.
  * ``'bias_rms'``: ``g / rms(g)`` (unit RMS; for biases and gains).

  The scalings of ``colnorm``/``rownorm`` are our convention (the reference
  code was read only for spectral and sign).

  Args:
    g: a float gradient leaf of any shape (at least 2-D for ``'spectral'``,
      ``'colnorm'`` and ``'rownorm'``).
    norm: one of :data:`NORMS`.
    ns_steps: Newton-Schulz iterations (``'spectral'``).
    dimension_numbers: which axes are ``d_in`` and ``d_out`` (the others are
      batch axes); default ``LmoDimensionNumbers()``: axis 0 is ``d_in``, axis 1
      is ``d_out``.
    eps: added to the norms before dividing.

  Returns:
    ``s(g)``, an array of ``g``'s shape and dtype (computed in at least
    float32).
  """
  if norm not in NORMS:
    raise ValueError(f"`norm` must be one of {NORMS}; got {norm!r}.")
  g = jnp.asarray(g)
  if not jnp.issubdtype(g.dtype, jnp.floating):
    raise TypeError(f"`g` must be a floating-point gradient; got {g.dtype}.")
  if norm == "bias_rms":
    gf = g.astype(jnp.promote_types(g.dtype, jnp.float32))
    rms = jnp.sqrt(jnp.mean(jnp.square(gf)))
    return (gf / (rms + eps)).astype(g.dtype)
  if g.ndim < 2:
    if norm == "sign":
      return jnp.sign(g)
    raise ValueError(
      f"norm {norm!r} needs a leaf with >= 2 dimensions; got shape {g.shape}. "
      "Use 'sign' or 'bias_rms' for vectors (a pytree of norms is accepted)."
    )
  dn = dimension_numbers or LmoDimensionNumbers()
  mat, back = _to_matrix(g, dn)  # [B, d_in, d_out]
  d_in, d_out = mat.shape[-2], mat.shape[-1]
  cd = jnp.promote_types(g.dtype, jnp.float32)
  mat = mat.astype(cd)
  if norm == "spectral":
    s = newton_schulz(mat, ns_steps) * math.sqrt(d_out / d_in)
  elif norm == "sign":
    s = jnp.sign(mat) / d_in
  elif norm == "colnorm":
    n = jnp.sqrt(jnp.sum(jnp.square(mat), axis=-1, keepdims=True))
    s = mat / (n + eps) * math.sqrt(d_out)
  else:  # rownorm
    n = jnp.sqrt(jnp.sum(jnp.square(mat), axis=-2, keepdims=True))
    s = mat / (n + eps) / math.sqrt(d_in)
  return back(s).astype(g.dtype)


NormSpec = str | Any | Callable[[optax.Params], Any]


def _expand_per_leaf(spec, params, name, is_valid):
  if callable(spec) and not isinstance(spec, str):
    spec = spec(params)
  if is_valid(spec):
    return jax.tree.map(lambda _: spec, params)
  try:
    return jax.tree.map(
      lambda s, sub: jax.tree.map(lambda _: s, sub),
      spec,
      params,
      is_leaf=is_valid,
    )
  except ValueError as e:
    raise ValueError(
      f"`{name}` must be a single value or a pytree whose structure is a "
      f"prefix of the parameters; got {spec!r}."
    ) from e


def scale_by_lmo(
  norm: NormSpec = "spectral",
  *,
  ns_steps: int = 5,
  dimension_numbers: Any = None,
) -> optax.GradientTransformation:
  r"""Replaces each update leaf by the LMO ascent direction ``s(g)``.

  ``s(g) = argmax_{||s|| <= 1} <g, s>`` for the chosen norm (see
  :func:`lmo_direction`). Followed by ``optax.scale_by_learning_rate(lr)`` it
  gives the step ``lr * lmo(g)`` of the paper (``lmo = -s``).

  Args:
    norm: a norm name from ``('spectral', 'sign', 'colnorm', 'rownorm',
      'bias_rms')``, a pytree of names (prefix of the updates), or a callable
      returning such a pytree given the updates.
    ns_steps: Newton-Schulz iterations for ``'spectral'``.
    dimension_numbers: ``None`` (Flax layout ``[d_in, d_out]``), one
      :class:`LmoDimensionNumbers`, a pytree of them (``None`` leaves use the
      default), or a callable returning such a pytree.

  Returns:
    A stateless :class:`optax.GradientTransformation`.
  """
  if isinstance(norm, str) and norm not in NORMS:
    raise ValueError(f"`norm` must be one of {NORMS}; got {norm!r}.")
  if (
    isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 1
  ):
    raise ValueError(f"`ns_steps` must be a positive int; got {ns_steps!r}.")

  def init_fn(params):
    del params
    return optax.EmptyState()

  def update_fn(updates, state, params=None):
    del params
    norms = _expand_per_leaf(
      norm, updates, "norm", lambda s: isinstance(s, str)
    )
    is_dn = lambda d: d is None or isinstance(d, LmoDimensionNumbers)
    if dimension_numbers is None:
      dns = jax.tree.map(lambda _: None, updates)
    else:
      dns = _expand_per_leaf(
        dimension_numbers, updates, "dimension_numbers", is_dn
      )
    treedef = jax.tree.structure(updates)
    flat_g = treedef.flatten_up_to(updates)
    flat_n = treedef.flatten_up_to(norms)
    flat_d = treedef.flatten_up_to(dns)
    out = [
      lmo_direction(g, n, ns_steps=ns_steps, dimension_numbers=d)
      for g, n, d in zip(flat_g, flat_n, flat_d)
    ]
    return treedef.unflatten(out), state

  return optax.GradientTransformation(init_fn, update_fn)


class OptimisticMomentumState(NamedTuple):
  """State of :func:`scale_by_optimistic_momentum`.

  Attributes:
    count: ``int32[]`` number of updates so far.
    mu: the dual average ``m`` (EMA of gradients).
  """

  count: jax.Array  # pyright: ignore[reportIncompatibleMethodOverride]  # optax's field name
  mu: optax.Updates


def scale_by_optimistic_momentum(
  dual_momentum1: float = 0.05,
  dual_momentum2: float = 0.05,
  *,
  init: Literal["grad", "zeros"] = "grad",
  mu_dtype: Any | None = None,
) -> optax.GradientTransformation:
  r"""Optimistic momentum: an EMA of gradients plus extra weight on the newest.

  With ``alpha = dual_momentum1`` and ``alpha_bar = dual_momentum2``:

  .. math::

    m^{k+1} &= (1-\alpha)\, m^k + \alpha\, g^k, \\
    \bar m^{k+1} &= (1-\bar\alpha)\, m^{k+1} + \bar\alpha\, g^k .

  ``m`` is stored, ``\bar m`` (the *optimistic* momentum) is returned. This is
  Nesterov momentum read as optimism: ``alpha = alpha_bar = 1 - beta`` gives
  Muon's Nesterov momentum for ``beta = 0.95``.

  Args:
    dual_momentum1: ``alpha`` in ``(0, 1]``.
    dual_momentum2: ``alpha_bar`` in ``[0, 1]``.
    init: ``'grad'`` (reference behaviour): ``m^0 = g^0``, so the first output
      is exactly ``g^0``; no bias correction. ``'zeros'``: ``m^0 = 0`` with
      Adam-style bias correction ``m^{k+1} / (1 - (1-alpha)^{k+1})`` before the
      optimistic mix; it needs ``alpha > 0`` (``alpha = 0`` is a ``ValueError``;
      a traced ``alpha = 0`` gives NaN outputs, never a plausible number).
    mu_dtype: optional dtype of ``m``.

  Returns:
    An :class:`optax.GradientTransformation` with state
    :class:`OptimisticMomentumState`.

  References:
    Pethick et al., arXiv:2605.11172, 2026 (SODA, eq. for the dual side).
  """
  if init not in ("grad", "zeros"):
    raise ValueError(f"`init` must be 'grad' or 'zeros'; got {init!r}.")
  for name, v in (
    ("dual_momentum1", dual_momentum1),
    ("dual_momentum2", dual_momentum2),
  ):
    if isinstance(v, (int, float)) and not 0.0 <= v <= 1.0:
      raise ValueError(f"`{name}` must be in [0, 1]; got {v!r}.")
  if (
    init == "zeros"
    and isinstance(dual_momentum1, (int, float))
    and dual_momentum1 == 0
  ):
    # m stays 0 and the bias correction 1 - (1 - alpha)^k is 0: every output
    # would be 0/0.
    raise ValueError(
      "`dual_momentum1` must be > 0 with init='zeros' (m would stay 0 and its "
      "bias correction 1 - (1 - alpha)^k is 0); got 0. "
      "Use init='grad' to keep m = g^0."
    )

  def init_fn(params):
    mu = jax.tree.map(
      lambda p: jnp.zeros_like(p, dtype=mu_dtype or p.dtype), params
    )
    return OptimisticMomentumState(count=jnp.zeros([], jnp.int32), mu=mu)

  def update_fn(updates, state, params=None):
    del params
    a, abar = dual_momentum1, dual_momentum2
    first = state.count == 0

    def leaf(g, m):
      if init == "grad":
        m_prev = jnp.where(first, g.astype(m.dtype), m)
      else:
        m_prev = m
      m_new = ((1 - a) * m_prev + a * g).astype(m.dtype)
      m_hat = m_new
      if init == "zeros":
        bc = 1 - (1 - a) ** (state.count.astype(jnp.float32) + 1)
        m_hat = m_new / bc.astype(m_new.dtype)
      mbar = (1 - abar) * m_hat + abar * g
      return mbar.astype(g.dtype), m_new

    pairs = jax.tree.map(leaf, updates, state.mu)
    treedef = jax.tree.structure(updates)
    flat = treedef.flatten_up_to(pairs)
    mbar = treedef.unflatten([p[0] for p in flat])
    mu = treedef.unflatten([p[1] for p in flat])
    # a jnp.where of the count
    count = cast(jax.Array, optax.safe_increment(state.count))
    return mbar, OptimisticMomentumState(count=count, mu=mu)

  return optax.GradientTransformation(init_fn, update_fn)
