"""The scoring rows of a dialogue and their bucketed evaluation (host-side
batching).

A dialogue's evidence is the summed log-prob of a response under a set of memory
contexts: for every question, the reference response y in the contexts {no
memory, placebo turn, each turn alone, the whole history} and the contrast
response y' in the same contexts but the placebo. :func:`dialogue_rows` lays
these rows out, :func:`subset_rows` builds the rows of arbitrary turn subsets
(greedy set selection), and :func:`score_rows_bucketed` evaluates rows of any
lengths with a :data:`LogprobFn` in fixed-shape batches, one compilation per
length bucket. (The shared-prefix alternative is
:func:`jaxpapers.bayes_memory.score_rows_shared`.)
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from jaxpapers.bayes_memory._baselines import mean_pooled_features
from jaxpapers.bayes_memory._data import PLACEBO_TURN, Dialogue
from jaxpapers.bayes_memory._scoring import LogprobFn, encode_rows

# One scoring row: (ids int32 [L], attn_mask bool [L], target_mask bool [L]).
Row = tuple[np.ndarray, np.ndarray, np.ndarray]


def _check_max_len(max_len) -> int:
  if (
    isinstance(max_len, bool)
    or not isinstance(max_len, (int, np.integer))
    or max_len < 1
  ):
    raise ValueError(f"max_len must be an int >= 1, got {max_len!r}")
  return int(max_len)


def dialogue_rows(
  dialogue: Dialogue, tokenizer, *, max_len: int
) -> tuple[list[Row], list[tuple[int, str, int]]]:
  """The scoring rows of one dialogue and where each belongs.

  Context columns: 0 no memory, 1 the placebo turn, ``2 + i`` turn i alone,
  ``N + 2`` the whole history of N turns. Each question gets one row per column
  for its reference response y and one per column but the placebo for its
  contrast response y' (none when ``y_alt`` is None).

  Args:
    dialogue: the dialogue (its turns and queries).
    tokenizer: has ``encode(text, add_bos=...) -> list[int]``.
    max_len: L, the length every row is padded (or cut) to, e.g. the largest
      length bucket.

  Returns:
    ``(rows, where)``: ``rows[r]`` is ``(ids int32 [L], attn_mask bool [L],
    target_mask bool [L])`` (see :func:`jaxpapers.bayes_memory.encode_rows`);
    ``where[r]`` is ``(question index, 'y' or 'alt', context column)``.

  Example:
    >>> rows, where = dialogue_rows(d, tokenizer, max_len=160)
    >>> lp, padded = score_rows_bucketed(fn, rows, buckets=(56, 80, 128, 160), batch_tokens=512)
  """
  if not isinstance(dialogue, Dialogue):
    raise TypeError(
      f"dialogue must be a Dialogue, got {type(dialogue).__name__}"
    )
  max_len = _check_max_len(max_len)
  turns = list(dialogue.turns)
  contexts = [[], [PLACEBO_TURN]] + [[t] for t in turns] + [turns]
  rows, where = [], []
  for qi, q in enumerate(dialogue.queries):
    for kind, y, ctxs in (
      ("y", q.y, contexts),
      ("alt", q.y_alt, [contexts[0]] + contexts[2:]),
    ):
      if y is None:
        continue
      ids, attn, tgt = encode_rows(tokenizer, ctxs, q.x, y, max_len=max_len)
      cols = (
        list(range(len(contexts)))
        if kind == "y"
        else [0] + list(range(2, len(contexts)))
      )
      for r, col in enumerate(cols):
        rows.append((ids[r], attn[r], tgt[r]))
        where.append((qi, kind, col))
  return rows, where


def subset_rows(
  dialogue: Dialogue,
  tokenizer,
  requests: Sequence[tuple[int, str, Sequence[int]]],
  *,
  max_len: int,
) -> list[Row]:
  """Scoring rows of (question, response kind, turn subset) requests of one
  dialogue.

  Args:
    dialogue: the dialogue.
    tokenizer: has ``encode(text, add_bos=...) -> list[int]``.
    requests: ``(question index, 'y' or 'alt', turn indices)``; the turns go
      into the memory block in the order given.
    max_len: L, the padded row length.

  Returns:
    One ``(ids int32 [L], attn_mask bool [L], target_mask bool [L])`` per
    request.
  """
  if not isinstance(dialogue, Dialogue):
    raise TypeError(
      f"dialogue must be a Dialogue, got {type(dialogue).__name__}"
    )
  max_len = _check_max_len(max_len)
  rows = []
  for qi, kind, sub in requests:
    if kind not in ("y", "alt"):
      raise ValueError(f"a request's kind must be 'y' or 'alt', got {kind!r}")
    q = dialogue.queries[qi]
    y = q.y if kind == "y" else q.y_alt
    if y is None:
      raise ValueError(
        f"question {qi} has no contrast response: request kind 'alt' is invalid"
      )
    ids, attn, tgt = encode_rows(
      tokenizer, [[dialogue.turns[i] for i in sub]], q.x, y, max_len=max_len
    )
    rows.append((ids[0], attn[0], tgt[0]))
  return rows


def score_rows_bucketed(
  fn: LogprobFn,
  rows: Sequence[Row],
  *,
  buckets: Sequence[int],
  batch_tokens: int,
) -> tuple[np.ndarray, int]:
  """Summed log-probs of rows of any lengths, in fixed-shape batches per length
  bucket.

  Each row goes to the smallest bucket that holds its tokens
  (``attn_mask.sum()``) and is cut to that length; a bucket of length b runs
  ``max(1, batch_tokens // b)`` rows per call of ``fn``, the last batch filled
  with copies of its first row, so ``fn`` compiles once per bucket.

  Args:
    fn: ``fn(ids [B, b], attn_mask [B, b], target_mask [B, b]) -> [B]`` summed
      log-probs, e.g. :func:`jaxpapers.bayes_memory.make_logprob_fn`.
    rows: ``(ids [L], attn_mask [L], target_mask [L])`` per row, right-padded, L
      >= the bucket a row falls in.
    buckets: the padded lengths (any order).
    batch_tokens: the padded tokens per call of ``fn``.

  Returns:
    ``(logprobs, padded_tokens)``: float64 [R] in the order of ``rows``, and the
    number of padded tokens run (the forward's cost).

  Raises:
    ValueError: empty ``buckets``, ``batch_tokens < 1``, or a row longer than
      every bucket.
  """
  buckets = sorted(int(b) for b in buckets)
  if not buckets:
    raise ValueError("buckets must hold at least one length")
  if isinstance(batch_tokens, bool) or not isinstance(
    batch_tokens, (int, np.integer)
  ):
    raise ValueError(f"batch_tokens must be an int >= 1, got {batch_tokens!r}")
  if batch_tokens < 1:
    raise ValueError(f"batch_tokens must be an int >= 1, got {batch_tokens!r}")
  out = np.zeros(len(rows), np.float64)
  groups: dict[int, list[int]] = {}
  padded_tokens = 0
  for r, (_, attn, _) in enumerate(rows):
    n = int(attn.sum())
    b = next((b for b in buckets if b >= n), None)
    if b is None:
      raise ValueError(
        f"a row has {n} tokens > the largest bucket {buckets[-1]}"
      )
    groups.setdefault(b, []).append(r)
  for b, idx in sorted(groups.items()):
    # rows per batch: fixed per bucket (one compile each)
    B = max(1, batch_tokens // b)
    for s in range(0, len(idx), B):
      chunk = idx[s : s + B]
      # fixed batch shape: one compile per bucket
      take = chunk + [chunk[0]] * (B - len(chunk))
      ids = np.stack([rows[i][0][:b] for i in take])
      attn = np.stack([rows[i][1][:b] for i in take])
      tgt = np.stack([rows[i][2][:b] for i in take])
      lp = np.asarray(fn(jnp.asarray(ids), jnp.asarray(attn), jnp.asarray(tgt)))
      out[chunk] = lp[: len(chunk)]
      padded_tokens += B * b
  return out, padded_tokens


def pooled_text_features(
  params, texts: Sequence[str], tokenizer, *, config, max_len: int
) -> np.ndarray:
  """Mean-pooled LM features of short texts (turns, questions), each cut to
  ``max_len`` tokens.

  Args:
    params: ``jaxpapers.lm`` parameters; config: their ``LMConfig``.
    texts: T texts, each tokenised without BOS and right-padded to ``max_len``.
    tokenizer: has ``encode(text, add_bos=...) -> list[int]``.
    max_len: the padded length (one compilation per T).

  Returns:
    float32 [T, d]: :func:`jaxpapers.bayes_memory.mean_pooled_features` of the
    texts.
  """
  max_len = _check_max_len(max_len)
  ids = np.zeros((len(texts), max_len), np.int32)
  mask = np.zeros_like(ids, bool)
  for i, t in enumerate(texts):
    e = tokenizer.encode(t, add_bos=False)[:max_len]
    ids[i, : len(e)] = e
    mask[i, : len(e)] = True
  return np.asarray(mean_pooled_features(params, ids, mask, config=config))
