"""The equal-budget random search: seeded draws equal across arms, selection,
resume."""

import json
import math

import jax
import numpy as np
import pytest
from flax import nnx

from experiments.panda import main, search, train
from experiments.panda.configs import default
from experiments.panda.configs import search as search_config
from jaxpapers import core, panda
from jaxpapers import hypergraph as hg
from jaxpapers.panda import _search as panda_search


def _space():
  return dict(search_config.get_config().space)


def test_draws_are_seeded_and_match_a_hand_transcription():
  sp = _space()
  for t in range(5):
    a, b = panda.draw_trial(sp, 7, t), panda.draw_trial(sp, 7, t)
    assert a == b
    # one uniform per parameter, in SPACE_ORDER
    u = np.random.default_rng([7, t]).random(9)
    assert a["num_layers"] == (1, 2, 3)[int(u[0] * 3)]
    assert a["hidden"] == (64, 128, 256)[int(u[1] * 3)]
    assert a["dropout"] == pytest.approx(0.7 * u[2], rel=1e-12)
    assert a["lr"] == pytest.approx(1e-3 * (30.0 ** u[3]), rel=1e-12)
    assert a["wd"] == pytest.approx(1e-6 * (1e4 ** u[4]), rel=1e-12)
    assert a["heads"] == (1, 2, 4)[int(u[5] * 3)]
    assert a["phenom_steps"] == (2, 4, 8)[int(u[8] * 3)]
  assert (
    panda.draw_trial(sp, 7, 0)
    != panda.draw_trial(sp, 8, 0)
    != panda.draw_trial(sp, 7, 1)
  )
  lrs = [panda.draw_trial(sp, 0, t)["lr"] for t in range(200)]
  assert 1e-3 <= min(lrs) and max(lrs) <= 3e-2
  # log-uniform: about half the draws below the geometric midpoint
  assert 0.4 < np.mean(np.array(lrs) < math.sqrt(3e-5)) < 0.6


def test_shared_parameters_are_drawn_identically_for_both_arms():
  sp = _space()
  for backbone in ("gedi", "hgnn", "hypergcn", "phenomnn"):
    for t in range(6):
      v = panda.applicable_hparams(
        panda.draw_trial(sp, 0, t), backbone, "vanilla"
      )
      p = panda.applicable_hparams(
        panda.draw_trial(sp, 0, t), backbone, "panda"
      )
      assert "heads" in p and "heads" not in v
      assert {k: p[k] for k in v} == v
      assert set(p) - set(v) == {"heads"}
      assert ("lam0" in v) == (backbone == "phenomnn") != ("num_layers" in v)
  # the PANDA-only option's range does not shift any shared draw
  other = dict(sp, heads=("choice", (8,)))
  for t in range(6):
    a, b = panda.draw_trial(sp, 0, t), panda.draw_trial(other, 0, t)
    assert b["heads"] == 8 and {k: v for k, v in a.items() if k != "heads"} == {
      k: v for k, v in b.items() if k != "heads"
    }


def test_bad_space_names_the_parameter():
  sp = _space()
  with pytest.raises(ValueError, match="lacks.*heads"):
    panda.draw_trial({k: v for k, v in sp.items() if k != "heads"}, 0, 0)
  with pytest.raises(ValueError, match=r"space\['lr'\].*0 < lo"):
    panda.draw_trial(dict(sp, lr=("loguniform", 0.0, 1.0)), 0, 0)
  with pytest.raises(ValueError, match=r"space\['hidden'\] must start with"):
    panda.draw_trial(dict(sp, hidden=("grid", (1, 2))), 0, 0)
  with pytest.raises(ValueError, match="trial must be an int >= 0"):
    panda.draw_trial(sp, 0, -1)


def test_selection_picks_the_best_mean_validation_trial():
  trials = [
    # mean 0.60 (best test: not what is selected)
    dict(val=[0.50, 0.70], test=[0.9, 0.9]),
    dict(val=[0.60, 0.70], test=[0.1, 0.1]),  # mean 0.65, first of the tie
    dict(val=[0.65, 0.65], test=[0.2, 0.2]),  # mean 0.65
    dict(val=[0.80, 0.40], test=[0.3, 0.3]),  # mean 0.60
  ]
  assert panda.select_trial(trials) == 1
  assert panda.select_trial(trials[2:]) == 0
  with pytest.raises(ValueError, match="no trials"):
    panda.select_trial([])


