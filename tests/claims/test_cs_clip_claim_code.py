"""Claim code of experiments/cs_clip: per-item outcomes, item x seed intervals,
derived numbers.

Each test takes the module under test as its argument (the ``evaluate``
fixture), so that ``test_mutations.py`` can run it against a deliberately broken
copy of the module. Expected values are hand-computed; the bootstrap is checked
against a NumPy transcription of its documented draw and the seed interval
against SciPy's t quantile.
"""

import importlib
import types

import numpy as np
import pytest
from scipy import stats as sps

import jaxpapers.cs_clip as C

MODULES = {
  "evaluate": "experiments.cs_clip.evaluate",
  "stats": ("jaxpapers.cs_clip._stats"),
}

N_BOOT = 400


@pytest.fixture(name="evaluate")
def _evaluate():
  return importlib.import_module(MODULES["evaluate"])


@pytest.fixture(name="stats")
def _stats():
  return importlib.import_module(MODULES["stats"])


def _boot_half(a_items, b_items, n_boot=N_BOOT, seed=0):
  """Symmetric half-width of the paired percentile bootstrap (NumPy
  transcription)."""
  d = np.asarray(a_items, float) - np.asarray(b_items, float)
  idx = np.random.default_rng(seed).integers(0, len(d), size=(n_boot, len(d)))
  lo, hi = np.quantile(d[idx].mean(1), [0.025, 0.975])
  est = d.mean()
  return max(est - lo, hi - est)


def _seed_half(a_seeds, b_seeds):
  d = np.asarray(a_seeds, float) - np.asarray(b_seeds, float)
  return sps.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))


def test_pack_bits_round_trip(stats):
  x = [1, 0, 1, 1, 0, 0, 0, 0, 1]
  assert stats.pack_bits(x) == "b080"  # 1011 0000 | 1 (then 7 padding zeros)
  np.testing.assert_array_equal(stats.unpack_bits("b080", 9), x)
  with pytest.raises(ValueError, match="0/1"):
    stats.pack_bits([0, 2])
  with pytest.raises(ValueError, match="cannot hold"):
    stats.unpack_bits("b080", 17)


def test_r1_items_are_the_mean_of_both_directions(evaluate):
  packed = {
    "r1_i2t": [C.pack_bits([1, 1, 0, 0])],
    "r1_t2i": [C.pack_bits([1, 0, 1, 0])],
  }
  np.testing.assert_array_equal(
    evaluate.seeds_by_items(packed, "r1", 4), [[1.0, 0.5, 0.5, 0.0]]
  )


def test_item_interval_when_only_seeds_vary(stats):
  # Every item has the same seed-averaged outcome (0.5): the item bootstrap has
  # no width, so the half-width is the seed t-interval of (0.25, 0.5, 0.75):
  # t_{.975,2} * 0.25 / sqrt(3).
  a = np.array([[0.25] * 4, [0.5] * 4, [0.75] * 4])
  iv = stats.item_seed_interval(a, n_boot=N_BOOT)
  assert iv["mean"] == pytest.approx(0.5)
  assert iv["item_half_width"] == pytest.approx(0.0, abs=1e-12)
  assert iv["seed_half_width"] == pytest.approx(
    4.302653 * 0.25 / np.sqrt(3), rel=1e-6
  )
  assert iv["half_width"] == pytest.approx(iv["seed_half_width"])
  assert (iv["n_seeds"], iv["n_items"]) == (3, 4)


def test_item_interval_when_only_items_vary(stats):
  # Identical seeds: no seed noise, the half-width is the item bootstrap's.
  row_a = [1, 0, 1, 1, 0, 1, 1, 1]
  row_b = [0, 0, 1, 0, 0, 1, 0, 1]
  a, b = np.array([row_a] * 3), np.array([row_b] * 3)
  iv = stats.item_seed_interval(a, b, n_boot=N_BOOT)
  assert iv["mean"] == pytest.approx(3 / 8)
  assert iv["seed_half_width"] == pytest.approx(0.0, abs=1e-12)
  assert iv["item_half_width"] == pytest.approx(_boot_half(row_a, row_b))
  assert iv["half_width"] == pytest.approx(iv["item_half_width"])


