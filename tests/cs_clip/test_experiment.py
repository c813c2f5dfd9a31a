"""The smoke experiment end to end (with resume) and the notebook."""

import json

import jax
import numpy as np
import pytest
from flax import nnx

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
  # every path a claim reads exists in a real run's output
  for c in default.CLAIMS:
    paths = [
      c["metric"],
      c["noise"],
      *[r["metric"] for r in c.get("requires", ())],
    ]
    paths += list(c.get("controls", {}).values()) + list(
      c.get("baselines", {}).values()
    )
    for path in paths:
      assert path.split(".", 1)[1] in d, (c["id"], path)
  assert (
    len(metrics["items"]["outcomes"]["positional"]["clip_ft"]["ht_relation"])
    == cfg.seeds
  )
  ex = json.loads((workdir / "examples.json").read_text())
  assert ex["train"] and ex["half_truth"]


def test_rerun_resumes_from_the_stored_cells(smoke_run, monkeypatch):
  cfg, workdir, metrics = smoke_run
  monkeypatch.setattr(
    core.Sweep,
    "run",
    lambda *a, **k: (_ for _ in ()).throw(AssertionError("retrained")),
  )
  again = train.train_and_evaluate(cfg, workdir)
  assert again["summary"] == json.loads(json.dumps(metrics["summary"]))


def _decisive_derived(**change):
  """A derived block on which every claim of the default config holds."""
  d = {
    "n_seeds": 5,
    "n_relation_items": 2000,
    "baseline_ht_relation": 0.40,
    "baseline_ht_relation_ci": 0.03,
    "baseline_relation_foil_acc_lo": 0.70,
    "cs_ht_relation": 0.60,
    "cs_ht_relation_ci": 0.03,
    "cs_minus_clip_ft_ht_relation": 0.15,
    "cs_minus_clip_ft_ht_relation_ci": 0.03,
    "cs_minus_negclip_ft_ht_relation": 0.10,
    "cs_minus_negclip_ft_ht_relation_ci": 0.03,
    "cs_minus_clip_ft_r1": 0.0,
    "cs_minus_clip_ft_r1_ci": 0.01,
    "order_aware_clip_ft_minus_clip_ft_ht_relation": 0.0,
  }
  d.update(change)
  return {"derived": d}


def _verdicts(metrics):
  return {c["id"]: core.judge(c, metrics) for c in default.CLAIMS}


def test_the_default_claims_hold_on_a_decisive_setup():
  v = _verdicts(_decisive_derived())
  assert {k: x.verdict for k, x in v.items()} == dict.fromkeys(v, "held")


def test_an_order_aware_encoder_that_gains_alone_makes_the_cs_gain_inconclusive():
  v = _verdicts(
    _decisive_derived(order_aware_clip_ft_minus_clip_ft_ht_relation=0.05)
  )
  assert v["cs_raises_half_truth_accuracy"].verdict == "inconclusive"
  assert v["cs_raises_half_truth_accuracy"].guard == "controls"
  # the control belongs to the first gain
  assert v["cs_beats_negclip"].verdict == "held"


def test_a_cs_model_at_chance_or_a_relation_blind_encoder_decides_nothing():
  v = _verdicts(_decisive_derived(cs_ht_relation=0.52))
  for cid in ("cs_raises_half_truth_accuracy", "cs_beats_negclip"):
    assert (v[cid].verdict, v[cid].guard) == ("inconclusive", "chance")
  v = _verdicts(_decisive_derived(baseline_relation_foil_acc_lo=0.55))
  for cid in (
    "half_truths",
    "cs_raises_half_truth_accuracy",
    "cs_beats_negclip",
  ):
    assert (v[cid].verdict, v[cid].guard) == ("inconclusive", "requires")
  assert v["cs_keeps_retrieval"].verdict == "held"


def test_fewer_seeds_or_items_than_registered_decide_nothing():
  for change in ({"n_seeds": 3}, {"n_relation_items": 1000}):
    v = _verdicts(_decisive_derived(**change))
    assert all(
      x.verdict == "inconclusive" and x.guard == "requires" for x in v.values()
    )


@pytest.mark.notebook
def test_notebook_runs():
  nb = notebook_util.run_notebook("colab/cs_clip.ipynb", timeout=300)
  text = "".join(
    o.get("text", "")
    for c in nb.cells
    if c.cell_type == "code"
    for o in c.get("outputs", [])
  )
  # the committed verdicts are printed under their claim names
  for c in default.CLAIMS:
    assert f"{c['id']}: " in text, c["id"]
  assert "None ->" not in text


def test_pretrained_params_round_trip_and_a_cut_off_file_is_named(tmp_path):
  """The stage-1 parameters that a resumed fine-tuning reads back: the same
  tree, bit for bit; a cut-off file raises core's CorruptFileError instead of
  loading wrong weights."""
  cfg = smoke.get_config()
  make = lambda key: train._model(cfg, key, "weak_order")
  params = nnx.split(make(jax.random.key(0)))[1]
  # [R=2]
  stacked = jax.tree.map(
    lambda x: np.stack([np.asarray(x), np.asarray(x) + 1]), params
  )
  path = tmp_path / "params_weak_order.npz"
  core.cache.write_tree(path, stacked)
  like = nnx.split(nnx.eval_shape(lambda: make(jax.random.key(1))))[1]
  back = core.cache.read_tree(path, like)
  assert jax.tree.structure(back) == jax.tree.structure(stacked)
  for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(stacked), strict=True):
    np.testing.assert_array_equal(a, b)
  path.write_bytes(path.read_bytes()[:-64])
  with pytest.raises(core.CorruptFileError, match="params_weak_order.npz"):
    core.cache.read_tree(path, like)
