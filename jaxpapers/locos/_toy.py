"""A synthetic literal / non-literal retrieval task for small decoders
[reconstruction].

Symbols: names N*, landmarks L*, cities C*, filler tokens f*. A fixed random
bijection city_of: landmark -> city is the model's "parametric knowledge".

  parametric:  <bos> L7 in C3 <eos>                       (teaches city_of)
  episode:     <bos> f f N2 near L7 f f N5 near L1 f ... | who near L7 ? N2 <eos>   (literal)
               <bos> ... | who visited C3 ? N2 <eos>      (non-literal: needs city_of(L7) = C3)

A needle is "N near L" (3 tokens); the answer is the needle's name. Because the
name comes before its landmark, a head answering the question must read the
name's identity from where it is stored, which is what LOCOS measures (the OV
write onto the answer direction) and what a token-match detector can miss.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import lm
from jaxpapers.locos._scores import Trial


def _eos(tok: ToyTokenizer) -> int:
  """The '<eos>' id of a task's tokenizer (a ToyTask's vocabulary always has
  one)."""
  if tok.eos_id is None:
    raise ValueError("the toy vocabulary needs '<eos>'")
  return tok.eos_id


@dataclasses.dataclass(frozen=True)
class ToyTask:
  """Sizes of the synthetic task.

  Attributes:
    num_names, num_landmarks, num_fillers: symbol counts (cities = landmarks).
    prompt_len: every episode prompt has exactly this many tokens.
    max_needles: 1..max_needles needles per episode (distinct names/landmarks).
    seed: seed of the landmark -> city map.
  """

  num_names: int = 16
  num_landmarks: int = 16
  num_fillers: int = 16
  prompt_len: int = 32
  max_needles: int = 3
  seed: int = 0

  def __post_init__(self):
    for f in (
      "num_names",
      "num_landmarks",
      "num_fillers",
      "prompt_len",
      "max_needles",
    ):
      v = getattr(self, f)
      if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"ToyTask.{f} must be an int >= 1, got {v!r}")
    if self.prompt_len < 6 + 3 * self.max_needles:
      raise ValueError(
        f"prompt_len={self.prompt_len} is too short for {self.max_needles} "
        "needles"
      )
    if self.max_needles > min(self.num_names, self.num_landmarks):
      raise ValueError("max_needles must be <= num_names and num_landmarks")

  @property
  def vocab(self) -> list[str]:
    special = [
      "<pad>",
      "<bos>",
      "<eos>",
      "near",
      "in",
      "who",
      "visited",
      "?",
      "|",
    ]
    return (
      special
      + [f"f{i}" for i in range(self.num_fillers)]
      + [f"N{i}" for i in range(self.num_names)]
      + [f"L{i}" for i in range(self.num_landmarks)]
      + [f"C{i}" for i in range(self.num_landmarks)]
    )

  @property
  def seq_len(self) -> int:
    """Training sequence length: prompt + answer + <eos>."""
    return self.prompt_len + 2

  def city_of(self) -> np.ndarray:
    """The parametric knowledge: a random bijection landmark index -> city
    index.

    Returns:
      int [num_landmarks], a permutation drawn from `seed` (the same on every
      call).
    """
    return np.random.default_rng(self.seed).permutation(self.num_landmarks)

  def tokenizer(self) -> ToyTokenizer:
    """The whitespace tokenizer over `vocab`.

    Returns:
      A new `ToyTokenizer`; ids are positions in `vocab` (<pad> = 0, <bos> = 1, <eos> = 2).
    """
    return ToyTokenizer(self.vocab)


class ToyTokenizer:
  """Whitespace tokenizer over the toy vocabulary (the `jaxpapers.lm` Tokenizer
  protocol).

  Args:
    vocab: the tokens in id order; '<bos>' and '<eos>' give `bos_id` / `eos_id`
      when present, and id 0 is the padding id.
  """

  def __init__(self, vocab: Sequence[str]):
    self.vocab = list(vocab)
    self._ids = {t: i for i, t in enumerate(self.vocab)}
    self.vocab_size = len(self.vocab)
    self.bos_id, self.eos_id, self.pad_id = (
      self._ids.get("<bos>"),
      self._ids.get("<eos>"),
      0,
    )

  def encode(self, text: str, *, add_bos: bool = False) -> list[int]:
    """Ids of the whitespace-separated words of `text`.

    Args:
      text: words of the toy vocabulary separated by whitespace.
      add_bos: prepend `bos_id`.

    Returns:
      One id per word (plus <bos> first when `add_bos`).

    Raises:
      ValueError: a word is not in the vocabulary, or `add_bos` without a <bos>
        token.
    """
    if not isinstance(text, str):
      raise TypeError(f"text must be a str, got {type(text).__name__}")
    unknown = [w for w in text.split() if w not in self._ids]
    if unknown:
      raise ValueError(
        f"text has words outside the toy vocabulary: {unknown[:5]}"
      )
    ids = [self._ids[w] for w in text.split()]
    if not add_bos:
      return ids
    if self.bos_id is None:
      raise ValueError("add_bos needs a '<bos>' token in the vocabulary")
    return [self.bos_id, *ids]

  def decode(self, ids: Sequence[int]) -> str:
    """Space-joined tokens; negative ids (padding) are skipped, ids >=
    vocab_size rejected.

    Args:
      ids: token ids (ints; -1 marks "no token").

    Returns:
      The tokens joined by single spaces.
    """
    ids = [int(i) for i in ids]
    if any(i >= self.vocab_size for i in ids):
      raise ValueError(
        f"ids must be < vocab_size={self.vocab_size}, got {max(ids)}"
      )
    return " ".join(self.vocab[int(i)] for i in ids if int(i) >= 0)

  def token_to_id(self, token: str) -> int | None:
    """Id of one token.

    Args:
      token: a vocabulary entry, e.g. 'N3'.

    Returns:
      Its id, or None when `token` is not in the vocabulary.
    """
    return self._ids.get(token)

  def stop_ids(self, *, newline: bool = True) -> tuple[int, ...]:
    """Ids that end decoding.

    Args:
      newline: accepted for the `jaxpapers.lm.Tokenizer` signature; the toy
        vocabulary has no newline token, so it changes nothing.

    Returns:
      (eos_id,), or () when the vocabulary has no '<eos>'.
    """
    del newline
    return () if self.eos_id is None else (self.eos_id,)


def _id(tok: ToyTokenizer, token: str) -> int:
  """Id of a token the toy task builds; each one is in its vocabulary."""
  i = tok.token_to_id(token)
  if i is None:
    raise ValueError(f"{token!r} is not in the toy vocabulary")
  return i


def _episode(
  task: ToyTask,
  rng: np.random.Generator,
  kind: str,
  city_of: np.ndarray,
  num_needles: int | None = None,
):
  tok = task.tokenizer()
  t = functools.partial(_id, tok)
  n = num_needles or int(rng.integers(1, task.max_needles + 1))
  names = rng.choice(task.num_names, n, replace=False)
  lands = rng.choice(task.num_landmarks, n, replace=False)
  target = int(rng.integers(n))
  question = (
    [t("|"), t("who"), t("near"), t(f"L{lands[target]}"), t("?")]
    if kind == "literal"
    else [
      t("|"),
      t("who"),
      t("visited"),
      t(f"C{city_of[lands[target]]}"),
      t("?"),
    ]
  )
  hay_len = task.prompt_len - 1 - len(question)
  n_fill = hay_len - 3 * n
  fill = list(t(f"f{i}") for i in rng.integers(0, task.num_fillers, n_fill))
  # needle insertion points among the filler tokens (sorted, may coincide)
  cuts = np.sort(rng.integers(0, n_fill + 1, n))
  hay, spans, last = [], [], 0
  for k, c in enumerate(cuts):
    hay += fill[last:c]
    start = 1 + len(hay)
    hay += [t(f"N{names[k]}"), t("near"), t(f"L{lands[k]}")]
    spans.append((start, start + 3))
    last = c
  hay += fill[last:]
  prompt = [t("<bos>")] + hay + question
  assert len(prompt) == task.prompt_len
  return prompt, spans[target], f"N{names[target]}"


def make_toy_trials(
  task: ToyTask,
  rng: np.random.Generator,
  num: int,
  kind: str,
  num_needles: int | None = None,
) -> list[Trial]:
  """`num` episodes of kind 'literal' / 'nonliteral', or 'parametric' recall
  probes.

  Args:
    task: the task sizes.
    rng: numpy generator drawing the episodes.
    num: number of trials (>= 0).
    kind: 'literal' (the question repeats the landmark), 'nonliteral' (it names
      the landmark's city) or 'parametric' ("<bos> L in", answered by the city;
      no context).
    num_needles: needles per episode in [1, task.max_needles]; None draws it per
      episode.

  Returns:
    `num` trials: episode prompts are exactly `task.prompt_len` tokens with the
    target needle's 3 tokens as the needle span; parametric prompts are 3 tokens
    with span (1, 2).
  """
  if kind not in ("literal", "nonliteral", "parametric"):
    raise ValueError(
      f"kind must be 'literal', 'nonliteral' or 'parametric', got {kind!r}"
    )
  if isinstance(num, bool) or not isinstance(num, (int, np.integer)) or num < 0:
    raise ValueError(f"num must be an int >= 0, got {num!r}")
  if num_needles is not None and not 1 <= num_needles <= task.max_needles:
    raise ValueError(
      f"num_needles must be in [1, max_needles={task.max_needles}], "
      f"got {num_needles!r}"
    )
  city_of = task.city_of()
  tok = task.tokenizer()
  out = []
  for _ in range(num):
    if kind == "parametric":
      land = int(rng.integers(task.num_landmarks))
      prompt = tuple(_id(tok, w) for w in ("<bos>", f"L{land}", "in"))
      out.append(Trial(prompt, (1, 2), f"C{city_of[land]}", kind))
    else:
      prompt, span, ans = _episode(task, rng, kind, city_of, num_needles)
      out.append(Trial(tuple(prompt), span, ans, kind))
  return out


def toy_batch(
  task: ToyTask,
  rng: np.random.Generator,
  batch_size: int,
  *,
  parametric_frac: float = 0.25,
  literal_frac: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
  """Training batch of parametric sequences and answered episodes.

  loss_mask marks the positions whose *next* token is supervised (answer and
  <eos> of episodes, city and <eos> of parametric sequences).

  Args:
    task: the task sizes.
    rng: numpy generator drawing the rows.
    batch_size: B (>= 1).
    parametric_frac: probability that a row is a parametric "<bos> L in C <eos>"
      sequence.
    literal_frac: among episodes, the probability of a literal question.

  Returns:
    (tokens, loss_mask): int32 [B, task.seq_len] (0-padded) and float32
    [B, task.seq_len].
  """
  if (
    isinstance(batch_size, bool)
    or not isinstance(batch_size, (int, np.integer))
    or batch_size < 1
  ):
    raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
  for name, v in (
    ("parametric_frac", parametric_frac),
    ("literal_frac", literal_frac),
  ):
    if not 0.0 <= v <= 1.0:
      raise ValueError(f"{name} must be a fraction in [0, 1], got {v!r}")
  tok = task.tokenizer()
  city_of = task.city_of()
  T = task.seq_len
  tokens = np.zeros((batch_size, T), np.int32)
  mask = np.zeros((batch_size, T), np.float32)
  for b in range(batch_size):
    r = rng.random()
    if r < parametric_frac:
      land = int(rng.integers(task.num_landmarks))
      seq = [
        _id(tok, w)
        for w in ("<bos>", f"L{land}", "in", f"C{city_of[land]}", "<eos>")
      ]
      tokens[b, : len(seq)] = seq
      mask[b, 2:4] = 1.0
    else:
      kind = "literal" if rng.random() < literal_frac else "nonliteral"
      prompt, _, ans = _episode(task, rng, kind, city_of)
      seq = prompt + [_id(tok, ans), _id(tok, "<eos>")]
      tokens[b] = seq
      mask[b, len(prompt) - 1 : len(prompt) + 1] = 1.0
  return tokens, mask


def toy_model_config(
  task: ToyTask,
  *,
  d_model: int,
  n_layers: int,
  n_heads: int,
  n_kv_heads: int,
  ffn_dim: int,
  rope_base: float = 1000.0,
) -> lm.LMConfig:
  """The decoder config of a toy model for ``task``: its vocabulary and
  end-of-sequence id.

  Args:
    task: the synthetic task (its tokenizer sets the vocabulary and ``eos``).
    d_model: the residual width (a multiple of ``n_heads``; head_dim = d_model /
      n_heads).
    n_layers: the decoder layers.
    n_heads: the query heads per layer.
    n_kv_heads: the key/value heads per layer (grouped-query attention when
      fewer).
    ffn_dim: the MLP's hidden width.
    rope_base: the rotary embedding's base.

  Returns:
    the ``lm.LMConfig``.
  """
  if d_model % n_heads:
    raise ValueError(
      f"d_model ({d_model}) must be a multiple of n_heads ({n_heads})"
    )
  return lm.LMConfig(
    vocab_size=len(task.vocab),
    d_model=d_model,
    n_layers=n_layers,
    n_heads=n_heads,
    n_kv_heads=n_kv_heads,
    head_dim=d_model // n_heads,
    ffn_dim=ffn_dim,
    rope_base=rope_base,
    eos_ids=(_eos(task.tokenizer()),),
  )


def toy_lm_loss(
  model, tokens: jax.Array, mask: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """Masked next-token cross-entropy and accuracy of a decoder on
  :func:`toy_batch` rows.

  L = sum_{b, t} m[b, t] (-log p(tokens[b, t + 1] | tokens[b, :t + 1])) / sum_{b, t} m[b, t]
  over t < T - 1: ``mask[b, t] = 1`` where position t predicts a target token (the answer and
  ``<eos>`` in :func:`toy_batch`).

  Args:
    model: a decoder, ``model(tokens) -> (logits [B, T, V], ...)`` (``lm.Decoder``).
    tokens: [B, T] int token ids.
    mask: [B, T] float weights of the positions whose next token is a target.

  Returns:
    ``(loss, accuracy)``: float scalars, the mean negative log-likelihood and
    the fraction of argmax predictions equal to the target, both over the masked
    positions.
  """
  if tokens.ndim != 2 or mask.shape != tokens.shape:
    raise ValueError(
      f"tokens and mask must both be [B, T], got {tokens.shape} and "
      f"{mask.shape}"
    )
  logits, _, _ = model(tokens)
  logp = jax.nn.log_softmax(logits[:, :-1])
  nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
  w = mask[:, :-1]
  acc = jnp.argmax(logits[:, :-1], -1) == tokens[:, 1:]
  return (nll * w).sum() / w.sum(), (acc * w).sum() / w.sum()
