"""Standalone SODA / MODA (LMO-based) and the convenience aliases.

References:
  Pethick, Xie, Machacek, Cevher. *Optimistic Dual Averaging Unifies Modern
  Optimizers*, arXiv:2605.11172, 2026.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Literal, NamedTuple, cast

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
import optax

from jaxpapers.soda import _lmo, _wrapper

ScalarOrSchedule = optax.ScalarOrSchedule


def _check_lr(learning_rate, name="learning_rate"):
  """A static learning rate must be a finite number >= 0 (schedules are not
  checked)."""
  if callable(learning_rate) or isinstance(learning_rate, jax.core.Tracer):
    return
  if isinstance(learning_rate, (jax.Array, np.ndarray)):
    if learning_rate.ndim != 0:
      raise ValueError(
        f"`{name}` must be a scalar; got shape {learning_rate.shape}."
      )
  elif isinstance(learning_rate, bool) or not isinstance(
    learning_rate, numbers.Real
  ):
    raise TypeError(
      f"`{name}` must be a float or a schedule; got {learning_rate!r}."
    )
  v = float(learning_rate)
  if not math.isfinite(v) or v < 0:
    raise ValueError(
      f"`{name}` must be a finite number >= 0; got {learning_rate!r}."
    )


def _value(v: ScalarOrSchedule, count: jax.Array) -> jax.Array:
  return jnp.asarray(v(count) if callable(v) else v)


def moda(
  learning_rate: ScalarOrSchedule,
  *,
  dual_momentum1: float = 0.05,
  dual_momentum2: float = 0.05,
  norm: _lmo.NormSpec = "spectral",
  ns_steps: int = 5,
  dimension_numbers: Any = None,
  mask: _wrapper.MaskOrFn = None,
) -> optax.GradientTransformationExtraArgs:
  r"""MODA: SODA without primal extrapolation (``lambda_bar = 0``).

  .. math::

    m^{k+1} &= (1-\alpha) m^k + \alpha g^k,\quad m^0 = g^0, \\
    \bar m^{k+1} &= (1-\bar\alpha) m^{k+1} + \bar\alpha g^k, \\
    x^{k+1} &= x^k + \eta_k\, \mathrm{lmo}(\bar m^{k+1})
               - \tfrac{1}{k+2}(x^k - z^0),

  which is exactly :func:`soda` around
  ``chain(scale_by_optimistic_momentum, scale_by_lmo, scale_by_learning_rate)``
  (and equals :func:`soda_lmo` with ``primal_extrapolation=0``). The
  parameters are the evaluation parameters.

  Args:
    learning_rate: ``eta_k``, a float or an optax schedule of the count.
    dual_momentum1: ``alpha`` (default 0.05, i.e. Muon's beta = 0.95).
    dual_momentum2: ``alpha_bar`` (default 0.05).
    norm: LMO norm, a pytree of norms, or a callable (see
      :func:`scale_by_lmo`).
    ns_steps: Newton-Schulz steps for the spectral norm.
    dimension_numbers: see :func:`scale_by_lmo`.
    mask: see :func:`soda` (masked-out leaves get no anchored decay).

  Returns:
    An :class:`optax.GradientTransformationExtraArgs` (state
    :class:`SodaState`).

  References:
    Pethick et al., arXiv:2605.11172, 2026.
  """
  _check_lr(learning_rate)
  base = optax.chain(
    _lmo.scale_by_optimistic_momentum(dual_momentum1, dual_momentum2),
    _lmo.scale_by_lmo(
      norm, ns_steps=ns_steps, dimension_numbers=dimension_numbers
    ),
    optax.scale_by_learning_rate(learning_rate),
  )
  return _wrapper.soda(base, mask=mask)


class SodaLmoState(NamedTuple):
  """State of :func:`soda_lmo`.

  Attributes:
    count: ``int32[]`` number of updates so far (``k``).
    anchor: ``z^0``, captured from the parameters at the first update.
    mu: the dual average ``m``.
    x: the averaged (evaluation) point ``x``; ``None`` when
      ``primal_extrapolation == 0`` because then ``x`` equals the parameters.
  """

  count: jax.Array  # pyright: ignore[reportIncompatibleMethodOverride]  # optax's field name
  anchor: optax.Params
  mu: optax.Updates
  x: optax.Params | None


def soda_lmo(
  learning_rate: ScalarOrSchedule,
  *,
  dual_momentum1: float = 0.05,
  dual_momentum2: float = 0.05,
  norm: _lmo.NormSpec = "spectral",
  primal_extrapolation: ScalarOrSchedule = 0.0,
  ns_steps: int = 5,
  dimension_numbers: Any = None,
) -> optax.GradientTransformation:
  r"""General (standalone) SODA with primal extrapolation.

  Gradients are taken at ``y^k`` (the parameters held by the training loop):

  .. math::

    m^{k+1} &= (1-\alpha)\, m^k + \alpha\, g^k, \qquad m^0 := g^0, \\
    \bar m^{k+1} &= (1-\bar\alpha)\, m^{k+1} + \bar\alpha\, g^k, \\
    z^{k+1} &= z^0 + \eta_k (k+2)\, \mathrm{lmo}(\bar m^{k+1}), \\
    x^{k+1} &= (1-\lambda_k) x^k + \lambda_k z^{k+1},
               \quad \lambda_k = 1/(k+2), \\
    y^{k+1} &= (1-\bar\lambda_k) x^{k+1} + \bar\lambda_k z^{k+1}.

  ``z`` is recomputed from ``z^0`` each step (not accumulated). With
  ``lambda_bar = 0`` this is :func:`moda` and ``x = y``; otherwise ``x`` is
  stored in the state and :func:`soda_eval_params` returns it (evaluate
  there, train at ``y``). A schedule for ``lambda_bar`` is a function of the
  count ``k``; for the reference's decaying schedule use
  ``lambda k: 1 / (10 * (k + 2))`` (the reference writes ``1/10*(k+2)``,
  which exceeds 1 after k = 8; we read it as a typo).

  Args:
    learning_rate: ``eta_k``, float or schedule.
    dual_momentum1: ``alpha``.
    dual_momentum2: ``alpha_bar``.
    norm: LMO norm(s), see :func:`scale_by_lmo`.
    primal_extrapolation: ``lambda_bar``, float in [0, 1] or schedule.
    ns_steps: Newton-Schulz steps.
    dimension_numbers: see :func:`scale_by_lmo`.

  Returns:
    An :class:`optax.GradientTransformation` with state
    :class:`SodaLmoState`; ``update`` requires ``params``.

  References:
    Pethick et al., arXiv:2605.11172, 2026.
  """
  _check_lr(learning_rate)
  if (
    not callable(primal_extrapolation)
    and not 0.0 <= float(primal_extrapolation) <= 1.0
  ):
    raise ValueError(
      "`primal_extrapolation` must be in [0, 1] or a schedule; "
      f"got {primal_extrapolation!r}."
    )
  store_x = callable(primal_extrapolation) or float(primal_extrapolation) != 0
  momentum = _lmo.scale_by_optimistic_momentum(dual_momentum1, dual_momentum2)
  lmo = _lmo.scale_by_lmo(
    norm, ns_steps=ns_steps, dimension_numbers=dimension_numbers
  )

  def init_fn(params):
    _wrapper.check_params(params)
    copy = lambda t: jax.tree.map(lambda p: jnp.array(p, copy=True), t)
    mstate = cast(_lmo.OptimisticMomentumState, momentum.init(params))
    return SodaLmoState(
      count=jnp.zeros([], jnp.int32),
      anchor=copy(params),
      mu=mstate.mu,
      x=copy(params) if store_x else None,
    )

  def update_fn(updates, state, params=None):
    if params is None:
      raise ValueError(_wrapper.NO_PARAMS_MSG)
    _wrapper.check_params(params)
    _wrapper.check_same_tree(updates, params)
    k = state.count
    first = k == 0
    mbar, mstate = momentum.update(
      updates, _lmo.OptimisticMomentumState(k, state.mu)
    )
    mstate = cast(_lmo.OptimisticMomentumState, mstate)
    s, _ = lmo.update(mbar, optax.EmptyState())
    kf = k.astype(jnp.float32)
    eta = _value(learning_rate, k)
    lam = 1.0 / (kf + 2.0)
    lbar = _value(primal_extrapolation, k)

    def leaf(p, a, s_i, x_i):
      cd = jnp.promote_types(p.dtype, jnp.float32)
      z0 = jnp.where(first, p, a)
      x_prev = p if x_i is None else jnp.where(first, p, x_i)
      z0c, xc = z0.astype(cd), x_prev.astype(cd)
      step = (eta * (kf + 2.0)).astype(cd) * s_i.astype(cd)
      z = z0c - step  # lmo = -s
      x_new = xc - lam.astype(cd) * (xc - z0c) - eta.astype(cd) * s_i.astype(cd)
      y_new = x_new + lbar.astype(cd) * (z - x_new)
      delta = (y_new - p.astype(cd)).astype(p.dtype)
      return delta, z0, x_new.astype(p.dtype)

    treedef = jax.tree.structure(params)
    flat_p = treedef.flatten_up_to(params)
    flat_a = treedef.flatten_up_to(state.anchor)
    flat_s = treedef.flatten_up_to(s)
    flat_x = treedef.flatten_up_to(state.x) if store_x else [None] * len(flat_p)
    out = [leaf(*args) for args in zip(flat_p, flat_a, flat_s, flat_x)]
    new_updates = treedef.unflatten([o[0] for o in out])
    anchor = treedef.unflatten([o[1] for o in out])
    x = treedef.unflatten([o[2] for o in out]) if store_x else None
    count = cast(jax.Array, optax.safe_increment(k))  # a jnp.where of k
    return new_updates, SodaLmoState(
      count=count, anchor=anchor, mu=mstate.mu, x=x
    )

  # chex's ArrayTree leaves out None (an empty pytree), the x of a state without
  # extrapolation.
  init = cast(optax.TransformInitFn, init_fn)
  return optax.GradientTransformation(
    init, cast(optax.TransformUpdateFn, update_fn)
  )


def soda_eval_params(
  state: optax.OptState, params: optax.Params
) -> optax.Params:
  """Parameters at which to evaluate a model trained with SODA.

  * :func:`soda` and :func:`moda`: the training parameters *are* the
    averaged evaluation point ``x``; ``params`` is returned unchanged.
  * :func:`soda_lmo` with ``primal_extrapolation != 0``: the parameters hold
    the gradient point ``y``; the stored ``x`` is returned (for leaves it
    covers; others are taken from ``params``).

  The optimizer state is searched recursively (through ``chain``,
  ``partition``, ``inject_hyperparams``, ``MultiSteps`` ...).

  Args:
    state: an optimizer state containing a :class:`SodaState` or
      :class:`SodaLmoState`.
    params: the current training parameters.

  Returns:
    the evaluation parameters, of ``params``' structure, shapes and dtypes.

  Raises:
    ValueError: if no SODA state is found in ``state``.
  """
  is_soda = lambda s: isinstance(s, (_wrapper.SodaState, SodaLmoState))
  found = [s for s in jax.tree.leaves(state, is_leaf=is_soda) if is_soda(s)]
  if not found:
    raise ValueError(
      "soda_eval_params requires an optimizer state containing a SodaState "
      "or SodaLmoState (from soda, moda or soda_lmo)."
    )
  out = params
  for s in found:
    if isinstance(s, SodaLmoState) and s.x is not None:
      out = jax.tree.map(
        lambda p, xi: p if isinstance(xi, optax.MaskedNode) else xi,
        out,
        s.x,
        is_leaf=lambda v: isinstance(v, optax.MaskedNode),
      )
  return out


# ----------------------------------------------------------------- aliases ---


def soda_adamw(
  learning_rate: ScalarOrSchedule,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-8,
  *,
  mu_dtype: Any = None,
  anchor: Literal["init", "zero"] = "init",
  mask: _wrapper.MaskOrFn = None,
  start_step: int = 0,
) -> optax.GradientTransformationExtraArgs:
  """``soda(optax.adamw(..., weight_decay=0))``: AdamW whose weight decay is
  replaced by SODA's anchored 1/(k+2) average (see :func:`soda` for the update
  equation).

  Args:
    learning_rate: a float >= 0 or a schedule ``count -> learning rate``.
    b1: decay of the first-moment average.
    b2: decay of the second-moment average.
    eps: added to the denominator's square root.
    mu_dtype: dtype of the first moment (None: the parameters').
    anchor: ``'init'`` (the parameters at step ``start_step``) or ``'zero'``;
      see :func:`soda`.
    mask: which leaves SODA wraps (a pytree of bools or a function of the
      params); the others get the plain base update. None wraps every leaf.
    start_step: the number of first steps that return the base update unchanged.

  Returns:
    the SODA-wrapped optimizer.

  References:
    Pethick et al., arXiv:2605.11172, 2026.
  """
  _check_lr(learning_rate)
  return _wrapper.soda(
    optax.adamw(
      learning_rate, b1, b2, eps, mu_dtype=mu_dtype, weight_decay=0.0
    ),
    anchor=anchor,
    mask=mask,
    start_step=start_step,
  )


def soda_nadam(
  learning_rate: ScalarOrSchedule,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-8,
  *,
  mu_dtype: Any = None,
  anchor: Literal["init", "zero"] = "init",
  mask: _wrapper.MaskOrFn = None,
  start_step: int = 0,
) -> optax.GradientTransformationExtraArgs:
  """``soda(optax.nadamw(..., weight_decay=0))``: NAdamW whose weight decay is
  replaced by SODA's anchored 1/(k+2) average (see :func:`soda` for the update
  equation).

  Args:
    learning_rate: a float >= 0 or a schedule ``count -> learning rate``.
    b1: decay of the first-moment average (Nesterov momentum).
    b2: decay of the second-moment average.
    eps: added to the denominator's square root.
    mu_dtype: dtype of the first moment (None: the parameters').
    anchor: ``'init'`` (the parameters at step ``start_step``) or ``'zero'``;
      see :func:`soda`.
    mask: which leaves SODA wraps (a pytree of bools or a function of the
      params); the others get the plain base update. None wraps every leaf.
    start_step: the number of first steps that return the base update unchanged.

  Returns:
    the SODA-wrapped optimizer.

  References:
    Pethick et al., arXiv:2605.11172, 2026.
  """
  _check_lr(learning_rate)
  return _wrapper.soda(
    optax.nadamw(
      learning_rate, b1, b2, eps, mu_dtype=mu_dtype, weight_decay=0.0
    ),
    anchor=anchor,
    mask=mask,
    start_step=start_step,
  )


def soda_lion(
  learning_rate: ScalarOrSchedule,
  b1: float = 0.9,
  b2: float = 0.99,
  *,
  mu_dtype: Any = None,
  anchor: Literal["init", "zero"] = "init",
  mask: _wrapper.MaskOrFn = None,
  start_step: int = 0,
) -> optax.GradientTransformationExtraArgs:
  """``soda(optax.lion(..., weight_decay=0))``: Lion whose weight decay is
  replaced by SODA's anchored 1/(k+2) average (see :func:`soda` for the update
  equation).

  Args:
    learning_rate: a float >= 0 or a schedule ``count -> learning rate``.
    b1: interpolation weight of the sign update.
    b2: decay of the momentum.
    mu_dtype: dtype of the momentum (None: the parameters').
    anchor: ``'init'`` (the parameters at step ``start_step``) or ``'zero'``;
      see :func:`soda`.
    mask: which leaves SODA wraps (a pytree of bools or a function of the
      params); the others get the plain base update. None wraps every leaf.
    start_step: the number of first steps that return the base update unchanged.

  Returns:
    the SODA-wrapped optimizer.

  References:
    Pethick et al., arXiv:2605.11172, 2026.
  """
  _check_lr(learning_rate)
  return _wrapper.soda(
    optax.lion(learning_rate, b1, b2, mu_dtype=mu_dtype, weight_decay=0.0),
    anchor=anchor,
    mask=mask,
    start_step=start_step,
  )


# Path components that name an embedding, positional table or output head
# (compared lowercased).
_UNDECAYED_NAMES = (
  "wte",
  "wpe",
  "pos",
  "head",
  "lm_head",
  "unembed",
  "logits",
  "output",
)


def _is_embedding_or_head(path) -> bool:
  for entry in path:
    name = str(
      getattr(
        entry, "key", getattr(entry, "name", getattr(entry, "idx", entry))
      )
    ).lower()
    if "embed" in name or name in _UNDECAYED_NAMES or name.endswith("_head"):
      return True
  return False


def muon_hidden_mask(params, muon_weight_dimension_numbers=None):
  """``soda_muon``'s default mask: True on the leaves Muon orthogonalises, minus
  embeddings/head.

  A leaf is wrapped when Muon treats it as a matrix (``ndim == 2``, or a
  non-None entry of ``muon_weight_dimension_numbers``) and no component of its
  path names an embedding or the output head: a name containing ``embed``
  (``embed``, ``embedding``, ``tok_embeddings``, ``unembed``), ending in
  ``_head`` (``lm_head``), or one of ``wte``, ``wpe``, ``pos``, ``head``,
  ``logits``, ``output``.
  """
  dims = muon_weight_dimension_numbers
  if callable(dims):
    dims = dims(params)
  if dims is None:
    matrix = jax.tree.map(lambda p: jnp.ndim(p) == 2, params)
  else:
    matrix = jax.tree.map(
      lambda d, p: d is not None, dims, params, is_leaf=lambda d: d is None
    )
  return jax.tree_util.tree_map_with_path(
    lambda path, m: bool(m) and not _is_embedding_or_head(path), matrix
  )


def soda_muon(
  learning_rate: ScalarOrSchedule,
  *,
  beta: float = 0.95,
  ns_steps: int = 5,
  adam_learning_rate: ScalarOrSchedule | None = None,
  adam_b1: float = 0.9,
  adam_b2: float = 0.999,
  muon_weight_dimension_numbers: Any = None,
  anchor: Literal["init", "zero"] = "init",
  mask: _wrapper.MaskOrFn = None,
  start_step: int = 0,
) -> optax.GradientTransformationExtraArgs:
  """``soda(optax.contrib.muon(..., weight_decay=0))``: Muon (non-matrix leaves
  use its Adam branch) whose weight decay is replaced by SODA's anchored 1/(k+2)
  average (see :func:`soda` for the update equation).

  **Default partition** (``mask=None``), as in the reference Muon run: SODA
  wraps only the hidden matrices, i.e. the leaves Muon orthogonalises (2-D, or
  those given by ``muon_weight_dimension_numbers``) whose path does not name an
  embedding or the output head (a path component containing ``embed``, ending in
  ``_head``, or one of ``wte``, ``wpe``, ``pos``, ``head``, ``logits``,
  ``output``). Embeddings, the head, biases and norm scales get the
  plain (undecayed) base update. Pass ``mask`` to choose otherwise, e.g.
  ``mask=lambda p: jax.tree.map(lambda _: True, p)`` to wrap every leaf.

  Args:
    learning_rate: a float >= 0 or a schedule ``count -> learning rate`` (Muon branch).
    beta: Muon's momentum decay.
    ns_steps: Newton-Schulz iterations of the orthogonalisation.
    adam_learning_rate: learning rate of the Adam branch (None:
      ``learning_rate``).
    adam_b1: first-moment decay of the Adam branch.
    adam_b2: second-moment decay of the Adam branch.
    muon_weight_dimension_numbers: which leaves Muon treats as matrices and how
      (optax's ``MuonDimensionNumbers`` pytree or a function of the params);
      None: the 2-D leaves.
    anchor: ``'init'`` (the parameters at step ``start_step``) or ``'zero'``;
      see :func:`soda`.
    mask: which leaves SODA wraps (a pytree of bools or a function of the
      params); None: the default partition above.
    start_step: the number of first steps that return the base update unchanged.

  Returns:
    the SODA-wrapped optimizer.

  References:
    Pethick et al., arXiv:2605.11172, 2026.
  """
  _check_lr(learning_rate)
  if mask is None:
    mask = lambda p: muon_hidden_mask(p, muon_weight_dimension_numbers)
  return _wrapper.soda(
    optax.contrib.muon(
      learning_rate,
      ns_steps=ns_steps,
      beta=beta,
      weight_decay=0.0,
      adam_b1=adam_b1,
      adam_b2=adam_b2,
      adam_weight_decay=0.0,
      adam_learning_rate=adam_learning_rate,
      muon_weight_dimension_numbers=muon_weight_dimension_numbers,
    ),
    anchor=anchor,
    mask=mask,
    start_step=start_step,
  )