def _tiny_config():
  c = search_config.get_config()
  c.data_dir = "none"
  c.synthetic_fallback = ("synthetic-small",)
  c.backbones = ("hgnn",)
  c.num_splits = 2
  c.search_splits = 2
  c.final_inits = 2
  c.trials = 2
  c.epochs = 4
  c.fast_compile = True
  c.issue_verdicts = False
  c.space = dict(
    c.space,
    num_layers=("choice", (1,)),
    hidden=("choice", (4,)),
    dropout=("choice", (0.0, 0.5)),
    heads=("choice", (1,)),
  )
  return c


def test_resume_recomputes_nothing_and_the_final_reruns_the_selected_trial(
  tmp_path, monkeypatch
):
  """The search's bookkeeping with the training replaced by a deterministic
  fake."""
  calls = []

  def fake_train(cache, arm, hp, keys, splits):
    runs = len(splits)
    assert len(keys) == runs
    calls.append((arm, hp["dropout"], runs))
    # the larger dropout wins
    v = 0.5 + hp["dropout"] / 2 + (0.01 if arm == "panda" else 0.0)
    return dict(
      val=[v] * runs,
      test=[v - 0.1 * s for s in splits],
      epoch=[3] * runs,
      params=9,
    )

  monkeypatch.setattr(panda.TrialCache, "train", fake_train)
  cfg = _tiny_config()
  cfg.trials = 3
  drops = [
    panda.draw_trial(cfg.space, cfg.seed, t)["dropout"] for t in range(3)
  ]
  best = int(np.argmax(drops))
  metrics = search.train_and_evaluate(cfg, tmp_path)
  # 3 trials x 2 arms on 2 search splits, then 2 inits x 2 splits per arm for
  # the final, in two batches of a trial's size
  assert sorted(calls) == sorted(
    [(a, d, 2) for a in ("vanilla", "panda") for d in drops]
    + [(a, drops[best], 2) for a in ("vanilla", "panda") for _ in range(2)]
  )
  ds = "synthetic-small"
  for a in ("vanilla", "panda"):
    assert metrics["per_cell"][f"{ds}|hgnn|{a}"]["selected_trial"] == best
  v = 100 * (0.5 + drops[best] / 2)
  assert metrics["per_cell"][f"{ds}|hgnn|vanilla"][
    "test_mean"
  ] == pytest.approx(v - 5.0)
  assert metrics["mean_improvement_pp"] == pytest.approx(1.0)
  assert metrics["per_pair"][f"{ds}|hgnn"]["diffs_pp"] == pytest.approx(
    [1.0, 1.0]
  )
  n = len(calls)
  again = search.train_and_evaluate(cfg, tmp_path)
  assert len(calls) == n and again["per_cell"] == metrics["per_cell"]
  # a CPU budget already spent starts nothing new and reports what is there
  cfg.trials = 4
  cfg.max_cpu_s = 1e-9
  part = search.train_and_evaluate(cfg, tmp_path / "other")
  assert (
    len(calls) == n
    and part["cells"] == 0
    and part["coverage"]["stopped_by_cpu_budget"]
  )
  # more trials on the same store: only the new trial runs (and a final if the
  # selection moves)
  cfg.max_cpu_s = 0.0
  more = search.train_and_evaluate(cfg, tmp_path)
  d3 = panda.draw_trial(cfg.space, cfg.seed, 3)["dropout"]
  new = [(a, d3, 2) for a in ("vanilla", "panda")]
  if d3 > drops[best]:
    new += [(a, d3, 2) for a in ("vanilla", "panda") for _ in range(2)]
  assert sorted(calls[n:]) == sorted(new)
  assert more["per_cell"][f"{ds}|hgnn|panda"]["selected_trial"] == (
    3 if d3 > drops[best] else best
  )


