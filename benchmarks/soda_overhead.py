"""Overhead of the SODA wrapper: soda(adamw) vs adamw, measured side by side.

  python benchmarks/soda_overhead.py [--width 768 --depth 16 --batch 64 --repeats 15]

Reports, in one run and as JSON:
* ``update_ratio``: median time of a jitted ``tx.update`` + ``apply_updates``
  (params and state donated) for soda(adamw) / adamw, on an MLP parameter
  pytree of ``depth`` ``width x width`` layers (16 x 768^2 = 9.4M parameters);
* ``step_ratio``: the same for a full train step (forward, backward, update) of
  that MLP on a batch of ``batch`` random vectors;
* ``state_bytes``: optimizer-state bytes of both (``jax.eval_shape`` of
  ``init``) and the extra bytes relative to the parameter bytes (expected: 1.0,
  one parameter-sized anchor).

The two optimizers are timed alternately (A, B, A, B, ...) so that load
changes on a shared machine hit both; the ratio of medians is reported. Timings
on a shared CPU are noisy: repeat the run before trusting a difference of a
few percent.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxpapers import soda as soda_lib


def make_params(key, width: int, depth: int):
  keys = jax.random.split(key, depth)
  return {
    f"layer{i}": {
      "w": jax.random.normal(k, (width, width)) / np.sqrt(width),
      "b": jnp.zeros((width,)),
    }
    for i, k in enumerate(keys)
  }


def forward(params, x):
  for i in range(len(params)):
    p = params[f"layer{i}"]
    x = jnp.tanh(x @ p["w"] + p["b"])
  return x


def loss_fn(params, x, y):
  return jnp.mean(jnp.square(forward(params, x) - y))


def nbytes(tree) -> int:
  return int(sum(x.size * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree)))


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--width", type=int, default=768)
  ap.add_argument("--depth", type=int, default=16)
  ap.add_argument("--batch", type=int, default=64)
  ap.add_argument("--repeats", type=int, default=15)
  ap.add_argument("--out", type=str, default="")
  args = ap.parse_args()

  txs = {
    "adamw": optax.adamw(1e-3, weight_decay=0.0),
    "soda_adamw": soda_lib.soda(optax.adamw(1e-3, weight_decay=0.0)),
  }
  params0 = make_params(jax.random.key(0), args.width, args.depth)
  num_params = sum(x.size for x in jax.tree.leaves(params0))
  x = jax.random.normal(jax.random.key(1), (args.batch, args.width))
  y = jax.random.normal(jax.random.key(2), (args.batch, args.width))
  grads = jax.tree.map(lambda p: 1e-3 * jnp.ones_like(p), params0)

  fns, carries = {}, {}
  for name, tx in txs.items():

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def update(params, state, grads, tx=tx):
      u, state = tx.update(grads, state, params)
      return optax.apply_updates(params, u), state

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(params, state, x, y, tx=tx):
      g = jax.grad(loss_fn)(params, x, y)
      u, state = tx.update(g, state, params)
      return optax.apply_updates(params, u), state

    fns[name] = (update, step)
    p = jax.tree.map(jnp.copy, params0)
    carries[name] = (p, tx.init(p))

  def timed(kind, name):
    update, step = fns[name]
    p, s = carries[name]
    t0 = time.perf_counter()
    if kind == "update":
      p, s = update(p, s, grads)
    else:
      p, s = step(p, s, x, y)
    jax.block_until_ready((p, s))
    carries[name] = (p, s)
    return time.perf_counter() - t0

  results = {
    "num_params": int(num_params),
    "backend": jax.default_backend(),
    "devices": [d.device_kind for d in jax.devices()][:1],
  }
  for kind in ("update", "step"):
    for name in txs:  # compile + warm up
      timed(kind, name)
      timed(kind, name)
    times = {name: [] for name in txs}
    for _ in range(args.repeats):
      for name in txs:
        times[name].append(timed(kind, name))
    med = {name: float(np.median(t)) for name, t in times.items()}
    results[f"{kind}_median_s"] = med
    results[f"{kind}_ratio"] = med["soda_adamw"] / med["adamw"]

  sds = jax.tree.map(lambda p: jax.ShapeDtypeStruct(p.shape, p.dtype), params0)
  sb = {name: nbytes(jax.eval_shape(tx.init, sds)) for name, tx in txs.items()}
  results["param_bytes"] = nbytes(params0)
  results["state_bytes"] = sb
  results["extra_state_over_param_bytes"] = (sb["soda_adamw"] - sb["adamw"]) / results[
    "param_bytes"
  ]
  print(json.dumps(results, indent=2))
  if args.out:
    with open(args.out, "w") as f:
      json.dump(results, f, indent=2)


if __name__ == "__main__":
  main()
