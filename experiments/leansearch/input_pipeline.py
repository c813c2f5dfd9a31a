"""Data of the LeanSearch experiment: the formal corpus, its file splits and
their queries.

``load_corpus`` reads the Coq standard library (Debian's ``libcoq-stdlib``,
downloaded once into ``cache_dir``) or the three fixture files of the smoke
setting; ``informal_texts`` builds the hierarchical and flat informal text of
every declaration; ``split_queries`` splits the files 80/10/10 and picks the
single-query and premise queries of one split.
"""

from __future__ import annotations

import pathlib

import numpy as np

import jaxpapers.leansearch as L

HERE = pathlib.Path(__file__).resolve().parent
VARIANTS = ("hier", "flat")


def load_corpus(cfg) -> tuple[list[L.Declaration], str]:
  """The declarations (:func:`jaxpapers.leansearch.load_coq_stdlib`, or the
  fixture files) and a description of where they came from."""
  if cfg.corpus == "fixture":
    return L.parse_coq_tree(
      HERE / "fixture"
    ), "fixture (3 hand-written .v files)"
  decls = L.load_coq_stdlib(cfg.cache_dir or None, subdirs=cfg.subdirs)
  return (
    decls,
    f"Coq {L.COQ_PACKAGE} (Debian), theories/{'+'.join(cfg.subdirs)}",
  )


def informal_texts(cfg, decls: list[L.Declaration]) -> dict:
  """``{task: {variant: [N] texts}}``: every declaration's text with
  hierarchical or flat informal text, without its own doc comment (``single``:
  the doc is the query) or with it (``premise``)."""

  def texts(variant: str, own: bool) -> list[str]:
    kw = dict(
      hierarchical=variant == "hier", max_deps=cfg.max_deps, own_doc=own
    )
    return [
      L.doc_text(d, t)
      for d, t in zip(decls, L.informalize_proxy(decls, **kw), strict=True)
    ]

  tasks = (("single", False), ("premise", True))
  return {task: {v: texts(v, own) for v in VARIANTS} for task, own in tasks}


def split_queries(cfg, decls: list[L.Declaration], split: int) -> dict:
  """The training and test queries of file split ``split``
  (:func:`jaxpapers.leansearch.split_queries` on the files of
  :func:`jaxpapers.leansearch.file_split`), and ``rng``: the split's generator,
  after the draws that capped the test queries."""
  files = sorted({d.file for d in decls})
  fractions = dict(
    test_fraction=cfg.test_fraction, val_fraction=cfg.val_fraction
  )
  train_f, _, test_f = L.file_split(
    files, np.random.default_rng(cfg.seed * 1000 + split), **fractions
  )
  rng = np.random.default_rng(cfg.seed * 7919 + split)
  caps = dict(
    max_single=cfg.max_single_queries, max_premise=cfg.max_premise_queries
  )
  limits = {
    n: cfg[n] for n in ("min_doc_words", "min_premises", "max_premises")
  }
  return {
    **L.split_queries(decls, train_f, test_f, rng, **caps, **limits),
    "rng": rng,
  }
