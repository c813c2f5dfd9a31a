"""Log Bayes factors against a float64 NumPy forward, and their invariances."""

import numpy as np
import pytest

from jaxpapers import bayes_memory as bm
from tests.jit_util import count_traces
from tests.lm.numpy_ref import hf_weights_from_params, np_forward

TURNS = [
  "I'm really into jazz music these days.",
  "The weather was lovely this morning.",
  "Actually, I've switched: now it's classical music for me.",
]
X = "Any concert suggestions for tonight?"
Y = "Sure! A classical concert downtown would suit you."
L, N_MAX, P = 64, 4, 16


def _np_logprob(w, cfg, ids, tgt):
  """Σ log p(y_t | ·) in float64 on the unpadded row."""
  n = int(np.flatnonzero(ids != 0).max()) + 1 if tgt.any() else 0
  n = int(np.flatnonzero(tgt).max()) + 1
  logits = np_forward(w, cfg, ids[:n])
  logp = logits - logits.max(-1, keepdims=True)
  logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
  t = np.flatnonzero(tgt[:n])
  return float(logp[t - 1, ids[t]].sum())


@pytest.fixture(scope="module")
def fn(tiny):
  cfg, params, _ = tiny
  return bm.make_logprob_fn(params, cfg, max_targets=P)


@pytest.fixture(scope="module")
def batch(tiny):
  return bm.build_scoring_batch(tiny[2], TURNS, X, Y, max_len=L, n_max=N_MAX)


def test_lbf_matches_float64_numpy_forward(tiny, fn, batch):
  cfg, params, _ = tiny
  w = hf_weights_from_params(params, cfg)
  ids, tgt = np.asarray(batch.ids), np.asarray(batch.target_mask)
  ref = [_np_logprob(w, cfg, ids[r], tgt[r]) for r in range(len(TURNS) + 1)]
  lbf = np.asarray(bm.log_bayes_factors(fn, batch))
  np.testing.assert_allclose(
    lbf[: len(TURNS)], np.array(ref[1:]) - ref[0], atol=2e-4
  )
  assert np.all(np.isneginf(lbf[len(TURNS) :]))  # padding turn
  # Per-token variant divides by T, the number of response tokens.
  T = int(tgt[0].sum())
  lbf_t = np.asarray(bm.log_bayes_factors(fn, batch, per_token=True))
  np.testing.assert_allclose(lbf_t[:3], lbf[:3] / T, rtol=1e-5)


def test_response_tokens_are_identical_in_every_row(tiny, batch):
  ids, tgt = np.asarray(batch.ids), np.asarray(batch.target_mask)
  y_rows = [tuple(ids[r][tgt[r]]) for r in range(ids.shape[0])]
  assert len(set(y_rows)) == 1 and y_rows[0] == tuple(tiny[2].encode(Y))
  # the rows differ in their prompt (one turn each), and row 0 holds no turn
  assert len({tuple(r) for r in ids[:4]}) == 4


def test_gathered_logits_equal_full_logits(tiny, fn, batch):
  cfg, params, _ = tiny
  full = bm.make_logprob_fn(params, cfg, max_targets=P, gather=False)
  a = np.asarray(fn(batch.ids, batch.attn_mask, batch.target_mask))
  b = np.asarray(full(batch.ids, batch.attn_mask, batch.target_mask))
  np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_batched_and_looped_agree(fn, batch):
  lbf = np.asarray(bm.log_bayes_factors(fn, batch))
  rows = [
    float(
      fn(
        batch.ids[r : r + 1],
        batch.attn_mask[r : r + 1],
        batch.target_mask[r : r + 1],
      )[0]
    )
    for r in range(len(TURNS) + 1)
  ]
  np.testing.assert_allclose(
    lbf[:3], np.array(rows[1:]) - rows[0], rtol=1e-5, atol=1e-5
  )


def test_permuting_turns_permutes_their_factors(tiny, fn, batch):
  perm = [2, 0, 1]
  b2 = bm.build_scoring_batch(
    tiny[2], [TURNS[i] for i in perm], X, Y, max_len=L, n_max=N_MAX
  )
  a = np.asarray(bm.log_bayes_factors(fn, batch))
  b = np.asarray(bm.log_bayes_factors(fn, b2))
  np.testing.assert_allclose(b[:3], a[perm], atol=1e-5)


def test_placebo_baseline_shifts_all_factors_by_one_constant(tiny, fn, batch):
  bp = bm.build_scoring_batch(
    tiny[2], TURNS, X, Y, max_len=L, n_max=N_MAX, baseline=("placebo")
  )
  a = np.asarray(bm.log_bayes_factors(fn, batch))[:3]
  b = np.asarray(bm.log_bayes_factors(fn, bp))[:3]
  d = a - b
  np.testing.assert_allclose(d, d[0], atol=1e-5)
  assert abs(d[0]) > 1e-4  # the placebo row is a different context


def test_leave_one_out_against_brute_force(tiny, fn):
  cfg, params, tok = tiny
  bl = bm.build_loo_batch(tok, TURNS, X, Y, max_len=80, n_max=N_MAX)
  loo = np.asarray(bm.loo_log_bayes_factors(fn, bl))
  full_ids, full_a, full_t = bm.encode_rows(tok, [TURNS], X, Y, max_len=80)
  lp_full = float(fn(full_ids, full_a, full_t)[0])
  for i in range(3):
    ids, a, t = bm.encode_rows(
      tok, [TURNS[:i] + TURNS[i + 1 :]], X, Y, max_len=80
    )
    assert loo[i] == pytest.approx(lp_full - float(fn(ids, a, t)[0]), abs=1e-4)
  assert np.isneginf(loo[3])


