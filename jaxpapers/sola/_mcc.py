"""Minimal Complete Correspondence (MCC) blocks between two tokenizations of one
text.

Reconstruction (the paper's definition is not public; this one coincides with
ALM's unconstrained chunks). Teacher tokens carry character spans ``[a_i, e_i)``
and student tokens ``[a'_j, e'_j)``. A position ``p`` is a *cut* of a
tokenization when some token ends at ``p`` and no token straddles it (every
token has ``e <= p`` or ``a >= p``); byte-level tokens that end inside a
multi-byte character share their end with the next token's start, so they never
give a cut. The common cuts ``B_1 < ... < B_K`` split the text into blocks
``(B_{k-1}, B_k]`` (``B_0 = 0``); block ``k`` owns the teacher tokens ``I_k = {i
: e_i in (B_{k-1}, B_k]}`` and the student tokens ``J_k`` likewise. *Complete*:
both sides cover the same span. *Minimal*: no common cut lies strictly inside a
block.

The aligned prediction pair of block ``k`` is (teacher position ``min I_k``,
student position ``min J_k``) in sequences that start with BOS: the logits there
predict the block's first token of each side from the same text prefix ``[0,
B_{k-1})``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike

from jaxpapers.sola._tokenize import TokenizerProtocol

__all__ = ["MCCAlignment", "AlignedTexts", "mcc_blocks", "align_texts"]


class MCCAlignment(NamedTuple):
  """The MCC partition of one text.

  Attributes:
    bounds: int64 [K + 1], ``B_0 = 0 < B_1 < ... < B_K`` (character offsets; the
      last is the end of the tokenizations' coverage).
    t_block: int64 [n], the block of each teacher token.
    s_block: int64 [m], the block of each student token.
    t_first: int64 [K], ``min I_k``, the first teacher token of each block.
    s_first: int64 [K], ``min J_k``.
  """

  bounds: np.ndarray
  t_block: np.ndarray
  s_block: np.ndarray
  t_first: np.ndarray
  s_first: np.ndarray


def _offsets(x, name: str) -> np.ndarray:
  a = np.asarray(x)
  if a.size == 0:
    raise ValueError(
      f"{name} must hold at least one token span, got shape {a.shape}"
    )
  if a.ndim != 2 or a.shape[1] != 2:
    raise ValueError(
      f"{name} must have shape [n, 2] (start, end) per token, got {a.shape}"
    )
  if not np.issubdtype(a.dtype, np.integer):
    raise TypeError(f"{name} must have an integer dtype, got {a.dtype}")
  a = a.astype(np.int64)
  if np.any(a[:, 0] < 0) or np.any(a[:, 1] < a[:, 0]):
    raise ValueError(f"{name} must have 0 <= start <= end for every token")
  if np.any(np.diff(a[:, 1]) < 0) or np.any(np.diff(a[:, 0]) < 0):
    raise ValueError(
      f"{name} must have non-decreasing starts and ends (tokens in text order)"
    )
  return a


def _cut_marks(a: np.ndarray, base: int, size: int) -> np.ndarray:
  """bool [size]: ``marks[p - base]`` is True where ``p > 0`` is a cut of the
  tokenization.

  A token end is a cut when the next token starts at or after it: starts and
  ends are non-decreasing, so no later token can straddle it either. One pass,
  no sort.
  """
  ends = a[:, 1]
  ok = np.ones(len(a), bool)
  ok[:-1] = a[1:, 0] >= ends[:-1]
  ok &= ends > 0
  marks = np.zeros(size, bool)
  marks[ends[ok] - base] = True
  return marks


def mcc_blocks(t_offsets: ArrayLike, s_offsets: ArrayLike) -> MCCAlignment:
  """The MCC block partition of two tokenizations of the same text (host, linear
  time).

  Both cut sets are marked on boolean arrays over the covered character range
  and intersected elementwise; the block of a token is the number of common cuts
  before its end (a running count over the tokens, no sort or binary search):
  O(n + m + L) for a text span of L characters.

  Args:
    t_offsets: int [n, 2], teacher token character spans ``(start, end)`` in
      text order.
    s_offsets: int [m, 2], student token spans.

  Returns:
    An :class:`MCCAlignment`. When the two coverages end at different offsets (a
    tokenizer that drops trailing whitespace), the tokens after the last common
    cut join the last block.

  Raises:
    ValueError: empty, mis-shaped or unordered spans. TypeError: non-integer
      spans.

  Example:
    >>> mcc_blocks([[0, 1], [1, 3]], [[0, 2], [2, 3]]).bounds
    array([0, 3])
  """
  t = _offsets(t_offsets, "t_offsets")
  s = _offsets(s_offsets, "s_offsets")
  # offsets relative to the first covered character keep the marker arrays
  # text-sized
  base = int(min(t[0, 0], s[0, 0]))
  end = int(max(t[-1, 1], s[-1, 1]))
  size = end - base + 1
  common_mark = _cut_marks(t, base, size) & _cut_marks(s, base, size)
  common = np.flatnonzero(common_mark) + base
  if common.size == 0:
    common = np.array([end], np.int64)
    common_mark[end - base] = True
  elif common[-1] != end:
    common[-1] = end  # the tail after the last common cut joins the last block
  n_blocks = len(common)

  def blocks(ends):
    # the block of a token = the number of common cuts before its end: a running
    # count of the tokens that are the last to end at a common cut (each cut
    # counted once)
    last = np.ones(len(ends), bool)
    last[:-1] = ends[1:] != ends[:-1]
    hit = common_mark[ends - base] & last
    b = np.cumsum(hit) - hit
    np.minimum(b, n_blocks - 1, out=b)  # the tail joins the last block
    return b

  def firsts(block):
    # every block holds at least one token of each side (the one ending at its
    # cut), and blocks are non-decreasing in token order: a block starts where
    # the index changes
    change = np.flatnonzero(block[1:] != block[:-1]) + 1
    return np.concatenate([[0], change]).astype(np.int64)

  t_block = blocks(t[:, 1])
  s_block = blocks(s[:, 1])
  return MCCAlignment(
    bounds=np.concatenate([[0], common]).astype(np.int64),
    t_block=t_block,
    s_block=s_block,
    t_first=firsts(t_block),
    s_first=firsts(s_block),
  )


class AlignedTexts(NamedTuple):
  """Texts tokenised by both tokenizers, truncated at a common cut, padded
  (numpy, host).

  Row ``b`` holds one text. Token arrays start with each tokenizer's BOS;
  position ``p`` of the logits predicts token ``p + 1``.

  Attributes:
    t_tokens: int32 [N, T_t], BOS + teacher ids (0-padded).
    t_len: int32 [N] valid length.
    s_tokens: int32 [N, T_s], BOS + student ids.
    s_len: int32 [N].
    blk_t_pos: int32 [N, K], teacher logit position predicting each block's
      first token.
    blk_s_pos: int32 [N, K], the student's.
    blk_t_id: int32 [N, K], that teacher token's id.
    blk_s_id: int32 [N, K], the student's.
    blk_valid: bool [N, K].
    t_block: int32 [N, T_t], the block of the teacher token predicted at each
      logit position (position ``p`` predicts token ``p + 1``, the text's
      ``p``-th token); -1 past the end.
    s_block: int32 [N, T_s], the student's.
    n_bytes: int32 [N], UTF-8 bytes of the kept text (the bits-per-byte
      denominator).
    texts: the kept texts.
  """

  t_tokens: np.ndarray
  t_len: np.ndarray
  s_tokens: np.ndarray
  s_len: np.ndarray
  blk_t_pos: np.ndarray
  blk_s_pos: np.ndarray
  blk_t_id: np.ndarray
  blk_s_id: np.ndarray
  blk_valid: np.ndarray
  t_block: np.ndarray
  s_block: np.ndarray
  n_bytes: np.ndarray
  texts: tuple


def align_texts(
  texts: Sequence[str],
  teacher_tok: TokenizerProtocol,
  student_tok: TokenizerProtocol,
  *,
  max_len: int,
  max_blocks: int | None = None,
) -> AlignedTexts:
  """Tokenises each text with *its own* tokenizer on each side and aligns them
  by MCC blocks.

  The teacher never sees student ids: both sides re-tokenise the raw text. A
  text longer than ``max_len - 1`` tokens on either side is cut at the last
  common cut that fits both.

  Args:
    texts: the texts (non-empty strings).
    teacher_tok: the teacher's tokenizer (``encode_with_offsets`` and
      ``bos_id``).
    student_tok: the student's tokenizer (the same protocol).
    max_len: sequence length including BOS (>= 2), the same for both sides.
    max_blocks: blocks kept per text (default ``max_len - 1``, which always
      suffices).

  Returns:
    :class:`AlignedTexts`.
  """
  if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 2:
    raise ValueError(f"max_len must be an int >= 2, got {max_len!r}")
  max_blocks = max_len - 1 if max_blocks is None else max_blocks
  if (
    isinstance(max_blocks, bool)
    or not isinstance(max_blocks, int)
    or max_blocks < 1
  ):
    raise ValueError(f"max_blocks must be a positive int, got {max_blocks!r}")
  for name, tok in (("teacher_tok", teacher_tok), ("student_tok", student_tok)):
    if getattr(tok, "bos_id", None) is None or not hasattr(
      tok, "encode_with_offsets"
    ):
      raise TypeError(f"{name} needs encode_with_offsets(text) and a bos_id")
  # checked above
  t_bos, s_bos = cast(int, teacher_tok.bos_id), cast(int, student_tok.bos_id)
  n = len(texts)
  out = dict(
    t_tokens=np.zeros((n, max_len), np.int32),
    s_tokens=np.zeros((n, max_len), np.int32),
    t_len=np.zeros(n, np.int32),
    s_len=np.zeros(n, np.int32),
    blk_t_pos=np.zeros((n, max_blocks), np.int32),
    blk_s_pos=np.zeros((n, max_blocks), np.int32),
    blk_t_id=np.zeros((n, max_blocks), np.int32),
    blk_s_id=np.zeros((n, max_blocks), np.int32),
    blk_valid=np.zeros((n, max_blocks), bool),
    t_block=np.full((n, max_len), -1, np.int32),
    s_block=np.full((n, max_len), -1, np.int32),
    n_bytes=np.zeros(n, np.int32),
  )
  kept = []
  for b, text in enumerate(texts):
    if not isinstance(text, str) or not text:
      raise ValueError(f"texts[{b}] must be a non-empty str")
    t_ids, t_off = teacher_tok.encode_with_offsets(text)
    s_ids, s_off = student_tok.encode_with_offsets(text)
    if not t_ids or not s_ids:
      raise ValueError(f"texts[{b}] gives no tokens on one side")
    al = mcc_blocks(np.asarray(t_off, np.int64), np.asarray(s_off, np.int64))
    # last block (in order) whose last tokens fit both sides, and at most
    # max_blocks blocks exclusive
    t_last = np.searchsorted(
      al.t_block, np.arange(len(al.t_first)), side=("right")
    )
    s_last = np.searchsorted(
      al.s_block, np.arange(len(al.s_first)), side=("right")
    )
    fits = (t_last <= max_len - 1) & (s_last <= max_len - 1)
    nk = int(min(np.argmin(fits) if not fits.all() else len(fits), max_blocks))
    if nk == 0:
      raise ValueError(
        f"texts[{b}]: its first block needs more than max_len - 1 tokens"
      )
    nt, ns = int(t_last[nk - 1]), int(s_last[nk - 1])
    out["t_tokens"][b, 0] = t_bos
    out["t_tokens"][b, 1 : nt + 1] = t_ids[:nt]
    out["s_tokens"][b, 0] = s_bos
    out["s_tokens"][b, 1 : ns + 1] = s_ids[:ns]
    out["t_len"][b], out["s_len"][b] = nt + 1, ns + 1
    out["blk_t_pos"][b, :nk] = al.t_first[:nk]
    out["blk_s_pos"][b, :nk] = al.s_first[:nk]
    out["blk_t_id"][b, :nk] = np.asarray(t_ids)[al.t_first[:nk]]
    out["blk_s_id"][b, :nk] = np.asarray(s_ids)[al.s_first[:nk]]
    out["blk_valid"][b, :nk] = True
    out["t_block"][b, :nt] = al.t_block[:nt]
    out["s_block"][b, :ns] = al.s_block[:ns]
    keep = text[: int(al.bounds[nk])]
    kept.append(keep)
    out["n_bytes"][b] = len(keep.encode("utf-8"))
  return AlignedTexts(**out, texts=tuple(kept))
