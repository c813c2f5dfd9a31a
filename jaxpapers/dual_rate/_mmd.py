"""Moment Matching Distillation (MMD) and its combination with dual-rate
sampling.

MMD (Salimans, Mensink, Heek, Hoogeboom; arXiv:2406.04103), alternating algorithm. A k-step
student g_eta, initialised from the teacher, predicts x~ = g_eta(z_t, t) at a grid time t and
moves on with z_s ~ q(z_s | z_t, x = x~). The goal is the moment condition
E_g[x~ | z_s] = x_hat_theta(z_s) (the teacher's denoiser) along the student's trajectory.
An auxiliary denoiser x_hat_phi (initialised from the teacher) is fitted to student samples with
L(phi) = w(s) || sg(x~) - x_hat_phi(z_s) ||^2, and the student minimises
L(eta) = sg[x_hat_phi(z_s) - x_hat_theta(z_s)]^T x~, whose gradient moves the student's mean
toward the teacher's. The two updates alternate (here: one update of each per step on the same
batch, which is what the paper's alternating single updates amount to).

Choices that are ours (constants not verified against the paper) [reconstruction]:
t is drawn from the student's grid t_i = 1 - i/k, z_{t_i} ~ q(z_t | x) from data, and
s ~ U(0, t_i) (the moment condition holds for every s < t_i once the student's marginal at t_i
matches the data's); the student loss uses unit weight, the auxiliary loss the teacher's
training weight.

Dual-Rate + MMD [reconstruction, spec §3.6]: the generator is the (E, D) pair with a fixed
refresh pattern over the k student steps. To train step i: take the last refresh j <= i, sample
z_{t_j} ~ q(.|x), compute h = E(z_{t_j}, t_j), roll the light student from t_j to t_i under
stop-gradient with the student's own (ancestral) sampler, then apply the MMD loss to
x~ = D(z_{t_i}, t_i, h, t_j) with gradients into both D and E. The teacher and the auxiliary
denoiser are dual-rate models used with fresh features (K = 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.typing import ArrayLike

from jaxpapers.dual_rate._networks import DualRateModel, SingleNetwork
from jaxpapers.dual_rate._schedule import (
  NoiseSchedule,
  ancestral_step,
  loss_weight,
  output_to_x,
  posterior,
  q_sample,
)


def _x_hat(model, z, t, cond, schedule):
  """Data prediction of a model used as an ordinary denoiser (dual-rate: fresh
  features)."""
  return output_to_x(model(z, t, cond), z, t, schedule, model.parametrization)


def last_refresh_index(refresh: ArrayLike) -> np.ndarray:
  """j[i] = max{r <= i : refresh[r]} for a bool refresh set with refresh[0] =
  True.

  Args:
    refresh: [k] bool refresh set with ``refresh[0] = True``.

  Returns:
    [k] int NumPy array, the index of the last refresh at or before each step.
  """
  refresh = np.asarray(refresh, bool)
  if refresh.ndim != 1 or not refresh[0]:
    raise ValueError("refresh must be a 1-D bool array with refresh[0] = True")
  idx = np.where(refresh, np.arange(refresh.shape[0]), 0)
  return np.maximum.accumulate(idx)


def mmd_losses(
  student: DualRateModel | SingleNetwork,
  aux_denoiser: DualRateModel | SingleNetwork,
  teacher: DualRateModel | SingleNetwork,
  x: jax.Array,
  cond: ArrayLike | None,
  key: jax.Array,
  *,
  schedule: NoiseSchedule = NoiseSchedule(),
  num_student_steps: int = 4,
  refresh: ArrayLike | None = None,
  aux_weighting: str = "v",
) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
  """Student and auxiliary losses of one MMD step (alternating algorithm).

  Args:
    student: SingleNetwork or DualRateModel (the k-step generator).
    aux_denoiser: same type as the teacher; fitted to student samples.
    teacher: the frozen many-step model (SingleNetwork, or DualRateModel used
      with fresh features).
    x: [B, H, W, C] float data.
    cond: [B] int class labels, or None.
    key: typed PRNG key.
    schedule: noise schedule shared by the three models.
    num_student_steps: k.
    refresh: bool [k] refresh pattern of a dual-rate student (default every step); ignored for a
      SingleNetwork student.
    aux_weighting: 'v' | 'x' | 'eps' weight w(lambda_s) of the auxiliary denoiser's loss.

  Returns:
    ``(student_loss, aux_loss, metrics)``: two float scalars and
    ``{'moment_gap': mean squared gap between the auxiliary and the teacher's
    predictions}``. Gradients of ``student_loss`` reach only the student and
    those of ``aux_loss`` only the auxiliary denoiser, so their sum can be
    differentiated jointly.
  """
  if x.ndim != 4:
    raise ValueError(f"x must be [B, H, W, C], got {x.shape}")
  if num_student_steps < 1:
    raise ValueError(f"num_student_steps must be >= 1, got {num_student_steps}")
  k = num_student_steps
  b = x.shape[0]
  ts = jnp.linspace(1.0, 0.0, k + 1)
  k_i, k_eps, k_roll, k_s, k_post = jax.random.split(key, 5)
  i = jax.random.randint(k_i, (b,), 0, k)
  t_i = ts[i]
  eps = jax.random.normal(k_eps, x.shape)

  if isinstance(student, DualRateModel):
    if refresh is None:
      refresh = np.ones(k, bool)
    refresh = np.asarray(refresh, bool)
    if refresh.shape != (k,):
      raise ValueError(f"refresh must have shape [{k}], got {refresh.shape}")
    last = last_refresh_index(refresh)
    max_gap = int(np.max(np.arange(k) - last))
    j = jnp.asarray(last)[i]
    t_j = ts[j]
    z = q_sample(x, t_j, eps, schedule)
    h = student.encode(z, t_j, cond)
    hs = jax.lax.stop_gradient(h)

    # step m of the rollout: from ts[j+m] to ts[j+m+1] where j + m < i
    def roll(m, z):
      ta, tb = ts[j + m], ts[jnp.minimum(j + m + 1, k)]
      out = student.denoise(
        z, ta, hs, t_j, cond, schedule.logsnr(ta) - schedule.logsnr(t_j)
      )
      x_t = output_to_x(out, z, ta, schedule, student.parametrization)
      z_new = ancestral_step(
        z, x_t, ta, tb, schedule, jax.random.fold_in(k_roll, m)
      )
      return jnp.where((j + m < i)[:, None, None, None], z_new, z)

    if max_gap > 0:
      z = jax.lax.stop_gradient(jax.lax.fori_loop(0, max_gap, roll, z))
    out = student.denoise(
      z, t_i, h, t_j, cond, schedule.logsnr(t_i) - schedule.logsnr(t_j)
    )
    x_tilde = output_to_x(out, z, t_i, schedule, student.parametrization)
    z_t = z
  elif isinstance(student, SingleNetwork):
    z_t = q_sample(x, t_i, eps, schedule)
    x_tilde = _x_hat(student, z_t, t_i, cond, schedule)
  else:
    raise TypeError(
      "student must be a DualRateModel or SingleNetwork, "
      f"got {type(student).__name__}"
    )

  s = jax.random.uniform(k_s, (b,)) * t_i
  mean, var = posterior(z_t, jax.lax.stop_gradient(x_tilde), t_i, s, schedule)
  z_s = jax.lax.stop_gradient(
    mean + jnp.sqrt(var) * jax.random.normal(k_post, x.shape)
  )
  x_teacher = jax.lax.stop_gradient(_x_hat(teacher, z_s, s, cond, schedule))
  x_aux = _x_hat(aux_denoiser, z_s, s, cond, schedule)
  red = tuple(range(1, x.ndim))
  w_aux = loss_weight(schedule.logsnr(s), aux_weighting)
  aux_loss = jnp.mean(
    w_aux * jnp.mean((jax.lax.stop_gradient(x_tilde) - x_aux) ** 2, axis=red)
  )
  student_loss = jnp.mean(
    jnp.sum(jax.lax.stop_gradient(x_aux - x_teacher) * x_tilde, axis=red)
  )
  metrics = {"moment_gap": jnp.mean((x_aux - x_teacher) ** 2)}
  return student_loss, aux_loss, metrics


class MMDPair(nnx.Module):
  """The two networks MMD trains together: the k-step student and the auxiliary
  denoiser.

  One module, so that one optimizer state and one checkpoint hold both and a
  single jitted step updates both (:func:`mmd_pair_loss` is the sum of their
  losses, whose gradients do not mix).

  Args:
    student: the k-step generator g_eta (a SingleNetwork or a DualRateModel),
      usually a copy of the teacher.
    aux: the auxiliary denoiser x_hat_phi (the teacher's type), usually a copy
      of the teacher.

  Raises:
    TypeError: a network is neither a SingleNetwork nor a DualRateModel.
  """

  def __init__(
    self,
    student: DualRateModel | SingleNetwork,
    aux: DualRateModel | SingleNetwork,
  ):
    for name, net in (("student", student), ("aux", aux)):
      if not isinstance(net, (DualRateModel, SingleNetwork)):
        raise TypeError(
          f"{name} must be a DualRateModel or SingleNetwork, "
          f"got {type(net).__name__}"
        )
    self.student = student
    self.aux = aux


def mmd_pair_loss(
  pair: MMDPair,
  teacher: DualRateModel | SingleNetwork,
  x: jax.Array,
  cond: ArrayLike | None,
  key: jax.Array,
  *,
  schedule: NoiseSchedule = NoiseSchedule(),
  num_student_steps: int = 4,
  refresh: ArrayLike | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """The joint loss of one MMD step: L(eta) + L(phi) of :func:`mmd_losses`, to
  differentiate once.

  Gradients of the sum reach the student only through L(eta) and the auxiliary
  denoiser only through L(phi) (each loss stops the gradient into the other
  network), so one gradient step on the sum is one step of each alternating
  update on the same batch.

  Args:
    pair: the student and the auxiliary denoiser (:class:`MMDPair`).
    teacher: the frozen many-step model; no gradient reaches it.
    x: [B, H, W, C] float data.
    cond: [B] int class labels, or None.
    key: typed PRNG key.
    schedule: noise schedule shared by the three models.
    num_student_steps: k, the student's number of sampling steps.
    refresh: [k] bool refresh pattern of a dual-rate student (default: every
      step).

  Returns:
    ``(loss, metrics)``: the float scalar L(eta) + L(phi), and
    ``{'student_loss', 'aux_loss', 'moment_gap'}`` float scalars.
  """
  student_loss, aux_loss, metrics = mmd_losses(
    pair.student,
    pair.aux,
    teacher,
    x,
    cond,
    key,
    schedule=schedule,
    num_student_steps=num_student_steps,
    refresh=refresh,
  )
  return student_loss + aux_loss, {
    "student_loss": student_loss,
    "aux_loss": aux_loss,
    **metrics,
  }