def test_finals_shared_by_two_processes_join_to_the_unshared_final(
  tmp_path, monkeypatch
):
  """``final_shard``: two workdirs compute alternate final batches; a merged run
  joins them."""
  calls = []

  def fake_train(cache, arm, hp, keys, splits):
    calls.append((arm, tuple(int(s) for s in splits)))
    v = 0.5 + hp["dropout"] / 2 + (0.01 if arm == "panda" else 0.0)
    # which keys it got
    key_bits = [float(jax.random.key_data(k).sum() % 97) for k in keys]
    return dict(
      val=[v] * len(splits), test=key_bits, epoch=list(splits), params=9
    )

  monkeypatch.setattr(panda.TrialCache, "train", fake_train)
  cfg = _tiny_config()
  # 6 runs in batches of 2: batches 0, 1, 2
  cfg.num_splits, cfg.final_inits = 2, 3
  whole = search.train_and_evaluate(cfg, tmp_path / "whole")
  finals = {
    k: v
    for k, v in train._read_cells(tmp_path / "whole").items()
    if k.count("|") == 3
  }
  # per arm: two trials and a final (batch keys have 4 bars)
  assert len(finals) == 2 * 2 + 2
  calls.clear()
  for i in (0, 1):
    cfg.final_shard = (i, 2)
    part = search.train_and_evaluate(cfg, tmp_path / f"shard{i}")
    assert part["cells"] == 0  # neither process holds every batch of a final
  # each process ran both arms' 2 trials; each of a final's 3 batches ran once
  # in all, per arm
  assert len(calls) == 2 * 2 * 2 + 3 * 2
  cfg.final_shard = (0, 1)
  cfg.report_only = True
  cfg.merge_cells_from = (str(tmp_path / "shard0"), str(tmp_path / "shard1"))
  n = len(calls)
  joined = search.train_and_evaluate(cfg, tmp_path / "joined")
  assert len(calls) == n  # joining trains nothing
  timing = ("cpu_s", "search_cpu_s", "final_cpu_s", "wall_s")
  untimed = lambda pc: {
    c: {k: v for k, v in x.items() if k not in timing} for c, x in pc.items()
  }
  assert untimed(joined["per_cell"]) == untimed(whole["per_cell"])
  got = train._read_cells(tmp_path / "joined")
  for k, v in finals.items():
    assert {x: got[k][x] for x in v if x not in timing} == {
      x: v[x] for x in v if x not in timing
    }
  cfg.final_shard = (2, 2)
  with pytest.raises(ValueError, match="final_shard"):
    search.train_and_evaluate(cfg, tmp_path / "bad")


def test_a_trial_is_the_same_alone_or_after_others_sharing_its_program(
  monkeypatch,
):
  """Trials of one structure reuse one compiled program, and reuse does not
  change a result."""
  # every trial: 1 layer, hidden 4, 1 head; lr, wd, dropout differ
  cfg = _tiny_config()
  data, _ = train.load_datasets(cfg)
  d = hg.as_undirected(data["synthetic-small"])
  alone = search.run_trial(cfg, search.trial_cache(cfg, d, "hgnn"), "panda", 1)
  # a model is built when a program is traced (and once to count parameters)
  builds = []
  model_fn = panda_search.trial_model_fn

  def counting(*a):
    fn = model_fn(*a)
    return lambda rngs: builds.append(1) or fn(rngs)

  monkeypatch.setattr(panda_search, "trial_model_fn", counting)
  cache = search.trial_cache(cfg, d, "hgnn")
  first = search.run_trial(cfg, cache, "panda", 0)
  n = len(builds)
  after = search.run_trial(cfg, cache, "panda", 1)
  final = search.run_final(cfg, cache, "panda", 1)
  # nothing traced after the first trial
  assert n > 0 and len(builds) == n and len(cache) == 1
  assert first["hp"]["dropout"] != after["hp"]["dropout"]
  for k in ("val", "test", "epoch", "params", "hp"):
    assert after[k] == alone[k], k
  assert np.asarray(final["test_runs"]).shape == (
    cfg.final_inits,
    cfg.num_splits,
  )
  # A final joined from its batch cells equals one TrialCache.train pass over
  # all its runs, also when the last batch is padded (3 runs in batches of 2),
  # on the same compiled program.
  cfg.num_splits, cfg.final_inits = 1, 3
  joined = search.run_final(cfg, cache, "panda", 1)
  hp = panda.applicable_hparams(
    panda.draw_trial(cfg.space, cfg.seed, 1), "hgnn", "panda"
  )
  keys = jax.numpy.concatenate(
    [panda.trial_keys(cfg.seed, 1, j, 1) for j in range(3)]
  )
  one = cache.train("panda", hp, keys, np.zeros(3, int))
  assert (
    joined["test_runs"]
    == (np.asarray(one["test"]) * 100).reshape(3, 1).tolist()
  )
  assert (
    joined["best_epoch_runs"] == np.asarray(one["epoch"]).reshape(3, 1).tolist()
  )
  # init 0, split 0: same run
  assert joined["test_runs"][0] == final["test_runs"][0][:1]
  assert len(builds) == n  # still nothing traced
  with pytest.raises(ValueError, match=r"batch must be an int in \[0, 2\)"):
    search.run_final_batch(cfg, cache, "panda", 1, 2)


