"""Float64 NumPy transcriptions of the DenseAM equations (independent of the JAX
code)."""

import numpy as np


def g(x, input_norm):
  if input_norm == "none":
    return x
  mu = x.mean(-1, keepdims=True)
  var = ((x - mu) ** 2).mean(-1, keepdims=True)
  return (x - mu) / np.sqrt(var + 1e-5)


def lagrangian(h, energy, n, beta):
  if energy == "lse":
    m = h.max(-1, keepdims=True)
    return (np.log(np.exp(beta * (h - m)).sum(-1)) + beta * m[..., 0]) / beta
  return (np.maximum(h, 0) ** n).sum(-1) / n


def activation(h, energy, n, beta):
  if energy == "lse":
    z = np.exp(beta * (h - h.max(-1, keepdims=True)))
    return z / z.sum(-1, keepdims=True)
  return np.maximum(h, 0) ** (n - 1)


def energy(
  xi,
  x,
  energy_kind="lse",
  n=3,
  beta=1.0,
  alpha=1.0,
  gamma=1.0,
  input_norm=("none"),
):
  """E(x) = 1/2 |x|^2 - gamma Phi(alpha Xi g(x)), per row of x."""
  xi, x = np.asarray(xi, np.float64), np.asarray(x, np.float64)
  h = alpha * g(x, input_norm) @ xi.T
  return 0.5 * (x * x).sum(-1) - gamma * lagrangian(h, energy_kind, n, beta)


def grad_identity(
  xi, x, energy_kind="lse", n=3, beta=1.0, alpha=1.0, gamma=1.0
):
  """Hand-derived grad E for g = id: x - gamma alpha Xi^T f(alpha Xi x)."""
  xi, x = np.asarray(xi, np.float64), np.asarray(x, np.float64)
  return (
    x - gamma * alpha * activation(alpha * x @ xi.T, energy_kind, n, beta) @ xi
  )


def grad_fd(fun, x, eps=1e-6):
  """Central finite differences of sum(fun(x)) (row-separable fun) in
  float64."""
  x = np.asarray(x, np.float64)
  out = np.zeros_like(x)
  for idx in np.ndindex(*x.shape):
    xp, xm = x.copy(), x.copy()
    xp[idx] += eps
    xm[idx] -= eps
    out[idx] = (fun(xp).sum() - fun(xm).sum()) / (2 * eps)
  return out


def dynamics(xi, x0, clamp, steps, dt, input_norm="none", **kw):
  """T Euler steps with clamping (a Python loop), the gradient by finite
  differences for LayerNorm and the closed form for g = id; returns x_T and the
  [T+1, B] energy trace."""
  x0 = np.asarray(x0, np.float64)
  x = x0.copy()
  trace = [energy(xi, x, input_norm=input_norm, **kw)]
  for _ in range(steps):
    if input_norm == "none":
      gr = grad_identity(xi, x, **kw)
    else:
      gr = grad_fd(lambda z: energy(xi, z, input_norm=input_norm, **kw), x)
    x = np.where(clamp, x0, x - dt * gr)
    trace.append(energy(xi, x, input_norm=input_norm, **kw))
  return x, np.stack(trace)


def classify_loss(xi, x0, clamp, y, steps, dt, num_classes, scale, **kw):
  x_t, _ = dynamics(xi, x0, clamp, steps, dt, **kw)
  logits = scale * x_t[:, -num_classes:]
  logits = logits - logits.max(-1, keepdims=True)
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  return -logp[np.arange(len(y)), y].mean(), (logits.argmax(-1) == y).mean()
