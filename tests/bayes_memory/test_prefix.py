"""Shared-prompt (prefix-tree) scoring against the row path and a float64 NumPy
forward."""

import jax
import numpy as np
import pytest

from jaxpapers import bayes_memory as bm
from tests.jit_util import count_traces
from tests.lm.numpy_ref import hf_weights_from_params, np_forward

P = 24
BIG = 160


def _rows(tok, n_dialogues=1):
  """Rows of every context x question x {y, y'} of a few dialogues, with prefix
  keys."""
  ds = bm.make_preference_dialogues(
    3, n_dialogues=n_dialogues, n_turns=6, n_queries=2
  )
  rows, keys = [], []
  for g, d in enumerate(ds):
    turns = list(d.turns)
    ctxs = [[], [bm.PLACEBO_TURN]] + [[t] for t in turns] + [turns]
    for qi, q in enumerate(d.queries):
      for y in (q.y, q.y_alt):
        if y is None:
          continue
        ids, attn, tgt = bm.encode_rows(tok, ctxs, q.x, y, max_len=BIG)
        for c in range(len(ctxs)):
          rows.append((ids[c], attn[c], tgt[c]))
          # memory block shared by the questions, prompt by y and y'
          keys.append(((g, c), qi))
  return rows, keys


@pytest.fixture(scope="module")
def data(tiny):
  cfg, params, tok = tiny
  rows, keys = _rows(tok)
  ids, attn, tgt = (np.stack([r[i] for r in rows]) for i in range(3))
  ref = np.asarray(
    bm.sequence_logprobs(params, ids, attn, tgt, config=cfg, max_targets=P)
  )
  return rows, keys, ref


def test_tree_reads_back_every_row_and_runs_fewer_tokens(data):
  rows, keys, _ = data
  tree = bm.build_prefix_tree(rows, keys)
  assert len(tree.ids) == 3
  back = bm.row_tokens(tree)
  for b, (ids, attn, _) in zip(back, rows):
    np.testing.assert_array_equal(b, ids[: attn.sum()])
  # the leaf keeps every response token and the token that predicts the first
  # one
  tgt = np.asarray(tree.target_mask)[: len(rows)]
  assert [int(t.sum()) for t in tgt] == [int(r[2].sum()) for r in rows]
  assert not tgt[:, 0].any()
  total = sum(int(r[1].sum()) for r in rows)
  # brute force: a token trie of all rows runs each distinct prefix once (a
  # lower bound; the tree also re-runs each leaf's predicting token); sharing y
  # and y' prompts alone saves ~ a third
  trie = {
    tuple(ids[: n + 1]) for ids, attn, _ in rows for n in range(int(attn.sum()))
  }
  assert len(trie) <= tree.real_tokens < 0.75 * total


def test_tree_equals_row_path_and_float64_numpy(tiny, data):
  cfg, params, _ = tiny
  rows, keys, ref = data
  tree = bm.build_prefix_tree(rows, keys)
  out = np.asarray(bm.tree_logprobs(params, tree, config=cfg, max_targets=P))
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
  w = hf_weights_from_params(params, cfg)
  # no memory, placebo, one turn, all turns, y'
  for r in (0, 1, 7, 8, len(rows) - 1):
    ids, attn, tgt = rows[r]
    n = int(attn.sum())
    logits = np_forward(w, cfg, ids[:n])
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    t = np.flatnonzero(tgt[:n])
    np.testing.assert_allclose(out[r], logp[t - 1, ids[t]].sum(), atol=2e-4)


def test_new_tree_shape_compiles_only_the_forward(tiny, data):
  """Eager checks run in NumPy: a tree of a new shape traces the forward and
  nothing else (no per-shape check, transfer or slicing programs), with the row
  path's scores."""
  cfg, params, _ = tiny
  rows, keys, ref = data
  # not the shape of the whole-data tree
  tree = bm.build_prefix_tree(rows[:9], keys[:9])
  with count_traces() as traces:
    out = bm.tree_logprobs(params, tree, config=cfg, max_targets=P)
  assert set(traces) <= {"_tree_jit"}, traces
  assert isinstance(out, np.ndarray) and out.shape == (9,)
  np.testing.assert_allclose(out, ref[:9], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_traced_tree_gives_the_eager_scores(tiny, data):
  """Under jit the checks run in jnp and the output is sliced on the device:
  same scores."""
  cfg, params, _ = tiny
  rows, keys, _ = data
  tree = bm.build_prefix_tree(rows, keys)
  eager = bm.tree_logprobs(params, tree, config=cfg, max_targets=P)
  traced = jax.jit(
    lambda t: bm.tree_logprobs(params, t, config=cfg, max_targets=P)
  )(tree)
  np.testing.assert_allclose(eager, np.asarray(traced), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_keys_decide_sharing_not_the_scores(tiny, data):
  """Grouping rows that share little (one key for everything) is slower, never
  different."""
  cfg, params, _ = tiny
  rows, _, ref = data
  out, stats = bm.score_rows_shared(
    params,
    rows,
    [(0,)] * len(rows),
    config=cfg,
    max_targets=P,
    buckets=(96, BIG),
  )
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
  total = sum(int(r[1].sum()) for r in rows)
  # only the template header is shared
  assert 0.8 * total < stats["real_tokens"] < total


def test_bad_input_names_the_argument(tiny, data):
  cfg, params, _ = tiny
  rows, keys, _ = data
  with pytest.raises(ValueError, match="keys must hold one key tuple per row"):
    bm.build_prefix_tree(rows, keys[:-1])
  with pytest.raises(ValueError, match="common depth"):
    bm.build_prefix_tree(rows[:2], [(0, 1), (0,)])
  ids, attn, tgt = rows[0]
  with pytest.raises(ValueError, match="at least one target"):
    bm.build_prefix_tree([(ids, attn, np.zeros_like(tgt))], [(0,)])
  t0 = tgt.copy()
  t0[0] = True
  with pytest.raises(ValueError, match="position 0"):
    bm.build_prefix_tree([(ids, attn, t0)], [(0,)])
  with pytest.raises(TypeError, match="tree must be a PrefixTree"):
    bm.tree_logprobs(params, rows, config=cfg, max_targets=P)
  tree = bm.build_prefix_tree(rows[:3], keys[:3])
  with pytest.raises(ValueError, match="max_targets"):
    bm.tree_logprobs(params, tree, config=cfg, max_targets=2)
  with pytest.raises(ValueError, match="largest bucket"):
    bm.score_rows_shared(
      params, rows, keys, config=cfg, max_targets=P, buckets=(16,)
    )
