"""The encoder, the objective mixture in a training step, no recompilation,
evaluation."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import jaxpapers.msretrieval as M

B, C, F, BINS = 8, 5, 32, 40


@pytest.fixture(scope="module")
def setup():
  rng = np.random.default_rng(0)
  x = rng.random((B, BINS)).astype(np.float32)
  fp = (rng.random((B, F)) < 0.3).astype(np.uint8)
  cand = (rng.random((B, C, F)) < 0.3).astype(np.uint8)
  cand[:, 2] = fp
  labels = np.zeros((B, C), bool)
  labels[:, 2] = True
  mask = np.ones((B, C), bool)
  model = M.FingerprintMLP(
    BINS, F, hidden=(16,), embed_dim=16, rngs=nnx.Rngs(0)
  )
  graphdef, params = nnx.split(model)
  tx = M.make_optimizer(1e-2, warmup_steps=2)

  @jax.jit
  # data as arguments, not constants
  def step_(params, opt, w, key, x, fp, cand, labels, mask):
    def loss_fn(p):
      logits = nnx.merge(graphdef, p)(x, key=key)
      return M.weighted_loss(logits, fp, cand, labels, mask, w)

    (loss, parts), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    upd, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, upd), opt, loss

  def step(params, opt, w, key):
    return step_(params, opt, w, key, x, fp, cand, labels, mask)

  step._cache_size = step_._cache_size

  return dict(
    x=x,
    fp=fp,
    cand=cand,
    labels=labels,
    mask=mask,
    model=model,
    step=step,
    params=params,
    tx=tx,
  )


def test_forward_shapes_and_dropout_only_with_key(setup):
  m = setup["model"]
  out = m(setup["x"])
  assert out.shape == (B, F) and out.dtype == jnp.float32
  np.testing.assert_array_equal(np.asarray(m(setup["x"])), np.asarray(out))
  assert not np.allclose(
    np.asarray(m(setup["x"], key=jax.random.key(1))), np.asarray(out)
  )


def test_every_objective_trains_in_one_program(setup):
  step, params = setup["step"], setup["params"]
  for name in M.LOSSES:
    w = jnp.asarray(M.loss_weights(name))
    p, opt = params, setup["tx"].init(params)
    losses = []
    for t in range(15):
      p, opt, loss = step(p, opt, w, jax.random.key(t))
      losses.append(float(loss))
    assert np.mean(losses[-3:]) < losses[0], name
  # objectives are traced weights: no recompilation
  assert step._cache_size() == 1


def test_retrieval_metrics_keys_and_perfect_prediction(setup):
  probs = setup["fp"].astype(np.float32)
  # one program
  run = jax.jit(lambda *a: M.retrieval_metrics(*a, key=jax.random.key(0)))
  out = run(probs, setup["fp"], setup["cand"], setup["labels"], setup["mask"])
  assert {f"hr/{s}@{k}" for s in M.SIMILARITIES for k in (1, 5, 20)} <= set(out)
  np.testing.assert_allclose(np.asarray(out["fp/tanimoto"]), 1.0)
  # The true fingerprint is a candidate: it scores 1 under every similarity
  # (ties by noise).
  assert float(out["hr/cosine@5"].mean()) == 1.0
