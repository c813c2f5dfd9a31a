"""Offline NoLiMa-style probes for chat models [reconstruction].

NoLiMa's data is not available offline, so probes are generated: a haystack of
sentences from the standard library's `pydoc_data.topics`, one or more needles
"Actually, {name} lives next to the {landmark}." and a question that either
repeats the landmark (literal) or names only its city (non-literal; the model
must know landmark -> city). Parametric-recall controls ask for the city of a
landmark with no context.
"""

from __future__ import annotations

import re

import numpy as np

from jaxpapers.locos._scores import Trial

NAMES = ("Yuki", "Stuart", "Mandy", "Diana", "Caleb", "Megan", "Veronica", "Gary", "Oscar", "Priya")
LANDMARKS = (
  ("Eiffel Tower", "Paris"),
  ("Colosseum", "Rome"),
  ("Big Ben", "London"),
  ("Statue of Liberty", "New York"),
  ("Brandenburg Gate", "Berlin"),
  ("Sagrada Familia", "Barcelona"),
  ("Kremlin", "Moscow"),
  ("Golden Gate Bridge", "San Francisco"),
  ("Acropolis", "Athens"),
  ("Sydney Opera House", "Sydney"),
  ("Space Needle", "Seattle"),
  ("Burj Khalifa", "Dubai"),
  ("Forbidden City", "Beijing"),
  ("CN Tower", "Toronto"),
  ("Hagia Sophia", "Istanbul"),
)

_SENTENCES: list[str] | None = None


def haystack_sentences() -> list[str]:
  """Plain sentences from `pydoc_data.topics` (bundled with CPython)."""
  global _SENTENCES
  if _SENTENCES is None:
    from pydoc_data import topics

    text = " ".join(topics.topics.values())
    sents = re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text))
    _SENTENCES = [
      s
      for s in sents
      if 40 <= len(s) <= 200 and re.fullmatch(r"[A-Za-z0-9 ,;:()'\"\-.!?]+", s) and s[0].isupper()
    ]
  return _SENTENCES


def make_probes(
  rng: np.random.Generator,
  *,
  tokenizer,
  num: int,
  kind: str,
  filler_sentences: int = 4,
  num_needles: int = 1,
  answer_prefix: bool = True,
  landmarks=LANDMARKS,
  names=NAMES,
) -> list[Trial]:
  """NoLiMa-style probes rendered with the tokenizer's chat template.

  Args:
    rng: numpy generator.
    tokenizer: a `jaxpapers.lm.Tokenizer` (encode_with_offsets, apply_chat_template).
    num: number of probes.
    kind: 'nonliteral' ("Which character has been to {city}?"), 'literal'
      ("Which character lives next to the {landmark}?") or 'parametric'
      ("In which city is the {landmark}?", no context; the needle span is empty).
    filler_sentences: haystack sentences around the needles.
    num_needles: needles per probe (distinct names and landmarks); the question
      targets one of them.
    answer_prefix: start the assistant turn with a sentence stem ("The character
      who has been to Paris is"), so that a small model answers in its first
      tokens instead of rambling [reconstruction; NoLiMa asks the question only].

  Returns:
    Trials whose needle span covers the target needle's tokens.
  """
  if kind not in ("literal", "nonliteral", "parametric"):
    raise ValueError(f"kind must be 'literal', 'nonliteral' or 'parametric', got {kind!r}")
  if not isinstance(rng, np.random.Generator):
    raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
  for name, v, lo in (
    ("num", num, 0),
    ("filler_sentences", filler_sentences, 0),
    ("num_needles", num_needles, 1),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
      raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
  if num_needles > min(len(landmarks), len(names)):
    raise ValueError(
      f"num_needles must be <= {min(len(landmarks), len(names))} (distinct names "
      f"and landmarks), got {num_needles}"
    )
  sents = haystack_sentences()
  out = []
  for _ in range(num):
    li = rng.choice(len(landmarks), num_needles, replace=False)
    ni = rng.choice(len(names), num_needles, replace=False)
    target = int(rng.integers(num_needles))
    land, city = landmarks[li[target]]
    if kind == "parametric":
      msg = f"In which city is the {land}? Answer with the city name only."
      text = tokenizer.apply_chat_template([{"role": "user", "content": msg}])
      if answer_prefix:
        text += f"The {land} is in the city of"
      out.append(Trial(tokenizer.encode(text), (0, 0), city, kind))
      continue
    hay = [sents[i] for i in rng.integers(0, len(sents), filler_sentences)]
    needles = [f"Actually, {names[n]} lives next to the {landmarks[l][0]}." for n, l in zip(ni, li)]
    slots = np.sort(rng.integers(0, filler_sentences + 1, num_needles))
    parts, k = [], 0
    for i in range(filler_sentences + 1):
      while k < num_needles and slots[k] == i:
        parts.append(needles[k])
        k += 1
      if i < filler_sentences:
        parts.append(hay[i])
    question = (
      f"Which character has been to {city}?"
      if kind == "nonliteral"
      else f"Which character lives next to the {land}?"
    )
    msg = " ".join(parts) + f"\n\nQuestion: {question} Answer with the name only."
    text = tokenizer.apply_chat_template([{"role": "user", "content": msg}])
    if answer_prefix:
      text += (
        f"The character who has been to {city} is"
        if kind == "nonliteral"
        else f"The character who lives next to the {land} is"
      )
    ids, spans = tokenizer.encode_with_offsets(text)
    c0 = text.index(needles[target])
    c1 = c0 + len(needles[target])
    tok_idx = [i for i, (a, b) in enumerate(spans) if a < c1 and b > c0]
    out.append(Trial(ids, (tok_idx[0], tok_idx[-1] + 1), names[ni[target]], kind))
  return out
