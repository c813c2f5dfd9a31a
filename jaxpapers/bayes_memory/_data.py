"""Synthetic dialogues whose user preferences change over time (a
reconstruction).

The paper's four benchmarks are not named in any public material, so the
experiment uses generated dialogues with a known answer key. A dialogue is a
list of user turns: preference statements ("I'm really into jazz these days."),
changes ("Actually, I've gone off jazz; these days it's classical for me."),
same-slot distractors about somebody else ("My brother is obsessed with rock.")
and small talk. Each query either depends on one preference slot (the reference
response names the *current* value) or needs no memory at all (generic
reference).

Also here: :class:`WordTokenizer`, a dependency-free word-level tokenizer with
the ChatML special tokens, used with random-init tiny decoders in tests and the
smoke setting.
"""

from __future__ import annotations

import dataclasses
import re
import zlib

import numpy as np

from jaxpapers.core import validation as V

# slot -> (values, statement templates, query, reference template)
SLOTS: dict[str, dict] = {
  "music": dict(
    values=("jazz", "classical", "rock", "hip-hop", "country", "techno"),
    query="Any concert suggestions for tonight?",
    answer="Sure! A {v} concert downtown would suit you.",
    phrase="{v} music",
  ),
  "diet": dict(
    values=("vegan", "vegetarian", "keto", "pescatarian", "gluten-free"),
    query="Can you suggest a recipe for dinner?",
    answer="Sure! Try this {v} pasta bake.",
    phrase="{v} food",
  ),
  "city": dict(
    values=("Lisbon", "Denver", "Osaka", "Nairobi", "Oslo", "Toronto"),
    query="Where should I look for a weekend brunch place?",
    answer="Sure! Here are brunch spots in {v}.",
    phrase="living in {v}",
  ),
  "pet": dict(
    values=("cat", "dog", "parrot", "rabbit", "hamster"),
    query="What supplies should I buy at the pet shop?",
    answer="Sure! Get food and toys for your {v}.",
    phrase="{v}s",
  ),
  "sport": dict(
    values=("tennis", "cycling", "swimming", "climbing", "running", "yoga"),
    query="What gear should I get for my workouts?",
    answer="Sure! Good {v} gear is a great start.",
    phrase="{v}",
  ),
  "drink": dict(
    values=("coffee", "green tea", "kombucha", "espresso", "hot chocolate"),
    query="What should I order at the cafe?",
    answer="Sure! Order a {v}.",
    phrase="{v}",
  ),
}
SLOT_NAMES = tuple(SLOTS)

_STATEMENT = (
  "I'm really into {p} these days.",
  "Honestly, {p} is my favourite.",
  "I can't get enough of {p}.",
)
_CHANGE = (
  "Actually, I've switched: now it's {p} for me.",
  "Update: I've moved on, I prefer {p} now.",
)
_DISTRACTOR = (
  "My brother is obsessed with {p}.",
  "My colleague keeps talking about {p}.",
)
_FILLER = (
  "The weather was lovely this morning.",
  "I finally finished that long book.",
  "Work has been busy this week.",
  "My train was late again today.",
  "I watered the plants on the balcony.",
  "I need to call my aunt tomorrow.",
)
_FREE = (
  (
    "What does the with statement do in Python?",
    "It runs the block and closes the resource.",
  ),
  ("How many days are in a leap year?", "A leap year has 366 days."),
  ("What is the capital of France?", "The capital of France is Paris."),
  ("How do I boil an egg?", "Boil it in water for about eight minutes."),
)
PLACEBO_TURN = "I said something earlier today."


@dataclasses.dataclass(frozen=True)
class Query:
  """One question about a dialogue.

  Attributes:
    x: the user's current input.
    y: the reference response (names the current value when ``need_memory``).
    y_alt: the same response naming a wrong value (the stale one when the slot
      changed, else a distractor's or another value); None for memory-free
      queries.
    slot: the preference slot, or None.
    gold_turn: index of the turn holding the current value (-1 for memory-free
      queries).
    stale_turns: indices of turns holding a superseded value of the slot.
    distractor_turns: indices of same-slot turns about somebody else.
    need_memory: whether any turn carries evidence for y.
  """

  x: str
  y: str
  y_alt: str | None
  slot: str | None
  gold_turn: int
  stale_turns: tuple[int, ...]
  distractor_turns: tuple[int, ...]
  need_memory: bool


