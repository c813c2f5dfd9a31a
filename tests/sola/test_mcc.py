"""MCC blocks: hand cases, property tests against a brute-force partition, real
tokenizers."""

import numpy as np
import pytest

import jaxpapers.sola as S

# ------------------------------------------------------------------ brute force


def brute_force_blocks(t, s):
  """Every position that both tokenizations end a token at and neither
  straddles."""
  t, s = np.asarray(t), np.asarray(s)
  end = max(t[-1, 1], s[-1, 1])

  def is_cut(off, p):
    return p in set(off[:, 1].tolist()) and all(
      e <= p or a >= p for a, e in off.tolist()
    )

  cuts = [p for p in range(1, end + 1) if is_cut(t, p) and is_cut(s, p)]
  if not cuts:
    cuts = [end]
  cuts[-1] = end
  block = lambda off: np.array(
    [next(k for k, c in enumerate(cuts) if e <= c) for e in off[:, 1]]
  )
  return np.array([0] + cuts), block(t), block(s)


def random_tokenization(rng, length, *, partial=True, gaps=True):
  """Random spans over [0, length): random cuts, some tokens split in two halves
  with the same span (a multi-byte character split by a byte-level tokenizer),
  some 1-char gaps skipped."""
  cuts = np.sort(
    rng.choice(
      np.arange(1, length), size=rng.integers(0, length), replace=False
    )
  )
  bounds = [0] + cuts.tolist() + [length]
  out = []
  for a, e in zip(bounds[:-1], bounds[1:]):
    if gaps and e - a == 1 and rng.random() < 0.2 and out:
      continue  # a skipped whitespace character
    if partial and e - a == 1 and rng.random() < 0.3:
      out.append((a, e))  # first byte of a multi-byte character
    out.append((a, e))
  if not out:
    out = [(0, length)]
  return np.array(out, np.int64)


@pytest.mark.parametrize("seed", range(3))
def test_matches_brute_force_on_random_tokenizations(seed):
  rng = np.random.default_rng(seed)
  for _ in range(60):
    length = int(rng.integers(1, 25))
    t = random_tokenization(rng, length)
    s = random_tokenization(rng, length)
    al = S.mcc_blocks(t, s)
    bounds, tb, sb = brute_force_blocks(t, s)
    np.testing.assert_array_equal(al.bounds, bounds)
    np.testing.assert_array_equal(al.t_block, tb)
    np.testing.assert_array_equal(al.s_block, sb)
    # cover: every token lies inside its block; blocks tile (0, end] without
    # overlap
    for off, blk in ((t, al.t_block), (s, al.s_block)):
      assert np.all(off[:, 0] >= al.bounds[blk]) and np.all(
        off[:, 1] <= al.bounds[blk + 1]
      )
    assert np.all(np.diff(al.bounds) > 0)
    # minimality: no common cut strictly inside a block (brute force lists them
    # all)
    assert set(bounds[1:-1].tolist()) <= set(al.bounds.tolist())
    # first tokens of each block
    k = np.arange(len(al.bounds) - 1)
    np.testing.assert_array_equal(
      al.t_first, [np.flatnonzero(tb == i)[0] for i in k]
    )
    np.testing.assert_array_equal(
      al.s_first, [np.flatnonzero(sb == i)[0] for i in k]
    )


def sort_based_blocks(t, s):
  """The earlier sort-based partition (np.unique / intersect1d / searchsorted):
  a reference."""
  t, s = np.asarray(t, np.int64), np.asarray(s, np.int64)

  def cuts(a):
    ok = np.ones(len(a), bool)
    ok[:-1] = a[1:, 0] >= a[:-1, 1]
    c = np.unique(a[ok, 1])
    return c[c > 0]

  common = np.intersect1d(cuts(t), cuts(s), assume_unique=True)
  end = max(t[-1, 1], s[-1, 1])
  common = np.array([end]) if common.size == 0 else common
  common[-1] = end
  tb = np.searchsorted(common, t[:, 1], side="left")
  sb = np.searchsorted(common, s[:, 1], side="left")
  k = np.arange(len(common))
  firsts = [np.searchsorted(b, k, side="left") for b in (tb, sb)]
  return np.concatenate([[0], common]), tb, sb, *firsts


def with_oddities(rng, off, shift):
  """Shifts the spans right by ``shift`` and inserts zero-length tokens at some
  boundaries."""
  rows = []
  for a, e in off.tolist():
    if rng.random() < 0.2 and (not rows or rows[-1][1] <= a + shift):
      rows.append((a + shift, a + shift))
    rows.append((a + shift, e + shift))
  return np.array(rows, np.int64)


def test_matches_sort_based_and_brute_force_on_long_and_odd_spans():
  """Long texts against the earlier sort-based code; shifted starts and
  zero-length tokens against the brute-force definition."""
  rng = np.random.default_rng(100)
  for _ in range(8):
    length = int(rng.integers(50, 1500))
    t = random_tokenization(rng, length)
    s = random_tokenization(rng, length)
    al = S.mcc_blocks(t, s)
    for got, want in zip(al, sort_based_blocks(t, s)):
      np.testing.assert_array_equal(got, want)
  for _ in range(40):
    length = int(rng.integers(1, 20))
    shift = int(rng.integers(0, 4))
    t = with_oddities(rng, random_tokenization(rng, length), shift)
    s = with_oddities(rng, random_tokenization(rng, length), shift)
    al = S.mcc_blocks(t, s)
    bounds, tb, sb = brute_force_blocks(t, s)
    np.testing.assert_array_equal(al.bounds, bounds)
    np.testing.assert_array_equal(al.t_block, tb)
    np.testing.assert_array_equal(al.s_block, sb)
    k = np.arange(len(bounds) - 1)
    np.testing.assert_array_equal(
      al.t_first, [np.flatnonzero(tb == i)[0] for i in k]
    )


