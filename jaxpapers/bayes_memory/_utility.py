"""A learned utility model distilled from Bayes factors, and an access gate
(reconstruction).

The abstract says the model "learns to identify salient turns and regulate
memory usage based on expected utility"; architecture and loss are not public.
Here u_φ(m_i, x) is a 2-layer MLP on turn and query features
[f_m, f_x, f_m ⊙ f_x, r_i] (r_i = the turn's relative position, a recency
feature), trained with

  L = λ_kd KL(softmax(LBF / β) || softmax(u)) + λ_reg Huber(u - LBF)

over each question's valid turns (listwise distillation as in REPLUG / LLM-R),
and the gate g_φ(x, H) is a logistic MLP on [f_x, max_i f_m_i ⊙ f_x] trained
with BCE on 1[max_i LBF_i > τ].
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.typing import ArrayLike

from jaxpapers.core import validation as V


def _check_uv(u, lbf, valid):
  u = V.check_array(u, "u", dtype="float", ndim=2)
  lbf = V.check_array(lbf, "lbf", dtype="float", shape=u.shape)
  valid = V.check_array(valid, "valid", dtype="bool", shape=u.shape)
  ok = V.check_values(
    jnp.all(jnp.isfinite(jnp.where(valid, lbf, 0.0))),
    "lbf must be finite at valid turns",
  )
  ok2 = V.check_values(
    jnp.all(jnp.any(valid, axis=1)), "valid must hold a turn in every row"
  )
  return u, lbf, valid, ok, ok2


def _ok(*flags):
  fl = [f for f in flags if f is not True]
  return True if not fl else functools.reduce(jnp.logical_and, fl)


def utility_distillation_loss(
  u: ArrayLike, lbf: ArrayLike, valid: ArrayLike, *, beta: float = 1.0
) -> jax.Array:
  """Listwise distillation KL(softmax(LBF / β) || softmax(u)) over valid turns, mean over rows.

  Args:
    u: float [Q, N] predicted utilities (logits).
    lbf: float [Q, N] teacher log Bayes factors.
    valid: bool [Q, N]; each row needs at least one valid turn.
    beta: teacher temperature (> 0, static).

  Returns:
    float32 [] (>= 0; 0 iff softmax(u) equals the teacher on every row).

  Raises:
    ValueError: bad shapes or beta; eagerly, non-finite lbf at a valid turn or a
      row with no valid turn. Under jit those make the loss NaN.
  """
  u, lbf, valid, ok, ok2 = _check_uv(u, lbf, valid)
  beta = V.check_float(beta, "beta", min_value=0.0, min_inclusive=False)
  t = jnp.where(valid, lbf / beta, -jnp.inf)
  logp_t = jax.nn.log_softmax(t, axis=1)
  logp_s = jax.nn.log_softmax(jnp.where(valid, u, -jnp.inf), axis=1)
  kl = jnp.sum(
    jnp.where(valid, jnp.exp(logp_t) * (logp_t - logp_s), 0.0), axis=1
  )
  return V.poison(jnp.mean(kl), _ok(ok, ok2))


def utility_regression_loss(
  u: ArrayLike, lbf: ArrayLike, valid: ArrayLike, *, delta: float = 1.0
) -> jax.Array:
  """Huber(u - LBF) averaged over valid turns.

  Args:
    u: float [Q, N] predicted utilities.
    lbf: float [Q, N] teacher log Bayes factors.
    valid: bool [Q, N]; each row needs at least one valid turn.
    delta: the Huber knee (> 0, static).

  Returns:
    float32 [].

  Raises:
    Same as :func:`utility_distillation_loss`.
  """
  u, lbf, valid, ok, ok2 = _check_uv(u, lbf, valid)
  delta = V.check_float(delta, "delta", min_value=0.0, min_inclusive=False)
  h = optax.huber_loss(u, jnp.where(valid, lbf, 0.0), delta=delta)
  out = jnp.sum(jnp.where(valid, h, 0.0)) / jnp.sum(valid)
  return V.poison(out, _ok(ok, ok2))


def gate_loss(
  g_logit: ArrayLike, lbf: ArrayLike, valid: ArrayLike, *, tau: float = 0.0
) -> jax.Array:
  """BCE of the gate logit against the access label
  1[max_{valid i} LBF_i > tau].

  Args:
    g_logit: float [Q] gate logits.
    lbf: float [Q, N] teacher log Bayes factors.
    valid: bool [Q, N]; each row needs at least one valid turn.
    tau: the access threshold (static float).

  Returns:
    float32 [] mean binary cross-entropy.

  Raises:
    Same as :func:`utility_distillation_loss`.
  """
  g_logit = V.check_array(g_logit, "g_logit", dtype="float", ndim=1)
  _, lbf, valid, ok, ok2 = _check_uv(
    jnp.zeros(jnp.shape(lbf), jnp.float32), lbf, valid
  )
  if lbf.shape[0] != g_logit.shape[0]:
    raise ValueError(
      f"g_logit must have shape [Q] = ({lbf.shape[0]},), got {g_logit.shape}"
    )
  tau = V.check_float(tau, "tau")
  label = jnp.any(valid & (lbf > tau), axis=1).astype(jnp.float32)
  out = jnp.mean(optax.sigmoid_binary_cross_entropy(g_logit, label))
  return V.poison(out, _ok(ok, ok2))


def pair_features(
  f_turn: ArrayLike, f_query: ArrayLike, position: ArrayLike
) -> jax.Array:
  """[f_m, f_x, f_m ⊙ f_x, r] per turn.

  Args:
    f_turn: float [..., N, d] turn features.
    f_query: float [..., d] query features.
    position: float [..., N] relative turn position in [0, 1] (1 = newest).

  Returns:
    float [..., N, 3d + 1].
  """
  f_turn = V.check_array(f_turn, "f_turn", dtype="float", ndim=range(2, 8))
  d = f_turn.shape[-1]
  f_query = V.check_array(
    f_query, "f_query", dtype="float", shape=f_turn.shape[:-2] + (d,)
  )
  position = V.check_array(
    position, "position", dtype="real", shape=f_turn.shape[:-1]
  )
  fx = jnp.broadcast_to(f_query[..., None, :], f_turn.shape)
  return jnp.concatenate(
    [f_turn, fx, f_turn * fx, position[..., None].astype(f_turn.dtype)], axis=-1
  )


class UtilityModel(nnx.Module):
  """u_φ(m_i, x): a 2-layer MLP on :func:`pair_features` (layer-normalised
  inputs).

  Args:
    d_feat: d, the feature width of f_turn and f_query.
    hidden: MLP width.
    rngs: ``nnx.Rngs``.
  """

  def __init__(self, d_feat: int, *, hidden: int = 128, rngs: nnx.Rngs):
    d_feat = V.check_int(d_feat, "d_feat", min_value=1)
    hidden = V.check_int(hidden, "hidden", min_value=1)
    self.d_feat = d_feat
    self.norm = nnx.LayerNorm(3 * d_feat + 1, rngs=rngs)
    self.l1 = nnx.Linear(3 * d_feat + 1, hidden, rngs=rngs)
    self.l2 = nnx.Linear(hidden, 1, rngs=rngs)

  def __call__(self, f_turn, f_query, position) -> jax.Array:
    """Utilities float [..., N] for turns [..., N, d], queries [..., d],
    positions [..., N]."""
    z = pair_features(f_turn, f_query, position)
    if z.shape[-1] != 3 * self.d_feat + 1:
      raise ValueError(
        f"f_turn must have d_feat={self.d_feat} features, "
        f"got {f_turn.shape[-1]}"
      )
    return self.l2(jax.nn.gelu(self.l1(self.norm(z))))[..., 0]


class AccessGate(nnx.Module):
  """g_φ(x, H): logit of "memory helps", from [f_x, max_i (f_m_i ⊙ f_x)] (valid
  turns only).

  Args:
    d_feat: d, the feature width of f_turn and f_query.
    hidden: MLP width.
    rngs: ``nnx.Rngs``.
  """

  def __init__(self, d_feat: int, *, hidden: int = 64, rngs: nnx.Rngs):
    d_feat = V.check_int(d_feat, "d_feat", min_value=1)
    hidden = V.check_int(hidden, "hidden", min_value=1)
    self.d_feat = d_feat
    self.norm = nnx.LayerNorm(2 * d_feat, rngs=rngs)
    self.l1 = nnx.Linear(2 * d_feat, hidden, rngs=rngs)
    self.l2 = nnx.Linear(hidden, 1, rngs=rngs)

  def __call__(self, f_turn, f_query, valid) -> jax.Array:
    """Gate logits float [...] for f_turn [..., N, d], f_query [..., d], valid
    bool [..., N]."""
    f_turn = V.check_array(f_turn, "f_turn", dtype="float", ndim=range(2, 8))
    if f_turn.shape[-1] != self.d_feat:
      raise ValueError(
        f"f_turn must have d_feat={self.d_feat} features, "
        f"got {f_turn.shape[-1]}"
      )
    f_query = V.check_array(
      f_query,
      "f_query",
      dtype="float",
      shape=f_turn.shape[:-2] + (self.d_feat,),
    )
    valid = V.check_array(valid, "valid", dtype="bool", shape=f_turn.shape[:-1])
    inter = jnp.where(
      valid[..., None], f_turn * f_query[..., None, :], -1e9
    ).max(-2)
    z = jnp.concatenate([f_query, inter], axis=-1)
    return self.l2(jax.nn.gelu(self.l1(self.norm(z))))[..., 0]


def train_utility_model(
  f_turn: ArrayLike,
  f_query: ArrayLike,
  position: ArrayLike,
  valid: ArrayLike,
  lbf: ArrayLike,
  *,
  seed: int = 0,
  steps: int = 300,
  lr: float = 3e-3,
  beta: float = 1.0,
  tau: float = 0.0,
  lambda_kd: float = 1.0,
  lambda_reg: float = 0.1,
  hidden: int = 128,
  weight_decay: float = 1e-3,
) -> tuple[UtilityModel, AccessGate, jax.Array]:
  """Fit :class:`UtilityModel` and :class:`AccessGate` to Bayes-factor labels
  (full batch).

  Args:
    f_turn: float [Q, N, d] turn features.
    f_query: float [Q, d] query features.
    position: float [Q, N] relative turn positions.
    valid: bool [Q, N].
    lbf: float [Q, N] teacher labels (finite at valid turns).
    seed: init seed (>= 0).
    steps: AdamW steps (one jitted ``lax.scan``).
    lr: AdamW learning rate.
    beta: teacher temperature of :func:`utility_distillation_loss`.
    tau: gate threshold of :func:`gate_loss`.
    lambda_kd: weight of the distillation loss.
    lambda_reg: weight of :func:`utility_regression_loss` (the gate loss has
      weight 1).
    hidden: MLP width of the utility model (the gate uses half).
    weight_decay: AdamW weight decay.

  Returns:
    (utility_model, gate, losses float [steps]).
  """
  f_turn = V.check_array(f_turn, "f_turn", dtype="float", ndim=3)
  Q, N, d = f_turn.shape
  f_query = V.check_array(f_query, "f_query", dtype="float", shape=(Q, d))
  position = V.check_array(position, "position", dtype="real", shape=(Q, N))
  valid = V.check_array(valid, "valid", dtype="bool", shape=(Q, N))
  lbf = V.check_array(lbf, "lbf", dtype="float", shape=(Q, N))
  steps = V.check_int(steps, "steps", min_value=1)
  V.check_values(
    jnp.all(jnp.isfinite(jnp.where(valid, lbf, 0.0))),
    "lbf must be finite at valid turns",
  )
  lbf = jnp.where(valid, lbf, 0.0)
  rngs = nnx.Rngs(V.check_int(seed, "seed", min_value=0))
  pair = _Pair(
    UtilityModel(d, hidden=hidden, rngs=rngs),
    AccessGate(d, hidden=max(hidden // 2, 1), rngs=rngs),
  )
  _, params = nnx.split(pair)
  # one static graph object per shape: refits reuse the compilation
  graph = _graph(d, hidden)
  params, losses = _fit(
    graph,
    params,
    f_turn,
    f_query,
    position.astype(jnp.float32),
    valid,
    lbf,
    steps=steps,
    beta=V.check_float(beta, "beta", min_value=0.0, min_inclusive=False),
    tau=V.check_float(tau, "tau"),
    lkd=float(lambda_kd),
    lreg=float(lambda_reg),
    lr=V.check_float(lr, "lr", min_value=0.0, min_inclusive=False),
    wd=V.check_float(weight_decay, "weight_decay", min_value=0.0),
  )
  pair = nnx.merge(graph, params)
  return pair.u, pair.g, losses


def predict_utilities(
  model: UtilityModel,
  gate: AccessGate,
  f_turn: ArrayLike,
  f_query: ArrayLike,
  position: ArrayLike,
  valid: ArrayLike,
) -> tuple[jax.Array, jax.Array]:
  """Utilities u [..., N] and gate logits [...] in one jitted call (one compile
  per shape).

  Args:
    model: the utility model (from :func:`train_utility_model`).
    gate: the access gate (from :func:`train_utility_model`).
    f_turn: float [..., N, d] turn features.
    f_query: float [..., d] query features.
    position: float [..., N] relative turn positions.
    valid: bool [..., N].

  Returns:
    (u float [..., N] with -inf at invalid turns, gate logits float [...]).
  """
  if not isinstance(model, UtilityModel) or not isinstance(gate, AccessGate):
    raise TypeError("model must be a UtilityModel and gate an AccessGate")
  f_turn = V.check_array(f_turn, "f_turn", dtype="float", ndim=range(2, 8))
  valid = V.check_array(valid, "valid", dtype="bool", shape=f_turn.shape[:-1])
  graph, state = nnx.split(_Pair(model, gate))
  if graph == _graph(model.d_feat, model.l1.out_features):
    graph = _graph(model.d_feat, model.l1.out_features)
  return _predict(graph, state, f_turn, f_query, position, valid)


@functools.partial(jax.jit, static_argnames=("graph",))
def _predict(graph, state, f_turn, f_query, position, valid):
  pair = nnx.merge(graph, state)
  u = pair.u(f_turn, f_query, position)
  return jnp.where(valid, u, -jnp.inf), pair.g(f_turn, f_query, valid)


@functools.cache
def _graph(d: int, hidden: int):
  rngs = nnx.Rngs(0)
  pair = _Pair(
    UtilityModel(d, hidden=hidden, rngs=rngs),
    AccessGate(d, hidden=max(hidden // 2, 1), rngs=rngs),
  )
  return nnx.split(pair)[0]


class _Pair(nnx.Module):
  def __init__(self, u, g):
    self.u, self.g = u, g


@functools.partial(
  jax.jit,
  static_argnames=("graph", "steps", "beta", "tau", "lkd", "lreg", "lr", "wd"),
)
def _fit(
  graph,
  params,
  f_turn,
  f_query,
  position,
  valid,
  lbf,
  *,
  steps,
  beta,
  tau,
  lkd,
  lreg,
  lr,
  wd,
):
  tx = optax.adamw(lr, weight_decay=wd)

  def loss_fn(p):
    pair = nnx.merge(graph, p)
    u = pair.u(f_turn, f_query, position)
    g = pair.g(f_turn, f_query, valid)
    total = lkd * utility_distillation_loss(u, lbf, valid, beta=beta)
    total = total + lreg * utility_regression_loss(u, lbf, valid)
    return total + gate_loss(g, lbf, valid, tau=tau)

  def step(carry, _):
    p, o = carry
    loss, grads = jax.value_and_grad(loss_fn)(p)
    upd, o = tx.update(grads, o, p)
    return (optax.apply_updates(p, upd), o), loss

  (params, _), losses = jax.lax.scan(
    step, (params, tx.init(params)), None, length=steps
  )
  return params, losses


def fit_leave_one_seed_out(
  questions: dict[str, np.ndarray],
  *,
  tau_placebo: float,
  seed: int = 0,
  steps: int = 300,
  lr: float = 3e-3,
  beta: float = 1.0,
  tau: float = 0.0,
  hidden: int = 128,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, list[float]]]:
  """Distilled utilities and gates for every question from models trained on the
  other seeds.

  For each data seed, :func:`train_utility_model` is fitted on the questions of the other
  seeds against their log Bayes factors LBF = log p(y | m_i, x) - log p(y | x), and predicts
  this seed's questions; a second model is fitted against LBF(placebo) - ``tau_placebo`` =
  log p(y | m_i, x) - log p(y | placebo, x) - ``tau_placebo`` (same compiled program), whose
  gate is the placebo-controlled gate with threshold ``tau``.

  Args:
    questions: ``f_turn`` ``[Q, N, d]``, ``f_query`` ``[Q, d]``, ``lp_y``
      ``[Q, N + 3]`` (columns: no memory, placebo, each turn, all turns) and
      ``seed`` [Q] (at least two distinct seeds).
    tau_placebo: the placebo-controlled gate's margin (nats).
    seed, steps, lr, beta, tau, hidden: as in :func:`train_utility_model`.

  Returns:
    ``(u [Q, N], g [Q], g_placebo [Q], losses)``: the utilities, gate logits and
    placebo-gate logits, and ``{seed: [first, last]}`` training loss of each
    utility model.
  """
  q = questions
  if len(np.unique(q["seed"])) < 2:
    raise ValueError(
      "questions['seed'] must hold at least two seeds (leave-one-seed-out)"
    )
  Q, N, _ = q["f_turn"].shape
  u, g, g_plc = np.zeros((Q, N)), np.zeros(Q), np.zeros(Q)
  pos = np.tile(np.linspace(0.0, 1.0, N), (Q, 1)).astype(np.float32)
  lbf = (q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, :1]).astype(np.float32)
  plc = (q["lp_y"][:, 2 : 2 + N] - q["lp_y"][:, 1:2] - tau_placebo).astype(
    np.float32
  )
  valid = np.ones((Q, N), bool)
  ft, fq = q["f_turn"].astype(np.float32), q["f_query"].astype(np.float32)
  losses = {}

  def fit_predict(target, tr, te):
    model, gate, loss = train_utility_model(
      ft[tr],
      fq[tr],
      pos[tr],
      valid[tr],
      target[tr],
      seed=int(seed),
      steps=steps,
      lr=lr,
      beta=beta,
      tau=tau,
      hidden=hidden,
    )
    ut, gt = predict_utilities(model, gate, ft[te], fq[te], pos[te], valid[te])
    return np.asarray(ut), np.asarray(gt), loss

  for s in np.unique(q["seed"]):
    tr, te = q["seed"] != s, q["seed"] == s
    u[te], g[te], loss = fit_predict(lbf, tr, te)
    losses[int(s)] = [float(loss[0]), float(loss[-1])]
    g_plc[te] = fit_predict(plc, tr, te)[1]
  return u, g, g_plc, losses
