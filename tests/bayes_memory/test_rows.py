"""Row layout of a dialogue and bucketed scoring: against row-by-row
evaluation."""

import numpy as np
import pytest

from jaxpapers import bayes_memory as bm

TOK = bm.WordTokenizer(257)


def _dialogue():
  return bm.make_preference_dialogues(0, n_dialogues=1, n_turns=6, n_queries=2)[
    0
  ]


def _row_sum(ids, attn, tgt):
  """A stand-in log-prob: the sum of the target ids (depends on the row, not its
  padding)."""
  return (np.asarray(ids) * np.asarray(tgt)).sum(-1).astype(np.float64)


def test_dialogue_rows_layout():
  d = _dialogue()
  rows, where = bm.dialogue_rows(d, TOK, max_len=160)
  n = len(d.turns)
  expected = []
  for qi, q in enumerate(d.queries):
    expected += [(qi, "y", col) for col in range(n + 3)]
    if q.y_alt is not None:
      expected += [(qi, "alt", col) for col in [0] + list(range(2, n + 3))]
  assert where == expected
  assert all(r[0].shape == (160,) for r in rows)
  # the whole-history row of question 0 is encode_rows' row for all turns
  ids, attn, _ = bm.encode_rows(
    TOK, [list(d.turns)], d.queries[0].x, d.queries[0].y, max_len=160
  )
  np.testing.assert_array_equal(rows[n + 2][0], ids[0])
  np.testing.assert_array_equal(rows[n + 2][1], attn[0])


def test_subset_rows_match_encode_rows():
  d = _dialogue()
  (row,) = bm.subset_rows(d, TOK, [(1, "y", (0, 2))], max_len=160)
  q = d.queries[1]
  ids, _, tgt = bm.encode_rows(
    TOK, [[d.turns[0], d.turns[2]]], q.x, q.y, max_len=160
  )
  np.testing.assert_array_equal(row[0], ids[0])
  np.testing.assert_array_equal(row[2], tgt[0])


@pytest.mark.parametrize(
  "buckets,batch_tokens", [((160,), 160), ((56, 80, 128, 160), 512)]
)
def test_score_rows_bucketed_equals_row_by_row(buckets, batch_tokens):
  rows, _ = bm.dialogue_rows(_dialogue(), TOK, max_len=160)
  calls = []

  def fn(ids, attn, tgt):
    calls.append(ids.shape)
    return _row_sum(ids, attn, tgt)

  lp, padded = bm.score_rows_bucketed(
    fn, rows, buckets=buckets, batch_tokens=batch_tokens
  )
  want = np.array(
    [_row_sum(r[0][None], r[1][None], r[2][None])[0] for r in rows]
  )
  np.testing.assert_array_equal(lp, want)
  # every call has its bucket's fixed shape, and the padded tokens are what was
  # run
  for B, b in calls:
    assert b in buckets and B == max(1, batch_tokens // b)
  assert padded == sum(B * b for B, b in calls)


def test_score_rows_bucketed_rejects_a_row_longer_than_every_bucket():
  rows, _ = bm.dialogue_rows(_dialogue(), TOK, max_len=160)
  with pytest.raises(ValueError, match="largest bucket 8"):
    bm.score_rows_bucketed(_row_sum, rows, buckets=(8,), batch_tokens=64)
  with pytest.raises(ValueError, match="batch_tokens"):
    bm.score_rows_bucketed(_row_sum, rows, buckets=(160,), batch_tokens=0)


def test_pooled_text_features_equal_mean_pooled_features(tiny):
  cfg, params, tok = tiny
  texts = ["I like tea", "where do I live"]
  got = bm.pooled_text_features(params, texts, tok, config=cfg, max_len=8)
  ids = np.zeros((2, 8), np.int32)
  mask = np.zeros((2, 8), bool)
  for i, t in enumerate(texts):
    e = tok.encode(t, add_bos=False)
    ids[i, : len(e)], mask[i, : len(e)] = e, True
  np.testing.assert_allclose(
    got, bm.mean_pooled_features(params, ids, mask, config=cfg), rtol=1e-6
  )
