"""Throughput of margin evaluation and free-embedding fitting (jaxpapers.margins).

  python benchmarks/margins_throughput.py

Measures, in one run: (1) ``all_margins`` on the C(64, 4) = 635,376-row k-sparse problem
(n = 64, d = 64), chunked and jitted, against a float64 numpy pass over the same rows;
(2) ``fit_free_embeddings`` steps/s for N = 1,140 (n = 20, k = 3), d = 32, one seed, and
five dimensions batched in one program against five separate fits. Times on shared CPU
cores are noisy; the ratios measured side by side are what to read.
"""

import jax
import numpy as np

import jaxpapers.margins as M
from jaxpapers.core.timing import best_time


def main():
  rng = np.random.default_rng(0)
  A = M.k_sparse_relevance(64, 4)
  U = rng.normal(size=(A.shape[0], 64)).astype(np.float32)
  V = rng.normal(size=(64, 64)).astype(np.float32)
  U /= np.linalg.norm(U, axis=1, keepdims=True)
  V /= np.linalg.norm(V, axis=1, keepdims=True)
  Uj, Vj, Aj = jax.device_put(U), jax.device_put(V), jax.device_put(A)
  t_jax = best_time(lambda: M.all_margins(Uj, Vj, Aj, chunk_size=65536)["m0"])

  def np_pass():
    m0 = np.inf
    for s in range(0, A.shape[0], 65536):
      S = U[s : s + 65536].astype(np.float64) @ V.T.astype(np.float64)
      m0 = min(m0, np.where(A[s : s + 65536], S, -S).min())
    return m0

  t_np = best_time(np_pass, repeats=1)
  print(
    f"all_margins C(64,4) x 64, d=64: jax {t_jax:.3f} s, numpy float64 {t_np:.3f} s, ratio {t_np / t_jax:.1f}x"
  )

  A = M.k_sparse_relevance(20, 3)
  steps = 1000
  key = jax.random.key(0)
  t_one = best_time(
    lambda: M.fit_free_embeddings(key, A, 32, loss="sigmoid", steps=steps).U, repeats=2
  )
  print(f"fit N={A.shape[0]}, n=20, d=32, sigmoid: {steps / t_one:.0f} steps/s after compile")
  ds = [4, 8, 16, 32, 64]
  t_batched = best_time(
    lambda: M.fit_free_embeddings(key, A, ds, loss="sigmoid", steps=steps).U, repeats=1
  )
  t_separate = sum(
    best_time(
      lambda d=d: M.fit_free_embeddings(key, A, d, loss="sigmoid", steps=steps).U, repeats=1
    )
    for d in ds
  )
  print(
    f"5 dimensions: batched {t_batched:.2f} s vs separate {t_separate:.2f} s (run time, compile excluded)"
  )


if __name__ == "__main__":
  main()
