"""Performance targets of jaxpapers.msretrieval, each as a ratio against the
obvious alternative.

  python -m benchmarks.msretrieval_perf [--quick]

Measured side by side in one process, warm-up (compilation) excluded,
interleaved repeats:

1. ``candidate_scores`` (cosine, uint8 candidates, value checks included) for
   B=64, C=256, F=4096, the spec's size, in both modes (a few seconds), against
   the direct form that multiplies the float32 ``[B, C, F]`` products and
   reduces them (spec target: < 20 ms on 2 cores). At sizes whose float32 copy
   fits in a core's cache (B=16, C=64, F=1024: 4 MB) the two forms do the same
   work and the direct one is as fast or faster (0.7x measured); the row loop is
   for the sizes where the copy does not fit, which is where the target is set.
2. Thresholded Tanimoto of the same candidates: bit-packed words with
   ``lax.population_count`` (candidates packed once, as they would be stored)
   against the float matmul form.
3. Exact Bayes-fingerprint enumeration for F=16, n=8 (65,536 fingerprints;
   quick: F=12): seconds per 1,000 posteriors, against a vectorised float64
   numpy enumeration.
4. One training step of the experiment's mixture objective (B=64, C=64, F=2048,
   1000 bins, MLP 2 x 512; quick: smaller): milliseconds, and the count of
   traces over the warm-up and the timed calls (must stay 1).

The spec's absolute target (< 20 ms) is kept as a row, but it depends on the
host's load (it measured 22 ms with the load average near 2 and several times
that at 15-20, on the same code); the ratio against the direct form, timed in
the same repeats, is the figure that does not, and one pass over the uint8
candidates (``jnp.max``) is timed beside both as the memory floor. Variants that
keep the scores bitwise equal were tried and gave nothing measurable in CPU time
(within 15%): the candidates' row sums in int32 from the uint8 entries, the
binary check as an elementwise ``y <= 1`` on the unsigned entries, blocks of 1
MB or 16 MB instead of 4 MB, the row loop split in two or four independent loops
(slower: 2.3x the CPU time on the loaded host). What did matter was the form of
the binary check: as a bool tensor ``(y == 0) | (y == 1)`` reduced with ``all``,
XLA wrote the bool chunk and reduced it through two reduce-windows, about half
of the 43 ms of CPU the call took (22 ms without any check, side by side at load
average 15-20); as one ``max(y) <= 1`` reduction over the uint8 entries (a range
check, exact for integer dtypes) it costs 2-4 ms. The row sums ``Σ y`` were a
row reduction over the float32 block (``y.sum(-1)``), which XLA:CPU runs slower
than its matrix-vector product: as a second product with a vector of ones they
are bitwise the same (integer sums, exact in float32) and the call took 19-21 ms
of CPU against 22-29 ms side by side (load average 12-14). What is left is the
conversion of each block to float32 (XLA puts a convert before the product even
for a mixed uint8 x float32 ``dot_general``) and the two products over it, which
a fused multiply-reduce over the uint8 entries (the direct form's kernel) does
not beat; a single ``[C, F] x [F, 2]`` product for ``Σ p y`` and ``Σ y``
together was 5-10% faster again but changes the scores' last bit (a different
summation order), so it was not taken. The absolute row then sits at the
target's edge: about 20 ms of CPU per call, one core's worth (the loop does not
use the second core), so its wall time depends on a free core.

Where the time of (1) went when it measured 0.47x the direct form:
``candidate_scores`` made one batched ``einsum('bf,bcf->bc')`` over
``cand_fp.astype(float32)``; XLA materialised that float32 copy of the
candidates (4x the uint8 bytes) and read it back for the product, and the binary
check read the candidates once more: XLA's cost analysis gave 1,078 MB accessed
against the direct form's 69 MB (one fused multiply-reduce over the uint8
candidates). It now loops over chunks of query rows (``lax.map``, about 4 MB of
float32 per step, which stays in cache) for the matrix-vector products and the
check, with bitwise the same scores and gradients; measured on 2 shared cores
(load average 2-9) at the full size: 16-32 ms against 208-345 ms for the direct
form and 167-656 ms for the batched product.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import jaxpapers.msretrieval as M
from jaxpapers.core import benchmark as bench

NAME = "msretrieval_perf"


def parse_args(argv=None):
  return bench.parser(NAME, __doc__).parse_args(argv)


def _pair(rows, case, t, **info):
  rows.append(
    {
      "case": case,
      **info,
      **{f"{k}_{m}": v for k, tk in t.items() for m, v in tk.as_dict().items()},
    }
  )


def main(argv=None):
  args = parse_args(argv)
  host = bench.host_info()
  q = args.quick
  repeats = 3 if q else 7
  # the candidate_scores rows: best of 7 in both modes (a call is ~20 ms)
  score_repeats = 7
  rng = np.random.default_rng(0)
  rows, summary = [], []

  # the spec's size, also in --quick (see the docstring)
  b, c, f = 64, 256, 4096
  p = jnp.asarray(rng.random((b, f)), jnp.float32)
  cand = jnp.asarray(rng.random((b, c, f), dtype=np.float32) < 0.05, jnp.uint8)
  mask = jnp.ones((b, c), bool)
  ours = jax.jit(lambda p, y, m: M.candidate_scores(p, y, m, sim="cosine"))

  @jax.jit
  def direct(p, y, m):
    yf = y.astype(jnp.float32)
    num = (p[:, None, :] * yf).sum(-1)
    den = jnp.linalg.norm(p, axis=-1)[:, None] * jnp.linalg.norm(yf, axis=-1)
    return jnp.where(m, num / jnp.maximum(den, 1e-8), -jnp.inf)

  np.testing.assert_allclose(
    ours(p, cand, mask), direct(p, cand, mask), rtol=1e-4, atol=1e-6
  )
  # one pass over the uint8 candidates: the floor
  read_once = jax.jit(lambda y: jnp.max(y))
  t = bench.side_by_side(
    {
      "candidate_scores": lambda: ours(p, cand, mask),
      "direct": lambda: direct(p, cand, mask),
      "read_floor": lambda: read_once(cand),
    },
    score_repeats,
  )
  _pair(rows, "candidate_scores_cosine", t, shape=[b, c, f])
  summary.append(
    bench.summary(
      f"candidate_scores cosine B={b}, C={c}, F={f} vs direct float32 products",
      t["direct"].best / t["candidate_scores"].best,
      ">= 1",
    )
  )
  summary.append(
    bench.summary(
      "candidate_scores cosine B=64, C=256, F=4096",
      1e3 * t["candidate_scores"].best,
      "< 20",
      unit="ms",
      note=(
        "spec §7, an absolute time: it moves with the host's load (load "
        f"average {host.get('load_average_at_start')} at the start on "
        f"{host.get('usable_cpus')} CPUs), so the ratio above, "
        "measured side by side, is the figure to read. Beside it: "
        f"{1e3 * t['read_floor'].best:.3g} ms (CPU "
        f"{1e3 * min(t['read_floor'].cpu):.3g} ms) for one read of the uint8 "
        "candidates, the memory floor, against "
        f"{1e3 * min(t['candidate_scores'].cpu):.3g} ms of CPU for "
        "candidate_scores"
      ),
    )
  )

  pb = (p > 0.5).astype(jnp.uint8)
  words_p, words_c = M.pack_bits(pb), M.pack_bits(cand)
  packed = jax.jit(lambda a, w: M.packed_tanimoto(a[:, None, :], w))
  floatv = jax.jit(lambda p, y, m: M.candidate_scores(p, y, m, sim="tanimoto"))
  np.testing.assert_allclose(
    packed(words_p, words_c), floatv(p, cand, mask), rtol=1e-6
  )
  t = bench.side_by_side(
    {
      "packed": lambda: packed(words_p, words_c),
      "float": lambda: floatv(p, cand, mask),
    },
    repeats,
  )
  _pair(rows, "tanimoto_packed_vs_float", t, shape=[b, c, f])
  summary.append(
    bench.summary(
      f"thresholded Tanimoto B={b}, C={c}, F={f}: popcount words vs float form",
      t["float"].best / t["packed"].best,
      ">= 1",
      note="spec §7: the bit-packed form should win",
    )
  )

  fb, n, probs = (12, 8, 100) if q else (16, 8, 1000)
  cands = (rng.random((probs, n, fb)) < 0.3).astype(np.uint8)
  pi = rng.dirichlet(np.ones(n), size=probs).astype(np.float32)
  t_enum = bench.side_by_side(
    {"enum": lambda: M.enumerate_bayes_fingerprint(pi, cands)[1]}, 2
  )["enum"].best
  # [2^F, F]
  allv = ((np.arange(2**fb)[:, None] >> np.arange(fb)) & 1).astype(np.float64)
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

  got = np.asarray(
    M.enumerate_bayes_fingerprint(pi[:np_probs], cands[:np_probs])[1]
  )
  np.testing.assert_allclose(got, np_enum(), rtol=1e-5)
  t_np = bench.side_by_side({"np": np_enum}, 1)["np"].best * probs / np_probs
  rows.append(
    {
      "case": "bayes_enumeration",
      "F": fb,
      "n": n,
      "problems": probs,
      "s_per_1000": 1000 * t_enum / probs,
      "numpy_float64_s_per_1000": 1000 * t_np / probs,
    }
  )
  summary.append(
    bench.summary(
      f"exact Bayes fingerprint F={fb}, n={n} vs numpy float64 enumeration",
      t_np / t_enum,
      ">= 1",
    )
  )
  if not q:
    summary.append(
      bench.summary(
        "exact Bayes fingerprint F=16, n=8, per 1,000 posteriors",
        1000 * t_enum / probs,
        "< 1",
        unit="s",
        note="spec §7",
      )
    )

  bb, cc, ff, bins, h = (
    (16, 16, 256, 200, 64) if q else (64, 64, 2048, 1000, 512)
  )
  # Built in one compiled program (the same values as built op by op, with fewer
  # compilations).
  model = nnx.jit(
    lambda: M.FingerprintMLP(
      bins, ff, hidden=(h, h), embed_dim=h, rngs=nnx.Rngs(0)
    )
  )()
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
  # data as arguments: no constant folding
  def step(params, opt, key, x, fp, cf, lab, m, w):
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
    state[0], state[1], loss = step(
      state[0], state[1], key, x, fp, cf, lab, m, w
    )
    return loss

  t_step = bench.side_by_side({"step": run_step}, repeats)["step"]
  rows.append(
    {
      "case": "train_step",
      "B": bb,
      "C": cc,
      "F": ff,
      "bins": bins,
      "hidden": h,
      "traces": len(traces),  # over the warm-up and the timed calls
      **t_step.as_dict(),
    }
  )
  summary.append(
    bench.summary(
      "training step: traces over the warm-up and the timed calls",
      len(traces),
      "== 1",
      unit="traces",
    )
  )
  if not q:
    summary.append(
      bench.summary(
        "training step B=64, C=64, F=2048, 1000 bins",
        1e3 * t_step.best,
        "<= 15",
        unit="ms",
        note="spec §7",
      )
    )
  return bench.write(
    NAME, args, rows=rows, summary=summary, host=host, argv=argv
  )


if __name__ == "__main__":
  main()