@dataclasses.dataclass(frozen=True)
class Dialogue:
  """User turns (oldest first) and the questions asked after them.

  Attributes:
    turns: the N user turns, oldest first.
    queries: the questions asked after the last turn.
  """

  turns: tuple[str, ...]
  queries: tuple[Query, ...]


def make_preference_dialogues(
  seed: int,
  *,
  n_dialogues: int,
  n_turns: int = 6,
  n_queries: int = 2,
  change_rate: float = 0.5,
  distractor_rate: float = 0.5,
  density: float = 0.6,
  memory_free_rate: float = 0.25,
) -> list[Dialogue]:
  """Generated changing-preference dialogues with gold labels (host-side,
  deterministic).

  For each queried slot a statement with value v0 is placed; with probability
  ``change_rate`` a later change turn sets the current value v1 != v0 (the
  statement becomes stale); with probability ``distractor_rate`` a third value
  is mentioned about somebody else. Remaining turns are statements about other
  slots (probability ``density`` each) or small talk. Turn order is random apart
  from the change following its statement.

  Args:
    seed: integer seed.
    n_dialogues: number of dialogues (>= 1).
    n_turns: user turns per dialogue (>= 3 * n_queries, so every queried slot
      fits).
    n_queries: questions per dialogue (1 <= n_queries <= 6).
    change_rate: probability that a queried slot's value changes later.
    distractor_rate: probability of a same-slot value about somebody else.
    density: probability that each remaining turn is a statement about another
      slot (and that a memory-free query's slot is still mentioned).
    memory_free_rate: probability that a query needs no memory.

  Returns:
    A list of :class:`Dialogue`.

  Raises:
    ValueError: an argument out of range.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n_dialogues = V.check_int(n_dialogues, "n_dialogues", min_value=1)
  n_queries = V.check_int(
    n_queries, "n_queries", min_value=1, max_value=len(SLOTS)
  )
  n_turns = V.check_int(n_turns, "n_turns", min_value=3 * n_queries)
  rates = {}
  for name, v in (
    ("change_rate", change_rate),
    ("distractor_rate", distractor_rate),
    ("density", density),
    ("memory_free_rate", memory_free_rate),
  ):
    rates[name] = V.check_float(v, name, min_value=0.0, max_value=1.0)
  rng = np.random.default_rng(seed)
  return [
    _one_dialogue(rng, n_turns, n_queries, **rates) for _ in range(n_dialogues)
  ]


def _pick(rng, seq):
  return seq[int(rng.integers(len(seq)))]


def _one_dialogue(
  rng,
  n_turns,
  n_queries,
  change_rate,
  distractor_rate,
  density,
  memory_free_rate,
):
  slots = [str(s) for s in rng.permutation(SLOT_NAMES)]
  queried, others = slots[:n_queries], slots[n_queries:]
  free = [bool(rng.random() < memory_free_rate) for _ in queried]
  # events: (kind, slot, value, query index); placed into random turn positions
  events, info = [], []
  for qi, s in enumerate(queried):
    vals = [str(v) for v in rng.permutation(SLOTS[s]["values"])]
    if free[qi]:
      info.append(None)
      # the slot is still mentioned, the query ignores it
      if rng.random() < density:
        events.append(("statement", s, vals[0], None))
      continue
    changed = rng.random() < change_rate
    distract = rng.random() < distractor_rate
    events.append(("statement", s, vals[0], qi))
    if changed:
      events.append(("change", s, vals[1], qi))
    if distract:
      events.append(("distractor", s, vals[2], qi))
    cur = vals[1] if changed else vals[0]
    alt = vals[0] if changed else (vals[2] if distract else vals[3])
    info.append((cur, alt))
  n_other = n_turns - len(events)
  for _ in range(n_other):
    if others and rng.random() < density:
      s = _pick(rng, others)
      events.append(("statement", s, _pick(rng, SLOTS[s]["values"]), None))
    else:
      events.append(("filler", None, None, None))
  order = [int(o) for o in rng.permutation(len(events))]
  # a change must follow its statement: swap positions if needed
  pos = {i: order[i] for i in range(len(events))}
  for i, (kind, _s, _, qi) in enumerate(events):
    if kind == "change":
      j = next(
        k for k, e in enumerate(events) if e[0] == "statement" and e[3] == qi
      )
      if pos[j] > pos[i]:
        pos[i], pos[j] = pos[j], pos[i]
  turns = [""] * len(events)
  used_filler = set()
  for i, (kind, s, v, _) in enumerate(events):
    if kind == "filler":
      choices = [f for f in _FILLER if f not in used_filler] or list(_FILLER)
      text = _pick(rng, choices)
      used_filler.add(text)
    else:
      p = SLOTS[s]["phrase"].format(v=v)
      tmpl = {
        "statement": _STATEMENT,
        "change": _CHANGE,
        "distractor": _DISTRACTOR,
      }[kind]
      text = _pick(rng, tmpl).format(p=p)
    turns[pos[i]] = text
  queries = []
  for qi, s in enumerate(queried):
    if free[qi]:
      x, y = _pick(rng, _FREE)
      queries.append(Query(x, y, None, None, -1, (), (), False))
      continue
    cur, alt = info[qi]
    stale, distr = [], []
    gold = None
    for i, (kind, _s2, v, q2) in enumerate(events):
      if q2 != qi:
        continue
      if kind == "distractor":
        distr.append(int(pos[i]))
      elif v == cur:
        gold = int(pos[i])
      else:
        stale.append(int(pos[i]))
    # every queried slot has a statement or change holding its value
    if gold is None:
      raise AssertionError(f"query {qi} has no turn holding its current value")
    ans = SLOTS[s]["answer"]
    queries.append(
      Query(
        SLOTS[s]["query"],
        ans.format(v=cur),
        ans.format(v=alt),
        s,
        gold,
        tuple(sorted(stale)),
        tuple(sorted(distr)),
        True,
      )
    )
  return Dialogue(tuple(turns), tuple(queries))


class WordTokenizer:
  """A deterministic word-level tokenizer for random-init test models (no files
  needed).

  Words and punctuation hash (CRC32) into ``[n_special, vocab_size)``; the
  ChatML markers ``<|im_start|>``, ``<|im_end|>`` and ``<|endoftext|>`` get ids
  1, 2, 0. Same ``encode`` protocol as ``jaxpapers.lm.Tokenizer``.

  Args:
    vocab_size: total ids (>= 16).
  """

  SPECIAL = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}
  _SPLIT = re.compile(r"(<\|[a-z_]+\|>)|(\w+|[^\w\s]|\n)")

  def __init__(self, vocab_size: int = 512):
    self.vocab_size = V.check_int(vocab_size, "vocab_size", min_value=16)
    self.bos_id = None
    self.eos_id = 2

  def encode(self, text: str, *, add_bos: bool | None = None) -> list[int]:
    """Token ids of ``text`` (``add_bos`` is accepted and ignored: there is no
    BOS).

    Args:
      text: any text; words, single punctuation marks and newlines become one
        token each.
      add_bos: accepted for the ``jaxpapers.lm.Tokenizer`` signature; ignored.

    Returns:
      One id per token: 0-2 for the known ChatML markers, else a CRC32 hash in
      ``[3, vocab_size)``.
    """
    del add_bos
    if not isinstance(text, str):
      raise TypeError(f"text must be a str, got {type(text).__name__}")
    n = len(self.SPECIAL)
    ids = []
    for m in self._SPLIT.finditer(text):
      if m.group(1) is not None and m.group(1) in self.SPECIAL:
        ids.append(self.SPECIAL[m.group(1)])
      else:
        tok = m.group(0)
        ids.append(n + zlib.crc32(tok.encode()) % (self.vocab_size - n))
    return ids