def test_item_interval_takes_the_wider_noise(stats):
  a = np.array([[1, 0, 1, 1, 0, 1], [1, 1, 1, 1, 0, 1], [0, 0, 1, 1, 0, 0]])
  b = np.array([[0, 0, 1, 0, 0, 0], [1, 0, 0, 0, 0, 1], [0, 0, 1, 0, 1, 0]])
  iv = stats.item_seed_interval(a, b, n_boot=N_BOOT)
  item = _boot_half(a.mean(0), b.mean(0))
  seed = _seed_half(a.mean(1), b.mean(1))
  # 4 + 5 + 2 against 1 + 2 + 2
  assert iv["mean"] == pytest.approx((11 - 5) / 18)
  assert iv["item_half_width"] == pytest.approx(item)
  assert iv["seed_half_width"] == pytest.approx(seed)
  assert iv["half_width"] == pytest.approx(max(item, seed))
  # this case is decided by the seeds: a min() would pick the item width
  assert seed > item


def test_one_seed_gives_no_interval(stats):
  iv = stats.item_seed_interval(np.array([[1.0, 0.0, 1.0, 1.0]]), n_boot=N_BOOT)
  assert iv["mean"] == pytest.approx(0.75)
  assert np.isnan(iv["seed_half_width"]) and np.isnan(iv["half_width"])


def test_item_interval_is_symmetric_by_its_wider_side(stats):
  # A skewed item distribution: the bootstrap interval is asymmetric around the
  # estimate.
  row = [1] * 9 + [0]
  a = np.array([row] * 3)
  iv = stats.item_seed_interval(a, n_boot=N_BOOT)
  d = np.asarray(row, float)
  idx = np.random.default_rng(0).integers(0, 10, size=(N_BOOT, 10))
  lo, hi = np.quantile(d[idx].mean(1), [0.025, 0.975])
  assert iv["item_half_width"] == pytest.approx(max(0.9 - lo, hi - 0.9))
  assert 0.9 - lo > hi - 0.9  # the lower side is the wider one here


# -------------------------------------------------- a constructed grid, 3 seeds

# Relation half-truth outcomes per model: [seed][item], 6 items (hand-counted
# sums per seed).
REL = {
  # 2,2,2
  ("weak_order", "clip"): [
    [0, 0, 1, 0, 1, 0],
    [0, 1, 0, 0, 1, 0],
    [1, 0, 0, 0, 0, 1],
  ],
  # 1,3,2
  ("weak_order", "clip_ft"): [
    [0, 0, 1, 0, 0, 0],
    [0, 1, 0, 1, 1, 0],
    [1, 0, 0, 0, 0, 1],
  ],
  ("weak_order", "negclip_ft"): [
    [0, 1, 1, 0, 0, 0],
    [0, 1, 0, 1, 1, 1],
    [1, 0, 1, 0, 0, 1],
  ],
  # 4,5,4
  ("weak_order", "cs_ft"): [
    [1, 0, 1, 1, 0, 1],
    [1, 1, 0, 1, 1, 1],
    [1, 1, 1, 0, 0, 1],
  ],
  ("bow", "clip"): [[0] * 6, [0] * 6, [1, 0, 0, 0, 0, 0]],
  ("positional", "clip"): [
    [0, 0, 1, 1, 1, 0],
    [0, 1, 0, 0, 1, 0],
    [1, 0, 0, 0, 0, 1],
  ],
  # 2,4,2
  ("positional", "clip_ft"): [
    [0, 1, 1, 0, 0, 0],
    [0, 1, 0, 1, 1, 1],
    [1, 0, 0, 0, 0, 1],
  ],
  ("positional", "negclip_ft"): [
    [0, 1, 1, 0, 0, 0],
    [0, 1, 0, 1, 1, 1],
    [1, 0, 1, 0, 0, 1],
  ],
  # 5,5,5
  ("positional", "cs_ft"): [
    [1, 1, 1, 1, 0, 1],
    [1, 1, 0, 1, 1, 1],
    [1, 1, 1, 1, 0, 1],
  ],
}
# Retrieval hits per scene (4 scenes): i2t and t2i, the same for every seed.
I2T = {"clip_ft": [1, 1, 0, 0], "cs_ft": [1, 1, 1, 0]}
T2I = {"clip_ft": [1, 0, 0, 0], "cs_ft": [1, 1, 0, 0]}
# Relation-foil pairs of the pre-trained weak-order model (4 scenes) per seed.
FOIL = [[1, 1, 1, 0], [1, 1, 0, 1], [1, 1, 1, 1]]  # 3/4, 3/4, 1
ENTITY = {"clip": 0.8, "clip_ft": 0.7, "negclip_ft": 0.75, "cs_ft": 0.9}


