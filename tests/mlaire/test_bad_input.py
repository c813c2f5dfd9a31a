"""Bad-input battery for ``jaxpapers.mlaire``: malformed calls, eagerly and
under jit."""

import numpy as np
import pytest

import jaxpapers.mlaire as M
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

_rng = np.random.default_rng(0)
Q, P = 4, 5
S = _rng.normal(size=(Q, P)).astype(np.float32)
DL = _rng.integers(0, 3, (Q, P)).astype(np.int32)
DC = _rng.integers(0, 3, (Q, P)).astype(np.int32)
MK = np.ones((Q, P), bool)
QL = np.array([0, 1, 2, 0], np.int32)
QC = np.array([0, 1, 2, 1], np.int32)
S_NAN = S.copy()
S_NAN[1, 2] = np.nan
GOOD = M.PoolBatch(S, DL, DC, MK, QL, QC)
NAN = M.PoolBatch(S_NAN, DL, DC, MK, QL, QC)
INT_SCORES = M.PoolBatch(S.astype(np.int32), DL, DC, MK, QL, QC)
NAN_MSG = "b.scores must not contain NaN"
HOST = "host-side data building (Python / NumPy / babel)"
E = np.ones((4, 3), np.float32)
LANG = np.array([0, 1, 0, 1], np.int32)
CONT = np.array([0, 0, 1, 1], np.int32)


def _check_ranks_poisoned(out):
  assert np.all(np.asarray(out) == -1)


