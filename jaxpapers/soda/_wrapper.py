"""The SODA wrapper: anchored 1/(k+2) primal averaging around any optax
optimizer.

References:
  Pethick, Xie, Machacek, Cevher. *Optimistic Dual Averaging Unifies Modern
  Optimizers*, arXiv:2605.11172, 2026.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple, cast

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
import optax

# Same message optax uses when a transformation needs `params` (kept verbatim so
# users searching for it find the usual explanation).
NO_PARAMS_MSG = (
  "You are using a transformation that requires the current value of "
  "parameters, but you are not passing `params` when calling `update`."
)

_ANCHORS = ("init", "zero")

MaskOrFn = Any | Callable[[optax.Params], Any] | None


class SodaState(NamedTuple):
  """State of :func:`soda`.

  Attributes:
    count: ``int32[]``, number of ``update`` calls so far (the ``k`` of the
      paper's recurrence). It keeps running during the ``start_step``
      pass-through phase.
    anchor: the anchor ``z_0``, a pytree with the structure of the parameters in
      the parameter dtype. It is a copy of the parameters at ``init`` and is
      overwritten with the parameters seen at the call with
      ``count == start_step``. Masked-out leaves (and every leaf when
      ``anchor='zero'``) hold :class:`optax.MaskedNode` and use no memory.
    inner_state: state of the base optimizer.
    iterate: the exact iterate ``x`` of low-precision leaves, in float32
      (Kahan-style compensation): the parameters the training loop holds are
      ``x`` rounded to their dtype. A pytree with the structure of the
      parameters; :class:`optax.MaskedNode` on leaves that are not compensated
      (see ``compensate`` in :func:`soda`). An element whose parameter no longer
      equals its rounded iterate (the parameter was changed outside the
      optimizer, e.g. pretrained weights loaded after ``init``) restarts from
      the parameter.
  """

  count: jax.Array  # pyright: ignore[reportIncompatibleMethodOverride]  # optax's field name
  anchor: optax.Params
  inner_state: optax.OptState
  iterate: optax.Params | None = None


def _is_masked_node(x: Any) -> bool:
  return isinstance(x, optax.MaskedNode)


def expand_mask(mask: MaskOrFn, params: optax.Params) -> Any:
  """Returns a boolean pytree with the structure of ``params``.

  ``mask`` may be ``None`` (all True), a pytree whose structure is a prefix of
  ``params``, or a callable that returns such a pytree given ``params``. Mask
  leaves must be Python booleans (the mask is static under ``jit``).
  """
  if mask is None:
    return jax.tree.map(lambda _: True, params)
  if callable(mask):
    mask = mask(params)
  try:
    expanded = jax.tree.map(
      lambda m, sub: jax.tree.map(lambda _: m, sub), mask, params
    )
  except ValueError as e:
    raise ValueError(
      "`mask` must be a pytree of booleans whose structure is a prefix of "
      f"the parameters (or a callable returning one); got {mask!r}."
    ) from e
  for m in jax.tree.leaves(expanded):
    if not isinstance(m, (bool, jnp.bool_)) and not (
      hasattr(m, "dtype") and m.shape == () and m.dtype == bool
    ):
      raise TypeError(
        "`mask` leaves must be booleans (True: apply SODA to the leaf); "
        f"got a leaf {m!r}."
      )
  return jax.tree.map(bool, expanded)


def check_params(params: Any, name: str = "params") -> None:
  """Every array leaf of ``params`` must be floating point (integer weights
  cannot train)."""
  for path, p in jax.tree_util.tree_leaves_with_path(
    params, is_leaf=_is_masked_node
  ):
    if _is_masked_node(p):
      continue
    dt = jnp.result_type(p)
    if not jnp.issubdtype(dt, jnp.floating):
      raise TypeError(
        f"{name}{jax.tree_util.keystr(path)} has dtype {dt}; "
        "SODA needs floating-point parameters (integer parameters would get "
        "all-zero updates)."
      )


def check_same_tree(updates: Any, params: Any) -> None:
  """``updates`` (gradients) and ``params`` must have one structure and matching
  shapes."""
  t_u = jax.tree.structure(updates, is_leaf=_is_masked_node)
  t_p = jax.tree.structure(params, is_leaf=_is_masked_node)
  if t_u != t_p:
    raise ValueError(
      "updates (gradients) and params must have the same pytree structure; got "
      f"updates {t_u} and params {t_p}."
    )
  for (path, u), p in zip(
    jax.tree_util.tree_leaves_with_path(updates, is_leaf=_is_masked_node),
    jax.tree.leaves(params, is_leaf=_is_masked_node),
  ):
    if _is_masked_node(u) or _is_masked_node(p):
      continue
    if jnp.shape(u) != jnp.shape(p):
      raise ValueError(
        f"updates{jax.tree_util.keystr(path)} has shape {jnp.shape(u)} but "
        f"the parameter has shape {jnp.shape(p)}."
      )


def _compute_dtype(dtype) -> jnp.dtype:
  """float32, or float64 for float64 parameters."""
  return jnp.promote_types(dtype, jnp.float32)


def _is_low_precision(dtype) -> bool:
  """bfloat16, float16 and narrower floats: an update of ``x/(k+2)`` rounds away
  after ~2^8 steps."""
  return jnp.finfo(dtype).bits < 32


def _check_start_step(start_step) -> None:
  """A Python int >= 0, or an integer JAX array (``optax.inject_hyperparams``
  passes one)."""
  if isinstance(start_step, bool):
    raise ValueError(
      f"`start_step` must be a non-negative int; got {start_step!r}."
    )
  if isinstance(start_step, int):
    if start_step < 0:
      raise ValueError(
        f"`start_step` must be a non-negative int; got {start_step!r}."
      )
    return
  if isinstance(start_step, (jax.Array, np.ndarray)) and jnp.issubdtype(
    jnp.result_type(start_step), jnp.integer
  ):
    if jnp.ndim(start_step) != 0:
      raise ValueError(
        f"`start_step` must be a scalar; got shape {jnp.shape(start_step)}."
      )
    if not isinstance(start_step, jax.core.Tracer) and int(start_step) < 0:
      raise ValueError(
        f"`start_step` must be a non-negative int; got {start_step!r}."
      )
    return
  raise ValueError(
    "`start_step` must be a non-negative int (or an integer scalar array); "
    f"got {start_step!r}."
  )


def _decayed_update(m, u, p, z0, xs, count, decaying):
  """One leaf of the wrapped update: ``(delta, iterate)``.

  delta = u - c (x - z0) with c = 1/(count + 2) while ``decaying`` (0 before).
  For a compensated leaf (a float32 iterate ``xs``) the exact iterate is
  ``x = xs`` where ``xs`` rounds to ``p`` (else ``p``), the new iterate is
  ``x + delta`` in float32, and the returned delta moves ``p`` onto the new
  iterate rounded to the parameter dtype. Each output is one elementwise
  expression of the inputs, and the parameters' new value depends on the other
  inputs only through the new iterate, so XLA reads ``u``'s inputs, ``p``,
  ``z0`` and ``xs`` once (one pass writing the iterate; ``optax.apply_updates``
  then reads it with ``p``).

  Args:
    m: whether SODA applies to the leaf (a static bool).
    u: the base optimizer's update, shape of p.
    p: the parameter (or a MaskedNode of another optax.partition group).
    z0: its anchor, or a MaskedNode (anchor='zero').
    xs: its float32 iterate, or a MaskedNode (not compensated).
    count, decaying: the step k (int32 scalar) and whether k >= start_step.
  """
  if _is_masked_node(p):  # e.g. leaves of another optax.partition group
    return u, xs
  out_dtype = p.dtype
  if not m:
    return u.astype(out_dtype), xs
  cd = _compute_dtype(p.dtype)
  # The coefficient in the compute dtype: exact 1/(k+2) for float64 parameters.
  c = jnp.where(decaying, 1.0 / (count.astype(cd) + 2.0), 0.0).astype(cd)
  pc = p.astype(cd)
  if _is_masked_node(xs):
    disp = pc if _is_masked_node(z0) else pc - z0.astype(cd)
    return (u.astype(cd) - c * disp).astype(out_dtype), xs
  # Rounding to the parameter dtype with reduce_precision, not a cast pair: XLA
  # may drop a float32 -> bf16 -> float32 round trip (excess precision), which
  # would hide the rounding.
  fi = jnp.finfo(out_dtype)
  held = lambda v: jax.lax.reduce_precision(v, fi.nexp, fi.nmant)
  # the exact iterate (p if p was changed outside)
  x = jnp.where(held(xs) == pc, xs, pc)
  disp = x if _is_masked_node(z0) else x - z0.astype(cd)
  x_next = x + (u.astype(cd) - c * disp)
  # The difference of two numbers of the parameter dtype: exact in float32, and
  # in the parameter dtype when the old and new values are within a factor 2 of
  # each other (Sterbenz), so optax.apply_updates lands on held(x_next). A
  # larger relative step may land one unit in the last place off; that element
  # then continues from the parameter.
  delta = (held(x_next) - pc).astype(out_dtype)
  return delta, x_next


def soda(
  base_optimizer: optax.GradientTransformation,
  *,
  anchor: Literal["init", "zero"] = "init",
  mask: MaskOrFn = None,
  start_step: int | jax.Array = 0,
  compensate: bool | None = None,
) -> optax.GradientTransformationExtraArgs:
  r"""SODA wrapper: replaces weight decay by an anchored ``1/(k+2)`` average.

  With ``u_k`` the additive update returned by ``base_optimizer`` (optax sign
  convention: it already contains the minus sign and the learning rate), the
  parameters follow, leaf by leaf,

  .. math::

    x_{k+1} = x_k + u_k - \frac{1}{k+2}\,(x_k - z_0),

  i.e. ``update`` returns :math:`\Delta_k = u_k - (x_k - z_0)/(k+2)`. Here
  ``k`` is the number of previous ``update`` calls (it starts at 0, so the
  first step equals the base step exactly) and ``z_0`` (the *anchor*) is the
  value of the parameters at the first wrapped update. Unrolled,

  .. math::

    x_K = z_0 + \sum_{j<K} \frac{j+2}{K+1}\, u_j ,

  a uniform primal average of dual-averaging points
  :math:`z^{j+1} = z_0 + (j+2) u_j`: update ``j`` is down-weighted by
  ``(j+2)/(K+1) <= 1``; the newest update keeps full weight.

  **The decay coefficient 1/(k+2) is not multiplied by the learning rate.** It
  acts during warmup and cooldown, and with a zero learning rate it still
  pulls ``x`` towards ``z_0`` by the factor ``(k+1)/(k+2)`` per step. SODA
  *replaces* weight decay: run the base optimizer with ``weight_decay=0``
  (e.g. ``optax.adamw(lr, weight_decay=0.0)``); no decay needs to be tuned.

  **Placement.** ``soda`` returns final parameter deltas, so it must be the
  *last* transformation of a chain::

    optax.chain(optax.clip_by_global_norm(1.0), soda(optax.adamw(lr, weight_decay=0.0)))  # right
    optax.chain(soda(base), optax.scale(0.5))                               # wrong: rescales the decay

  For gradient accumulation use ``optax.MultiSteps(soda(base), k)`` (decays
  once per real step), not ``soda(optax.MultiSteps(base, k))`` (decays on
  every micro-step).

  **Evaluation parameters.** The parameters held by the training loop are
  the averaged iterate ``x``: evaluate them directly
  (:func:`soda_eval_params` returns them unchanged).

  Args:
    base_optimizer: any optax transformation; it must not apply weight decay
      itself. Extra keyword arguments given to ``update`` are forwarded to it.
    anchor: ``'init'`` (the paper): ``z_0`` = the parameters at the call with
      ``count == start_step``. The anchor is captured lazily at that call, not
      in ``init``, so pretrained weights loaded after ``init`` become the
      anchor (fine-tuning). ``'zero'``: ``z_0 = 0`` (an ablation, not the
      paper; it stores no anchor).
    mask: ``None`` (wrap every leaf), or a pytree of booleans whose structure
      is a prefix of the parameters, or a callable returning one given the
      parameters. Leaves with ``False`` receive the plain base update ``u_k``.
    start_step: the first ``start_step`` calls return ``u_k`` unchanged (e.g.
      during a warmup); the count keeps running, so the first wrapped step uses
      the coefficient ``1/(start_step+2)``, as in the reference code. A Python
      int, or an integer scalar array (``optax.inject_hyperparams`` turns a
      numeric argument into one, so it may also be set through the injected
      state).
    compensate: keep, for each wrapped leaf, the exact iterate ``x`` in float32
      and move the parameters onto it rounded to their dtype (compensated,
      Kahan-style, summation). ``None`` (default): on for parameters narrower
      than 32 bits (bfloat16, float16), off otherwise. Without it, bfloat16
      parameters stall: the pull ``(x - z_0)/(k+2)`` falls below half a unit in
      the last place of ``x`` after a few hundred steps and rounds to zero (a
      displacement of 0.5 from ``z_0 = 10`` stays at 0.5 instead of shrinking to
      0.005 in 199 steps at learning rate 0). With it the parameters are the
      exact float32 iterate rounded to the parameter dtype, at the memory cost
      of one float32 buffer per compensated leaf (read and written once per
      step). Small base updates ``u_k`` (e.g. a low learning rate in bf16) are
      compensated too. The compensation assumes the updates are applied by
      ``optax.apply_updates`` (a rounded ``params + updates``); an element whose
      parameter is changed outside the optimizer (it no longer equals the
      rounded iterate) continues from the parameter.

  Bad input: ``init`` and ``update`` raise ``TypeError`` for integer
  parameters and ``update`` raises ``ValueError`` when the gradients'
  structure or shapes differ from the parameters' (trace-time checks, also
  under ``jax.jit``). NaN gradients give NaN updates (never a silent zero).

  Returns:
    An :class:`optax.GradientTransformationExtraArgs` with state
    :class:`SodaState`. ``update`` requires ``params`` and returns updates in
    the parameter dtype (bf16 parameters stay bf16; the decay, including its
    coefficient ``1/(k+2)``, is computed in float32, or float64 for float64
    parameters).

  Example:
    >>> import jax.numpy as jnp, optax
    >>> from jaxpapers.soda import soda
    >>> tx = optax.chain(optax.clip_by_global_norm(1.0),
    ...                  soda(optax.adamw(1e-2, weight_decay=0.0)))
    >>> params = {'w': jnp.ones(3)}
    >>> state = tx.init(params)
    >>> updates, state = tx.update({'w': jnp.ones(3)}, state, params)
    >>> params = optax.apply_updates(params, updates)

  References:
    Pethick, Xie, Machacek, Cevher. *Optimistic Dual Averaging Unifies
    Modern Optimizers*, arXiv:2605.11172, 2026.
  """
  if anchor not in _ANCHORS:
    raise ValueError(f"`anchor` must be one of {_ANCHORS}; got {anchor!r}.")
  _check_start_step(start_step)
  if compensate is not None and not isinstance(compensate, bool):
    raise TypeError(
      f"`compensate` must be None, True or False; got {compensate!r}."
    )
  if not isinstance(base_optimizer, optax.GradientTransformation):
    raise TypeError(
      "`base_optimizer` must be an optax.GradientTransformation; got "
      f"{type(base_optimizer).__name__}."
    )
  base = optax.with_extra_args_support(base_optimizer)

  def anchored(params) -> Any:
    if anchor == "zero":
      return jax.tree.map(lambda _: False, params)
    return expand_mask(mask, params)

  def compensated(params) -> Any:
    """True on the wrapped leaves that keep a float32 iterate."""

    def leaf(m, p):
      if not m or _is_masked_node(p):
        return False
      return (
        _is_low_precision(jnp.result_type(p))
        if compensate is None
        else compensate
      )

    return jax.tree.map(
      leaf, expand_mask(mask, params), params, is_leaf=_is_masked_node
    )

  def init_fn(params):
    check_params(params)
    if not jax.tree.leaves(params):
      # No array leaves (e.g. the placeholder of optax.tree.map_params): keep
      # the params structure so that the anchor is recognised as params-like.
      return SodaState(
        count=jnp.zeros([], jnp.int32),
        anchor=params,
        inner_state=base.init(params),
        iterate=params,
      )
    wrapped = anchored(params)
    # A copy (not an alias) so that params and state can both be donated.
    anchor_tree = jax.tree.map(
      lambda w, p: jnp.array(p, copy=True) if w else optax.MaskedNode(),
      wrapped,
      params,
    )
    iterate = jax.tree.map(
      lambda c, p: (
        jnp.array(p, dtype=_compute_dtype(p.dtype), copy=True)
        if c
        else optax.MaskedNode()
      ),
      compensated(params),
      params,
    )
    return SodaState(
      count=jnp.zeros([], jnp.int32),
      anchor=anchor_tree,
      inner_state=base.init(params),
      iterate=iterate,
    )

  def update_fn(updates, state, params=None, **extra_args):
    if params is None:
      raise ValueError(NO_PARAMS_MSG)
    check_params(params)
    check_same_tree(updates, params)
    u, inner_state = base.update(
      updates, state.inner_state, params, **extra_args
    )
    count = state.count
    decaying = count >= start_step
    capture = count == start_step
    apply_mask = expand_mask(mask, params)
    iterate = state.iterate
    if iterate is None:  # a state built without compensation
      iterate = jax.tree.map(
        lambda _: optax.MaskedNode(), params, is_leaf=_is_masked_node
      )

    treedef = jax.tree.structure(params, is_leaf=_is_masked_node)
    flat_p = treedef.flatten_up_to(params)
    flat_m = treedef.flatten_up_to(apply_mask)
    flat_u = treedef.flatten_up_to(u)
    flat_a = treedef.flatten_up_to(state.anchor)
    flat_x = treedef.flatten_up_to(iterate)
    # The anchor is written once, at the capture step: a conditional leaves its
    # buffers in place on every other step (``where(capture, params, anchor)``
    # would rewrite all of them every step, a second parameter-sized write per
    # update).
    held = [
      i
      for i, (p, a) in enumerate(zip(flat_p, flat_a))
      if not (_is_masked_node(p) or _is_masked_node(a))
    ]
    if held:
      anchors = jax.lax.cond(
        capture,
        lambda ps, as_: [
          jnp.array(p, dtype=a.dtype, copy=True) for p, a in zip(ps, as_)
        ],
        lambda ps, as_: as_,
        [flat_p[i] for i in held],
        [flat_a[i] for i in held],
      )
      for i, a in zip(held, anchors):
        flat_a[i] = a
    new_updates, new_iterate = [], []
    for m, u_i, p, z0, xs in zip(flat_m, flat_u, flat_p, flat_a, flat_x):
      d, xs = _decayed_update(m, u_i, p, z0, xs, count, decaying)
      new_updates.append(d)
      new_iterate.append(xs)
    new_iterate = (
      None if state.iterate is None else treedef.unflatten(new_iterate)
    )
    return treedef.unflatten(new_updates), SodaState(
      # a jnp.where of the count
      count=cast(jax.Array, optax.safe_increment(count)),
      anchor=treedef.unflatten(flat_a),
      inner_state=inner_state,
      iterate=new_iterate,
    )

  # chex's ArrayTree leaves out None (an empty pytree), the iterate of an
  # uncompensated state.
  init = cast(optax.TransformInitFn, init_fn)
  update = cast(optax.TransformUpdateExtraArgsFn, update_fn)
  return optax.GradientTransformationExtraArgs(init, update)
