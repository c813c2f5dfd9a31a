"""Performance targets of jaxpapers.msretrieval, each as a ratio against the obvious alternative.

  python benchmarks/msretrieval_perf.py [--quick] [--out=msretrieval_perf.json]

Measured side by side in one process, warm-up (compilation) excluded, best of repeats:

1. ``candidate_scores`` (cosine, by matmul over uint8 candidates) for B=64, C=256, F=4096
   against the direct form that materialises the float32 ``[B, C, F]`` products.
2. Thresholded Tanimoto of the same candidates: bit-packed words with ``lax.population_count``
   (candidates packed once, as they would be stored) against the float matmul form.
3. Exact Bayes-fingerprint enumeration for F=16, n=8 (65,536 fingerprints): seconds per 1,000
   posteriors, against a vectorised float64 numpy enumeration of the same problems.
4. One training step of the experiment's mixture objective (B=64, C=64, F=2048, 1000 bins,
   MLP 2 x 512): milliseconds, and the count of traces over 5 calls (must stay 1).

Writes a JSON record; ``--quick`` uses smaller sizes (seconds). Shared CPU cores are noisy: read
the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import jaxpapers.msretrieval as M
from jaxpapers.core.timing import best_time


def main(argv=None):
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true")
  ap.add_argument("--out", default="msretrieval_perf.json")
  args = ap.parse_args(argv)
  q = args.quick
  rng = np.random.default_rng(0)
  out = {"device": jax.devices()[0].device_kind, "backend": jax.default_backend(), "quick": q}

  b, c, f = (16, 64, 1024) if q else (64, 256, 4096)
  p = jnp.asarray(rng.random((b, f)), jnp.float32)
  cand = jnp.asarray(rng.random((b, c, f)) < 0.05, jnp.uint8)
  mask = jnp.ones((b, c), bool)
  ours = jax.jit(lambda p, y, m: M.candidate_scores(p, y, m, sim="cosine"))

  @jax.jit
  def direct(p, y, m):
    yf = y.astype(jnp.float32)
    num = (p[:, None, :] * yf).sum(-1)
    den = jnp.linalg.norm(p, axis=-1)[:, None] * jnp.linalg.norm(yf, axis=-1)
    return jnp.where(m, num / jnp.maximum(den, 1e-8), -jnp.inf)

  np.testing.assert_allclose(ours(p, cand, mask), direct(p, cand, mask), rtol=1e-4, atol=1e-6)
  t_ours, t_direct = (
    best_time(lambda: ours(p, cand, mask)),
    best_time(lambda: direct(p, cand, mask)),
  )
  out["candidate_scores_cosine"] = {
    "shape": [b, c, f],
    "ms": 1e3 * t_ours,
    "direct_ms": 1e3 * t_direct,
    "speedup": t_direct / t_ours,
    "target_ms_cpu": 20.0,
  }

  pb = (p > 0.5).astype(jnp.uint8)
  words_p, words_c = M.pack_bits(pb), M.pack_bits(cand)
  packed = jax.jit(lambda a, w: M.packed_tanimoto(a[:, None, :], w))
  floatv = jax.jit(lambda p, y, m: M.candidate_scores(p, y, m, sim="tanimoto"))
  np.testing.assert_allclose(packed(words_p, words_c), floatv(p, cand, mask), rtol=1e-6)
  t_packed, t_float = (
    best_time(lambda: packed(words_p, words_c)),
    best_time(lambda: floatv(p, cand, mask)),
  )
  out["tanimoto_packed_vs_float"] = {
    "shape": [b, c, f],
    "packed_ms": 1e3 * t_packed,
    "float_ms": 1e3 * t_float,
    "speedup": t_float / t_packed,
  }

  fb, n, probs = (12, 8, 100) if q else (16, 8, 1000)
  cands = (rng.random((probs, n, fb)) < 0.3).astype(np.uint8)
  pi = rng.dirichlet(np.ones(n), size=probs).astype(np.float32)
  t_enum = best_time(lambda: M.enumerate_bayes_fingerprint(pi, cands)[1], repeats=2)
  allv = ((np.arange(2**fb)[:, None] >> np.arange(fb)) & 1).astype(np.float64)  # [2^F, F]
  np_probs = max(4, probs // 50)

  def np_enum():
    vals = []
    for i in range(np_probs):
      y = cands[i].astype(np.float64)
      inter = allv @ y.T
      union = allv.sum(1)[:, None] + y.sum(1)[None] - inter
      jac = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
      vals.append((jac @ pi[i]).max())
    return np.array(vals)

  got = np.asarray(M.enumerate_bayes_fingerprint(pi[:np_probs], cands[:np_probs])[1])
  np.testing.assert_allclose(got, np_enum(), rtol=1e-5)
  t_np = best_time(np_enum, repeats=1) * probs / np_probs
  out["bayes_enumeration"] = {
    "F": fb,
    "n": n,
    "problems": probs,
    "s_per_1000": 1000 * t_enum / probs,
    "numpy_float64_s_per_1000": 1000 * t_np / probs,
    "speedup": t_np / t_enum,
    "target_s_per_1000": 1.0,
  }

  bb, cc, ff, bins, h = (16, 16, 256, 200, 64) if q else (64, 64, 2048, 1000, 512)
  model = M.FingerprintMLP(bins, ff, hidden=(h, h), embed_dim=h, rngs=nnx.Rngs(0))
  graphdef, params = nnx.split(model)
  tx = M.make_optimizer(5e-4)
  opt = tx.init(params)
  x = jnp.asarray(rng.random((bb, bins)), jnp.float32)
  fp = jnp.asarray(rng.random((bb, ff)) < 0.1, jnp.uint8)
  cf = jnp.asarray(rng.random((bb, cc, ff)) < 0.1, jnp.uint8)
  lab = jnp.zeros((bb, cc), bool).at[:, 0].set(True)
  m = jnp.ones((bb, cc), bool)
  w = jnp.asarray(M.loss_weights("combined"))
  traces = []

  @jax.jit
  def step(params, opt, key, x, fp, cf, lab, m, w):  # data as arguments: no constant folding
    traces.append(1)

    def loss_fn(pr):
      logits = nnx.merge(graphdef, pr)(x, key=key)
      return M.weighted_loss(logits, fp, cf, lab, m, w)[0]

    loss, g = jax.value_and_grad(loss_fn)(params)
    upd, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, upd), opt, loss

  state = [params, opt, 0]

  def run_step():
    state[2] += 1
    key = jax.random.key(state[2])
    state[0], state[1], loss = step(state[0], state[1], key, x, fp, cf, lab, m, w)
    return loss

  t_step = best_time(run_step)
  out["train_step"] = {
    "shape": {"B": bb, "C": cc, "F": ff, "bins": bins, "hidden": h},
    "ms": 1e3 * t_step,
    "traces": len(traces),  # over the warm-up and 5 timed calls
    "target_ms_cpu": 15.0,
  }
  print(json.dumps(out, indent=2))
  with open(args.out, "w") as fh:
    json.dump(out, fh, indent=2)
  return out


if __name__ == "__main__":
  main()
