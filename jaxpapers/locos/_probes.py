"""Offline NoLiMa-style probes for chat models [reconstruction].

NoLiMa's data is not available offline, so probes are generated: a haystack of
sentences from the standard library's `pydoc_data.topics`, one or more needles
relating a name to a landmark (`RELATIONS`, e.g. "Actually, {name} lives next to
the {landmark}.") and a question that either repeats the landmark (literal) or
names only its city (non-literal; the model must know landmark -> city), from
`QUESTIONS`. Parametric-recall controls ask for the city of a landmark with no
context. `split_entities` partitions names and cities so that heads detected on
one half are evaluated on probes that share no entity with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from jaxpapers import lm
from jaxpapers.locos._scores import Trial

NAMES = tuple(
  (
    "Yuki Stuart Mandy Diana Caleb Megan Veronica Gary Oscar Priya Aaron "
    "Abigail Adrian Alice Amber Andre Angela Arthur Barbara Boris Brenda "
    "Bruno Camila Carlos Chloe Clara Colin Daniel Dmitri Edgar Elena Elliot "
    "Emma Felix Fiona Frank Gloria Grace Hannah Harold Hector Helen Hugo Ian "
    "Irene Isaac Ivan Jack Jasmine Javier Julia Karen Kevin Laura Leon Linda "
    "Lucas Maria Martin Nadia Nathan Nina Olga Oliver Pablo Paula Peter "
    "Rachel Rafael Rita Robert Rosa Samuel Sara Simon Sofia Steven Tanya "
    "Thomas Tina Victor Walter Wendy Xavier Zoe Bianca Derek Ingrid Kenji "
    "Lars Mei Omar Quentin Ravi Sven Ursula Vera Wanda Yusuf Zara"
  ).split()
)
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
  ("Louvre", "Paris"),
  ("Tower of London", "London"),
  ("Buckingham Palace", "London"),
  ("Trevi Fountain", "Rome"),
  ("Vatican Museums", "Rome"),
  ("Leaning Tower", "Pisa"),
  ("Rialto Bridge", "Venice"),
  ("Duomo", "Florence"),
  ("Prado Museum", "Madrid"),
  ("Alhambra", "Granada"),
  ("Empire State Building", "New York"),
  ("Central Park", "New York"),
  ("White House", "Washington"),
  ("Lincoln Memorial", "Washington"),
  ("Hollywood Sign", "Los Angeles"),
  ("Willis Tower", "Chicago"),
  ("Alamo", "San Antonio"),
  ("Red Square", "Moscow"),
  ("Hermitage Museum", "Saint Petersburg"),
  ("Charles Bridge", "Prague"),
  ("Atomium", "Brussels"),
  ("Little Mermaid statue", "Copenhagen"),
  ("Rijksmuseum", "Amsterdam"),
  ("Tokyo Tower", "Tokyo"),
  ("Shibuya Crossing", "Tokyo"),
  ("Petronas Towers", "Kuala Lumpur"),
  ("Marina Bay Sands", "Singapore"),
  ("Gateway of India", "Mumbai"),
  ("Taj Mahal", "Agra"),
  ("Christ the Redeemer", "Rio de Janeiro"),
  ("Blue Mosque", "Istanbul"),
  ("Wailing Wall", "Jerusalem"),
  ("Pyramids of Giza", "Cairo"),
  ("Table Mountain", "Cape Town"),
  ("Brooklyn Bridge", "New York"),
  ("Reichstag", "Berlin"),
  ("Arc de Triomphe", "Paris"),
  ("Notre Dame Cathedral", "Paris"),
  ("Tiananmen Square", "Beijing"),
  ("Oriental Pearl Tower", "Shanghai"),
  ("Harbour Bridge", "Sydney"),
  ("Parthenon", "Athens"),
  ("Westminster Abbey", "London"),
  ("Pantheon", "Rome"),
  ("Schönbrunn Palace", "Vienna"),
)
# entities of the solved examples that few-shot prompts put before a probe
# ("shots"): no name, landmark or city of these pools occurs in NAMES /
# LANDMARKS, so an example never names a probe's answer or its city
SHOT_NAMES = tuple(
  (
    "Beatrice Desmond Fabian Henrietta Imogen Jonas Klaus Lorenzo Matilda "
    "Norbert Ophelia Phoebe Reuben Sebastian Theodora Winston"
  ).split()
)
SHOT_LANDMARKS = (
  ("Liberty Bell", "Philadelphia"),
  ("Gateway Arch", "St. Louis"),
  ("Fenway Park", "Boston"),
  ("Belem Tower", "Lisbon"),
  ("Casa Rosada", "Buenos Aires"),
  ("Vasa Museum", "Stockholm"),
  ("Grand Palace", "Bangkok"),
  ("Fushimi Inari Shrine", "Kyoto"),
)
PROMPT_FORMATS = ("chat", "completion")
# needle templates: how a character relates to a landmark (the relation never
# names the city)
RELATIONS = (
  "Actually, {name} lives next to the {landmark}.",
  "By the way, {name} works right beside the {landmark}.",
  "In fact, {name} has an apartment facing the {landmark}.",
  "Incidentally, {name} once had lunch beside the {landmark}.",
  "As it happens, {name} took a photo in front of the {landmark}.",
)
# non-literal questions name only the city; literal ones repeat the landmark
QUESTIONS = {
  "nonliteral": (
    (
      "Which character has been to {city}?",
      "The character who has been to {city} is",
    ),
    ("Who has visited {city}?", "The person who has visited {city} is"),
    ("Which character knows {city}?", "The character who knows {city} is"),
  ),
  "literal": (
    (
      "Which character is connected to the {landmark}?",
      "The character connected to the {landmark} is",
    ),
  ),
}


def split_entities(
  seed: int,
  *,
  names: Sequence[str] = NAMES,
  landmarks: Sequence[tuple[str, str]] = LANDMARKS,
  frac: float = 0.5,
) -> tuple[
  tuple[tuple[str, ...], tuple[tuple[str, str], ...]],
  tuple[tuple[str, ...], tuple[tuple[str, str], ...]],
]:
  """Disjoint (detection, evaluation) entity sets [reconstruction].

  Names are split at random; landmarks are split by *city*, so that no city (the
  non-literal question's only content word) appears in both halves.

  Args:
    seed: seed of the numpy generator drawing both splits.
    names: the name pool (>= 2 names).
    landmarks: (landmark, city) pairs naming >= 2 distinct cities.
    frac: fraction in (0, 1) of the names and of the cities that go to the first
      half (rounded, at least one on each side).

  Returns:
    ((names_a, landmarks_a), (names_b, landmarks_b)); the two halves share no
    name, landmark or city.
  """
  if not 0.0 < frac < 1.0:
    raise ValueError(f"frac must be in (0, 1), got {frac!r}")
  rng = np.random.default_rng(seed)
  names = list(names)
  perm = rng.permutation(len(names))
  cut = max(1, min(len(names) - 1, round(frac * len(names))))
  na = tuple(names[i] for i in perm[:cut])
  nb = tuple(names[i] for i in perm[cut:])
  cities = sorted({c for _, c in landmarks})
  cperm = rng.permutation(len(cities))
  ccut = max(1, min(len(cities) - 1, round(frac * len(cities))))
  ca = {cities[i] for i in cperm[:ccut]}
  la = tuple(x for x in landmarks if x[1] in ca)
  lb = tuple(x for x in landmarks if x[1] not in ca)
  return (na, la), (nb, lb)


_SENTENCES: list[str] | None = None


def haystack_sentences() -> list[str]:
  """Plain sentences from `pydoc_data.topics` (bundled with CPython).

  Returns:
    The sentences of 40-200 characters that start upper-case and hold only
    letters, digits, spaces and plain punctuation, in text order (computed once,
    then cached).
  """
  global _SENTENCES
  if _SENTENCES is None:
    from pydoc_data import topics

    text = " ".join(topics.topics.values())
    sents = re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text))
    _SENTENCES = [
      s
      for s in sents
      if 40 <= len(s) <= 200
      and re.fullmatch(r"[A-Za-z0-9 ,;:()'\"\-.!?]+", s)
      and s[0].isupper()
    ]
  return _SENTENCES


def _render(
  tokenizer, turns, *, system_prompt: bool, prompt_format: str
) -> str:
  """Text of solved examples and the probe: `turns` = [(user, answer), ...,
  (user, stem)].

  'chat': one user turn and one assistant turn per example, then the probe's
  user turn and the start of the assistant turn with the stem ('' for none): the
  tokenizer's template with `system_prompt`, else ChatML turns without a system
  message. 'completion' (for pretrained models): plain text, each item
  "{context}\n\nQuestion: {question}\nAnswer: {answer}" with a blank line
  between items; the probe's item ends "Answer:" or "Answer: {stem}".
  """
  *solved, (last, stem) = turns
  if prompt_format == "completion":
    items = [f"{u}\nAnswer: {a}\n\n" for u, a in solved]
    return "".join(items) + f"{last}\nAnswer:" + (f" {stem}" if stem else "")
  if system_prompt:
    msgs = []
    for u, a in solved:
      msgs += [
        {"role": "user", "content": u},
        {"role": "assistant", "content": a},
      ]
    return (
      tokenizer.apply_chat_template([*msgs, {"role": "user", "content": last}])
      + stem
    )
  text = "".join(
    f"<|im_start|>user\n{u}<|im_end|>\n<|im_start|>assistant\n{a}<|im_end|>\n"
    for u, a in solved
  )
  return (
    text + f"<|im_start|>user\n{last}<|im_end|>\n<|im_start|>assistant\n{stem}"
  )


def make_probes(
  rng: np.random.Generator,
  *,
  tokenizer: lm.Tokenizer,
  num: int,
  kind: str,
  filler_sentences: int = 4,
  num_needles: int = 1,
  answer_prefix: bool = True,
  landmarks: Sequence[tuple[str, str]] = LANDMARKS,
  names: Sequence[str] = NAMES,
  relations: Sequence[str] = RELATIONS,
  system_prompt: bool = True,
  prompt_format: str = "chat",
  shots: int = 0,
  shot_seed: int = 0,
) -> list[Trial]:
  """NoLiMa-style probes rendered with the tokenizer's chat template or as plain
  text.

  Args:
    rng: numpy generator.
    tokenizer: a `jaxpapers.lm.Tokenizer` (encode_with_offsets,
      apply_chat_template).
    num: number of probes.
    kind: 'nonliteral' (the question names only the city, e.g. "Which character
      has been to {city}?"; one of `QUESTIONS['nonliteral']`), 'literal' (it
      repeats the landmark) or 'parametric' ("In which city is the {landmark}?",
      no context; empty needle span).
    filler_sentences: haystack sentences around the needles.
    num_needles: needles per probe (distinct names and landmarks); the question
      targets one of them.
    answer_prefix: start the assistant turn with a sentence stem ("The character
      who has been to Paris is"), so that a small model answers in its first
      tokens instead of rambling [reconstruction; NoLiMa asks the question
      only].
    landmarks: the (landmark, city) pool.
    names: the name pool.
    relations: needle templates with {name} and {landmark}; one drawn per
      needle.
    system_prompt: keep the chat template's default system message; False
      renders the ChatML turns without it (shorter prompts) [reconstruction].
      Chat format only.
    prompt_format: 'chat' (user / assistant turns) or 'completion' (plain text
      with "Question:" / "Answer:" lines, for pretrained models)
      [reconstruction].
    shots: solved examples of the same task before each probe (few-shot
      prompting of a pretrained model) [reconstruction]: each has its own
      haystack, one needle and a non-literal question over `SHOT_NAMES` /
      `SHOT_LANDMARKS` (disjoint from `NAMES` / `LANDMARKS`), answered with the
      stem and the name ("The character who has been to Boston is Jonas.") when
      `answer_prefix`, else with the name ("Jonas.").
    shot_seed: seed of the examples' own generator, so that `rng` draws the same
      probe items whatever `shots` is.

  Returns:
    Trials whose needle span covers the target needle's tokens.
  """
  if kind not in ("literal", "nonliteral", "parametric"):
    raise ValueError(
      f"kind must be 'literal', 'nonliteral' or 'parametric', got {kind!r}"
    )
  if not isinstance(rng, np.random.Generator):
    raise TypeError(
      f"rng must be a numpy.random.Generator, got {type(rng).__name__}"
    )
  if prompt_format not in PROMPT_FORMATS:
    raise ValueError(
      f"prompt_format must be one of {PROMPT_FORMATS}, got {prompt_format!r}"
    )
  for name, v, lo in (
    ("num", num, 0),
    ("filler_sentences", filler_sentences, 0),
    ("num_needles", num_needles, 1),
    ("shots", shots, 0),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
      raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
  if shots and kind == "parametric":
    raise ValueError(
      "shots must be 0 for kind='parametric' (no context to solve)"
    )
  if num_needles > min(len(landmarks), len(names)):
    raise ValueError(
      f"num_needles must be <= {min(len(landmarks), len(names))} (distinct "
      f"names and landmarks), got {num_needles}"
    )
  if kind != "parametric" and len({c for _, c in landmarks}) < num_needles:
    raise ValueError(
      f"num_needles={num_needles} needs that many distinct cities in landmarks"
    )
  if not relations or any(
    "{name}" not in r or "{landmark}" not in r for r in relations
  ):
    raise ValueError(
      "relations must be non-empty templates containing {name} and {landmark}"
    )
  sents = haystack_sentences()
  srng = np.random.default_rng(shot_seed)

  def context(hay, slots, needles):
    """Haystack sentences with the needles at the given slots (in order)."""
    parts, k = [], 0
    for i in range(filler_sentences + 1):
      while k < len(needles) and slots[k] == i:
        parts.append(needles[k])
        k += 1
      if i < filler_sentences:
        parts.append(hay[i])
    return " ".join(parts)

  def solved_example():
    land, city = SHOT_LANDMARKS[int(srng.integers(len(SHOT_LANDMARKS)))]
    who = SHOT_NAMES[int(srng.integers(len(SHOT_NAMES)))]
    rel = relations[int(srng.integers(len(relations)))]
    question, stem = QUESTIONS["nonliteral"][
      int(srng.integers(len(QUESTIONS["nonliteral"])))
    ]
    hay = [sents[i] for i in srng.integers(0, len(sents), filler_sentences)]
    slots = np.sort(srng.integers(0, filler_sentences + 1, 1))
    ctx = context(hay, slots, [rel.format(name=who, landmark=land)])
    user = (
      f"{ctx}\n\nQuestion: {question.format(city=city)} Answer with the name "
      "only."
    )
    answer = f"{stem.format(city=city)} {who}." if answer_prefix else f"{who}."
    return user, answer

  out = []
  for _ in range(num):
    while True:  # distinct cities, so a non-literal question has one answer
      li = rng.choice(len(landmarks), num_needles, replace=False)
      if len({landmarks[i][1] for i in li}) == num_needles:
        break
    ni = rng.choice(len(names), num_needles, replace=False)
    target = int(rng.integers(num_needles))
    land, city = landmarks[li[target]]
    if kind == "parametric":
      msg = f"In which city is the {land}? Answer with the city name only."
      stem = f"The {land} is in the city of" if answer_prefix else ""
      text = _render(
        tokenizer,
        [(msg, stem)],
        system_prompt=system_prompt,
        prompt_format=prompt_format,
      )
      out.append(Trial(tuple(tokenizer.encode(text)), (0, 0), city, kind))
      continue
    # the draws in this order (haystack, relations, slots, question) keep the
    # items of earlier versions for the same rng
    hay = [sents[i] for i in rng.integers(0, len(sents), filler_sentences)]
    rel = [
      relations[int(i)] for i in rng.integers(0, len(relations), num_needles)
    ]
    needles = [
      r.format(name=names[n], landmark=landmarks[l][0])
      for r, n, l in zip(rel, ni, li)
    ]
    slots = np.sort(rng.integers(0, filler_sentences + 1, num_needles))
    ctx = context(hay, slots, needles)
    templates = QUESTIONS[kind]
    question, stem = templates[int(rng.integers(len(templates)))]
    question, stem = (
      x.format(city=city, landmark=land) for x in (question, stem)
    )
    turns = [solved_example() for _ in range(shots)]
    turns.append(
      (
        f"{ctx}\n\nQuestion: {question} Answer with the name only.",
        stem if answer_prefix else "",
      )
    )
    text = _render(
      tokenizer, turns, system_prompt=system_prompt, prompt_format=prompt_format
    )
    ids, spans = tokenizer.encode_with_offsets(text)
    # the probe's context comes after every example
    c0 = text.rindex(needles[target])
    c1 = c0 + len(needles[target])
    tok_idx = [i for i, (a, b) in enumerate(spans) if a < c1 and b > c0]
    lo, hi = tok_idx[0], tok_idx[-1] + 1
    bos = getattr(tokenizer, "bos_id", None)
    if getattr(tokenizer, "add_bos_default", False) and bos is not None:
      # a model trained with BOS (Gemma) gets it here too, as `encode` would add
      # it
      ids, lo, hi = [bos, *ids], lo + 1, hi + 1
    out.append(Trial(tuple(ids), (lo, hi), names[int(ni[target])], kind))
  return out


def parametric_probes(
  tokenizer: lm.Tokenizer,
  landmarks: Sequence[tuple[str, str]] = LANDMARKS,
  *,
  system_prompt: bool = False,
) -> list[Trial]:
  """Parametric-recall controls: the city of each landmark, asked with no
  context.

  One chat turn "In which city is the {landmark}? Answer with the city name
  only." and the start of the answer "The {landmark} is in the city of"
  (rendered as the chat probes of :func:`make_probes` with
  ``prompt_format='chat'``). There is no needle: ablating retrieval heads should
  leave this recall intact.

  Args:
    tokenizer: the model's tokenizer.
    landmarks: ``(landmark, city)`` pairs (default: every landmark of
      :data:`LANDMARKS`).
    system_prompt: render the turn with the tokenizer's own chat template (as
      :func:`make_probes`), else ChatML turns without a system message.

  Returns:
    one :class:`Trial` per landmark: the prompt, an empty needle span (0, 0),
    the city as the answer, kind 'parametric'.

  Raises:
    ValueError: an entry of ``landmarks`` is not a pair of strings.
  """
  bad = [
    x for x in landmarks if not (isinstance(x, (tuple, list)) and len(x) == 2)
  ]
  bad += [
    x
    for x in landmarks
    if x not in bad and not all(isinstance(v, str) for v in x)
  ]
  if bad:
    raise ValueError(
      f"landmarks must be (landmark, city) pairs of str, got {bad[0]!r}"
    )
  out = []
  for land, city in landmarks:
    question = f"In which city is the {land}? Answer with the city name only."
    text = _render(
      tokenizer,
      [(question, f"The {land} is in the city of")],
      system_prompt=system_prompt,
      prompt_format="chat",
    )
    out.append(Trial(tuple(tokenizer.encode(text)), (0, 0), city, "parametric"))
  return out
