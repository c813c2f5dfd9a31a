"""Performance targets of jaxpapers.goskills, each as a ratio against the
obvious alternative.

  python -m benchmarks.goskills_perf [--quick]

Measured side by side in one process, warm-up (compilation) excluded,
interleaved repeats:

1. ``personalized_pagerank`` on a dense n = 2000 transition matrix, 50
   iterations (tol = 0), one seed: milliseconds (target < 20 ms) against Graph
   of Skills' numpy loop (float64).
2. ``budgeted_coverage`` with 64 candidates, R = 32, B = 8: milliseconds (target
   < 1 ms) against the set-based Python greedy it is tested against.
3. ``goskills_retrieve`` for 300 tasks on a generated 2000-skill library:
   milliseconds per task (target < 50 ms), against one PageRank-per-task GoS
   bundle (the structural reference).

``--quick`` uses smaller sizes (n = 500, 50 tasks). Shared CPU cores are noisy:
read the ratios, not the absolute times.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxpapers.goskills as S
from jaxpapers.core import benchmark as bench

NAME = "goskills_perf"


def _gos_ppr_numpy(t, p, d=0.2, iters=50):
  s = p.copy()
  for _ in range(iters):
    s = d * p + (1 - d) * t.T.dot(s)
  return s / s.sum()


def _greedy_python(cands, roles, req, vis, budget, mu=0.1):
  prio = {0: 3.0, 1: 2.0, 2: 1.0, -1: 0.0}
  vis = set(np.nonzero(vis)[0])
  covered, chosen, picks = set(), set(), []
  for k in range(budget):
    best, bv = -1, -np.inf
    for i, c in enumerate(cands):
      if i in chosen or (k == 0 and roles[i] != 0):
        continue
      g = (
        len((set(np.nonzero(req[c])[0]) & vis) - covered)
        + mu * prio[int(roles[i])]
      )
      if g > bv:
        best, bv = i, g
    picks.append(best)
    chosen.add(best)
    covered |= set(np.nonzero(req[cands[best]])[0]) & vis
  return picks


def parse_args(argv=None):
  return bench.parser(NAME, __doc__).parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()
  q = args.quick
  repeats = 3 if q else 5
  rng = np.random.default_rng(0)
  rows, summary = [], []

  # 1. PageRank, dense.
  n = 500 if q else 2000
  lib = S.make_skill_library(0, n_skills=n, reuse=0.3, decoy_rate=0.1)
  t = S.transition_matrix(lib.graph)
  p = np.zeros(n)
  p[[3, 10, 20]] = [1, 0.5, 1 / 3]
  ppr = jax.jit(
    lambda t, p: S.personalized_pagerank(t, p, tol=0.0, validate=False)
  )
  t64 = np.asarray(t, np.float64)
  np.testing.assert_allclose(
    ppr(t, p), _gos_ppr_numpy(t64, p / p.sum()), atol=1e-5
  )
  tt = bench.side_by_side(
    {
      "jax": lambda: ppr(t, p),
      "numpy_gos": lambda: _gos_ppr_numpy(t64, p / p.sum()),
    },
    repeats,
  )
  rows.append(bench.timing_row("personalized_pagerank", tt, n=n, iters=50))
  summary.append(
    bench.summary(
      (
        f"personalized_pagerank n={n}, 50 iterations, "
        "vs the numpy loop (float64)"
      ),
      tt["numpy_gos"].best / tt["jax"].best,
      ">= 1",
    )
  )
  if not q:
    summary.append(
      bench.summary(
        "personalized_pagerank n=2000, 50 iterations",
        1e3 * tt["jax"].best,
        "< 20",
        unit="ms",
        note="spec §7",
      )
    )

  # 2. Budgeted coverage.
  req = rng.random((n, 32)) < 0.1
  cands = rng.choice(n, 64, replace=False)
  roles = rng.integers(0, 3, 64)
  vis = rng.random(32) < 0.3
  mask = np.ones(64, bool)
  bc = jax.jit(
    lambda c, r, m, v: S.budgeted_coverage(c, r, m, req, v, budget=8)
  )
  assert np.asarray(bc(cands, roles, mask, vis)).tolist() == _greedy_python(
    cands, roles, req, vis, 8
  )
  tt = bench.side_by_side(
    {
      "jax": lambda: bc(cands, roles, mask, vis),
      "python": lambda: _greedy_python(cands, roles, req, vis, 8),
    },
    10,
  )
  rows.append(
    bench.timing_row("budgeted_coverage", tt, candidates=64, R=32, B=8)
  )
  summary.append(
    bench.summary(
      (
        "budgeted_coverage 64 candidates, R=32, B=8, "
        "vs the set-based Python greedy"
      ),
      tt["python"].best / tt["jax"].best,
      ">= 1",
    )
  )
  summary.append(
    bench.summary(
      "budgeted_coverage 64 candidates, R=32, B=8",
      1e3 * tt["jax"].best,
      "< 1",
      unit="ms",
      note="spec §7",
    )
  )

  # 3. End to end, batched over tasks.
  nt = 50 if q else 300
  tasks = S.make_tasks(1, lib, n=nt)
  scores = S.anchor_scores(
    lib, tasks, lambda texts, query: S.hashed_embeddings(texts), alpha=0.5
  )
  cfg = S.GoSkillsConfig(budget=8)
  vis = jnp.asarray(tasks.visible)
  bundle = jax.jit(lambda t, s: S.gos_bundle(t, s, budget=8).ids)
  tt = bench.side_by_side(
    {
      "goskills": lambda: (
        S.goskills_retrieve(lib.graph, scores, vis, cfg)[0].ids
      ),
      "gos_bundle": lambda: bundle(t, scores),
    },
    repeats,
  )
  # compiled above; task 0 rendered
  c = S.goskills_retrieve(lib.graph, scores, vis, cfg)[0]
  render = bench.side_by_side(
    {
      "render": lambda: S.render_contract(
        c.ids[0], c.roles[0], c.avoid[0], lib.texts
      )
    },
    5,
  )["render"]
  rows.append(
    bench.timing_row(
      "retrieve",
      tt,
      n=n,
      tasks=nt,
      goskills_ms_per_task=1e3 * tt["goskills"].best / nt,
      gos_bundle_ms_per_task=1e3 * tt["gos_bundle"].best / nt,
      render_ms=1e3 * render.best,
    )
  )
  summary.append(
    bench.summary(
      f"goskills_retrieve n={n}: per task, excluding embedding",
      1e3 * tt["goskills"].best / nt,
      "< 50",
      unit="ms",
      note="spec §7 (end to end + render: add render_ms of the record)",
    )
  )
  bench.write(NAME, args, rows=rows, summary=summary, host=host, argv=argv)


if __name__ == "__main__":
  main()
