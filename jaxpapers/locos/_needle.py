"""Long-context NoLiMa-style needle probes (1k-32k tokens) from offline text
[reconstruction].

NoLiMa (Modarressi et al.) hides one needle sentence in a long haystack and asks
a question that shares no content word with it, so that the answer needs a
latent association (here: landmark -> city). Its haystacks and needles live on a
model hub, so this module builds the same kind of probe offline:

* **haystack**: consecutive sentences of the standard library's
  `pydoc_data.topics` (the Python language reference, about 465k characters;
  `haystack_sentences`), starting at a random sentence, wrapped around at the
  end, with every sentence that mentions a name, a landmark or a city of the
  entity pools removed (so the haystack never answers or names the question's
  city);
* **needle**: one relation sentence ("Actually, {name} lives next to the
  {landmark}.") put between two haystack sentences at a depth d ∈ [0, 1] (the
  fraction of haystack sentences before it);
* **question**: non-literal ("Which character has been to {city}?") or literal
  (repeats the landmark), from `QUESTIONS`, after the haystack, in one ChatML
  user turn; optionally with an answer stem in the assistant turn.

The rendered prompt is filled to at most `context_tokens` tokens of the given
tokenizer (sentences are added while they fit, so prompts land within a sentence
of the target).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from jaxpapers import lm
from jaxpapers.locos._probes import (
  LANDMARKS,
  NAMES,
  QUESTIONS,
  RELATIONS,
  haystack_sentences,
)
from jaxpapers.locos._scores import Trial


def _clean_sentences(names, landmarks) -> list[str]:
  words = {*names, *(x for lc in landmarks for x in lc)}
  pat = re.compile(
    r"\b(" + "|".join(re.escape(w) for w in sorted(words)) + r")\b", re.I
  )
  return [s for s in haystack_sentences() if not pat.search(s)]


def make_needle_probes(
  rng: np.random.Generator,
  *,
  tokenizer: lm.Tokenizer,
  num: int,
  context_tokens: int,
  kind: str = "nonliteral",
  depths: Sequence[float] | None = None,
  names: Sequence[str] = NAMES,
  landmarks: Sequence[tuple[str, str]] = LANDMARKS,
  relations: Sequence[str] = RELATIONS,
  answer_prefix: bool = True,
  system_prompt: bool = False,
) -> list[Trial]:
  """Needle-in-a-haystack probes of about `context_tokens` tokens
  [reconstruction].

  Args:
    rng: numpy generator (draws the entities, templates, haystack start and
      depths).
    tokenizer: a `jaxpapers.lm.Tokenizer` (encode, encode_with_offsets,
      apply_chat_template).
    num: number of probes.
    context_tokens: the prompt length budget (>= 64); each prompt has at most
      this many tokens and is within one haystack sentence of it.
    kind: 'nonliteral' (the question names only the needle landmark's city) or
      'literal' (it repeats the landmark).
    depths: needle depths in [0, 1] used in turn (probe i gets
      depths[i % len(depths)]); None draws each uniformly.
    names: the name pool.
    landmarks: the (landmark, city) pool.
    relations: needle templates with {name} and {landmark} (see `make_probes`).
    answer_prefix: start the assistant turn with the question's answer stem.
    system_prompt: keep the chat template's default system message.

  Returns:
    `num` Trials; `needle_span` covers the needle sentence's tokens and `answer`
    is the needle's name.

  Raises:
    ValueError, TypeError: bad counts, kind, depths, a budget too small for the
      question.
  """
  if not isinstance(rng, np.random.Generator):
    raise TypeError(
      f"rng must be a numpy.random.Generator, got {type(rng).__name__}"
    )
  if kind not in ("literal", "nonliteral"):
    raise ValueError(f"kind must be 'literal' or 'nonliteral', got {kind!r}")
  for name, v, lo in (("num", num, 0), ("context_tokens", context_tokens, 64)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
      raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
  if depths is not None:
    depths = [float(d) for d in depths]
    if not depths or not all(0.0 <= d <= 1.0 for d in depths):
      raise ValueError(
        "depths must be a non-empty sequence of numbers in [0, 1], "
        f"got {depths}"
      )
  if not names or not landmarks:
    raise ValueError("names and landmarks must be non-empty")
  if not relations or any(
    "{name}" not in r or "{landmark}" not in r for r in relations
  ):
    raise ValueError(
      "relations must be non-empty templates containing {name} and {landmark}"
    )
  sents = _clean_sentences(names, landmarks)

  def render(parts, question, stem):
    msg = (
      " ".join(parts) + f"\n\nQuestion: {question} Answer with the name only."
    )
    if system_prompt:
      text = tokenizer.apply_chat_template([{"role": "user", "content": msg}])
    else:
      text = f"<|im_start|>user\n{msg}<|im_end|>\n<|im_start|>assistant\n"
    return text + stem if answer_prefix else text

  out = []
  for i in range(num):
    land, city = landmarks[int(rng.integers(len(landmarks)))]
    name = names[int(rng.integers(len(names)))]
    needle = relations[int(rng.integers(len(relations)))].format(
      name=name, landmark=land
    )
    templates = QUESTIONS[kind]
    question, stem = templates[int(rng.integers(len(templates)))]
    question, stem = (
      question.format(city=city, landmark=land),
      stem.format(city=city, landmark=land),
    )
    depth = float(rng.uniform()) if depths is None else depths[i % len(depths)]
    start = int(rng.integers(len(sents)))
    budget = context_tokens - len(
      tokenizer.encode(render([needle], question, stem))
    )
    if budget < 0:
      raise ValueError(
        f"context_tokens={context_tokens} is too small for the needle and the "
        "question"
      )
    hay, used = [], 0
    # consecutive sentences while their (separately counted) tokens fit
    while True:
      s = sents[(start + len(hay)) % len(sents)]
      n = len(tokenizer.encode(" " + s, add_bos=False))
      if used + n > budget:
        break
      hay.append(s)
      used += n
    # the joined text may tokenise differently: drop sentences until it fits
    while True:
      at = round(depth * len(hay))
      parts = [*hay[:at], needle, *hay[at:]]
      text = render(parts, question, stem)
      ids, spans = tokenizer.encode_with_offsets(text)
      if len(ids) <= context_tokens or not hay:
        break
      hay.pop()
    if tokenizer.bos_id is not None and tokenizer.add_bos_default:
      ids, spans = [tokenizer.bos_id, *ids], [(0, 0), *spans]
    c0 = text.index(needle)
    c1 = c0 + len(needle)
    tok_idx = [j for j, (a, b) in enumerate(spans) if a < c1 and b > c0]
    out.append(Trial(tuple(ids), (tok_idx[0], tok_idx[-1] + 1), name, kind))
  return out