def test_one_compile_per_length_bucket(tiny, fn):
  """After one call per bucket, new questions (other turns, x, y) never
  retrace."""
  tok = tiny[2]
  with count_traces() as warm:
    for ln in (64, 80):
      b = bm.build_scoring_batch(tok, TURNS, X, Y, max_len=ln, n_max=N_MAX)
      bm.log_bayes_factors(fn, b).block_until_ready()
  assert warm["_logprobs_jit"] <= 2, warm
  with count_traces() as traces:
    for y, turns in (
      (Y, TURNS[:2]),
      ("Sure! Try jazz tonight.", TURNS[::-1]),
      ("No.", TURNS),
    ):
      for ln in (64, 80, 64):
        b = bm.build_scoring_batch(
          tok, turns, "Hello there?", y, max_len=ln, n_max=N_MAX
        )
        bm.log_bayes_factors(fn, b).block_until_ready()
  assert traces["_logprobs_jit"] == 0, traces


def test_access_and_select_against_brute_force():
  rng = np.random.default_rng(0)
  lbf = rng.normal(size=(20, 6)).astype(np.float32)
  valid = rng.random((20, 6)) < 0.8
  valid[0] = False
  for tau, k in ((0.0, 1), (0.5, 3), (-10.0, 6)):
    acc, idx, iv = (
      np.asarray(a) for a in bm.access_and_select(lbf, valid, tau=tau, k=k)
    )
    for q in range(20):
      keep = [i for i in range(6) if valid[q, i] and lbf[q, i] > tau]
      order = sorted(keep, key=lambda i: -lbf[q, i])[:k]
      assert acc[q] == bool(keep)
      assert list(idx[q][iv[q]]) == order
      assert iv[q].sum() == len(order)


def test_rows_sharded_over_a_mesh_equal_the_single_device_call(tiny, fn):
  """A question's rows split over the devices of a mesh give the same
  factors."""
  import jax
  from jax.sharding import NamedSharding
  from jax.sharding import PartitionSpec as PS

  n_dev = len(jax.devices())
  b = bm.build_scoring_batch(
    tiny[2], TURNS * 3, X, Y, max_len=L, n_max=n_dev * 2 - 1
  )
  ref = np.asarray(bm.log_bayes_factors(fn, b))
  mesh = jax.make_mesh(
    (n_dev,), ("data",), axis_types=(jax.sharding.AxisType.Auto,)
  )
  rows = NamedSharding(mesh, PS("data"))
  sharded = bm.ScoringBatch(
    jax.device_put(b.ids, rows),
    jax.device_put(b.attn_mask, rows),
    jax.device_put(b.target_mask, rows),
    b.turn_valid,
  )
  got = np.asarray(bm.log_bayes_factors(fn, sharded))
  np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def _reference_greedy(table, n, k_max, tau):
  """Greedy on a brute-force table {sorted subset: log p}; also the smallest
  step margin."""
  s, cur, gains, margin = (), table[()], [], np.inf
  while len(s) < min(k_max, n):
    cand = sorted(
      ((table[tuple(sorted(s + (j,)))], j) for j in range(n) if j not in s),
      reverse=True,
    )
    if len(cand) > 1:
      margin = min(margin, cand[0][0] - cand[1][0])
    v, j = cand[0]
    if v - cur <= tau:
      break
    s, gains, cur = s + (j,), gains + [v - cur], v
  return s, gains, cur, margin


def test_greedy_set_matches_brute_force_enumeration(tiny):
  """The batched greedy over LM rows equals greedy over every subset scored in
  float64 NumPy."""
  import itertools

  cfg, params, tok = tiny
  w = hf_weights_from_params(params, cfg)
  fn = bm.make_logprob_fn(params, cfg, max_targets=P)
  qs = [
    (TURNS, X, Y),
    (TURNS[::-1], "What should I listen to?", "Jazz, as you like it."),
  ]
  for k_max, tau in ((3, -np.inf), (2, 0.0)):
    got = bm.greedy_select(
      bm.make_set_scorer(fn, tok, qs, max_len=80, batch_rows=N_MAX + 1),
      [3, 3],
      k_max=k_max,
      tau=tau,
    )
    for q, (turns, x, y) in enumerate(qs):
      table = {}
      for r in range(4):
        for sub in itertools.combinations(range(3), r):
          ids, _, tgt = bm.encode_rows(
            tok, [[turns[i] for i in sub]], x, y, max_len=80
          )
          table[sub] = _np_logprob(w, cfg, ids[0], tgt[0])
      sel, gains, lp, margin = _reference_greedy(table, 3, k_max, tau)
      assert margin > 1e-3  # the reference's choices are not float32 ties
      assert got[q].selected == sel
      np.testing.assert_allclose(got[q].gains, gains, atol=2e-4)
      assert got[q].logprob == pytest.approx(lp, abs=2e-4)
      assert got[q].base_logprob == pytest.approx(table[()], abs=2e-4)
      # every subset the greedy path needs, and no more: 1 + 3 + 2 + 1 rows at
      # most
      assert got[q].n_scored == 1 + sum(
        3 - i for i in range(len(sel) + (len(sel) < min(k_max, 3)))
      )