def test_identical_tokenizations_give_one_block_per_token():
  rng = np.random.default_rng(0)
  for _ in range(30):
    t = random_tokenization(rng, int(rng.integers(2, 30)), partial=False)
    al = S.mcc_blocks(t, t)
    n = len(t)
    assert len(al.bounds) == n + 1
    np.testing.assert_array_equal(al.t_block, np.arange(n))
    np.testing.assert_array_equal(al.t_first, np.arange(n))
    np.testing.assert_array_equal(al.s_first, np.arange(n))


def test_hand_cases():
  # "a b": teacher ["a", " b"], student ["a ", "b"]: the only common cut is the
  # end
  al = S.mcc_blocks([[0, 1], [1, 3]], [[0, 2], [2, 3]])
  np.testing.assert_array_equal(al.bounds, [0, 3])
  np.testing.assert_array_equal(al.t_first, [0])
  # a student that drops whitespace: ["a", "b"] at (0, 1), (2, 3)
  al = S.mcc_blocks([[0, 1], [1, 3]], [[0, 1], [2, 3]])
  np.testing.assert_array_equal(al.bounds, [0, 1, 3])
  np.testing.assert_array_equal(al.s_block, [0, 1])
  # "é a": byte-level teacher splits é into two byte tokens with the same span
  al = S.mcc_blocks([[0, 1], [0, 1], [1, 3]], [[0, 1], [1, 3]])
  np.testing.assert_array_equal(al.bounds, [0, 1, 3])
  np.testing.assert_array_equal(al.t_block, [0, 0, 1])
  np.testing.assert_array_equal(al.t_first, [0, 2])
  # the first half of a split character is never a cut, even if the student ends
  # there
  al = S.mcc_blocks([[0, 1], [0, 1]], [[0, 1]])
  np.testing.assert_array_equal(al.t_block, [0, 0])
  # a trailing token one side has alone joins the last block
  al = S.mcc_blocks([[0, 1], [1, 2]], [[0, 1]])
  np.testing.assert_array_equal(al.bounds, [0, 2])


@pytest.fixture(scope="module")
def tokenizers():
  import pydoc_data.topics

  docs = list(pydoc_data.topics.topics.values())[:20]
  t = S.train_bpe(docs, vocab_size=300, style="bytelevel")
  s = S.train_bpe(docs, vocab_size=200, style="metaspace")
  return t, s


TEXTS = [
  "Café  au lait, naïve 日本 x",
  "def f(x):\n    return x  # ok",
  "a  b\tc\n\nd",
]


def test_real_tokenizers_blocks_decode_to_the_same_text(tokenizers):
  t_tok, s_tok = tokenizers
  s_str = S.token_strings(s_tok)
  for text in TEXTS:
    t_ids, t_off = t_tok.encode_with_offsets(text)
    s_ids, s_off = s_tok.encode_with_offsets(text)
    al = S.mcc_blocks(np.array(t_off), np.array(s_off))
    assert al.bounds[-1] == len(text)
    for k in range(len(al.bounds) - 1):
      span = text[al.bounds[k] : al.bounds[k + 1]]
      t_blk = [i for i, b in zip(t_ids, al.t_block) if b == k]
      # byte tokens of é, 日 reassemble inside one block
      assert t_tok.decode(t_blk) == span
      s_blk = "".join(s_str[i] for i, b in zip(s_ids, al.s_block) if b == k)
      # characters the student never saw come back as <unk>, one per character
      want = "".join(ch if s_tok.encode(ch) != [1] else "<unk>" for ch in span)
      assert s_blk == want, (span, s_blk)
    # the multi-byte characters split into byte tokens stay inside one block
    if any(ord(ch) > 127 for ch in text):
      assert len(al.t_block) > len(al.bounds) - 1


def test_align_texts_teacher_sees_its_own_tokenization(tokenizers):
  t_tok, s_tok = tokenizers
  al = S.align_texts(TEXTS, t_tok, s_tok, max_len=12)
  for b, kept in enumerate(al.texts):
    assert TEXTS[b].startswith(kept)
    nt, ns = al.t_len[b], al.s_len[b]
    assert nt <= 12 and ns <= 12
    assert (
      al.t_tokens[b, 0] == t_tok.bos_id and al.s_tokens[b, 0] == s_tok.bos_id
    )
    # re-tokenised, never mapped: the teacher row is the teacher's encoding of
    # the kept text
    assert al.t_tokens[b, 1:nt].tolist() == t_tok.encode(kept)
    assert al.s_tokens[b, 1:ns].tolist() == s_tok.encode(kept)
    assert al.n_bytes[b] == len(kept.encode())
    v = al.blk_valid[b]
    # logits at blk_*_pos predict the block's first token
    np.testing.assert_array_equal(
      al.t_tokens[b, al.blk_t_pos[b, v] + 1], al.blk_t_id[b, v]
    )
    np.testing.assert_array_equal(
      al.s_tokens[b, al.blk_s_pos[b, v] + 1], al.blk_s_id[b, v]
    )
    assert al.blk_t_pos[b, 0] == 0 and al.blk_s_pos[b, 0] == 0
