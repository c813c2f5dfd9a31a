"""Claim code of bayes_memory (jaxpapers.bayes_memory.selection_metrics and
choose_contexts): hand-computed values for every claim-read number.

Each test takes the module under test as its argument (the ``evaluate``
fixture), so that ``test_mutations.py`` can run it against a deliberately broken
copy of the module.
"""

import importlib
from unittest import mock

import numpy as np
import pytest

MODULES = {"evaluate": "jaxpapers.bayes_memory._evaluate"}


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


# Two turns (N = 2); context columns: 0 no memory, 1 placebo, 2 turn 0, 3 turn
# 1, 4 all turns. Five questions: q0..q3 need memory (the preference questions
# P), q4 is memory-free. lp_alt = 0 everywhere, so a column is correct where
# lp_y > 0: columns 2 and 4 on q0..q3, column 0 on q3 as well, columns 3 and 4
# on q4.
COLS = {
  "no_memory": [0, 0, 0, 0, 0],  # P: q3 right -> 1/4
  "all_memory": [4, 4, 4, 4, 4],  # 4/4
  "random": [3, 3, 3, 3, 3],  # 0/4
  "recency": [3, 3, 3, 3, 3],  # 0/4 (worst retriever)
  "similarity": [2, 3, 3, 3, 2],  # 1/4
  "bm25": [2, 2, 2, 3, 3],  # 3/4 (best retriever)
  "distilled": [2, 2, 2, 2, 2],  # 4/4 on P (4/5 over all questions: q4 wrong)
  "distilled_gated": [2, 0, 0, 2, 0],  # 2/4; opens on 2 of 5 questions
  "oracle_bf": [2, 2, 3, 3, 3],  # 2/4
  "oracle_bf_gated": [2, 2, 0, 0, 0],  # 3/4
  "distilled_placebo_gated": [0, 2, 2, 2, 3],  # 3/4; opens on 4 of 5 questions
  "oracle_bf_placebo_gated": [0, 2, 3, 0, 0],  # 2/4
}


def _questions(greedy=False):
  Q, N = 5, 2
  lp_y = np.full((Q, N + 3), -1.0)
  lp_y[:4, 2] = 1.0
  lp_y[:, 4] = 1.0
  lp_y[3, 0] = 1.0
  lp_y[4, 3] = 1.0
  q = {
    "lp_y": lp_y,
    "lp_alt": np.zeros((Q, N + 3)),
    "n_y": np.full(Q, 2.0),
    "f_turn": np.zeros((Q, N, 3)),
    "need": np.array([1, 1, 1, 1, 0]),
    "seed": np.array([0, 0, 1, 1, 1]),
    "gold": np.array([0, 0, 0, 0, 1]),
    "stale": np.array([[0, 1], [0, 1], [0, 0], [1, 0], [0, 0]], bool),
  }
  if greedy:  # greedy sets: right on q0..q2, wrong on q3 (3/4 on P)
    q["lp_y_greedy"] = np.array([1.0, 1.0, 1.0, -1.0, 1.0])
    q["lp_alt_greedy"] = np.zeros(Q)
    q["greedy_sel"] = np.array([[0, 1], [0, -1], [1, -1], [1, 0], [-1, -1]])
  return q


def _derived(evaluate, greedy=False, boot=None, q=None):
  q = _questions(greedy) if q is None else q
  col = {m: np.asarray(v) for m, v in COLS.items()}
  g_logit = np.array([1.0, -1.0, -1.0, 1.0, -1.0])
  g_plc = np.array([-1.0, 1.0, 1.0, 1.0, 1.0])
  kw = dict(
    seed=0, n_boot=20, greedy_k=2 if greedy else 0, tau_placebo=2.3, g_plc=g_plc
  )
  if boot is None:
    return evaluate.selection_metrics(q, col, g_logit, **kw)
  with mock.patch.object(evaluate, "_boot_ci", boot):
    return evaluate.selection_metrics(q, col, g_logit, **kw)


def _stat_on_resample(stat, n, n_boot, rng):
  """A stand-in for the bootstrap: the statistic on the one resample (q0, q1,
  q2, q2, q3)."""
  assert n == 4
  return float(stat(np.array([0, 1, 2, 2, 3])))


