"""Rank agreement of two metrics: Spearman's rho against scipy and a brute-force
bootstrap."""

import math

import numpy as np
import pytest
import scipy.stats

import jaxpapers.mlaire as M


def test_spearman_matches_scipy_with_ties():
  rng = np.random.default_rng(0)
  for _ in range(5):
    x = rng.integers(0, 4, 9).astype(float)  # many ties
    y = rng.normal(size=9)
    assert M.spearman(x, y) == pytest.approx(
      scipy.stats.spearmanr(x, y).statistic, abs=1e-12
    )
  assert math.isnan(M.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_rank_agreement_point_value_and_pair_counts():
  rng = np.random.default_rng(1)
  ndcg, lang = rng.random((5, 40)), rng.random((5, 40))
  ra = M.rank_agreement(ndcg, lang, n_boot=200)
  mx, my = ndcg.mean(1), lang.mean(1)
  assert ra["spearman"] == pytest.approx(
    scipy.stats.spearmanr(mx, my).statistic, abs=1e-12
  )
  disc = sum(
    (mx[i] - mx[j]) * (my[i] - my[j]) < 0
    for i in range(5)
    for j in range(i + 1, 5)
  )
  assert (ra["n_pairs"], ra["n_discordant"], ra["n_queries"]) == (10, disc, 40)
  assert ra["lo"] <= ra["spearman"] <= ra["hi"]
  assert ra["ci"] == pytest.approx(
    max(ra["spearman"] - ra["lo"], ra["hi"] - ra["spearman"])
  )
