"""Width parametrisations of the DenseAM ("abc"-style exponents) and the Adam
optimiser.

For K memories and a base width ``K0`` (where every multiplier is 1):

* init ``Xi_ij ~ N(0, sigma0^2 N^-1 (K/K0)^(-2b))``;
* input role ``alpha = alpha0 (K/K0)^(-a)``; output role ``gamma = gamma0
  (K/K0)^(-g)``;
* inverse temperature ``beta = beta0 s(K)`` with ``s = 1`` (``'const'``),
  ``(K/K0)^e`` (``'power'``) or ``sqrt(log K / log K0)`` (``'sqrtlog'``);
* Adam learning rate ``eta (K/K0)^(-c)`` and epsilon ``eps0 (K/K0)^(-d)``.

The paper (arXiv 2605.10164) derives explicit exponents, but its tables were not
available to us: :meth:`Parametrization.standard` is exact,
:meth:`Parametrization.derived` is a prescription *derived here, not read from
the paper* (its docstring has the derivation), the ``hypothesis_*`` presets are
earlier reconstructions kept for comparison, and
:meth:`Parametrization.from_paper` raises until the paper's table is entered.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax

from jaxpapers.core import validation as V

BETA_RULES = ("const", "power", "sqrtlog")


@dataclasses.dataclass(frozen=True)
class Parametrization:
  """Exponents that say how each hyperparameter scales with the number of
  memories K.

  Each argument is kept as the field of the same name.

  Args:
    base_width: ``K0`` (>= 2), the width at which every multiplier equals its
      base value.
    sigma0: base init scale (> 0).
    alpha0: base input-role multiplier (> 0).
    gamma0: base output-role multiplier (> 0).
    a: input-role exponent, ``alpha = alpha0 (K/K0)^-a``.
    b: init exponent, ``std = sigma0 N^-1/2 (K/K0)^-b``.
    c: learning-rate exponent, ``lr = eta (K/K0)^-c``.
    d: Adam-epsilon exponent, ``eps = eps0 (K/K0)^-d``.
    g: output-role exponent, ``gamma = gamma0 (K/K0)^-g``.
    e: inverse-temperature exponent for ``beta_rule='power'``.
    beta_rule: ``'const'``, ``'power'`` or ``'sqrtlog'``.
    eps0: base Adam epsilon (> 0).
    name: a label for tables and plots.
  """

  base_width: int = 64
  sigma0: float = 1.0
  alpha0: float = 1.0
  gamma0: float = 1.0
  a: float = 0.0
  b: float = 0.0
  c: float = 0.0
  d: float = 0.0
  g: float = 0.0
  e: float = 0.0
  beta_rule: Literal["const", "power", "sqrtlog"] = "const"
  eps0: float = 1e-8
  name: str = "custom"

  def __post_init__(self):
    V.check_int(self.base_width, "base_width", min_value=2)
    for f in ("sigma0", "alpha0", "gamma0", "eps0"):
      V.check_float(getattr(self, f), f, min_value=0.0, min_inclusive=False)
    for f in ("a", "b", "c", "d", "g", "e"):
      V.check_float(getattr(self, f), f"exponent {f}")
    if self.beta_rule not in BETA_RULES:
      raise ValueError(
        f"beta_rule must be one of {list(BETA_RULES)}, got {self.beta_rule!r}"
      )

  def multipliers(self, k: int) -> dict[str, float]:
    """The width-dependent values at ``K = k`` memories.

    Args:
      k: number of memories (int >= 1).

    Returns:
      ``{'alpha', 'gamma', 'beta_scale', 'init_std', 'lr_scale', 'eps_scale'}``
      as Python floats; ``init_std`` is the factor ``sigma0 (K/K0)^-b`` (the
      ``N^-1/2`` is applied by :func:`init_memories`), ``eps_scale`` multiplies
      ``eps0``.
    """
    k = V.check_int(k, "k (number of memories)", min_value=1)
    r = k / self.base_width
    if self.beta_rule == "const":
      beta_scale = 1.0
    elif self.beta_rule == "power":
      beta_scale = r**self.e
    else:
      beta_scale = math.sqrt(math.log(max(k, 2)) / math.log(self.base_width))
    return {
      "alpha": self.alpha0 * r ** (-self.a),
      "gamma": self.gamma0 * r ** (-self.g),
      "beta_scale": beta_scale,
      "init_std": self.sigma0 * r ** (-self.b),
      "lr_scale": r ** (-self.c),
      "eps_scale": r ** (-self.d),
    }

  def replace(self, **changes: Any) -> Parametrization:
    """A copy with some fields changed (validated again).

    Args:
      **changes: field name -> new value.

    Returns:
      the new parametrisation.
    """
    return dataclasses.replace(self, **changes)

  @classmethod
  def standard(cls, base_width: int = 64) -> Parametrization:
    """Standard parametrisation: no exponent, every hyperparameter independent
    of K.

    Args:
      base_width: ``K0``.

    Returns:
      the :class:`Parametrization` named ``'standard'``.
    """
    return cls(base_width=base_width, name="standard")

  @classmethod
  def hypothesis_lse(cls, base_width: int = 64) -> Parametrization:
    """Hypothesis H1 for the LSE energy (ours, not the paper's table): all
    exponents 0.

    ``Xi^T softmax(beta h)`` is a convex combination of memories, so the down
    map needs no ``1/K``; with Adam the per-entry update is ``O(eta)`` and so is
    the readout change ``sum_mu f_mu Delta xi_mu``. H1 therefore coincides with
    :meth:`standard` and predicts that standard parametrisation already
    transfers the learning rate in K.

    Args:
      base_width: ``K0``.

    Returns:
      the :class:`Parametrization` named ``'hypothesis_lse'``.
    """
    return cls(base_width=base_width, name="hypothesis_lse")

  @classmethod
  def hypothesis_poly(cls, n: int = 3, base_width: int = 64) -> Parametrization:
    """Hypothesis H1 for the polynomial energy (ours, not the paper's table):
    ``g = d = 1``.

    ``E[xi_mu ReLU(xi_mu . x)^(n-1)]`` is parallel to ``x``, so the down map
    ``sum_mu xi_mu f_mu`` adds K coherent terms at init: ``gamma ∝ 1/K`` keeps
    the Euler increment ``O(1)``. Gradients with respect to ``Xi`` then shrink
    like ``1/K`` too, so Adam's epsilon is scaled the same way (``d = g``) to
    keep the update sign-like.

    Args:
      n: the polynomial degree (recorded in the name; the exponents do not
        depend on it).
      base_width: ``K0``.

    Returns:
      the :class:`Parametrization` named ``'hypothesis_poly<n>'``.
    """
    V.check_int(n, "n (polynomial degree)", min_value=2)
    return cls(base_width=base_width, g=1.0, d=1.0, name=f"hypothesis_poly{n}")

  @classmethod
  def derived(
    cls, energy: Literal["lse", "poly"], n: int = 3, base_width: int = 64
  ) -> Parametrization:
    """The width prescription for weight-shared DenseAMs, *derived here, not
    read from the paper*.

    LSE: ``a = b = c = g = 0``, ``d = 1``; rectified polynomial (any degree
    ``n``): ``a = b = c = 0``, ``g = 1``, ``d = 1``. That is: one Adam learning
    rate for every K, the output role ``gamma = gamma0 K0 / K`` for the
    polynomial energy only, and Adam's epsilon ``eps0 K0 / K`` (it follows the
    gradient's scale, so the update stays sign-like).

    Derivation (μP-style dimensional analysis, Yang & Hu 2021, of the size of
    each quantity per step as K -> infinity at fixed N, T, dt; ``x`` and the
    visible state are ``O(1)`` per coordinate):

    1. *Up map.* ``h_mu = alpha xi_mu . g(x)`` has fan-in N (fixed): with
       ``Xi_ij ~ N(0, sigma0^2 / N)``, ``h_mu = O(1)`` whatever K, so
       ``a = b = 0``.
    2. *Down map at init.* ``gamma alpha sum_mu xi_mu f_mu`` has fan-in K. LSE:
       ``f = softmax(beta h)`` sums to 1, so the sum is a convex combination of
       memories; its part along ``x`` (the memories that ``x`` selects) is
       ``O(1)`` and the rest averages out as ``K^-1/2``: ``gamma = O(1)``,
       ``g = 0``. Polynomial: ``f_mu = ReLU(h_mu)^(n-1) = O(1)`` for every mu
       and ``E[xi_mu ReLU(xi_mu . x)^(n-1)]`` is parallel to ``x`` (non-zero),
       so the K terms add coherently to ``O(K)``: the Euler increment stays
       ``O(1)`` only with ``gamma ∝ 1/K``, ``g = 1``.
    3. *Gradient scale.* Every gradient entry ``dL/dXi_{mu j}`` carries ``f_mu``
       (down map) or ``gamma f'_mu`` (up map, through ``h_mu``): ``O(1/K)`` for
       LSE (softmax weights ``~1/K``) and ``O(gamma) = O(1/K)`` for the
       polynomial under step 2. Adam divides by the gradient's RMS, so its
       update is ``O(eta)`` per entry at any K provided epsilon is below the
       gradient scale: ``eps ∝ 1/K``, ``d = 1``.
    4. *Effect of one update.* With ``|Delta Xi_{mu j}| = O(eta)``: ``Delta
       h_mu = alpha Delta xi_mu . g(x) = O(eta)`` (fan-in N, fixed); the down
       map changes by ``gamma alpha sum_mu (Delta xi_mu f_mu + xi_mu f'_mu Delta
       h_mu)``, and the Adam updates of the memories are correlated (each
       follows the same back-propagated ``delta x``), so the K terms add
       coherently: ``O(K eta) * O(1/K) = O(eta)`` for both energies (LSE:
       ``sum_mu f_mu = 1``; polynomial: ``gamma ∝ 1/K``). Every quantity moves
       ``O(eta)`` per step at any K, so the learning rate needs no exponent:
       ``c = 0``. (Under standard parametrisation the polynomial's down map
       moves ``O(K eta)``, which predicts ``eta*(K) ∝ 1/K``.)
    5. *Weight sharing.* The same ``Xi`` serves the up and the down map and all
       T steps, so its gradient is a sum of 2T contributions, each of the scale
       in step 3 (K enters each the same way). Adam normalises the summed
       gradient per entry, so sharing changes the update's direction, not its
       size; the T-step change of ``x_T`` is ``O(T dt eta)``, which depends on T
       but not on K. With a *single* learning rate for a weight that is both an
       input (fan-in N) and an output (fan-in K) layer, μP's usual per-layer
       learning rates are impossible; the output's ``1/K`` is carried by the
       multiplier (``gamma``, or the softmax's normalisation for LSE) instead.

    ``beta`` stays constant (``beta_rule='const'``): ``max_mu h_mu`` grows like
    ``sqrt(2 log K)``, a slow drift that this prescription does not correct.

    Args:
      energy: ``'lse'`` or ``'poly'``.
      n: the polynomial degree (``>= 2``; recorded in the name, the exponents do
        not depend on it).
      base_width: ``K0``.

    Returns:
      The :class:`Parametrization` named ``'derived_lse'`` or
      ``'derived_poly<n>'``.
    """
    if energy == "lse":
      return cls(base_width=base_width, d=1.0, name="derived_lse")
    if energy == "poly":
      V.check_int(n, "n (polynomial degree)", min_value=2)
      return cls(base_width=base_width, g=1.0, d=1.0, name=f"derived_poly{n}")
    raise ValueError(f"energy must be 'lse' or 'poly', got {energy!r}")

  @classmethod
  def from_paper(cls, *args: Any, **kwargs: Any) -> Parametrization:
    """The paper's prescription (arXiv 2605.10164, §3–4): not available to us
    yet.

    Use :meth:`derived` for the prescription derived here (not read from the
    paper).

    Args:
      *args: reserved for the paper's arguments.
      **kwargs: reserved for the paper's arguments.

    Returns:
      the paper's :class:`Parametrization`, once its exponents are entered
      (until then this raises).

    Raises:
      NotImplementedError: always, until the paper's exponents are entered here.
    """
    raise NotImplementedError(
      "from_paper: the exponents of arXiv 2605.10164 were not available when "
      "this was written; Parametrization.derived(energy) is the prescription "
      "derived here (not the paper's); use Parametrization(a=..., b=..., "
      "c=..., d=..., g=..., e=...) with the paper's table"
    )


def init_memories(
  key: jax.Array, k: int, n_visible: int, p: Parametrization
) -> jax.Array:
  """Draws ``Xi_ij ~ N(0, sigma0^2 N^-1 (K/K0)^(-2b))``.

  Args:
    key: a typed PRNG key (``jax.random.key``).
    k: number of memories K (>= 1).
    n_visible: number of visible units N (>= 1).
    p: the parametrisation.

  Returns:
    ``[K, N]`` float32 memories.
  """
  if not (
    isinstance(key, jax.Array)
    and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  ):
    raise TypeError("key must be a typed PRNG key from jax.random.key(seed)")
  if key.shape != ():
    raise ValueError(
      f"key must be a single key (shape ()), got shape {key.shape}"
    )
  k = V.check_int(k, "k (number of memories)", min_value=1)
  n_visible = V.check_int(n_visible, "n_visible", min_value=1)
  if not isinstance(p, Parametrization):
    raise TypeError(f"p must be a Parametrization, got {type(p).__name__}")
  std = p.multipliers(k)["init_std"] / math.sqrt(n_visible)
  return std * jax.random.normal(key, (k, n_visible), jnp.float32)


def make_optimizer(
  p: Parametrization, k: int, base_lr: Any
) -> optax.GradientTransformation:
  """Adam for the memories with the width-scaled learning rate and epsilon.

  ``optax.inject_hyperparams(optax.adam)(learning_rate=eta (K/K0)^-c, eps=eps0
  (K/K0)^-d)``: the learning rate lives in the optimiser state, so it may be a
  traced scalar (a vmapped grid of learning rates compiles once).

  Args:
    p: the parametrisation.
    k: number of memories K.
    base_lr: ``eta``, the base learning rate (Python float >= 0 or a traced
      scalar).

  Returns:
    An ``optax.GradientTransformation`` (state holds
    ``hyperparams['learning_rate']``).
  """
  if not isinstance(p, Parametrization):
    raise TypeError(f"p must be a Parametrization, got {type(p).__name__}")
  m = p.multipliers(k)
  if isinstance(base_lr, (int, float)) and not isinstance(base_lr, bool):
    base_lr = V.check_float(base_lr, "base_lr", min_value=0.0)
  else:
    V.check_array(base_lr, "base_lr", ndim=0, dtype="float")
  return optax.inject_hyperparams(optax.adam)(
    learning_rate=base_lr * m["lr_scale"], eps=p.eps0 * m["eps_scale"]
  )
