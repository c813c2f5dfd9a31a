r"""A tiny experiment binary on the harness, the subject of the fault-injection
tests.

  python -m tests.faults.tiny_experiment --config=tests/faults/tiny_config.py --workdir=DIR

It writes every kind of durable file an experiment of this project writes,
through the harness alone, in this order:

1. ``data.npz``: the prepared data (``core.cached_arrays``);
2. ``checkpoints/`` and ``history.jsonl``: an NNX MLP trained by
   ``core.train_loop`` with a checkpoint every ``checkpoint_every`` steps and a
   record every ``log_every`` steps;
3. ``cells/``: a grid of linear models trained by ``core.Sweep`` inside a
   ``core.CellStore`` cell, checkpointed after every chunk;
4. ``results.json`` (``core.write_results``): the final parameters, losses and
   the sweep.

Every number depends only on the config, so a run killed at any point and rerun
on the same workdir must end with the same ``results.json`` metrics and
``history.jsonl`` records (but ``elapsed_s``) as an uninterrupted run.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxpapers import core
from jaxpapers.core import app


class MLP(nnx.Module):
  def __init__(self, din: int, dhidden: int, dout: int, *, rngs: nnx.Rngs):
    self.l1 = nnx.Linear(din, dhidden, rngs=rngs)
    self.l2 = nnx.Linear(dhidden, dout, rngs=rngs)

  def __call__(self, x):  # [B, din] -> [B, dout]
    return self.l2(jax.nn.relu(self.l1(x)))


def _prepare(cfg) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(cfg.seed)
  x = rng.standard_normal((cfg.examples, cfg.features)).astype(np.float32)
  w = rng.standard_normal((cfg.features, cfg.classes)).astype(np.float32)
  return {"x": x, "y": np.argmax(x @ w, axis=1).astype(np.int32)}


def _train(cfg, data, workdir):
  x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])
  model = MLP(cfg.features, cfg.hidden, cfg.classes, rngs=nnx.Rngs(cfg.seed))
  state = core.TrainState.create(model, optax.adam(cfg.learning_rate))

  @jax.jit
  def step_fn(state, idx):
    def loss_fn(m):
      logits = m(x[idx])
      return optax.softmax_cross_entropy_with_integer_labels(
        logits, y[idx]
      ).mean()

    loss, grads, rest = state.value_and_grad(loss_fn)
    return state.apply_gradients(grads, rest=rest), {"loss": loss}

  def batch_fn(step):
    time.sleep(cfg.step_delay_s)
    key = jax.random.fold_in(jax.random.key(cfg.seed), step)
    return jax.random.randint(key, (cfg.batch,), 0, cfg.examples)

  return core.train_loop(
    state,
    step_fn,
    batch_fn,
    num_steps=cfg.steps,
    workdir=workdir,
    checkpoint_every=cfg.checkpoint_every,
    log_every=cfg.log_every,
    desc="tiny",
  )


def _sweep(cfg, data, ckpt_dir):
  x, y = jnp.asarray(data["x"]), jax.nn.one_hot(data["y"], cfg.classes)

  def init_fn(hp, key, _):
    w = 0.1 * jax.random.normal(key, (cfg.features, cfg.classes))
    return w, optax.sgd(hp["lr"]).init(w)

  def step_fn(s, hp, key, step, _):
    w, opt = s
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    upd, opt = optax.sgd(hp["lr"]).update(g, opt, w)
    return (w + upd, opt), {"loss": loss}

  def eval_fn(s, hp, key, _):
    return jnp.mean(jnp.argmax(x @ s[0], axis=1) == jnp.argmax(y, axis=1))

  hp = {"lr": jnp.linspace(0.01, 0.2, cfg.sweep_runs)}
  keys = jax.random.split(jax.random.key(cfg.seed + 1), cfg.sweep_runs)
  sweep = core.Sweep(init_fn, step_fn, eval_fn)
  num_chunks = cfg.sweep_steps // cfg.sweep_chunk
  # one chunk per call, each resuming from the last checkpoint
  for c in range(num_chunks):
    # host-side pause, as in training
    time.sleep(cfg.step_delay_s * cfg.sweep_chunk)
    res = sweep.run(
      hp,
      keys,
      num_steps=cfg.sweep_steps,
      chunk_size=cfg.sweep_chunk,
      checkpoint_dir=ckpt_dir,
      max_chunks=None if c == num_chunks - 1 else 1,
      show_progress=False,
    )
    if res.complete:
      break
  return {
    "loss": res.history["loss"],
    "accuracy": res.evals,
    "w": np.asarray(res.state[0]),
  }


def train_and_evaluate(config, workdir):
  t0 = time.perf_counter()
  data = core.cached_arrays(workdir / "data.npz", lambda: _prepare(config))
  state, history = _train(config, data, workdir)
  store = core.CellStore(workdir / "cells")
  grid = store.get_or_compute(
    "sweep", lambda ckpt_dir: _sweep(config, data, ckpt_dir)
  )
  params = {
    jax.tree_util.keystr(p): np.asarray(v).tolist()
    for p, v in jax.tree_util.tree_leaves_with_path(state.params)
  }
  metrics = {
    "params": params,
    "opt_count": int(state.step),
    "history_steps": [r["step"] for r in history],
    "train_loss": [r["train/loss"] for r in history],
    "sweep": grid,
  }
  core.write_results(
    workdir,
    metrics=metrics,
    config=config,
    wall_time_s=time.perf_counter() - t0,
  )
  return metrics


if __name__ == "__main__":
  app.run(train_and_evaluate)