def test_accuracy_is_over_preference_questions(evaluate):
  d = _derived(evaluate)
  acc = d["accuracy"]
  assert acc["no_memory"] == pytest.approx(0.25)
  # 0.8 if the memory-free q4 were counted
  assert acc["distilled"] == pytest.approx(1.0)
  assert acc["bm25"] == pytest.approx(0.75)
  assert acc["similarity"] == pytest.approx(0.25)
  assert acc["recency"] == pytest.approx(0.0)
  assert d["n_preference_questions"] == 4


def test_gain_against_best_retriever(evaluate):
  d = _derived(evaluate)
  # Best retriever = bm25 (0.75); the worst (recency, 0.0) or the mean (1/3)
  # would differ.
  assert d["best_retriever"] == "bm25"
  assert d["acc_gain_distilled_vs_best_retriever"] == pytest.approx(1.0 - 0.75)
  assert d["acc_gain_oracle_vs_best_retriever"] == pytest.approx(0.5 - 0.75)


def test_best_retriever_accuracy_is_shown_beside_the_gain(evaluate):
  d = _derived(evaluate)
  # bm25, not recency (0.0)
  assert d["best_retriever_accuracy"] == pytest.approx(0.75)


def test_gold_turn_accuracy_reads_the_gold_column_of_preference_questions(
  evaluate,
):
  q = _questions()
  q["gold"] = np.array([0, 1, 0, 0, 1])
  # P = q0..q3 with gold columns 2, 3, 2, 2: right (lp_y 1 > 0), wrong (-1),
  # right, right. The memory-free q4 (gold 1 -> column 3, right) is not counted:
  # 3/4, not 4/5; column 1 + gold (the placebo and turn 0) would give 0/4 + 1/4.
  d = _derived(evaluate, q=q)
  assert d["accuracy_gold_turn"] == pytest.approx(3 / 4)
  assert d["accuracy_gold_turn_lo"] == pytest.approx(
    3 / 4 - d["accuracy_gold_turn_ci"]
  )
  # (q0, q1, q2, q2, q3): 4 of 5 right
  d = _derived(evaluate, q=q, boot=_stat_on_resample)
  assert d["accuracy_gold_turn_ci"] == pytest.approx(4 / 5)
  q["gold"] = np.array([0, -1, 0, 0, 1])
  with pytest.raises(ValueError, match="gold turn"):
    _derived(evaluate, q=q)


def test_registered_quantities_are_recorded(evaluate):
  q = _questions()
  q["seed"] = np.array([4, 3, 5, 5, 4])
  d = _derived(evaluate, q=q)
  # the smallest data seed, not the first or the largest
  assert d["min_seed"] == 3
  assert d["tau_placebo"] == 2.3
  assert d["n_questions"] == 5


def test_gated_minus_ungated(evaluate):
  d = _derived(evaluate)
  assert d["acc_gain_gated_vs_ungated"] == pytest.approx(0.5 - 1.0)
  assert d["acc_gain_placebo_gated_vs_ungated"] == pytest.approx(0.75 - 1.0)
  assert d["acc_gain_oracle_placebo_gated_vs_ungated"] == pytest.approx(
    0.5 - 0.5
  )


def test_read_fraction_is_over_all_questions(evaluate):
  d = _derived(evaluate)
  # 2/4 over P only
  assert d["read_fraction"]["distilled_gated"] == pytest.approx(2 / 5)
  assert d["read_fraction"]["distilled_placebo_gated"] == pytest.approx(4 / 5)
  assert d["read_fraction"]["no_memory"] == 0.0
  assert d["read_fraction"]["distilled"] == 1.0


def test_distilled_gain_ratio(evaluate):
  d = _derived(evaluate)
  # (acc distilled - acc no memory) / (acc oracle BF - acc no memory) = (1 -
  # 1/4) / (1/2 - 1/4)
  assert d["distilled_gain_ratio"] == pytest.approx(3.0)


def test_each_interval_resamples_its_own_statistic(evaluate):
  # On the resample (q0, q1, q2, q2, q3): distilled 5/5, best retriever bm25
  # 4/5, oracle BF 2/5, gated 2/5, placebo-gated 4/5, no memory 1/5, all five
  # statistics different.
  d = _derived(evaluate, boot=_stat_on_resample)
  assert d["acc_gain_distilled_vs_best_retriever_ci"] == pytest.approx(
    1.0 - 0.8
  )
  assert d["acc_gain_oracle_vs_best_retriever_ci"] == pytest.approx(0.4 - 0.8)
  assert d["acc_gain_gated_vs_ungated_ci"] == pytest.approx(0.4 - 1.0)
  assert d["acc_gain_placebo_gated_vs_ungated_ci"] == pytest.approx(0.8 - 1.0)
  assert d["distilled_gain_ratio_ci"] == pytest.approx(
    (1.0 - 0.2) / (0.4 - 0.2)
  )


