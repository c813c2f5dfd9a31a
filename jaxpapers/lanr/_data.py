"""A synthetic multi-hop QA world (spec §5): a knowledge base of one-fact
documents and 1-, 2- and 3-hop questions whose bridge entities appear only in
the retrieved documents, a word-level tokenizer for tiny models, and the
question-as-query BM25 pipeline baseline.

Entities have invented names (so a pretrained LM cannot answer from memory);
people share first and last names (hard negatives with similar names), and every
relation has many facts (hard negatives with the same relation about other
entities).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from jaxpapers.core import validation as V

_FIRST = (
  "Ada Bruno Clara Dario Elsa Felix Greta Hugo Ines Jonas Kira Lucas Mara "
  "Nils Olga Pablo Rosa Sven Tania Umar Vera Willa Xavi Yara Zeno"
).split()
_LAST = (
  "Moreau Castell Varga Lindqvist Okafor Rinaldi Sato Novak Brandt Ferreira "
  "Kowal Duarte Halvorsen Quint Abara"
).split()
_SYL = "ka lo ri ven dor mi sa tel bru an os vi ne gar pol zu fen ra".split()

_TEMPLATES = {
  "born_in": ("{s} was born in {o}.", "The birthplace of {s} is {o}."),
  "works_at": ("{s} works at {o}.", "{o} employs {s}."),
  "located_in": ("{s} is a city in {o}.", "The city of {s} lies in {o}."),
  "hq_in": (
    "{s} has its headquarters in {o}.",
    "The head office of {s} is in {o}.",
  ),
}
_QUESTIONS = {
  ("born_in",): "Where was {p} born?",
  ("works_at",): "Which company does {p} work at?",
  ("born_in", "located_in"): "In which country was {p} born?",
  ("works_at", "hq_in"): (
    "In which city is the head office of the company {p} works at?"
  ),
  ("works_at", "hq_in", "located_in"): (
    "In which country is the head office of the company {p} works at?"
  ),
}


@dataclasses.dataclass(frozen=True)
class KB:
  """The knowledge base: one templated sentence per fact.

  Attributes:
    people, cities, countries, companies: entity names.
    docs: the document texts, [N].
    facts: (relation, subject, object) per document, [N].
    index: {(relation, subject): document id}.
    groups: {entity name: group id} (all 0 unless ``make_kb(..., n_groups >
      1)``).
  """

  people: tuple[str, ...]
  cities: tuple[str, ...]
  countries: tuple[str, ...]
  companies: tuple[str, ...]
  docs: tuple[str, ...]
  facts: tuple[tuple[str, str, str], ...]
  index: dict
  groups: dict = dataclasses.field(default_factory=dict)

  def people_of(self, group: int) -> list[str]:
    """The people of one group, in ``self.people`` order.

    Args:
      group: a group id (people without a group are in group 0).

    Returns:
      The names of the people in that group.
    """
    return [p for p in self.people if self.groups.get(p, 0) == group]


@dataclasses.dataclass(frozen=True)
class QA:
  """A question, its answer and its gold chain of documents (in hop order).

  Attributes:
    question: the question text.
    answer: the answer entity's name.
    gold: the document ids of the chain, in hop order (``hops = len(gold)``).
    person: the person the question starts from.
  """

  question: str
  answer: str
  gold: tuple[int, ...]
  person: str

  @property
  def hops(self) -> int:
    return len(self.gold)


def _names(rng, n, syl, suffix=""):
  out = set()
  while len(out) < n:
    k = rng.integers(2, 4)
    out.add("".join(rng.choice(syl, k)).capitalize() + suffix)
  return sorted(out)


def make_kb(
  seed: int,
  *,
  n_people: int = 200,
  n_cities: int = 50,
  n_countries: int = 15,
  n_companies: int = 40,
  n_groups: int = 1,
) -> KB:
  """A random knowledge base (host-side, numpy; deterministic in ``seed``).

  Facts: born_in(person, city), works_at(person, company), located_in(city,
  country), hq_in(company, city); each fact is one document written with one of
  two paraphrase templates (chosen at random).

  With ``n_groups > 1`` the world is ``n_groups`` disconnected sub-worlds: every
  entity belongs to one group (``KB.groups``), each group has the given numbers
  of people, cities, countries and companies, and every fact links two entities
  of the same group. Questions about the people of one group then share no
  entity (no person, city, country, company, nor document) with questions about
  another: a split by group is a split by entity.

  Args:
    seed: int seed.
    n_people: people per group; ``n_groups * n_people`` at most len(first names)
      × len(last names) = 375.
    n_cities: cities per group (>= 2).
    n_countries: countries per group (>= 2).
    n_companies: companies per group (>= 2).
    n_groups: number of disconnected sub-worlds (>= 1).

  Returns:
    `KB`.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n_g = V.check_int(n_groups, "n_groups", min_value=1)
  n_p = V.check_int(
    n_people, "n_people", min_value=2, max_value=len(_FIRST) * len(_LAST) // n_g
  )
  n_ci = V.check_int(n_cities, "n_cities", min_value=2)
  n_co = V.check_int(n_countries, "n_countries", min_value=2)
  n_cp = V.check_int(n_companies, "n_companies", min_value=2)
  rng = np.random.default_rng(seed)
  full = [f"{f} {last}" for f in _FIRST for last in _LAST]
  people = [
    full[i] for i in sorted(rng.choice(len(full), n_g * n_p, replace=False))
  ]
  cities = _names(rng, n_g * n_ci, _SYL)
  countries = _names(rng, n_g * n_co, _SYL, "ia")
  companies = _names(rng, n_g * n_cp, _SYL, " Corp")
  # group g holds every n_g-th entity of each (sorted or random) list: disjoint
  # groups
  if n_g > 1:
    people = [people[i] for i in rng.permutation(len(people))]
  groups = {}
  for names in (people, cities, countries, companies):
    for i, e in enumerate(names):
      groups[e] = i % n_g
  by = lambda names, g: [e for e in names if groups[e] == g]
  facts = []
  for g in range(n_g):
    ci, co, cp = by(cities, g), by(countries, g), by(companies, g)
    for p in by(people, g):
      facts.append(("born_in", p, ci[rng.integers(n_ci)]))
      facts.append(("works_at", p, cp[rng.integers(n_cp)]))
    for c in ci:
      facts.append(("located_in", c, co[rng.integers(n_co)]))
    for c in cp:
      facts.append(("hq_in", c, ci[rng.integers(n_ci)]))
  order = rng.permutation(len(facts))
  facts = [facts[i] for i in order]
  docs = [_TEMPLATES[r][rng.integers(2)].format(s=s, o=o) for r, s, o in facts]
  index = {(r, s): i for i, (r, s, _) in enumerate(facts)}
  return KB(
    tuple(sorted(people)),
    tuple(cities),
    tuple(countries),
    tuple(companies),
    tuple(docs),
    tuple(facts),
    index,
    groups,
  )