def _evals(evaluate, enc, model, s):
  rel = REL[(enc, model)][s]
  i2t, t2i = I2T.get(model, [0, 1, 0, 1]), T2I.get(model, [0, 0, 1, 0])
  foil = FOIL[s] if (enc, model) == ("weak_order", "clip") else [0, 1, 0, 1]
  ev = {m: 0.0 for m in ("ht_all", "ht_ties", "relation_foil_acc")}
  ev.update(
    ht_relation=float(np.mean(rel)),
    ht_entity=ENTITY.get(model, 0.5) + 0.01 * s,
    r1=0.5 * (np.mean(i2t) + np.mean(t2i)),
  )
  ev["items"] = {
    "ht_relation": C.pack_bits(rel),
    "r1_i2t": C.pack_bits(i2t),
    "r1_t2i": C.pack_bits(t2i),
    "relation_foil_acc": C.pack_bits(foil),
  }
  return ev


def _grid(evaluate, order=(2, 0, 1)):
  """Runs listed out of seed order, so that only sorting by seed pairs them."""
  pre, ft = [], []
  for (enc, model), _ in REL.items():
    for i, s in enumerate(order):
      s = order[(i + len(pre) + len(ft)) % 3]  # a different order per model
      ev = _evals(evaluate, enc, model, s)
      if model == "clip":
        pre.append({"encoder": enc, "seed": s, "evals": ev})
      else:
        ft.append({"encoder": enc, "seed": s, "arm": model, "evals": ev})
  return {"pretrain": pre, "finetune": ft}


def _cfg():
  return types.SimpleNamespace(
    encoders=("weak_order", "bow", "positional"),
    arms=("clip_ft", "negclip_ft", "cs_ft"),
    n_test=4,
  )


def _derived(evaluate):
  cfg, grid = _cfg(), _grid(evaluate)
  summary = evaluate.summarize(cfg, grid)
  items = evaluate.item_outcomes(cfg, grid, 6)
  return evaluate.derived_metrics(
    summary, {"relation": 0.5}, items, n_boot=N_BOOT
  ), items


def test_summarize_and_items_order_every_model_by_seed(evaluate):
  cfg, grid = _cfg(), _grid(evaluate)
  s = evaluate.summarize(cfg, grid)
  items = evaluate.item_outcomes(cfg, grid, 6)
  assert items["n"] == {"ht_relation": 6, "r1": 4, "relation_foil_acc": 4}
  for (enc, model), rel in REL.items():
    assert s[enc][model]["ht_relation"] == pytest.approx(
      [np.mean(r) for r in rel]
    )
    got = evaluate.seeds_by_items(
      items["outcomes"][enc][model], "ht_relation", 6
    )
    np.testing.assert_array_equal(got, rel)
  assert set(s["bow"]) == {"clip"}


