"""Performance of the cut-norm tools and of the compressed forward (jaxpapers.dense_limits).

  python benchmarks/dense_limits_perf.py [--out dense_limits_perf.json] [--n 1024]

Measures side by side, warm-up excluded, best of 3:
(1) ``cut_norm_lb`` on an n x n matrix, 64 restarts x 20 steps, against the same local search
    in float64 numpy restart by restart (the obvious alternative);
(2) ``cut_norm_exact`` on 16 x 16 against a numpy enumeration over (S, T) pairs (subsets of
    rows, closed-form T);
(3) ``fk_decompose`` with K = 64 on n x n;
(4) ``apply_compressed`` with K in {8, 32, 64} against the dense forward of the same strongly
    dense MLP (2 hidden layers of width n, batch 256): wall-time ratio and FLOP ratio.
Times on shared CPU cores are noisy; the ratios measured side by side are what to read.
"""

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import jaxpapers.dense_limits as D
from jaxpapers.core.timing import best_time


def np_local_search(m, rng, restarts, iters):
  best = 0.0
  for sign in (1.0, -1.0):
    ms = sign * m
    for _ in range(restarts):
      t = (rng.random(m.shape[1]) < 0.5).astype(np.float64)
      for _ in range(iters):
        s = (ms @ t > 0).astype(np.float64)
        t = (s @ ms > 0).astype(np.float64)
      s = (ms @ t > 0).astype(np.float64)
      best = max(best, s @ ms @ t)
  return best / m.size


def np_exact(m):
  k = m.shape[0]
  best = 0.0
  for code in range(2**k):
    s = (code >> np.arange(k)) & 1
    col = s @ m
    best = max(best, np.maximum(col, 0).sum(), np.maximum(-col, 0).sum())
  return best / m.size


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--n", type=int, default=1024)
  ap.add_argument("--out", default="dense_limits_perf.json")
  args = ap.parse_args()
  n = args.n
  rng = np.random.default_rng(0)
  key = jax.random.key(0)
  out = {"n": n, "devices": str(jax.devices())}

  m = rng.uniform(-1, 1, (n, n)).astype(np.float32)
  mj = jnp.asarray(m)
  t_lb = best_time(lambda: D.cut_norm_lb(mj, key, restarts=64, iters=20)[0])
  t0 = time.perf_counter()
  np_local_search(m.astype(np.float64), rng, 64, 20)
  t_lb_np = time.perf_counter() - t0
  out["cut_norm_lb"] = {"jax_s": t_lb, "numpy_s": t_lb_np, "speedup": t_lb_np / t_lb}

  s16 = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
  t_ex = best_time(lambda: D.cut_norm_exact(jnp.asarray(s16)))
  t0 = time.perf_counter()
  np_exact(s16.astype(np.float64))
  t_ex_np = time.perf_counter() - t0
  out["cut_norm_exact_16"] = {"jax_s": t_ex, "numpy_s": t_ex_np, "speedup": t_ex_np / t_ex}

  t_fk = best_time(lambda: D.fk_decompose(mj, 64, key, restarts=64, iters=20)[1].frob_sq, repeats=1)
  out["fk_decompose_k64"] = {"jax_s": t_fk}

  net = D.StronglyDenseMLP(8, 1, widths=(n, n), bound=1.0, rngs=nnx.Rngs(0))
  x = jax.random.uniform(key, (256, 8))
  dense = nnx.jit(lambda mod, x: mod(x))
  t_dense = best_time(lambda: dense(net, x))
  apply = jax.jit(D.apply_compressed)
  out["apply_compressed"] = {}
  for k in (8, 32, 64):
    c = D.compress_mlp(net, k, key, restarts=16, iters=5)
    t_c = best_time(lambda c=c: apply(c, x))
    flops_dense = 2 * n * n
    flops_c = 2 * k * (2 * n)
    out["apply_compressed"][f"K={k}"] = {
      "dense_s": t_dense,
      "compressed_s": t_c,
      "wall_speedup": t_dense / t_c,
      "hidden_layer_flop_ratio": flops_dense / flops_c,
    }
  print(json.dumps(out, indent=1))
  with open(args.out, "w") as f:
    json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()