def make_questions(
  kb: KB,
  people: Sequence[str],
  *,
  hops: Sequence[int] = (1, 2, 3),
  n_per_hop: int,
  seed: int,
) -> list[QA]:
  """Questions about ``people`` with their gold document chains (host-side).

  1-hop: "Where was P born?" / "Which company does P work at?"; 2-hop: "In which
  country was P born?" (born_in → located_in) / "In which city is the head
  office of the company P works at?" (works_at → hq_in); 3-hop: "In which
  country is the head office of the company P works at?" (works_at → hq_in →
  located_in). Split train and test by person to avoid leakage.

  Args:
    kb: the `KB`.
    people: the people to ask about (a subset of ``kb.people``).
    hops: hop counts to draw, each in {1, 2, 3}.
    n_per_hop: questions per hop count (<= 2 · len(people) for 1 and 2 hops,
      len(people) for 3).
    seed: int seed.

  Returns:
    list of `QA`, grouped by hop count.
  """
  if not isinstance(kb, KB):
    raise TypeError(f"kb must be a KB (make_kb), got {type(kb).__name__}")
  people = list(people)
  if not people or any(p not in kb.people for p in people):
    raise ValueError("people must be a non-empty list of names from kb.people")
  n = V.check_int(n_per_hop, "n_per_hop", min_value=1)
  seed = V.check_int(seed, "seed", min_value=0)
  rng = np.random.default_rng(seed)
  out = []
  for h in hops:
    h = V.check_int(h, "hops", min_value=1, max_value=3)
    chains = [c for c in _QUESTIONS if len(c) == h]
    pool = [(c, p) for c in chains for p in people]
    if n > len(pool):
      raise ValueError(
        f"n_per_hop={n} exceeds the {len(pool)} {h}-hop questions available"
      )
    for i in rng.choice(len(pool), n, replace=False):
      chain, p = pool[i]
      subj, gold = p, []
      for rel in chain:
        d = kb.index[(rel, subj)]
        gold.append(d)
        subj = kb.facts[d][2]
      out.append(QA(_QUESTIONS[chain].format(p=p), subj, tuple(gold), p))
  return out


