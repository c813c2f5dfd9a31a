"""DenseAM training throughput and the cost of a vmapped learning-rate grid (jaxpapers.denseam).

  python benchmarks/denseam_perf.py --out=/tmp/denseam_perf.json

Measures, side by side in one process, compile excluded (a warm-up call first), best of 3:
(1) one Adam step (forward over T = 4 shared-weight Euler steps, backward, update) at
K = 4096 memories, N = 74 units, batch 128 (the spec's target: <= 40 ms on 2 CPU cores);
(2) a ``train_grid`` of 8 learning rates (one vmapped program) against one learning rate, at
K = 1024, 50 steps, batch 64 (target: <= 8.5x, i.e. the grid is not slower than 8 runs).
Times on shared CPU cores are noisy; read the ratio.
"""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import app, flags

from jaxpapers import denseam as D
from jaxpapers.core.timing import best_time

_OUT = flags.DEFINE_string("out", None, "where to write the JSON result (default: stdout only)")


def main(argv):
  del argv
  train, _ = D.load_digits_task("classify", seed=0)
  cfg = D.DenseAMConfig(energy="lse", steps=4)
  p = D.Parametrization.standard(16)
  xi = D.init_memories(jax.random.key(0), 4096, 74, p)
  batch = D.Batch(jnp.asarray(train.x0[:128]), jnp.asarray(train.clamp), jnp.asarray(train.y[:128]))
  opt = optax.adam(1e-2)

  @jax.jit
  def step(xi, state):
    g = jax.grad(lambda w: D.loss_fn(w, batch, cfg)[0])(xi)
    upd, state = opt.update(g, state, xi)
    return optax.apply_updates(xi, upd), state

  state = opt.init(xi)
  jax.block_until_ready(step(xi, state))
  t_step = best_time(lambda: jax.block_until_ready(step(xi, state)), repeats=3)

  lrs8 = np.geomspace(1e-3, 1e-1, 8)
  kw = dict(steps=50, seeds=1, batch_size=64)
  key = jax.random.key(1)

  def grid(lrs):
    return D.train_grid(key, 1024, lrs, cfg, p, train, **kw)["final_loss"]

  grid(lrs8), grid(lrs8[:1])  # compile both
  t8 = best_time(lambda: grid(lrs8), repeats=3)
  t1 = best_time(lambda: grid(lrs8[:1]), repeats=3)
  out = {
    "devices": f"{len(jax.devices())} x {jax.devices()[0].platform}",
    "step_ms_K4096_B128_T4": 1e3 * t_step,
    "grid8_s": t8,
    "grid1_s": t1,
    "grid8_over_grid1": t8 / t1,
  }
  print(json.dumps(out, indent=1))
  if _OUT.value:
    with open(_OUT.value, "w") as f:
      json.dump(out, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(app.run(main))