CASES = [
  Case(
    "pool_batch",
    M.pool_batch,
    (S, DL, DC, MK, QL[:3], QC),
    match=(r"b.q_lang must have shape"),
  ),
  Case(
    "pool_batch",
    M.pool_batch,
    (S, DL.astype(np.float32), DC, MK, QL, QC),
    error=TypeError,
    match=(
      "b.doc_lang must have a integer dtype|b.doc_lang must have an? integer "
      "dtype"
    ),
    id="pool_batch-dtype",
  ),
  Case(
    "PoolBatch",
    M.ranks,
    (S,),
    error=TypeError,
    match=("b must be a PoolBatch"),
    id=("PoolBatch"),
  ),
  Case(
    "ranks",
    M.ranks,
    (NAN,),
    match=NAN_MSG,
    jit="nan",
    jit_check=_check_ranks_poisoned,
  ),
  Case(
    "ranks",
    M.ranks,
    (GOOD,),
    {"ties": "random"},
    match=("ties must be one of"),
    id=("ranks-ties"),
  ),
  Case(
    "ranks",
    M.ranks,
    (INT_SCORES,),
    error=TypeError,
    match="floating dtype",
    id=("ranks-int"),
  ),
  Case("lpr", M.lpr, (NAN,), match=NAN_MSG, jit="nan"),
  Case(
    "lpr",
    M.lpr,
    (GOOD,),
    {"variant": "topk"},
    match="k must be given",
    id=("lpr-topk-k"),
  ),
  Case(
    "lpr", M.lpr, (GOOD,), {"k": 3}, match="k is only used", id=("lpr-k-strict")
  ),
  Case(
    "lpr",
    M.lpr,
    (GOOD,),
    {"variant": "soft"},
    match=("variant must be one of"),
    id=("lpr-var"),
  ),
  Case("lang_ndcg", M.lang_ndcg, (NAN, 3), match=NAN_MSG, jit="nan"),
  Case(
    "lang_ndcg",
    M.lang_ndcg,
    (GOOD, 0),
    match="k must be >= 1",
    id=("lang_ndcg-k"),
  ),
  Case(
    "lang_ndcg",
    M.lang_ndcg,
    (GOOD, 3),
    {"w_lang": 0.5, "w_other": 1.0},
    match="w_lang must be >= w_other",
    id="lang_ndcg-weights",
  ),
  Case(
    "lang_ndcg",
    M.lang_ndcg,
    (GOOD, 3),
    {"gain": "log"},
    match=("gain must be one of"),
    id=("gain"),
  ),
  Case("semantic_ndcg", M.semantic_ndcg, (NAN, 3), match=NAN_MSG, jit="nan"),
  Case(
    "semantic_ndcg",
    M.semantic_ndcg,
    (GOOD, 2.5),
    error=TypeError,
    match="k must be an int",
    id="semantic_ndcg-k",
  ),
  Case("ndcg_per_query", M.ndcg_per_query, (NAN, 3), match=NAN_MSG, jit="nan"),
  Case(
    "ndcg_per_query",
    M.ndcg_per_query,
    (GOOD, 3),
    {"w_lang": 0.5, "w_other": 1.0},
    match="w_lang must be >= w_other",
    id="ndcg_per_query-weights",
  ),
  Case("four_way", M.four_way, (NAN,), match=NAN_MSG, jit="nan"),
  Case(
    "four_way",
    M.four_way,
    (GOOD,),
    {"rank": P + 1},
    match=("rank must be <= 5"),
    id=("fw-rank"),
  ),
  Case(
    "four_way_profile", M.four_way_profile, (NAN, 3), match=NAN_MSG, jit=("nan")
  ),
  Case(
    "four_way_profile",
    M.four_way_profile,
    (GOOD, 9),
    match="k must be <= 5",
    id=("fwp-k"),
  ),
  Case("mlaire_report", M.mlaire_report, (NAN,), match=NAN_MSG, jit="nan"),
  Case(
    "mlaire_report",
    M.mlaire_report,
    (GOOD,),
    {"n_langs": 2},
    match=r"b.q_lang must lie in \[0, n_langs\)",
    jit="nan",
    id="report-langs",
  ),
  Case(
    "language_prior",
    M.language_prior,
    (S, DL, QL, float("nan")),
    match=("lam must be a finite"),
  ),
  Case(
    "language_prior",
    M.language_prior,
    (S, DL, QL, np.float32(np.inf)),
    match="lam must be a finite",
    jit="nan",
    id="language_prior-traced-lam",
  ),
  Case(
    "language_prior",
    M.language_prior,
    (S, DL.T, QL, 0.1),
    match="doc_lang must have shape",
    id="lp-shape",
  ),
  Case(
    "fit_language_offsets",
    M.fit_language_offsets,
    (E, LANG + 2, CONT, 2),
    match=r"lang must lie in \[0, n_lang\)",
    jit=None,
    jit_reason=(
      "n_content inferred from data: tested under jit with n_content below"
    ),
  ),
  Case(
    "fit_language_offsets",
    lambda e, l, c: M.fit_language_offsets(e, l, c, 2, n_content=1),
    (E, LANG, CONT),
    match=r"content must lie in \[0, n_content\)",
    jit="nan",
    id="offsets-content",
  ),
  Case(
    "remove_language_offsets",
    M.remove_language_offsets,
    (E, LANG, E[:2, :2]),
    match="offsets must have shape",
  ),
  Case(
    "remove_language_offsets",
    M.remove_language_offsets,
    (E, LANG + 1, E[:2]),
    match=r"lang must lie in \[0, n_lang\)",
    jit="nan",
    id="remove-lang",
  ),
  Case(
    "pool_scores",
    M.pool_scores,
    (S, DL + 9, MK),
    match=("query must index rows of full"),
    jit=("nan"),
  ),
  Case(
    "pool_scores",
    M.pool_scores,
    (S, DL, MK[:2]),
    match=("mask must have shape"),
    id=("ps-mask"),
  ),
  Case(
    "dense_pool_scores",
    M.dense_pool_scores,
    (E, E[:, :2], DL, MK),
    match=("must share D"),
  ),
  Case(
    "dense_pool_scores",
    M.dense_pool_scores,
    (E, E, DL + 7, MK),
    match="query must index",
    jit="nan",
    id="dps-index",
  ),
  Case(
    "e5_embed",
    M.e5_embed,
    (["passage: x"],),
    {"kind": "passage"},
    match="must not carry an E5 prefix",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "e5_embed",
    M.e5_embed,
    ("one string",),
    {"kind": "query"},
    error=TypeError,
    match="texts must be a sequence",
    jit=None,
    jit_reason=HOST,
    id="e5-str",
  ),
  Case(
    "e5_embed",
    M.e5_embed,
    (["x"],),
    {"kind": "doc"},
    match="kind must be",
    jit=None,
    jit_reason=HOST,
    id="e5-kind",
  ),
  Case(
    "bm25_scores",
    M.bm25_scores,
    (["a"], []),
    match="docs must not be empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "char_ngram_scores",
    M.char_ngram_scores,
    (["a"], ["b"]),
    {"ngram_range": (3, 2)},
    match="ngram_range must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "tokenize",
    M.tokenize,
    (3,),
    error=AttributeError,
    match="lower",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cldr_units",
    M.cldr_units,
    (["en", "xx"],),
    match="langs must be among",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "cldr_units",
    M.cldr_units,
    (["en"],),
    {"fact_types": ("capital",)},
    match="fact_types must be",
    jit=None,
    jit_reason=HOST,
    id="cldr-facts",
  ),
  Case(
    "render_passages",
    M.render_passages,
    ([], ["en"]),
    match="units must not be empty",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_pools",
    lambda **kw: M.build_pools(_corpus(), **kw),
    (),
    {"p_max": 4},
    match="p_max must be >= the pool size",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_pools",
    lambda **kw: M.build_pools(_corpus(), **kw),
    (),
    {"variant": "D"},
    match="variant must be one of",
    jit=None,
    jit_reason=HOST,
    id="bp-variant",
  ),
  Case(
    "build_pools",
    lambda **kw: M.build_pools(_corpus(), **kw),
    (),
    {"n_hard": 9},
    match="too few units",
    jit=None,
    jit_reason=HOST,
    id="bp-few",
  ),
  Case(
    "shared_surface_fraction",
    M.shared_surface_fraction,
    (None,),
    error=AttributeError,
    match="units",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "Unit",
    lambda: M.render_passages(
      [M.Unit("currency", "FR", "EUR", {"en": ("France", "euro")})],
      ["en", "de"],
    ),
    match="has no names in",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "Corpus",
    lambda: M.build_pools("corpus"),
    error=AttributeError,
    match="langs",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "spearman",
    M.spearman,
    (np.ones(3), np.ones(4)),
    match="x and y must both be",
    jit=None,
    jit_reason="host-side float64 statistics",
  ),
  Case(
    "rank_agreement",
    M.rank_agreement,
    (np.ones(3), np.ones(3)),
    match=r"must both be \[R, N\]",
    jit=None,
    jit_reason="host-side float64 statistics with a bootstrap",
  ),
  Case(
    "sample_units",
    M.sample_units,
    ([], -1),
    {"seed": 0},
    match="per_fact must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "trivial_scores",
    M.trivial_scores,
    (None, 0),
    error=TypeError,
    match="rng must be a numpy.random.Generator",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "score_pools",
    M.score_pools,
    (None, {}, np.random.default_rng(0)),
    {"emb": {}},
    match="calib .the offset-fitting units. is required with emb",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "prior_name",
    M.prior_name,
    ("0.05",),
    error=ValueError,
    match="Unknown format code",
    jit=None,
    jit_reason="host-side name",
  ),
  Case(
    "summarize_seeds",
    M.summarize_seeds,
    ([],),
    match="runs must be a non-empty sequence",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
  Case(
    "agreement_metrics",
    M.agreement_metrics,
    ([{"per_query": {"A": {}}}],),
    match="each with per_query for pools",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
  Case(
    "lpr_range",
    M.lpr_range,
    ({"A": {}}, "D"),
    match="pool 'D' not in the summary",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
  Case(
    "claim_metrics",
    M.claim_metrics,
    ({"A": {}},),
    match="summary must hold pools 'A' and 'C'",
    jit=None,
    jit_reason="host-side NumPy summary",
  ),
]

EXEMPT = {
  "Pools": ("a plain record of arrays built by build_pools (no computation)")
}


def _corpus():
  units = [
    M.Unit(f, c, "v", {"en": (c, "v")})
    for f in ("currency", "official_language")
    for c in ("AA", "BB", "CC")
  ]
  return M.render_passages(units, ["en"])


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_every_public_function_has_a_case():
  assert_covers(M, CASES, EXEMPT)


def test_degenerate_pools_return_documented_values():
  # A query whose pool holds no relevant passage scores 0 nDCG; LPR has no
  # eligible query.
  b = M.PoolBatch(S, DL, np.full((Q, P), 9, np.int32), MK, QL, QC)
  assert float(M.semantic_ndcg(b, 3)) == 0.0
  val, n = M.lpr(b)
  assert np.isnan(float(val)) and float(n) == 0.0
  # Masked slots never count, whatever their scores (NaN included).
  mask = MK.copy()
  mask[1, 2] = False
  ok = M.PoolBatch(S_NAN, DL, DC, mask, QL, QC)
  assert np.isfinite(float(M.lang_ndcg(ok, 3)))


@pytest.mark.parametrize("lam", [0.0, -0.5])
def test_language_prior_accepts_zero_and_negative(lam):
  assert np.all(np.isfinite(M.language_prior(S, DL, QL, lam)))
