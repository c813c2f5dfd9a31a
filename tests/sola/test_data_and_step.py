"""Text windows and document splits, aligned-pair sampling and the student's
bits per byte."""

import math

import jax
import numpy as np
import pytest

import jaxpapers.sola as S


def test_text_windows_cut_at_the_last_space_of_the_second_half():
  doc = "aaaa bbb cc dddddddddddd e"
  got = S.text_windows(doc, 8)
  # by hand: [0, 8) cuts at its last space in [4, 8), 4 -> "aaaa"; [4, 12) at
  # the last in [8, 12), 11 -> " bbb cc"; [11, 19) has none in [15, 19) -> hard
  # cut at 19; the rest fits
  assert got == ["aaaa", " bbb cc", " ddddddd", "ddddd e"]
  # Independent check: rebuild the cuts by the rule in the docstring.
  cuts, i = [], 0
  while i < len(doc):
    j = min(len(doc), i + 8)
    if j < len(doc):
      spaces = [p for p in range(i + 4, j) if doc[p] == " " and p > i]
      j = spaces[-1] if spaces else j
    cuts.append(doc[i:j])
    i = j
  assert got == [c for c in cuts if c.strip()]
  assert "".join(got) == doc
  assert all(len(w) <= 8 for w in got)


def test_text_windows_drop_blank_pieces_and_hard_cut_without_spaces():
  assert S.text_windows("x" * 10, 4) == ["xxxx", "xxxx", "xx"]
  # a run of spaces longer than the window: its blank piece goes, the rest keeps
  # its order
  got = S.text_windows("ab" + " " * 9 + "cd", 4)
  assert "".join(got).replace(" ", "") == "abcd" and all(w.strip() for w in got)
  assert S.text_windows("", 5) == []


def test_window_splits_are_disjoint_by_document_and_deterministic():
  docs = [
    f"doc{i} " + " ".join(f"w{i}_{j}" for j in range(30)) for i in range(20)
  ]
  code = ["def f():\n  return 1\n" * 5]
  sizes = dict(train=7, calib=3, eval=4, code=2)
  split, wins = S.window_splits(
    docs, code, sizes=sizes, window_chars=40, seed=3
  )
  assert (
    len(split["calib"]) == 2
    and len(split["eval"]) == 4
    and len(split["train"]) == 14
  )
  assert sorted(
    sum((split[k] for k in ("calib", "eval", "train")), [])
  ) == sorted(docs)
  assert split["code"] == code
  owner = {
    w: k
    for k in ("train", "calib", "eval")
    for d in split[k]
    for w in d.split()
  }
  for k in ("train", "calib", "eval"):
    assert len(wins[k]) == sizes[k]
    for w in wins[k]:  # every window comes from a document of its own split
      assert {owner[t] for t in w.split()} == {k}
    # kept in document order: positions in the concatenated split text increase
    all_w = [x for d in split[k] for x in S.text_windows(d, 40)]
    pos = [all_w.index(w) for w in wins[k]]
    assert pos == sorted(pos)
  assert len(wins["code"]) == 2
  again = S.window_splits(docs, code, sizes=sizes, window_chars=40, seed=3)
  assert again == (split, wins)
  other = S.window_splits(docs, code, sizes=sizes, window_chars=40, seed=4)
  assert other[0]["eval"] != split["eval"]


def test_window_splits_keep_every_window_of_a_small_split():
  docs = ["a b c d e f", "g h i j k l", "m n o p q r"]
  sizes = dict(train=99, calib=99, eval=99, code=1)
  split, wins = S.window_splits(docs, [], sizes=sizes, window_chars=4, seed=0)
  for k in ("train", "calib", "eval"):
    assert wins[k] == [x for d in split[k] for x in S.text_windows(d, 4)]
  assert wins["code"] == []


def test_sample_aligned_pairs_prefers_valid_pairs_uniformly():
  valid = np.zeros((3, 6), bool)
  valid[0, [1, 3, 4]] = True  # 3 valid >= 2 kept: a subset of them
  valid[1, [5]] = True  # 1 valid < 2 kept: it, then one invalid
  sel, mask = S.sample_aligned_pairs(jax.random.key(0), valid, 2)
  sel, mask = np.asarray(sel), np.asarray(mask)
  assert sel.shape == mask.shape == (3, 2) and sel.dtype == np.int32
  assert set(sel[0]) <= {1, 3, 4} and len(set(sel[0])) == 2 and mask[0].all()
  assert sel[1, 0] == 5 and mask[1].tolist() == [True, False]
  assert not mask[2].any() and len(set(sel[2])) == 2
  np.testing.assert_array_equal(mask, np.take_along_axis(valid, sel, 1))
  # uniform over the valid pairs of row 0: each of the 3 is kept in about 2/3 of
  # the draws
  keys = jax.random.split(jax.random.key(1), 600)
  sels = np.asarray(
    jax.vmap(lambda k: S.sample_aligned_pairs(k, valid, 2)[0])(keys)
  )
  freq = np.array([(sels[:, 0] == j).any(-1).mean() for j in (1, 3, 4)])
  np.testing.assert_allclose(freq, 2 / 3, atol=0.07)


def test_student_bits_per_byte_against_float64_numpy():
  cfg = S.StudentConfig(
    vocab_size=11, d_model=8, n_layers=1, n_heads=2, ffn_dim=8, max_len=6
  )
  params = S.init_student(jax.random.key(2), cfg)
  # far from uniform predictions
  params = jax.tree.map(lambda x: x * 20.0, params)
  rng = np.random.default_rng(0)
  tokens = rng.integers(0, 11, (3, 6)).astype(np.int32)
  lengths = np.array([6, 4, 2], np.int32)
  n_bytes = np.array([9, 5, 3], np.int32)
  got = float(S.student_bits_per_byte(params, tokens, lengths, n_bytes, cfg))
  logits = np.asarray(S.student_logits(params, tokens, cfg), np.float64)
  logp = logits - np.log(
    np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)
  )
  logp -= logits.max(-1, keepdims=True)
  total = sum(
    logp[n, p, tokens[n, p + 1]]
    for n in range(3)
    for p in range(lengths[n] - 1)
  )
  assert got == pytest.approx(
    -total / (n_bytes.sum() * math.log(2.0)), rel=1e-5
  )
