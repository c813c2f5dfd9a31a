"""Every experiment refuses a config without seeds before it computes anything.

Zero, negative or empty seeds used to surface far from the config (NumPy's "need
at least one array to stack", an IndexError, an unbound local), or not at all;
the error must name the field. Each call stops at the config check, so the whole
file takes seconds.
"""

import importlib

import pytest

# (experiment, the field path in its smoke config, the bad value, the name in
# the error)
CASES = [
  ("sscl", "seeds", 0, "seeds"),
  ("cs_clip", "seeds", 0, "seeds"),
  ("dense_limits", "seeds", 0, "seeds"),
  ("lanr", "seeds", 0, "seeds"),
  ("sola", "seeds", -1, "seeds"),
  ("flashssm3d", "seeds", 0, "seeds"),
  ("margins", "seeds", 0, "seeds"),
  ("bayes_memory", "seeds", (), "seeds"),
  ("dual_rate", "eval_seeds", (), "eval_seeds"),
  ("dual_rate", "train_seeds", (1, 1), "train_seeds"),
  ("soda", "digits.num_seeds", 0, "digits.num_seeds"),
  ("soda", "digits.muon_num_seeds", -2, "digits.muon_num_seeds"),
]


@pytest.mark.parametrize(("paper", "field", "value", "name"), CASES)
def test_bad_seeds_are_a_config_error_naming_the_field(
  tmp_path, paper, field, value, name
):
  config = importlib.import_module(
    f"experiments.{paper}.configs.smoke"
  ).get_config()
  train = importlib.import_module(f"experiments.{paper}.train")
  *parents, leaf = field.split(".")
  node = config
  for p in parents:
    node = node[p]
  node[leaf] = value
  with pytest.raises(
    ValueError,
    match=(rf"^{name} must (be a number of seeds|name at least|not )"),
  ):
    train.train_and_evaluate(config, tmp_path / "w")
  assert not (tmp_path / "w" / "results.json").exists()


def test_margins_e4_refuses_zero_seeds(tmp_path):
  from experiments.margins import e4
  from experiments.margins.configs import e4_smoke

  config = e4_smoke.get_config()
  config.seeds = 0
  with pytest.raises(
    ValueError, match=(r"^seeds must be a number of seeds >= 1")
  ):
    e4.train_and_evaluate(config, tmp_path)
