"""Performance targets of jaxpapers.sola (spec §7), measured side by side in one process.

  python benchmarks/sola_perf.py [--out=sola_perf.json]

(1) ``mcc_blocks`` throughput (tokens/s) against a pure-Python two-pointer merge of the same
offsets and against the earlier sort-based (``np.unique`` / ``intersect1d``) partition;
(2) ``sola_loss`` forward + backward for 1,024 aligned positions, M = 41 (k = 8, R = 4), 30
unrolled Sinkhorn iterations, against the same call on the top-k x top-k support only (no
neighbours, the cheapest OT), and the same call with the cost levers of §7 (fewer iterations,
k = 4, implicit instead of unrolled differentiation); (3) one student training step with SOLA
against a CE-only step at the experiment's shapes (batch 8 x 64, 1,024-token vocabulary, 24
distilled blocks per window), and an ALM-style chunk-loss step; (4) teacher-cache bytes per
token at K_c = 64; (5) the direct baselines' training step, vmapped over runs as the
experiment trains them: one program of 4 methods x 3 seeds in which every run computes ULD,
MinED-style and ALM-style and weights two by 0, against one program per method (3 seeds each)
computing only its own loss (``--only_baselines`` runs this part alone). Warm-up excluded;
best of the repeats.
Times on shared CPU cores are noisy; read the ratios.
"""

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxpapers.sola as S
from jaxpapers.core.timing import best_time


def random_offsets(rng, n):
  lens = rng.integers(1, 6, n)
  ends = np.cumsum(lens)
  return np.stack([ends - lens, ends], 1)


def python_merge(t, s):
  """Reference: walk both end lists and keep the equal ends (no partial-token handling)."""
  i = j = 0
  out = []
  while i < len(t) and j < len(s):
    if t[i][1] == s[j][1]:
      out.append(t[i][1])
      i += 1
      j += 1
    elif t[i][1] < s[j][1]:
      i += 1
    else:
      j += 1
  return out


def sort_based_common_cuts(t, s):
  """The earlier implementation's core: np.unique of each side's cuts, then intersect1d."""

  def cuts(a):
    ok = np.ones(len(a), bool)
    ok[:-1] = a[1:, 0] >= a[:-1, 1]
    c = np.unique(a[ok, 1])
    return c[c > 0]

  common = np.intersect1d(cuts(t), cuts(s), assume_unique=True)
  tb = np.searchsorted(common, t[:, 1], side="left")
  sb = np.searchsorted(common, s[:, 1], side="left")
  return common, tb, sb


def random_table(rng, v_t, v_s, r):
  j = jnp.asarray
  chars_t = rng.integers(97, 100, (v_t, 8)).astype(np.int32)
  chars_s = rng.integers(97, 100, (v_s, 8)).astype(np.int32)
  return S.CorrespondenceTable(
    j(rng.integers(0, v_s, (v_t, r)).astype(np.int32)),
    j(rng.random((v_t, r)), jnp.float32),
    j(rng.integers(0, v_t, (v_s, r)).astype(np.int32)),
    j(rng.random((v_s, r)), jnp.float32),
    j(chars_t),
    j(np.full(v_t, 8, np.int32)),
    j(chars_s),
    j(np.full(v_s, 8, np.int32)),
  )