_WORD = re.compile(r"\w+|[^\w\s]")


class WordTokenizer:
  """A word-level tokenizer over a fixed vocabulary (for tiny models and tests).

  Ids 0..3 are <pad>, <unk>, [PRED], [DOC]; words are split on
  ``\\w+|[^\\w\\s]``. ``encode(text, add_bos=False)`` matches the
  ``jaxpapers.lm.Tokenizer`` call.

  Args:
    texts: the texts whose words form the vocabulary (sorted after the special
      tokens).
  """

  SPECIAL = ("<pad>", "<unk>", "[PRED]", "[DOC]")

  def __init__(self, texts: Sequence[str]):
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
      raise TypeError("texts must be a non-empty sequence of strings")
    words = sorted({w for t in texts for w in _WORD.findall(t)})
    self.vocab = list(self.SPECIAL) + words
    self._id = {w: i for i, w in enumerate(self.vocab)}
    self.vocab_size = len(self.vocab)

  def token_to_id(self, token: str) -> int:
    """Id of one token.

    Args:
      token: a word or special token.

    Returns:
      Its id, or 1 (``<unk>``) when it is not in the vocabulary.
    """
    return self._id.get(token, 1)

  def encode(self, text: str, add_bos: bool = False) -> list[int]:
    """Ids of the words and punctuation marks of ``text`` (unknown ones map to
    ``<unk>``).

    Args:
      text: any text.
      add_bos: accepted for the ``jaxpapers.lm.Tokenizer`` call; ignored (no
        BOS).

    Returns:
      One id per word or punctuation mark.
    """
    del add_bos
    return [self._id.get(w, 1) for w in _WORD.findall(text)]

  def decode(self, ids: Sequence[int]) -> str:
    """The tokens of ``ids`` joined by single spaces.

    Args:
      ids: token ids in ``[0, vocab_size)``.

    Returns:
      The space-joined tokens (special tokens included).
    """
    return " ".join(self.vocab[i] for i in ids)


def pad_tokens(
  seqs: Sequence[Sequence[int]], *, width: int | None = None, pad_id: int = 0
) -> tuple[np.ndarray, np.ndarray]:
  """Right-pad token lists to a common width.

  Args:
    seqs: B token lists (non-empty list).
    width: W; default the longest list (at least 1). A longer list raises
      ``ValueError``.
    pad_id: the padding id.

  Returns:
    ``(tokens int32 [B, W], lengths int32 [B])``.
  """
  seqs = [list(s) for s in seqs]
  if not seqs:
    raise ValueError("seqs must be a non-empty list of token lists")
  w = (
    max(len(s) for s in seqs)
    if width is None
    else V.check_int(width, "width", min_value=1)
  )
  if any(len(s) > w for s in seqs):
    raise ValueError(f"a sequence is longer than width={w}")
  out = np.full((len(seqs), max(w, 1)), pad_id, np.int32)
  for i, s in enumerate(seqs):
    out[i, : len(s)] = s
  return out, np.asarray([len(s) for s in seqs], np.int32)


