"""Data of the LeanSearch experiment: the formal corpus, its file splits and their queries.

``load_corpus`` reads the Coq standard library (Debian's ``libcoq-stdlib``, downloaded once into
``cache_dir``) or the three fixture files of the smoke setting; ``informal_texts`` builds the
hierarchical and flat informal text of every declaration; ``split_queries`` splits the files
80/10/10 and picks the single-query and premise queries of one split.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

import numpy as np

import jaxpapers.leansearch as L
from jaxpapers import core

HERE = pathlib.Path(__file__).resolve().parent
VARIANTS = ("hier", "flat")


def _cache_dir(cfg) -> pathlib.Path:
  if cfg.cache_dir:
    return pathlib.Path(cfg.cache_dir).expanduser()
  base = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
  return pathlib.Path(base) / "jaxpapers" / "leansearch"


def load_corpus(cfg) -> tuple[list[L.Declaration], str]:
  """The declarations and a description of where they came from (parse cached as JSON)."""
  if cfg.corpus == "fixture":
    return L.parse_coq_tree(HERE / "fixture"), "fixture (3 hand-written .v files)"
  root = L.fetch_coq_stdlib(_cache_dir(cfg) / "coq")
  tag = "all" if not cfg.subdirs else "+".join(cfg.subdirs)
  records = core.cached_json(
    _cache_dir(cfg) / f"decls_{tag}.json",
    lambda: [dataclasses.asdict(d) for d in L.parse_coq_tree(root, subdirs=cfg.subdirs or None)],
  )
  decls = [L.Declaration(**{**r, "sections": tuple(r["sections"])}) for r in records]
  return decls, f"Coq {L._coq.COQ_PACKAGE} (Debian), theories/{'' if not cfg.subdirs else tag}"


def _split_files(files: list[str], cfg, split: int):
  rng = np.random.default_rng(cfg.seed * 1000 + split)
  order = [files[i] for i in rng.permutation(len(files))]
  n_test = max(1, round(cfg.test_fraction * len(files)))
  n_val = max(1, round(cfg.val_fraction * len(files))) if len(files) >= 3 else 0
  return set(order[n_test + n_val :]), set(order[n_test : n_test + n_val]), set(order[:n_test])


def informal_texts(cfg, decls: list[L.Declaration]) -> dict:
  """``{task: {variant: [N] texts}}``: every declaration's text with hierarchical or flat
  informal text, without its own doc comment (``single``: the doc is the query) or with it
  (``premise``)."""
  texts = {}
  for task, own in (("single", False), ("premise", True)):
    texts[task] = {
      v: [
        L.doc_text(d, t)
        for d, t in zip(
          decls,
          L.informalize_proxy(decls, hierarchical=v == "hier", max_deps=cfg.max_deps, own_doc=own),
          strict=True,
        )
      ]
      for v in VARIANTS
    }
  return texts


def split_queries(cfg, decls: list[L.Declaration], split: int) -> dict:
  """The training and test queries of file split ``split``.

  Returns:
    ``single_train`` / ``single_test``: declaration ids with a usable doc comment (the test ones
    capped at ``max_single_queries``); ``p_train`` / ``p_test``: premise queries (the test ones
    capped at ``max_premise_queries``); ``rng``: the split's generator, after the draws that
    capped the test queries.
  """
  files = sorted({d.file for d in decls})
  train_f, _, test_f = _split_files(files, cfg, split)
  rng = np.random.default_rng(cfg.seed * 7919 + split)

  def docs_ok(d):
    return d.doc and len(L.doc_query(d).split()) >= cfg.min_doc_words

  single_train = [i for i, d in enumerate(decls) if d.file in train_f and docs_ok(d)]
  single_test = [i for i, d in enumerate(decls) if d.file in test_f and docs_ok(d)]
  if len(single_test) > cfg.max_single_queries:
    single_test = sorted(rng.choice(single_test, cfg.max_single_queries, replace=False).tolist())
  pqs = L.premise_queries(decls, min_premises=cfg.min_premises, max_premises=cfg.max_premises)
  p_train = [q for q in pqs if decls[q.decl].file in train_f]
  p_test = [q for q in pqs if decls[q.decl].file in test_f]
  if len(p_test) > cfg.max_premise_queries:
    keep = sorted(rng.choice(len(p_test), cfg.max_premise_queries, replace=False).tolist())
    p_test = [p_test[i] for i in keep]
  if not single_test or not p_test:
    raise ValueError(
      f"split {split}: no test queries ({len(single_test)} single, {len(p_test)} premise); "
      "use a larger corpus or smaller min_doc_words/min_premises"
    )
  return {
    "single_train": single_train,
    "single_test": single_test,
    "p_train": p_train,
    "p_test": p_test,
    "rng": rng,
  }