def test_greedy_gains(evaluate):
  d = _derived(evaluate, greedy=True)
  assert d["accuracy"]["oracle_bf_greedy"] == pytest.approx(0.75)
  assert d["acc_gain_greedy_vs_top1"] == pytest.approx(0.75 - 0.5)
  assert d["acc_gain_greedy_vs_distilled"] == pytest.approx(0.75 - 1.0)
  assert d["acc_gain_greedy_vs_recency"] == pytest.approx(0.75 - 0.0)
  # greedy 4/5 on the resample
  d = _derived(evaluate, greedy=True, boot=_stat_on_resample)
  assert d["acc_gain_greedy_vs_top1_ci"] == pytest.approx(0.8 - 0.4)
  assert d["acc_gain_greedy_vs_distilled_ci"] == pytest.approx(0.8 - 1.0)
  assert d["acc_gain_greedy_vs_recency_ci"] == pytest.approx(0.8 - 0.0)


def test_boot_ci_is_half_the_central_95_percent_range(evaluate):
  # A statistic that ignores the resample and returns 0, 1, ..., 99 and one NaN
  # in turn: the percentiles of 0..99 at 2.5% and 97.5% are 2.475 and 96.525
  # (linear interpolation at 0.025 * 99 and 0.975 * 99), so the half-width is
  # 47.025; the NaN is dropped.
  seq = iter([*range(50), float("nan"), *range(50, 100)])
  got = evaluate._boot_ci(lambda i: next(seq), 4, 101, np.random.default_rng(0))
  assert got == pytest.approx((96.525 - 2.475) / 2)
  one = iter([1.0, float("nan")])
  assert np.isnan(
    evaluate._boot_ci(lambda i: next(one), 4, 2, np.random.default_rng(0))
  )


def test_choose_contexts(evaluate):
  # Two questions, three turns; columns 0 none, 1 placebo, 2..4 turns, 5 all.
  # q0: LBF = (-1, 2, 0.5) opens the BF gate (2 > tau = 0.5), but the placebo
  # note scores 1.9,
  #     so the placebo-controlled max is 0.1 < tau_placebo = 0.2: closed.
  # q1: LBF = (0.1, -3, 0.3) keeps the BF gate closed; placebo -1: max 1.3 >
  # 0.2, open.
  lp_y = np.array(
    [[0.0, 1.9, -1.0, 2.0, 0.5, 0.0], [0.0, -1.0, 0.1, -3.0, 0.3, 0.0]]
  )
  q = {
    "lp_y": lp_y,
    "f_turn": np.array([[[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]] * 2, np.float32),
    "f_query": np.array([[1.0, 0.0], [0.0, 1.0]], np.float32),
    # q0: tie -> the newer turn 1
    "bm25": np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]]),
  }
  u = np.array([[0.0, 0.2, 0.1], [0.5, 0.1, -1.0]])
  col = evaluate.choose_contexts(
    q,
    u,
    np.array([1.0, -1.0]),
    tau=0.5,
    tau_placebo=0.2,
    rng=np.random.default_rng(0),
    g_plc=np.array([-1.0, 2.0]),
  )
  expect = {
    "no_memory": [0, 0],
    "all_memory": [5, 5],
    "recency": [4, 4],
    "bm25": [3, 3],
    "similarity": [3, 2],  # cosines q0 (0, 1, 0.71), q1 (1, 0, 0.71)
    "distilled": [3, 2],
    "distilled_gated": [3, 0],
    "distilled_placebo_gated": [0, 2],
    "oracle_bf": [3, 4],
    "oracle_bf_gated": [3, 0],
    "oracle_bf_placebo_gated": [0, 4],
  }
  for m, v in expect.items():
    np.testing.assert_array_equal(col[m], v, err_msg=m)
  assert np.all((col["random"] >= 2) & (col["random"] < 5))
