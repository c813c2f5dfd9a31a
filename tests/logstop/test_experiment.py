"""The digit-video experiment end to end on the smoke config, and the
notebook."""

import numpy as np

from experiments.logstop import data as D
from experiments.logstop import train
from experiments.logstop.configs import smoke
from jaxpapers import core
from jaxpapers import logstop as L


def test_templates_parse_and_cover_at_least_15():
  assert len(D.TEMPLATES) >= 15
  for t in D.TEMPLATES + train.RETRIEVAL_TEMPLATES:
    f = L.parse(D.instantiate(t, [1, 4, 7]))
    assert set(L.atoms(f)) <= {"d1", "d4", "d7"}


def test_balanced_sampling_labels_are_true_ltl_truth():
  rng = np.random.default_rng(0)
  f = L.parse("d1 U (d4 & X d7)")
  x, y = train.sample_balanced(rng, f, ["d1", "d4", "d7"], 6, 10)
  assert y.sum() == len(y) // 2 and len(y) >= 8
  assert (x.sum(1) <= 2).all()  # at most two visible digits per frame
  from tests.logstop import _oracles

  for xi, yi in zip(x, y):
    trace = {"d1": xi[0], "d4": xi[1], "d7": xi[2]}
    assert _oracles.bool_rec(f, trace, 0, 9) == bool(yi)


def test_smoke_config_end_to_end(tmp_path):
  config = smoke.get_config()
  results = train.train_and_evaluate(config, str(tmp_path))
  saved = core.read_results(tmp_path)
  assert "table_markdown" in saved and "LogSTOP" in saved["table_markdown"]
  overall = saved["metrics"]["matching/overall"]
  assert any(k.startswith("LogSTOP") for k in overall)
  assert all(0.0 <= v <= 1.0 for v in overall.values())
  assert (tmp_path / "logstop_matching_retrieval.png").exists()
  assert results["retrieval/overall"], "every retrieval query was skipped"
  for row in results["retrieval/overall"].values():
    assert 0.0 <= row["mAP"] <= 1.0 and 0.0 <= row["R@5"] <= 1.0