def baselines_group(res, rng, seeds=3):
  """The experiment's baseline step, vmapped over runs: joint program vs one per loss."""
  v_s, v_t, kc, k, b, t, kd = 1024, 49152, 32, 8, 8, 64, 24
  cfg = S.StudentConfig(vocab_size=v_s, d_model=128, n_layers=2, n_heads=4, ffn_dim=384, max_len=t)
  tx = optax.adamw(1e-3)
  j = jnp.asarray
  tokens = j(rng.integers(0, v_s, (b, t)).astype(np.int32))
  pos = j(np.sort(rng.choice(t - 1, (b, kd)), 1).astype(np.int32))
  t_logp = j(np.sort(np.log(rng.dirichlet(np.ones(kc), (b, kd))), -1)[..., ::-1].astype(np.float32))
  mapped = j(rng.integers(0, v_s, (b, kd, k)).astype(np.int32))
  blk = j(np.sort(rng.integers(0, t, (b, t)), 1).astype(np.int32))
  t_tok_lp = j(np.log(rng.uniform(0.05, 0.95, (b, t))).astype(np.float32))
  blk_mask = j(np.zeros((b, t), bool)).at[jnp.arange(b)[:, None], pos].set(True)
  del v_t

  def make(need):
    def loss(pr, w):
      lg = S.student_logits(pr, tokens, cfg)
      tl = S.token_logp(lg, tokens, jnp.full(b, t))
      sl = jnp.take_along_axis(lg, pos[..., None], 1)
      out = -tl.mean()
      if "uld" in need:
        out = out + w[0] * S.uld_loss(t_logp, sl)
      if "mined" in need:
        out = out + w[1] * S.mined_kl_loss(mapped, t_logp[..., :k], sl)
      if "alm" in need:
        out = out + w[2] * S.alm_chunk_loss(t_tok_lp, blk, tl, blk, n_blocks=t, mask=blk_mask)[0]
      return out

    def step(pr, o, w):
      g = jax.grad(loss)(pr, w)
      u, o = tx.update(g, o, pr)
      return optax.apply_updates(pr, u), o

    return jax.jit(jax.vmap(step))

  def runs(r):
    keys = jax.random.split(jax.random.key(0), r)
    pr = jax.vmap(lambda kk: S.init_student(kk, cfg))(keys)
    return pr, jax.vmap(tx.init)(pr)

  methods = {"ce": (), "uld": ("uld",), "mined": ("mined",), "alm": ("alm",)}
  onehot = {m: np.eye(4, 3, -1, dtype=np.float32)[i] for i, m in enumerate(methods)}
  pr, o = runs(4 * seeds)
  w = j(np.repeat(np.stack(list(onehot.values())), seeds, 0))
  st = make(("uld", "mined", "alm"))
  t_joint = best_time(lambda: st(pr, o, w)[0]["embed"], repeats=5)
  pr, o = runs(seeds)
  t_own = {}
  for m, need in methods.items():
    st = make(need)
    wm = j(np.repeat(onehot[m][None], seeds, 0))
    t_own[m] = best_time(lambda st=st, wm=wm: st(pr, o, wm)[0]["embed"], repeats=5)
  res["baselines_joint_step_s"] = t_joint
  res["baselines_own_loss_step_s"] = t_own
  res["baselines_own_over_joint"] = sum(t_own.values()) / t_joint
  print(
    f"baselines, 4 methods x {seeds} seeds per step: joint program {t_joint * 1e3:.1f} ms, "
    f"one per loss {sum(t_own.values()) * 1e3:.1f} ms "
    f"({res['baselines_own_over_joint']:.2f}x; "
    + ", ".join(f"{m} {v * 1e3:.1f}" for m, v in t_own.items())
    + ")"
  )


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--out", default="sola_perf.json")
  ap.add_argument("--only_baselines", action="store_true")
  args = ap.parse_args()
  rng = np.random.default_rng(0)
  res = {"devices": str(jax.devices())}
  if args.only_baselines:
    baselines_group(res, rng)
    with open(args.out, "w") as fh:
      json.dump(res, fh, indent=2)
    return

  n = 200_000
  t, s = random_offsets(rng, n), random_offsets(rng, int(n * 0.8))
  s[-1, 1] = t[-1, 1]
  t_mcc = best_time(lambda: S.mcc_blocks(t, s), repeats=10)
  tl, sl = t.tolist(), s.tolist()
  t_py = best_time(lambda: python_merge(tl, sl), repeats=1)
  res["mcc_tokens_per_s"] = (len(t) + len(s)) / t_mcc
  res["mcc_vs_python_merge"] = t_py / t_mcc
  t_sort = best_time(lambda: sort_based_common_cuts(t, s), repeats=10)
  res["mcc_vs_sort_based"] = t_sort / t_mcc
  print(
    f"mcc_blocks: {res['mcc_tokens_per_s']:.3g} tokens/s, {res['mcc_vs_python_merge']:.1f}x "
    f"a Python two-pointer merge, {res['mcc_vs_sort_based']:.1f}x the sort-based version"
  )

  v_t, v_s, kc, k, r, p = 49152, 1024, 32, 8, 4, 1024
  table = random_table(rng, v_t, v_s, r)
  t_logits = rng.normal(size=(p, kc)).astype(np.float32)
  t_ids = jnp.asarray(rng.integers(0, v_t, (p, kc)).astype(np.int32))
  t_logp = jnp.asarray(jax.nn.log_softmax(t_logits) - 1.0)
  s_logits = jnp.asarray(rng.normal(size=(p, v_s)).astype(np.float32))
  out = {}
  for support in ("bidirectional", "none"):

    def loss(x, ti, tl, tb, sp=support):
      return S.sola_loss(ti, tl, x, tb, k=k, iters=30, support=sp)[0]

    f = jax.jit(jax.grad(loss))
    out[support] = best_time(lambda f=f: f(s_logits, t_ids, t_logp, table), repeats=5)
  res["sola_fwd_bwd_1024_s"] = out["bidirectional"]
  res["sola_vs_topk_only_support"] = out["bidirectional"] / out["none"]
  print(
    f"sola_loss fwd+bwd, 1024 positions, M={k + k * r + 1}, 30 iters: "
    f"{out['bidirectional']:.3f} s ({res['sola_vs_topk_only_support']:.2f}x the top-k-only OT)"
  )

  # The levers spec §7 names for a missed OT target: fewer Sinkhorn iterations, a smaller
  # support (k), and differentiating without unrolling the loop (ott's implicit / Danskin
  # gradients). Each: fwd + bwd time for the same 1,024 positions, and its ratio to the default.
  levers = {
    "iters=10": dict(k=k, iters=10, unroll=True),
    "iters=20": dict(k=k, iters=20, unroll=True),
    "iters=30, implicit diff": dict(k=k, iters=30, unroll=False),
    "k=4 (M=21), iters=30": dict(k=4, iters=30, unroll=True),
  }
  res["sola_levers"] = {}
  for name, kw in levers.items():

    def loss(x, ti, tl, tb, kw=kw):
      return S.sola_loss(ti, tl, x, tb, **kw)[0]

    f = jax.jit(jax.grad(loss))
    try:
      tm = best_time(lambda f=f: f(s_logits, t_ids, t_logp, table), repeats=5)
    except Exception as e:  # noqa: BLE001 - a lever that fails is recorded, not fatal
      msg = str(e).strip().splitlines()
      res["sola_levers"][name] = {"failed": next((m for m in msg if "solver" in m), msg[0])}
      print(f"  lever {name}: failed ({res['sola_levers'][name]['failed']})")
      continue
    res["sola_levers"][name] = {"s": tm, "vs_default": tm / out["bidirectional"]}
    print(f"  lever {name}: {tm:.3f} s ({tm / out['bidirectional']:.2f}x)")

  cfg = S.StudentConfig(vocab_size=v_s, d_model=128, n_layers=2, n_heads=4, ffn_dim=384, max_len=64)
  params = S.init_student(jax.random.key(0), cfg)
  tx = optax.adamw(1e-3)
  opt = tx.init(params)
  tokens = jnp.asarray(rng.integers(0, v_s, (8, 64)).astype(np.int32))
  pos = jnp.asarray(np.sort(rng.choice(63, (8, 24)), 1).astype(np.int32))
  small = random_table(rng, v_t, v_s, r)
  b_ids, b_lp = t_ids[:192].reshape(8, 24, kc), t_logp[:192].reshape(8, 24, kc)

  # ALM-style chunk loss inputs: 24 blocks per window, block ids non-decreasing over tokens
  blk = jnp.asarray(np.sort(rng.integers(0, 24, (8, 64)), 1).astype(np.int32))
  t_tok_lp = jnp.asarray(np.log(rng.uniform(0.05, 0.95, (8, 64))).astype(np.float32))

  def make_step(kd):
    def loss(pr, tokens, pos, b_ids, b_lp, small):
      lg = S.student_logits(pr, tokens, cfg)
      tl = S.token_logp(lg, tokens, jnp.full(8, 64))
      ce = -tl.mean()
      if not kd:
        return ce
      if kd == "alm":
        return ce + S.alm_chunk_loss(t_tok_lp, blk, tl, blk, n_blocks=24)[0]
      sl = jnp.take_along_axis(lg, pos[..., None], 1)
      return ce + S.sola_loss(b_ids, b_lp, sl, small, k=k, iters=20)[0]

    @jax.jit
    def step(pr, o, *batch):
      g = jax.grad(loss)(pr, *batch)
      u, o = tx.update(g, o, pr)
      return optax.apply_updates(pr, u), o

    return step

  batch = (tokens, pos, b_ids, b_lp, small)
  st_ce = make_step(False)
  t_ce = best_time(lambda: st_ce(params, opt, *batch)[0]["embed"], repeats=10)
  st = make_step(True)
  t_sola = best_time(lambda: st(params, opt, *batch)[0]["embed"], repeats=10)
  res["ce_step_s"], res["sola_step_s"], res["sola_over_ce_step"] = t_ce, t_sola, t_sola / t_ce
  st_alm = make_step("alm")
  t_alm = best_time(lambda: st_alm(params, opt, *batch)[0]["embed"], repeats=10)
  res["alm_step_s"], res["alm_over_ce_step"] = t_alm, t_alm / t_ce
  print(
    f"student step: CE {t_ce * 1e3:.1f} ms, SOLA {t_sola * 1e3:.1f} ms "
    f"({res['sola_over_ce_step']:.2f}x), ALM-style {t_alm * 1e3:.1f} ms "
    f"({res['alm_over_ce_step']:.2f}x)"
  )
  cache = S.TeacherCache(
    np.zeros((1, 1, 64), np.int32), np.zeros((1, 1, 64), np.float16), np.zeros((1, 1), np.float32)
  )
  res["cache_bytes_per_token_kc64"] = cache.bytes_per_token
  baselines_group(res, rng)
  with open(args.out, "w") as fh:
    json.dump(res, fh, indent=2)
  print(json.dumps(res, indent=2))


if __name__ == "__main__":
  main()