def test_derived_metrics(evaluate):
  d, _ = _derived(evaluate)
  rel = {k: np.array(v, float) for k, v in REL.items()}
  w = lambda m: rel[("weak_order", m)]
  p = lambda m: rel[("positional", m)]
  assert d["n_seeds"] == 3 and d["n_relation_items"] == 6
  # pre-trained weak-order CLIP: 6 of 18 relation triples right
  assert d["baseline_ht_relation"] == pytest.approx(6 / 18)
  # 2/6 every seed
  assert d["baseline_ht_relation_seed_ci"] == pytest.approx(0.0, abs=1e-12)
  assert d["baseline_ht_relation_ci"] == pytest.approx(
    _boot_half(w("clip").mean(0), 0 * w("clip")[0])
  )
  assert d["bow_baseline_ht_relation"] == pytest.approx(1 / 18)
  # CS minus plain fine-tuning: (13 - 6) / 18
  assert d["cs_minus_clip_ft_ht_relation"] == pytest.approx(7 / 18)
  seed = _seed_half(w("cs_ft").mean(1), w("clip_ft").mean(1))
  item = _boot_half(w("cs_ft").mean(0), w("clip_ft").mean(0))
  assert d["cs_minus_clip_ft_ht_relation_seed_ci"] == pytest.approx(seed)
  assert d["cs_minus_clip_ft_ht_relation_item_ci"] == pytest.approx(item)
  assert d["cs_minus_clip_ft_ht_relation_ci"] == pytest.approx(max(seed, item))
  # CS minus NegCLIP: 13 - (2 + 4 + 3) = 4 of 18
  assert d["cs_minus_negclip_ft_ht_relation"] == pytest.approx(4 / 18)
  # the CS model's own accuracy (the chance guard): 13 / 18
  assert d["cs_ht_relation"] == pytest.approx(13 / 18)
  assert d["cs_ht_relation_seed_ci"] == pytest.approx(
    _seed_half(w("cs_ft").mean(1), [0, 0, 0])
  )
  # retrieval per scene: cs (1, 1, .5, 0) - clip_ft (1, .5, 0, 0) = 1/4 of a
  # point per scene
  assert d["cs_minus_clip_ft_r1"] == pytest.approx(0.25)
  assert d["cs_minus_clip_ft_r1_item_ci"] == pytest.approx(
    _boot_half([1, 1, 0.5, 0], [1, 0.5, 0, 0])
  )
  # entity: (0.9 - 0.7) per seed
  assert d["cs_minus_clip_ft_ht_entity"] == pytest.approx(0.2)
  # the order-aware control: positional plain fine-tuning minus weak-order plain
  # fine-tuning, (8 - 6) / 18, and its own CS gain (15 - 8) / 18
  assert d["order_aware_clip_ft_minus_clip_ft_ht_relation"] == pytest.approx(
    2 / 18
  )
  c_item = _boot_half(p("clip_ft").mean(0), w("clip_ft").mean(0))
  c_seed = _seed_half(p("clip_ft").mean(1), w("clip_ft").mean(1))
  assert d["order_aware_clip_ft_minus_clip_ft_ht_relation_ci"] == pytest.approx(
    max(c_item, c_seed)
  )
  assert d["order_aware_clip_ft_ht_relation"] == pytest.approx(8 / 18)
  assert d["order_aware_cs_minus_clip_ft_ht_relation"] == pytest.approx(7 / 18)


def test_the_relation_precondition_reads_the_lower_end(evaluate):
  d, _ = _derived(evaluate)
  # foil pairs of the pre-trained model: seeds 3/4, 3/4, 4/4 -> mean 5/6
  foil = np.array(FOIL, float)
  assert d["baseline_relation_foil_acc"] == pytest.approx(10 / 12)
  half = max(
    _boot_half(foil.mean(0), 0 * foil[0]), _seed_half(foil.mean(1), [0, 0, 0])
  )
  assert d["baseline_relation_foil_acc_ci"] == pytest.approx(half)
  assert d["baseline_relation_foil_acc_lo"] == pytest.approx(10 / 12 - half)


def test_the_cs_models_own_accuracy_for_the_chance_guard(evaluate):
  d, items = _derived(evaluate)
  # swap the roles of cs_ft and clip_ft: the guard must follow the CS model
  o = items["outcomes"]["weak_order"]
  o["cs_ft"], o["clip_ft"] = o["clip_ft"], o["cs_ft"]
  cfg, grid = _cfg(), _grid(evaluate)
  again = evaluate.derived_metrics(
    evaluate.summarize(cfg, grid), {"relation": 0.5}, items, n_boot=N_BOOT
  )
  assert d["cs_ht_relation"] == pytest.approx(13 / 18)
  assert again["cs_ht_relation"] == pytest.approx(6 / 18)


def test_rejudge_recomputes_the_derived_block(evaluate):
  cfg, grid = _cfg(), _grid(evaluate)
  summary = evaluate.summarize(cfg, grid)
  items = evaluate.item_outcomes(cfg, grid, 6)
  d = evaluate.derived_metrics(summary, {"relation": 0.5}, items, n_boot=N_BOOT)
  metrics = {"summary": summary, "chance": {"relation": 0.5}, "items": items}
  assert evaluate.rejudge_metrics(metrics, {"n_boot": N_BOOT}) == d
