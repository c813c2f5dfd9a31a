"""The smoke experiment end to end (with resume) and the notebook."""

import json

import pytest

from experiments.cs_clip import train
from experiments.cs_clip.configs import default, smoke
from jaxpapers import core
from tests import notebook_util


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
  workdir = tmp_path_factory.mktemp("cs_clip_smoke")
  cfg = smoke.get_config()
  return cfg, workdir, train.train_and_evaluate(cfg, workdir)


def test_smoke_experiment_writes_results(smoke_run):
  cfg, workdir, metrics = smoke_run
  rec = json.loads((workdir / "results.json").read_text())
  assert "Half-truth accuracy" in rec["table_markdown"]
  assert {"ht_relation.png", "r1.png"} <= set(rec["plots"])
  assert all("verdict" not in c or c["verdict"] is None for c in rec["claims"])
  summ = metrics["summary"]
  assert set(summ) == set(cfg.encoders)
  assert set(summ["weak_order"]) == {"clip", *cfg.arms}
  for models in summ.values():
    for m in models.values():
      for k in ("ht_entity", "ht_relation", "r1", "relation_foil_acc"):
        assert len(m[k]) == cfg.seeds and all(0.0 <= v <= 1.0 for v in m[k])
  d = metrics["derived"]
  for c in default.CLAIMS:
    assert c["metric"].split(".", 1)[1] in d
  ex = json.loads((workdir / "examples.json").read_text())
  assert ex["train"] and ex["half_truth"]


def test_rerun_resumes_from_the_stored_cells(smoke_run, monkeypatch):
  cfg, workdir, metrics = smoke_run
  monkeypatch.setattr(
    core.Sweep, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("retrained"))
  )
  again = train.train_and_evaluate(cfg, workdir)
  assert again["summary"] == json.loads(json.dumps(metrics["summary"]))


def test_derived_metrics_and_claim_rules_on_a_constructed_summary():
  summ = {
    "weak_order": {
      "clip": {"ht_relation": [0.40, 0.44, 0.42], "r1": [0.5] * 3, "ht_entity": [1.0] * 3},
      "clip_ft": {"ht_relation": [0.45, 0.47, 0.46], "r1": [0.6, 0.6, 0.6], "ht_entity": [1] * 3},
      "negclip_ft": {"ht_relation": [0.5, 0.5, 0.5], "r1": [0.6] * 3, "ht_entity": [1.0] * 3},
      "cs_ft": {"ht_relation": [0.65, 0.66, 0.67], "r1": [0.6, 0.6, 0.605], "ht_entity": [1] * 3},
    }
  }
  d = train.derived_metrics(summ, {"relation": 0.5})
  assert d["baseline_ht_relation"] == pytest.approx(0.42)
  assert d["cs_minus_clip_ft_ht_relation"] == pytest.approx(0.2)
  assert d["cs_minus_clip_ft_ht_relation_ci"] == pytest.approx(4.303 * 0.01 / 3**0.5, rel=1e-3)
  verdicts = {c["id"]: core.judge(c, {"derived": d}).verdict for c in default.CLAIMS}
  assert verdicts == {
    "half_truths": "held",
    "cs_raises_half_truth_accuracy": "held",
    "cs_keeps_retrieval": "held",
    "cs_beats_negclip": "held",
  }


@pytest.mark.notebook
def test_notebook_runs():
  notebook_util.run_notebook("colab/cs_clip.ipynb", timeout=300)
