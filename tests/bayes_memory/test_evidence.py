"""The evidence arrays (`question_arrays`), the leave-one-seed-out fit and bad
scoring input."""

import numpy as np
import pytest

from jaxpapers import bayes_memory as bm


def _dialogue_and_cell(greedy=False):
  turns = ("I like tea.", "Now I like coffee.", "My friend likes juice.")
  q0 = bm.Query(
    "What do I drink?", "coffee", "tea", "drink", 1, (0,), (2,), True
  )
  q1 = bm.Query("Hello?", "hi", None, None, -1, (), (), False)
  d = bm.Dialogue(turns, (q0, q1))
  rng = np.random.default_rng(0)
  cell = dict(
    lp_y=rng.normal(size=(2, 6)).tolist(),
    lp_alt=rng.normal(size=(2, 6)).tolist(),
    n_y=[1, 2],
    f_turn=rng.normal(size=(3, 4)).tolist(),
    f_query=rng.normal(size=(2, 4)).tolist(),
  )
  if greedy:
    cell.update(
      greedy_sel=[[1, -1], [-1, -1]],
      lp_y_greedy=[0.5, -1.0],
      lp_alt_greedy=[0.1, 0.0],
    )
  return d, cell


def test_question_arrays_flatten_each_question():
  d, cell = _dialogue_and_cell()
  q = bm.question_arrays([d, d], [cell, cell], seed=7)
  assert q["lp_y"].shape == (4, 6) and q["lp_y"].dtype == np.float64
  assert q["f_turn"].shape == (4, 3, 4) and q["f_query"].shape == (4, 4)
  # per question
  np.testing.assert_array_equal(q["f_turn"][1], np.asarray(cell["f_turn"]))
  np.testing.assert_array_equal(q["f_query"][1], np.asarray(cell["f_query"][1]))
  np.testing.assert_array_equal(q["gold"], [1, -1, 1, -1])
  np.testing.assert_array_equal(q["stale"][0], [True, False, False])
  assert not q["stale"][1].any()
  np.testing.assert_array_equal(q["need"], [True, False, True, False])
  np.testing.assert_array_equal(q["seed"], [7] * 4)
  np.testing.assert_allclose(
    q["bm25"][0], bm.bm25_scores(list(d.turns), d.queries[0].x)
  )
  assert "greedy_sel" not in q
  g = bm.question_arrays([d], [_dialogue_and_cell(greedy=True)[1]], seed=0)
  np.testing.assert_array_equal(g["greedy_sel"], [[1, -1], [-1, -1]])
  np.testing.assert_allclose(g["lp_y_greedy"], [0.5, -1.0])


def _questions(Q=6, N=3, d=4):
  rng = np.random.default_rng(1)
  return {
    "f_turn": rng.normal(size=(Q, N, d)),
    "f_query": rng.normal(size=(Q, d)),
    "lp_y": rng.normal(size=(Q, N + 3)),
    "seed": np.array([0, 0, 0, 1, 1, 1]),
  }


@pytest.mark.slow  # four utility-model fits: compile-bound on a loaded host
def test_leave_one_seed_out_predicts_each_seed_from_the_others():
  q = _questions()
  kw = dict(seed=0, steps=3, lr=1e-2, beta=1.0, tau=0.0, hidden=8)
  u, g, g_plc, losses = bm.fit_leave_one_seed_out(q, tau_placebo=0.5, **kw)
  assert (
    u.shape == (6, 3)
    and g.shape == g_plc.shape == (6,)
    and set(losses) == {0, 1}
  )
  # seed 1's predictions come from a model fitted on seed 0's questions alone
  tr, te = q["seed"] == 0, q["seed"] == 1
  f = lambda x: x.astype(np.float32)
  pos = np.tile(np.linspace(0.0, 1.0, 3), (6, 1)).astype(np.float32)
  valid = np.ones((6, 3), bool)
  lbf = f(q["lp_y"][:, 2:5] - q["lp_y"][:, :1])
  model, gate, _ = bm.train_utility_model(
    f(q["f_turn"])[tr], f(q["f_query"])[tr], pos[tr], valid[tr], lbf[tr], **kw
  )
  ut, gt = bm.predict_utilities(
    model, gate, f(q["f_turn"])[te], f(q["f_query"])[te], pos[te], valid[te]
  )
  np.testing.assert_allclose(u[te], np.asarray(ut), rtol=1e-6)
  np.testing.assert_allclose(g[te], np.asarray(gt), rtol=1e-6)
  assert not np.allclose(g_plc, g)  # the placebo gate learns another label


def test_bad_input_names_the_argument():
  q = _questions()
  q["seed"] = np.zeros(6, int)
  with pytest.raises(ValueError, match="two seeds"):
    bm.fit_leave_one_seed_out(q, tau_placebo=0.5)
  with pytest.raises(ValueError, match="scoring must be one of"):
    bm.score_dialogues(
      [],
      (None, None, None),
      None,
      buckets=(8,),
      batch_tokens=8,
      max_targets=1,
      feature_len=4,
      scoring="fast",
    )


def test_access_signal_metrics_by_hand():
  # 4 questions, N = 1 turn; columns: no memory, placebo, turn 0, all turns
  lp_y = np.array(
    [
      [-5.0, -4.0, -1.0, -1.0],  # needs memory: LBF 4, placebo LBF 3
      [-5.0, -5.0, -3.0, -3.0],  # needs memory: LBF 2, placebo LBF 2
      [-2.0, -1.0, -2.0, -2.0],  # memory-free: LBF 0, placebo LBF -1
      [-2.0, -2.0, -3.0, -3.0],  # memory-free: LBF -1, placebo LBF -1
    ]
  )
  need = np.array([True, True, False, False])
  # separates 3 of the 4 (need, free) pairs
  g = np.array([1.0, -1.0, 0.0, -2.0])
  out = bm.access_signal_metrics(lp_y, need, g, placebo_gate_logits=-g)
  assert out["gate_auroc"]["distilled"] == pytest.approx(0.75)
  assert out["gate_auroc"]["distilled_placebo"] == pytest.approx(0.25)
  assert out["gate_auroc"]["oracle_bf_max"] == pytest.approx(1.0)
  assert out["gate_auroc"]["placebo_bf_max"] == pytest.approx(1.0)
  assert out["mean_max_lbf"] == {"need_memory": 3.0, "memory_free": -0.5}
  assert out["mean_max_placebo_lbf"] == {
    "need_memory": 2.5,
    "memory_free": -1.0,
  }
  assert out["placebo_shift_mean"] == pytest.approx((1 + 0 + 1 + 0) / 4)
  assert (
    "distilled_placebo"
    not in bm.access_signal_metrics(lp_y, need, g)["gate_auroc"]
  )
  assert (
    bm.access_signal_metrics(lp_y, np.ones(4, bool), g)["mean_max_lbf"][
      "memory_free"
    ]
    is None
  )
