"""Student tokenizers trained offline with the `tokenizers` package, and token
strings.

Every tokenizer used by `jaxpapers.sola` follows one small protocol (also met by
`jaxpapers.lm.Tokenizer`): ``encode_with_offsets(text) -> (ids, [(start,
end), ...])`` with character offsets into ``text``, ``decode(ids) -> str``,
``vocab_size`` and ``bos_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
  import tokenizers

__all__ = ["BPETokenizer", "train_bpe", "token_strings"]

_STYLES = ("metaspace", "bytelevel")


class TokenizerProtocol(Protocol):
  """The tokenizer protocol of the module docstring."""

  vocab_size: int
  bos_id: int | None

  def encode_with_offsets(
    self, text: str
  ) -> tuple[list[int], list[tuple[int, int]]]: ...

  def decode(self, ids: Sequence[int]) -> str: ...


def _require_tokenizers():
  try:
    import tokenizers
  except ImportError as e:  # pragma: no cover - the lm extra carries it
    raise ImportError(
      "jaxpapers.sola needs the 'tokenizers' package: "
      "pip install 'jaxpapers[sola]'"
    ) from e
  return tokenizers


class BPETokenizer:
  """A `tokenizers` BPE model behind the protocol above (BOS is id 0, ``<unk>``
  id 1).

  Attributes:
    vocab_size: number of ids, special tokens included.
    bos_id: the beginning-of-sequence id prepended by
      `jaxpapers.sola.align_texts`.
    style: ``'metaspace'`` (SentencePiece-like, spaces become "▁" and start a
      token) or ``'bytelevel'`` (GPT-2-like, bytes mapped to printable
      characters).

  Args:
    hf_tokenizer: a trained ``tokenizers.Tokenizer`` whose vocabulary holds
      ``<s>``.
    style: ``'metaspace'`` or ``'bytelevel'``, how it was built (see
      :func:`train_bpe`).
  """

  def __init__(self, hf_tokenizer: tokenizers.Tokenizer, *, style: str):
    self._tok = hf_tokenizer
    self.style = style
    self.vocab_size = hf_tokenizer.get_vocab_size(with_added_tokens=True)
    self.bos_id = hf_tokenizer.token_to_id("<s>")

  def encode(self, text: str) -> list[int]:
    """Token ids of ``text`` (no BOS).

    Args:
      text: any text.

    Returns:
      The ids, in text order.
    """
    return list(self._tok.encode(text, add_special_tokens=False).ids)

  def encode_with_offsets(
    self, text: str
  ) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and the character span ``[start, end)`` of ``text`` each token
    covers.

    Args:
      text: any text.

    Returns:
      ``(ids, spans)``: the ids (no BOS) and one ``(start, end)`` character span
      per id.
    """
    if not isinstance(text, str):
      raise TypeError(f"text must be a str, got {type(text).__name__}")
    enc = self._tok.encode(text, add_special_tokens=False)
    return list(enc.ids), [(start, end) for start, end in enc.offsets]

  def decode(self, ids: Sequence[int]) -> str:
    """Text of ``ids`` (special tokens kept).

    Args:
      ids: token ids.

    Returns:
      The decoded text.
    """
    return self._tok.decode([int(i) for i in ids], skip_special_tokens=False)

  def id_to_token(self, i: int) -> str | None:
    """The vocabulary entry of one id (the raw token, e.g. with "▁" or "Ġ").

    Args:
      i: a token id.

    Returns:
      The token string, or None for an id outside the vocabulary.
    """
    return self._tok.id_to_token(int(i))


def train_bpe(
  texts: Iterable[str],
  *,
  vocab_size: int,
  style: str = "metaspace",
  min_frequency: int = 2,
) -> BPETokenizer:
  """Trains a BPE tokenizer on ``texts`` (offline, deterministic for a given
  input).

  Args:
    texts: training text (e.g. the train split only).
    vocab_size: target vocabulary size including ``<s>`` and ``<unk>`` (>= 64).
    style: ``'metaspace'`` (characters, "▁" for spaces, no dummy prefix, so
      offsets stay exact; unseen characters become ``<unk>``) or ``'bytelevel'``
      (every byte representable; tokens may end inside a multi-byte character,
      which the MCC partition handles).
    min_frequency: minimum pair count for a merge.

  Returns:
    A :class:`BPETokenizer`.
  """
  tk = _require_tokenizers()
  from tokenizers import decoders, models, pre_tokenizers, trainers

  if style not in _STYLES:
    raise ValueError(f"style must be one of {list(_STYLES)}, got {style!r}")
  if (
    isinstance(vocab_size, bool)
    or not isinstance(vocab_size, int)
    or vocab_size < 64
  ):
    raise ValueError(f"vocab_size must be an int >= 64, got {vocab_size!r}")
  texts = list(texts)
  if not texts or not all(isinstance(t, str) for t in texts):
    raise ValueError("texts must be a non-empty sequence of str")
  special = ["<s>", "<unk>"]
  if style == "metaspace":
    tok = tk.Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never")
    tok.decoder = decoders.Metaspace(prepend_scheme="never")
    trainer = trainers.BpeTrainer(
      vocab_size=vocab_size,
      min_frequency=min_frequency,
      special_tokens=special,
      limit_alphabet=200,
    )
  else:
    tok = tk.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
      vocab_size=vocab_size,
      min_frequency=min_frequency,
      special_tokens=special,
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
  tok.train_from_iterator(texts, trainer=trainer)
  return BPETokenizer(tok, style=style)


def token_strings(
  tokenizer: TokenizerProtocol, *, vocab_size: int | None = None
) -> list[str]:
  """The decoded text of every id (spaces restored, partial UTF-8 shown as
  U+FFFD).

  These are the "normalised strings" of the lexical cost and the MinED map:
  SentencePiece's "▁" and byte-level "Ġ" both come back as a space because each
  id is decoded on its own.

  Args:
    tokenizer: any tokenizer with ``decode(ids)`` and ``vocab_size``.
    vocab_size: how many ids (default ``tokenizer.vocab_size``).

  Returns:
    A list of ``vocab_size`` strings.
  """
  v = tokenizer.vocab_size if vocab_size is None else vocab_size
  out = []
  for i in range(int(v)):
    try:
      out.append(tokenizer.decode([i]))
    except Exception:
      out.append("")
  return out


def encode_strings(
  strings: Sequence[str], *, max_chars: int = 16
) -> tuple[np.ndarray, np.ndarray]:
  """Padded Unicode code points ``[V, max_chars]`` int32 (-1 pad) and lengths
  ``[V]`` int32."""
  codes = np.full((len(strings), max_chars), -1, np.int32)
  lens = np.zeros(len(strings), np.int32)
  for i, s in enumerate(strings):
    c = [ord(ch) for ch in s[:max_chars]]
    codes[i, : len(c)] = c
    lens[i] = len(c)
  return codes, lens