def test_a_structure_model_depends_on_the_structure_only():
  """Trials that differ only in traced values build one model, with every
  dropout layer."""
  cfg = _tiny_config()
  data, _ = train.load_datasets(cfg)
  d = hg.backbone_input("phenomnn", data["synthetic-small"])
  base = dict(hidden=4, phenom_steps=2, heads=1, lr=0.01, wd=0.0)
  a = dict(base, dropout=0.0, lam0=0.3, lam1=2.0)
  b = dict(base, dropout=0.2, lam0=1.7, lam1=0.1)
  assert panda.trial_structure(a) == panda.trial_structure(b)
  built = [
    panda.structure_model_fn(d, "phenomnn", "panda", hp)(nnx.Rngs(0))
    for hp in (a, b)
  ]
  own = panda.trial_model_fn(d, "phenomnn", "panda", a)(nnx.Rngs(0))
  for m in (*built, own):
    assert isinstance(m, panda.PandaPhenomNN)
  for m in built:  # the nominal values, whatever the trial's
    assert (m.drop.rate, m.lam0, m.lam1) == (0.5, 1.0, 1.0)
  assert (own.drop.rate, own.lam0, own.lam1) == (0.0, 0.3, 2.0)
  sa, sb = (jax.tree.map(np.asarray, nnx.state(m, nnx.Param)) for m in built)
  jax.tree.map(np.testing.assert_array_equal, sa, sb)
  wider = panda.structure_model_fn(d, "phenomnn", "panda", dict(a, hidden=8))(
    nnx.Rngs(0)
  )
  size = lambda m: sum(x.size for x in jax.tree.leaves(nnx.state(m, nnx.Param)))
  assert size(wider) > size(built[0])


