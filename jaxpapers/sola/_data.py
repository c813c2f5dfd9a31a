"""Offline distillation text: documents split by document, cut into windows at
whitespace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from jaxpapers.core import validation as V

__all__ = ["text_windows", "window_splits"]

SPLITS = ("train", "calib", "eval", "code")


def text_windows(doc: str, chars: int) -> list[str]:
  """Consecutive pieces of at most ``chars`` characters, cut at a space where
  one exists.

  Each cut goes at the last space in the second half of the ``chars`` characters
  after the previous cut (no space there: a hard cut after ``chars``
  characters). Pieces that are only whitespace are dropped, so the pieces
  concatenate to ``doc`` less those.

  Args:
    doc: the text.
    chars: the largest piece, in characters (>= 1).

  Returns:
    The non-blank pieces, in order.
  """
  if not isinstance(doc, str):
    raise TypeError(f"doc must be a str, got {type(doc).__name__}")
  chars = V.check_int(chars, "chars", min_value=1)
  out, i = [], 0
  while i < len(doc):
    j = min(len(doc), i + chars)
    if j < len(doc):
      k = doc.rfind(" ", i + chars // 2, j)
      j = k if k > i else j
    piece = doc[i:j]
    if piece.strip():
      out.append(piece)
    i = j
  return out


def window_splits(
  docs: Sequence[str],
  code: Sequence[str],
  *,
  sizes: Mapping[str, int],
  window_chars: int,
  seed: int,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
  """Splits ``docs`` by document and samples windows of each split.

  The documents are permuted with ``numpy.random.default_rng(seed)``: the first
  10% (at least one) are the calibration split, the next 20% (at least one) the
  held-out split, the rest the training split; ``code`` is a split of its own (a
  transfer set). Then, split by split in the order ``train, calib, eval, code``
  and with the same generator, ``sizes[split]`` windows (:func:`text_windows`)
  are drawn without replacement and kept in document order.

  Args:
    docs: the documents (at least 3, so that every split holds one).
    code: the transfer documents.
    sizes: windows per split, for each of ``'train'``, ``'calib'``, ``'eval'``
      and ``'code'`` (a split with fewer windows keeps all of them).
    window_chars: the ``chars`` of :func:`text_windows`.
    seed: the generator's seed.

  Returns:
    ``(documents, windows)``: each a ``{split: list of str}`` over the four
    splits.
  """
  if len(docs) < 3:
    raise ValueError(f"docs must hold at least 3 documents, got {len(docs)}")
  missing = sorted(set(SPLITS) - set(sizes))
  if missing:
    raise ValueError(
      f"sizes must give a window count for every split, missing {missing}"
    )
  rng = np.random.default_rng(seed)
  order = rng.permutation(len(docs))
  n_cal = max(1, int(0.1 * len(docs)))
  n_eval = max(1, int(0.2 * len(docs)))
  split = {
    "calib": [docs[i] for i in order[:n_cal]],
    "eval": [docs[i] for i in order[n_cal : n_cal + n_eval]],
    "train": [docs[i] for i in order[n_cal + n_eval :]],
    "code": list(code),
  }
  wins = {}
  for k in SPLITS:
    w = [x for d in split[k] for x in text_windows(d, window_chars)]
    idx = rng.permutation(len(w))[
      : V.check_int(sizes[k], f"sizes[{k!r}]", min_value=0)
    ]
    wins[k] = [w[i] for i in sorted(idx)]
  return split, wins