def bm25_scores(
  queries: Sequence[str],
  docs: Sequence[str],
  *,
  k1: float = 1.5,
  b: float = 0.75,
) -> np.ndarray:
  r"""Okapi BM25 with the Lucene idf, on lower-cased word tokens (host-side,
  float64).

    score(q, d) = Σ_{w∈q} idf(w) · f(w,d)(k1+1) / (f(w,d) + k1(1 − b + b|d|/avgdl)),
    idf(w) = log(1 + (N − n(w) + 0.5)/(n(w) + 0.5)).

  A word repeated in the query counts once per occurrence.

  Args:
    queries: [B] query texts.
    docs: [N] document texts.
    k1: term-frequency saturation (>= 0).
    b: length normalisation.

  Returns:
    float64 [B, N].
  """
  k1 = V.check_float(k1, "k1", min_value=0.0)
  b = V.check_float(b, "b", min_value=0.0, max_value=1.0)
  if not docs or not queries:
    raise ValueError("queries and docs must be non-empty lists of strings")

  def tok(t):
    if not isinstance(t, str):
      raise TypeError(
        f"queries and docs must hold strings, got {type(t).__name__}"
      )
    return [w.lower() for w in re.findall(r"\w+", t)]

  dt = [Counter(tok(d)) for d in docs]
  dl = np.asarray([sum(c.values()) for c in dt], np.float64)
  avg = dl.mean() if dl.mean() > 0 else 1.0
  df = Counter(w for c in dt for w in c)
  N = len(docs)
  out = np.zeros((len(queries), N))
  for i, q in enumerate(queries):
    for w in tok(q):
      if w not in df:
        continue
      idf = math.log(1 + (N - df[w] + 0.5) / (df[w] + 0.5))
      f = np.asarray([c.get(w, 0) for c in dt], np.float64)
      out[i] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avg))
  return out


def question_as_query_retrieve(
  q_texts: Sequence[str], doc_texts: Sequence[str], *, hops: int
) -> np.ndarray:
  """The pipeline baseline: BM25 with the question text as the only query,
  top-``hops`` documents.

  Args:
    q_texts: [B] questions.
    doc_texts: [N] documents.
    hops: documents retrieved (fixed; 1 <= hops <= N).

  Returns:
    int64 [B, hops] document ids, best first (ties broken by the lower id).
  """
  hops = V.check_int(
    hops, "hops", min_value=1, max_value=max(len(doc_texts), 1)
  )
  s = bm25_scores(q_texts, doc_texts)
  return np.argsort(-s, axis=1, kind="stable")[:, :hops]


