"""Controlled parallel pools from CLDR facts (host side, seeded NumPy).

MLAIRE evaluates on pools that hold the *same* relevant content in several
languages, so that finding the content and preferring the query-language version
can be measured apart. The paper builds them from existing multilingual
benchmarks; offline we build them from CLDR (the Unicode Common Locale Data
Repository, via ``babel``): a content unit is one fact about one territory ("the
official currency of France is the euro", "the official language of Brazil is
Portuguese"), rendered from hand-written templates with CLDR's localised
territory, currency and language names in every language. This is a **labelled
proxy** for the paper's pools, not its data.

Pool variants (reconstruction of the protocol outline):

* ``'A'`` full parallel: the query's unit in every language, ``n_hard`` other
  units of the same fact type in every language (hard negatives: same template,
  other territory), and ``n_easy`` distinct passages of the other fact type
  (easy distractors);
* ``'B'`` no query-language positive: ``'A'`` without ``p*`` (pure cross-lingual
  retrieval; LPR is undefined);
* ``'C'`` query-language traps: ``'A'`` plus ``n_trap`` further hard negatives
  in the query language only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from jaxpapers.core import validation as V

FACT_TYPES = ("currency", "official_language")
VARIANTS = ("A", "B", "C")
# Pseudo-territories and groupings without a country's facts.
_SKIP = {"EU", "EZ", "UN", "QO", "ZZ", "XA", "XB", "AQ"}

# (passage paraphrases, query paraphrases) per language and fact type; {t}
# territory, {v} value.
TEMPLATES: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
  "en": {
    "currency": (
      (
        "The official currency of {t} is the {v}.",
        "In {t}, people pay with the {v}.",
      ),
      (
        "What is the official currency of {t}?",
        "Which currency is used in {t}?",
      ),
    ),
    "official_language": (
      (
        "The official language of {t} is {v}.",
        "In {t}, {v} is an official language.",
      ),
      (
        "What is the official language of {t}?",
        "Which language is official in {t}?",
      ),
    ),
  },
  "de": {
    "currency": (
      (
        "Die offizielle Währung von {t} ist {v}.",
        "In {t} bezahlt man mit {v}.",
      ),
      (
        "Was ist die offizielle Währung von {t}?",
        "Welche Währung wird in {t} verwendet?",
      ),
    ),
    "official_language": (
      ("Die Amtssprache von {t} ist {v}.", "In {t} ist {v} eine Amtssprache."),
      (
        "Was ist die Amtssprache von {t}?",
        "Welche Sprache ist in {t} Amtssprache?",
      ),
    ),
  },
  "fr": {
    "currency": (
      (
        "La monnaie officielle de {t} est : {v}.",
        "Dans le pays {t}, on paie en {v}.",
      ),
      (
        "Quelle est la monnaie officielle de {t} ?",
        "Quelle monnaie utilise-t-on dans le pays {t} ?",
      ),
    ),
    "official_language": (
      (
        "La langue officielle de {t} est : {v}.",
        "Dans le pays {t}, la langue officielle est {v}.",
      ),
      (
        "Quelle est la langue officielle de {t} ?",
        "Quelle langue est officielle dans le pays {t} ?",
      ),
    ),
  },
  "es": {
    "currency": (
      ("La moneda oficial de {t} es {v}.", "En {t} se paga con {v}."),
      ("¿Cuál es la moneda oficial de {t}?", "¿Qué moneda se usa en {t}?"),
    ),
    "official_language": (
      ("El idioma oficial de {t} es {v}.", "En {t}, {v} es un idioma oficial."),
      ("¿Cuál es el idioma oficial de {t}?", "¿Qué idioma es oficial en {t}?"),
    ),
  },
  "it": {
    "currency": (
      ("La valuta ufficiale di {t} è {v}.", "In {t} si paga con {v}."),
      ("Qual è la valuta ufficiale di {t}?", "Quale valuta si usa in {t}?"),
    ),
    "official_language": (
      (
        "La lingua ufficiale di {t} è {v}.",
        "In {t} la lingua ufficiale è {v}.",
      ),
      (
        "Qual è la lingua ufficiale di {t}?",
        "Quale lingua è ufficiale in {t}?",
      ),
    ),
  },
  "pt": {
    "currency": (
      ("A moeda oficial de {t} é {v}.", "Em {t} paga-se com {v}."),
      ("Qual é a moeda oficial de {t}?", "Que moeda se usa em {t}?"),
    ),
    "official_language": (
      ("A língua oficial de {t} é {v}.", "Em {t}, a língua oficial é {v}."),
      ("Qual é a língua oficial de {t}?", "Que língua é oficial em {t}?"),
    ),
  },
}


@dataclasses.dataclass(frozen=True)
class Unit:
  """One content unit: a fact about a territory, with its names in every
  language.

  Attributes:
    fact: ``'currency'`` or ``'official_language'``.
    territory: ISO 3166 code (``'FR'``).
    value: ISO 4217 currency code or language code (``'EUR'``, ``'fr'``).
    names: ``{lang: (territory name, value name)}`` from CLDR.
  """

  fact: str
  territory: str
  value: str
  names: Mapping[str, tuple[str, str]]


@dataclasses.dataclass(frozen=True)
class Corpus:
  """Rendered parallel passages and queries: entry ``u * L + l`` is unit ``u``
  in language ``l``.

  Attributes:
    langs: the ``L`` language codes.
    units: the ``U`` units (content id = position).
    passages, queries: ``U * L`` texts each.
    lang: int32 ``[U * L]`` language id of entry ``i`` (``i % L``).
    content: int32 ``[U * L]`` content id of entry ``i`` (``i // L``).
    fact: int32 ``[U]`` fact-type id of each unit (index into
      :data:`FACT_TYPES`).
  """

  langs: tuple[str, ...]
  units: tuple[Unit, ...]
  passages: tuple[str, ...]
  queries: tuple[str, ...]
  lang: np.ndarray
  content: np.ndarray
  fact: np.ndarray


@dataclasses.dataclass(frozen=True)
class Pools:
  """Padded candidate pools, one row per query.

  Attributes:
    query: int32 ``[Q]`` index of each query into ``Corpus.queries``.
    q_lang, q_content: int32 ``[Q]``.
    doc: int32 ``[Q, P]`` index into ``Corpus.passages`` (-1 on padding).
    doc_lang, doc_content: int32 ``[Q, P]`` (-1 on padding).
    mask: bool ``[Q, P]``.
  """

  query: np.ndarray
  q_lang: np.ndarray
  q_content: np.ndarray
  doc: np.ndarray
  doc_lang: np.ndarray
  doc_content: np.ndarray
  mask: np.ndarray


def _check_langs(langs) -> tuple[str, ...]:
  if isinstance(langs, str) or not isinstance(langs, Sequence) or not langs:
    raise TypeError(
      f"langs must be a non-empty sequence of language codes, got {langs!r}"
    )
  langs = tuple(langs)
  bad = [l for l in langs if l not in TEMPLATES]
  if bad:
    raise ValueError(
      f"langs must be among the templated languages {tuple(TEMPLATES)}, "
      f"got {bad}"
    )
  if len(set(langs)) != len(langs):
    raise ValueError(f"langs must not repeat, got {langs}")
  return langs


def cldr_units(
  langs: Sequence[str], *, fact_types: Sequence[str] = FACT_TYPES
) -> list[Unit]:
  """Every territory fact CLDR can name in all of ``langs``.

  For each two-letter territory: its first current currency
  (``babel.numbers.get_territory_currencies``) and its first official language
  (``babel.languages.get_official_languages``, script/region suffix dropped),
  kept when ``babel.Locale(lang)`` names the territory and the value in every
  language.

  Args:
    langs: language codes among :data:`TEMPLATES` (``'en', 'de', 'fr', 'es',
      'it', 'pt'``).
    fact_types: a subset of :data:`FACT_TYPES`.

  Returns:
    Units sorted by (fact type, territory): deterministic.

  Raises:
    ImportError: ``babel`` is missing (``pip install 'jaxpapers[mlaire]'``).
  """
  langs = _check_langs(langs)
  if (
    isinstance(fact_types, str)
    or not fact_types
    or not set(fact_types) <= set(FACT_TYPES)
  ):
    raise ValueError(
      f"fact_types must be a non-empty subset of {FACT_TYPES}, "
      f"got {fact_types!r}"
    )
  try:
    from babel import Locale
    from babel.languages import get_official_languages
    from babel.numbers import get_territory_currencies
  except ImportError as e:  # pragma: no cover - the extra installs it
    raise ImportError(
      "cldr_units needs babel: pip install 'jaxpapers[mlaire]'"
    ) from e
  locs = {l: Locale.parse(l) for l in langs}
  codes = sorted(
    c
    for c in locs[langs[0]].territories
    if isinstance(c, str)
    and len(c) == 2
    and c.isalpha()
    and c.isupper()
    and c not in _SKIP
  )
  units = []
  for fact in FACT_TYPES:
    if fact not in fact_types:
      continue
    for c in codes:
      if not all(c in L.territories for L in locs.values()):
        continue
      if fact == "currency":
        cur = get_territory_currencies(c)
        value = cur[0] if cur else None
        table = "currencies"
      else:
        off = [o.split("_")[0] for o in get_official_languages(c)]
        value = off[0] if off else None
        table = "languages"
      if value is None or not all(
        value in getattr(L, table) for L in locs.values()
      ):
        continue
      names = {
        l: (L.territories[c], getattr(L, table)[value]) for l, L in locs.items()
      }
      units.append(Unit(fact, c, value, names))
  return units


def render_passages(
  units: Sequence[Unit],
  langs: Sequence[str],
  *,
  templates: Mapping[str, Mapping[str, tuple]] | None = None,
  seed: int = 0,
) -> Corpus:
  """Renders every unit as a passage and a query in every language.

  The paraphrase of a unit's passages is drawn once per unit (seeded) and shared
  by all its languages, so the ``L`` versions are translations of each other;
  the query paraphrase is drawn the same way, independently.

  Args:
    units: from :func:`cldr_units` (each must have names in every language of
      ``langs``).
    langs: language codes.
    templates: ``{lang: {fact: (passage paraphrases, query paraphrases)}}``;
      default :data:`TEMPLATES`.
    seed: paraphrase choice.

  Returns:
    A :class:`Corpus` with ``len(units) * len(langs)`` passages and queries.
  """
  langs = tuple(langs)
  templates = TEMPLATES if templates is None else templates
  if (
    isinstance(langs, str)
    or not langs
    or any(l not in templates for l in langs)
  ):
    raise ValueError(
      f"langs must be a non-empty sequence of keys of templates, got {langs!r}"
    )
  if not units:
    raise ValueError("units must not be empty")
  seed = V.check_int(seed, "seed", min_value=0)
  rng = np.random.default_rng(seed)
  passages, queries = [], []
  for u in units:
    if not isinstance(u, Unit):
      raise TypeError(f"units must hold Unit objects, got {type(u).__name__}")
    missing = [l for l in langs if l not in u.names]
    if missing:
      raise ValueError(f"unit {u.fact}/{u.territory} has no names in {missing}")
    pp = templates[langs[0]][u.fact][0]
    qq = templates[langs[0]][u.fact][1]
    ip, iq = int(rng.integers(len(pp))), int(rng.integers(len(qq)))
    for l in langs:
      t, v = u.names[l]
      ptpl, qtpl = templates[l][u.fact]
      passages.append(ptpl[ip % len(ptpl)].format(t=t, v=v))
      queries.append(qtpl[iq % len(qtpl)].format(t=t, v=v))
  n_l = len(langs)
  idx = np.arange(len(units) * n_l)
  return Corpus(
    langs=langs,
    units=tuple(units),
    passages=tuple(passages),
    queries=tuple(queries),
    lang=(idx % n_l).astype(np.int32),
    content=(idx // n_l).astype(np.int32),
    fact=np.array([FACT_TYPES.index(u.fact) for u in units], np.int32),
  )


def build_pools(
  corpus: Corpus,
  *,
  variant: str = "A",
  n_hard: int = 5,
  n_easy: int = 10,
  n_trap: int = 6,
  p_max: int = 64,
  units: Sequence[int] | None = None,
  seed: int = 0,
) -> Pools:
  """One padded pool per (query unit, query language) (variants in the module
  docstring).

  Hard negatives and traps are drawn from the units of the query's fact type,
  distractors from the other fact type, all from the whole corpus; slots are
  shuffled, then padded.

  Args:
    corpus: from :func:`render_passages`.
    variant: ``'A'``, ``'B'`` or ``'C'``.
    n_hard: hard-negative units (each in every language).
    n_easy: easy distractor passages (distinct passages of the other fact type).
    n_trap: extra query-language hard negatives (variant ``'C'`` only).
    p_max: padded pool size (must hold the largest pool).
    units: content ids that become queries (default: every unit).
    seed: negatives, distractors and slot order.

  Returns:
    :class:`Pools` with ``Q = len(units) * L`` rows.
  """
  if variant not in VARIANTS:
    raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
  n_hard = V.check_int(n_hard, "n_hard", min_value=0)
  n_easy = V.check_int(n_easy, "n_easy", min_value=0)
  n_trap = V.check_int(n_trap, "n_trap", min_value=0)
  p_max = V.check_int(p_max, "p_max", min_value=1)
  seed = V.check_int(seed, "seed", min_value=0)
  n_l, n_u = len(corpus.langs), len(corpus.units)
  unit_ids = np.arange(n_u) if units is None else np.asarray(units, np.int64)
  if (
    unit_ids.ndim != 1
    or unit_ids.size == 0
    or unit_ids.min() < 0
    or unit_ids.max() >= n_u
  ):
    raise ValueError(
      f"units must be a non-empty list of content ids in [0, {n_u})"
    )
  size = (
    n_l * (1 + n_hard)
    + n_easy
    + (n_trap if variant == "C" else 0)
    - (variant == "B")
  )
  if size > p_max:
    raise ValueError(
      f"p_max must be >= the pool size {size} for variant {variant!r}, "
      f"got {p_max}"
    )
  by_fact = [np.flatnonzero(corpus.fact == f) for f in range(len(FACT_TYPES))]
  need = n_hard + (n_trap if variant == "C" else 0)
  rng = np.random.default_rng(seed)
  rows = []
  for u in unit_ids:
    same = by_fact[corpus.fact[u]]
    same = same[same != u]
    other = np.concatenate(
      [by_fact[f] for f in range(len(by_fact)) if f != corpus.fact[u]]
    )
    if same.size < need or other.size * n_l < n_easy:
      raise ValueError(
        f"the corpus has too few units for n_hard + n_trap = {need} negatives "
        f"of one fact type and n_easy = {n_easy} distinct distractors of the "
        "other"
      )
    for l in range(n_l):
      neg = rng.choice(same, need, replace=False)
      hard, trap = neg[:n_hard], neg[n_hard:]
      docs = [
        u * n_l + m for m in range(n_l) if not (variant == "B" and m == l)
      ]
      docs += [h * n_l + m for h in hard for m in range(n_l)]
      docs += [t * n_l + l for t in trap]
      other_passages = (other[:, None] * n_l + np.arange(n_l)).ravel()
      docs += (
        list(rng.choice(other_passages, n_easy, replace=False))
        if n_easy
        else []
      )
      docs = rng.permutation(np.asarray(docs, np.int64))
      rows.append((u * n_l + l, l, u, docs))
  q = len(rows)
  doc = np.full((q, p_max), -1, np.int32)
  for i, (_, _, _, d) in enumerate(rows):
    doc[i, : d.size] = d
  mask = doc >= 0
  return Pools(
    query=np.array([r[0] for r in rows], np.int32),
    q_lang=np.array([r[1] for r in rows], np.int32),
    q_content=np.array([r[2] for r in rows], np.int32),
    doc=doc,
    doc_lang=np.where(mask, corpus.lang[doc], -1).astype(np.int32),
    doc_content=np.where(mask, corpus.content[doc], -1).astype(np.int32),
    mask=mask,
  )


def shared_surface_fraction(corpus: Corpus) -> float:
  """Fraction of units whose territory name is spelled identically in at least
  two languages.

  BM25's apparent cross-lingual ability comes from such shared surface forms
  ("Brasil").

  Args:
    corpus: the :class:`Corpus` (its units and languages).

  Returns:
    The fraction in [0, 1] (comparison ignores case).
  """
  n = 0
  for u in corpus.units:
    names = [u.names[l][0].lower() for l in corpus.langs]
    n += len(set(names)) < len(names)
  return n / len(corpus.units)


def sample_units(
  units: Sequence[Unit], per_fact: int, *, seed: int
) -> list[Unit]:
  """A seeded subset of at most ``per_fact`` units of every fact type, in their
  given order.

  Args:
    units: the content units (e.g. :func:`cldr_units`).
    per_fact: how many units of each fact type of ``FACT_TYPES`` to keep (all if
      fewer).
    seed: seed of the draw (``numpy.random.default_rng``).

  Returns:
    The kept units: per fact type in ``FACT_TYPES`` order, each type's in
    ``units`` order.
  """
  per_fact = V.check_int(per_fact, "per_fact", min_value=0)
  rng = np.random.default_rng(seed)
  keep = []
  for fact in FACT_TYPES:
    idx = [i for i, u in enumerate(units) if u.fact == fact]
    n = min(per_fact, len(idx))
    keep += sorted(rng.choice(idx, n, replace=False).tolist())
  return [units[i] for i in keep]


def trivial_scores(
  pools: Pools, rng: np.random.Generator
) -> dict[str, np.ndarray]:
  """Scores of the trivial retrievers on one set of pools (controls for the
  metrics).

  ``random``: uniform noise; ``lang_only``: query-language passages first,
  random otherwise; ``blind_oracle``: the query's content first in any language,
  random otherwise (noise in ``[0, 0.5)`` breaks ties). The three noise draws
  are taken from ``rng`` in this order.

  Args:
    pools: the candidate pools (:func:`build_pools`).
    rng: the generator the noise is drawn from.

  Returns:
    ``{'random', 'lang_only', 'blind_oracle'}`` -> float32 ``[Q, P]`` scores.
  """
  if not isinstance(rng, np.random.Generator):
    raise TypeError(
      f"rng must be a numpy.random.Generator, got {type(rng).__name__}"
    )
  p = pools
  sem = (p.doc_content == p.q_content[:, None]).astype(np.float32)
  lm = (p.doc_lang == p.q_lang[:, None]).astype(np.float32)
  noise = lambda: rng.random(p.doc.shape).astype(np.float32)
  return {
    "random": noise(),
    "lang_only": lm + 0.5 * noise(),
    "blind_oracle": sem + 0.5 * noise(),
  }