def test_fewer_runs_per_program_give_the_same_runs(tmp_path, monkeypatch):
  """``runs_per_program``: the same runs, keys and splits through a smaller
  program batch."""
  cfg = _tiny_config()
  cfg.num_splits = cfg.search_splits = 3
  data, _ = train.load_datasets(cfg)
  d = hg.as_undirected(data["synthetic-small"])
  hp = panda.applicable_hparams(
    panda.draw_trial(cfg.space, cfg.seed, 1), "hgnn", "vanilla"
  )
  # the keys matter: a run given another run's key has other losses
  hp["dropout"] = 0.5
  keys = jax.numpy.concatenate(
    [panda.trial_keys(cfg.seed, 1, j, 3) for j in range(2)]
  )
  splits = np.tile(np.arange(3), 2)  # 6 runs: two batches of 3
  sizes, losses = [], []

  def recording(cache):  # records each call of the cache's compiled program
    program = cache.program

    def prog(*a):
      run, params = program(*a)

      def rec(data, keys, *r, **k):
        hist = run(data, keys, *r, **k)
        sizes.append(len(keys))
        losses.append(np.asarray(hist["loss"], np.float64))
        return hist

      return rec, params

    cache.program = prog
    return cache

  whole = recording(search.trial_cache(cfg, d, "hgnn")).train(
    "vanilla", hp, keys, splits
  )
  assert sizes == [3, 3]
  ref = np.concatenate(losses)  # [6 runs, epochs]
  # every run differs from the others
  assert len({tuple(np.round(x, 4)) for x in ref}) == 6
  for rpp, want in ((1, [1] * 6), (5, [3, 3])):
    sizes.clear()
    losses.clear()
    cfg.runs_per_program = rpp
    got = recording(search.trial_cache(cfg, d, "hgnn")).train(
      "vanilla", hp, keys, splits
    )
    assert sizes == want, rpp
    np.testing.assert_allclose(
      np.concatenate(losses), ref, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(got["val"], whole["val"], atol=1e-6)
    np.testing.assert_allclose(got["test"], whole["test"], atol=1e-6)
    assert got["epoch"] == whole["epoch"] and got["params"] == whole["params"]
  for bad in (0, -1, 1.5, True, "2"):
    with pytest.raises(
      ValueError, match=("runs_per_program must be None or a positive int")
    ):
      panda.TrialCache(d, "hgnn", epochs=1, runs=3, runs_per_program=bad)
  cfg.runs_per_program = 0
  with pytest.raises(
    ValueError, match=("runs_per_program must be None or a positive int, got 0")
  ):
    search.train_and_evaluate(cfg, tmp_path)


@pytest.mark.slow
def test_search_end_to_end_and_resume_recomputes_nothing(tmp_path, monkeypatch):
  cfg = _tiny_config()
  metrics = search.train_and_evaluate(cfg, tmp_path)
  cells = json.loads(json.dumps(train._read_cells(tmp_path)))
  ds = "synthetic-small"
  finals = [
    f"{ds}|hgnn|{a}|final{metrics['per_cell'][f'{ds}|hgnn|{a}']['selected_trial']:03d}"
    for a in ("vanilla", "panda")
  ]
  assert sorted(cells) == sorted(
    [
      f"{ds}|hgnn|{a}|trial{t:03d}"
      for a in ("vanilla", "panda")
      for t in range(2)
    ]
    + finals
    # 2 inits x 2 splits, by 2
    + [f"{f}|batch{k:02d}" for f in finals for k in range(2)]
  )
  for a in ("vanilla", "panda"):
    trials = [cells[f"{ds}|hgnn|{a}|trial{t:03d}"] for t in range(2)]
    final = cells[f"{ds}|hgnn|{a}|final{panda.select_trial(trials):03d}"]
    assert final["hp"] == trials[panda.select_trial(trials)]["hp"]
    assert np.asarray(final["test_runs"]).shape == (2, 2)  # inits x splits
    assert metrics["per_cell"][f"{ds}|hgnn|{a}"]["test_mean"] == pytest.approx(
      np.mean(final["test_runs"])
    )
  assert metrics["coverage"]["pairs"] == [f"{ds}|hgnn"]
  pc = metrics["per_cell"]
  assert metrics["mean_improvement_pp"] == pytest.approx(
    pc[f"{ds}|hgnn|panda"]["test_mean"] - pc[f"{ds}|hgnn|vanilla"]["test_mean"]
  )
  assert metrics["per_pair"][f"{ds}|hgnn"]["splits"] == 2
  res = json.loads((tmp_path / "results.json").read_text())
  assert "PANDA - vanilla" in res["table_markdown"]

  def boom(*a, **k):
    raise AssertionError("a finished cell was recomputed")

  monkeypatch.setattr(search, "run_trial", boom)
  monkeypatch.setattr(search, "run_final", boom)
  monkeypatch.setattr(search, "run_final_batch", boom)
  again = search.train_and_evaluate(cfg, tmp_path)
  assert again["per_cell"] == metrics["per_cell"]
  # the binary's entry point dispatches a config with a search space to the
  # search
  assert (
    main.train_and_evaluate(cfg, tmp_path)["per_cell"] == metrics["per_cell"]
  )
  with pytest.raises(
    ValueError, match=(r"unknown config field\(s\) \[.*'space'")
  ):
    # the fixed sweep's view refuses the search fields
    train.train_and_evaluate(cfg, tmp_path)


def test_prior_flags_split_cells_at_and_below_the_majority_predictor():
  majority = {"a": {"mean": 30.0, "std": 1.0}, "b": {"mean": 20.0, "std": 0.0}}
  finals = {
    "a|hgnn|vanilla": {"test_mean": 29.1},  # 0.9 below: below, not "at"
    "a|hgnn|panda": {"test_mean": 30.4},  # within 0.5 above: at
    "a|gedi|vanilla": {"test_mean": 29.6},  # within 0.5 below: at
    "a|gedi|panda": {"test_mean": 35.0},  # above the prior: neither
    "b|hgnn|vanilla": {"test_mean": 19.5},  # exactly 0.5 below: below
    "b|hgnn|panda": {"test_mean": 20.5},  # exactly 0.5 above: neither
    "c|hgnn|vanilla": {"test_mean": 0.0},  # no baseline for set c: neither
  }
  flags = train.prior_flags(finals, majority)
  assert flags["cells_at_majority"] == ["a|gedi|vanilla", "a|hgnn|panda"]
  assert flags["cells_below_majority"] == ["a|hgnn|vanilla", "b|hgnn|vanilla"]
  narrow = train.prior_flags(finals, majority, band=0.2)
  assert narrow["cells_at_majority"] == []
  assert narrow["cells_below_majority"] == [
    "a|gedi|vanilla",
    "a|hgnn|vanilla",
    "b|hgnn|vanilla",
  ]


def test_search_config_keeps_the_default_claim_rule():
  """The same claim and rule; only the parameter-matched control (no matched arm
  here) is left out."""
  (search,), (dflt,) = (
    search_config.get_config().claims,
    default.get_config().claims,
  )
  assert "controls" not in search and dflt["controls"]
  assert search == {k: v for k, v in dflt.items() if k != "controls"}


# a layer stack; unrolled steps
@pytest.mark.parametrize("backbone", ["hgnn", "phenomnn"])
def test_match_hidden_is_the_closest_width_by_brute_force(backbone):
  """PANDA's width at the vanilla arm's parameter count: the best of every width
  up to 20."""
  cfg = _tiny_config()
  data, _ = train.load_datasets(cfg)
  d = hg.backbone_input(backbone, data["synthetic-small"])
  draw = panda.draw_trial(_space(), 0, 3)
  v = dict(panda.applicable_hparams(draw, backbone, "vanilla"), hidden=8)
  p = dict(panda.applicable_hparams(draw, backbone, "panda"), heads=2)
  target = panda.count_params(panda.trial_model_fn(d, backbone, "vanilla", v))
  h, n = panda.match_hidden(d, backbone, "panda", p, target, max_hidden=20)
  counts = {
    w: panda.count_params(
      panda.trial_model_fn(d, backbone, "panda", dict(p, hidden=w))
    )
    for w in range(1, 21)
  }
  dev = {w: abs(c / target - 1) for w, c in counts.items()}
  assert n == counts[h] and dev[h] == min(dev.values())
  # the narrower width on a tie
  assert h == min(w for w in dev if dev[w] == dev[h])
  assert list(counts.values()) == sorted(counts.values())
  # the vanilla arm matched to its own count gets its own width back
  assert panda.match_hidden(
    d, backbone, "vanilla", v, target, max_hidden=20
  ) == (8, target)
  with pytest.raises(ValueError, match="target must be an int >= 1"):
    panda.match_hidden(d, backbone, "panda", p, 0)


def test_equal_parameter_search_matches_every_panda_trial(
  tmp_path, monkeypatch
):
  """``match_params``: PANDA's width per draw, the recorded deviation, the
  two-level interval."""
  seen = []

  def fake_train(cache, arm, hp, keys, splits):
    seen.append((arm, dict(hp)))
    n = panda.count_params(
      panda.trial_model_fn(cache.data, cache.backbone, arm, hp)
    )
    v = 0.5 + hp["dropout"] / 2 + (0.01 if arm == "panda" else 0.0)
    test = [v - 0.1 * s + (0.02 * s if arm == "panda" else 0.0) for s in splits]
    return dict(
      val=[v] * len(splits), test=test, epoch=[3] * len(splits), params=n
    )

  monkeypatch.setattr(panda.TrialCache, "train", fake_train)
  cfg = _tiny_config()
  cfg.match_params = True
  cfg.space = dict(cfg.space, hidden=("choice", (24,)), heads=("choice", (2,)))
  metrics = search.train_and_evaluate(cfg, tmp_path)
  data, _ = train.load_datasets(cfg)
  d = hg.backbone_input("hgnn", data["synthetic-small"])
  devs = []
  for t in range(cfg.trials):
    draw = panda.draw_trial(cfg.space, cfg.seed, t)
    v = panda.applicable_hparams(draw, "hgnn", "vanilla")
    p = panda.applicable_hparams(draw, "hgnn", "panda")
    target = panda.count_params(panda.trial_model_fn(d, "hgnn", "vanilla", v))
    h, n = panda.match_hidden(d, "hgnn", "panda", p, target)
    assert ("panda", dict(p, hidden=h)) in seen and ("vanilla", v) in seen
    # the heads' extra parameters are paid for with a narrower per-head width
    assert h < 24
    devs.append(abs(n / target - 1))
  # finals too
  assert all(hp["hidden"] != 24 for arm, hp in seen if arm == "panda")
  assert metrics["param_match"] == dict(
    max_abs_dev=pytest.approx(max(devs)), trials_matched=2
  )
  assert metrics["coverage"]["epochs"] == cfg.epochs
  cells = metrics["per_cell"]
  diff = np.subtract(
    *(
      cells[f"synthetic-small|hgnn|{a}"]["split_test"]
      for a in ("panda", "vanilla")
    )
  )
  b = core.cluster_bootstrap(100 * diff[None, :], seed=0)
  der = metrics["derived"]
  assert der["mean_improvement_cluster95_pp"] == pytest.approx([b.lo, b.hi])
  assert der["mean_improvement_cluster95_half_pp"] == pytest.approx(
    max(b.estimate - b.lo, b.hi - b.estimate)
  )
  assert b.estimate == pytest.approx(metrics["mean_improvement_pp"])