def iterative_bm25_retrieve(
  q_texts: Sequence[str],
  doc_texts: Sequence[str],
  doc_bridge: Sequence[str],
  *,
  hops: int,
  keep_question: bool = True,
  k1: float = 1.5,
  b: float = 0.75,
) -> np.ndarray:
  """The iterative lexical pipeline: query, read, re-query with the bridge
  entity.

  Hop 1 queries BM25 with the question; each later hop t queries with the bridge
  entity read from the document retrieved at hop t − 1, after the question when
  ``keep_question``: ``query_t = q ⊕ doc_bridge[d_{t−1}]`` (else
  ``doc_bridge[d_{t−1}]`` alone); every hop takes the best document not
  retrieved yet (ties: the lower id). The "read" step is ``doc_bridge``, one
  string per document (in the experiment, the object entity of the document's
  fact: a perfect reader of the retrieved document, which a real pipeline would
  replace by an LM's extraction).

  Args:
    q_texts: [B] questions.
    doc_texts: [N] documents.
    doc_bridge: [N] the entity each document leads to.
    hops: retrieval calls (fixed; 1 <= hops <= N).
    keep_question: whether the later queries keep the question's words.
    k1: BM25 term-frequency saturation (`bm25_scores`).
    b: BM25 length normalisation.

  Returns:
    int64 [B, hops] document ids in retrieval order.
  """
  if len(doc_bridge) != len(doc_texts):
    raise ValueError(
      f"doc_bridge must hold one string per document ({len(doc_texts)}), "
      f"got {len(doc_bridge)}"
    )
  if not all(isinstance(x, str) for x in doc_bridge):
    raise TypeError("doc_bridge must hold strings")
  hops = V.check_int(
    hops, "hops", min_value=1, max_value=max(len(doc_texts), 1)
  )
  q_texts = list(q_texts)
  out = np.zeros((len(q_texts), hops), np.int64)
  taken = np.zeros((len(q_texts), len(doc_texts)), bool)
  queries: list[str] = q_texts
  for t in range(hops):
    s = bm25_scores(queries, doc_texts, k1=k1, b=b)
    s = np.where(taken, -np.inf, s)
    d = np.argmax(s, axis=1)  # the first maximum: ties go to the lower id
    out[:, t] = d
    taken[np.arange(len(q_texts)), d] = True
    # the bridge entity of each retrieved document
    read = [doc_bridge[int(i)] for i in d]
    queries = [
      f"{q} {e}" if keep_question else e for q, e in zip(q_texts, read)
    ]
  return out


def support_recall(
  retrieved: np.ndarray, gold: Sequence[Sequence[int]]
) -> np.ndarray:
  """1 when every gold document is among the row's retrieved ids (−1 entries
  ignored), else 0.

  Args:
    retrieved: int [B, K] retrieved document ids (-1 entries ignored).
    gold: B sequences of gold document ids.

  Returns:
    float64 [B].
  """
  r = np.asarray(retrieved)
  if r.ndim != 2 or len(gold) != r.shape[0]:
    raise ValueError(
      f"retrieved must be [B, K] with B = len(gold) = {len(gold)}, "
      f"got {r.shape}"
    )
  return np.asarray(
    [float(set(g) <= set(row.tolist())) for row, g in zip(r, gold)]
  )


def gold_prefixes(questions: Sequence[QA], n_docs: int) -> list[dict]:
  """Every gold-prefix context ``c_t`` (the question and its first ``t`` gold
  documents, ``t = 0..hops``) of every question: the contexts the heads are
  trained and probed on.

  Args:
    questions: the questions.
    n_docs: N, the number of documents in the index.

  Returns:
    One dict per context, question by question and ``t`` ascending: ``q``
    (question index), ``docs`` (tuple of the ``t`` gold ids in it), ``t``,
    ``hops``, ``next_doc`` (the next gold id, −1 when ``t = hops``),
    ``in_context`` (bool [N]) and ``sufficient`` (``t = hops``).
  """
  n_docs = V.check_int(n_docs, "n_docs", min_value=1)
  rows = []
  for qi, q in enumerate(questions):
    if not all(0 <= g < n_docs for g in q.gold):
      raise ValueError(
        f"question {qi} has gold ids {q.gold} outside [0, n_docs={n_docs})"
      )
    for t in range(q.hops + 1):
      inc = np.zeros(n_docs, bool)
      inc[list(q.gold[:t])] = True
      rows.append(
        dict(
          q=qi,
          docs=tuple(q.gold[:t]),
          t=t,
          hops=q.hops,
          next_doc=q.gold[t] if t < q.hops else -1,
          in_context=inc,
          sufficient=t == q.hops,
        )
      )
  return rows
