"""results.json contents, config validation and data-directory resolution."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import matplotlib
import ml_collections
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from jaxpapers import core  # noqa: E402


def test_results_json_contents(tmp_path):
  fig, ax = plt.subplots()
  ax.plot([0, 1], [1, 0])
  png = core.save_figure(fig, tmp_path, "curve")
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  cfg = ml_collections.ConfigDict({"lr": 1e-3, "model": {"width": 8}})
  path = core.write_results(tmp_path, metrics={"loss": jnp.float32(0.5), "acc": np.array([1, 2])},
                            config=cfg, table_markdown="| a |\n|---|\n| 1 |", wall_time_s=1.5)
  rec = json.loads(path.read_text())
  assert rec["metrics"] == {"loss": 0.5, "acc": [1, 2]}
  assert rec["config"] == {"lr": 1e-3, "model": {"width": 8}}
  assert rec["plots"] == ["curve.png"]
  assert rec["wall_time_s"] == 1.5
  env = rec["environment"]
  assert env["device_count"] == jax.device_count() == 8
  assert env["device_kind"] == jax.devices()[0].device_kind
  assert env["versions"]["jax"] == jax.__version__
  assert core.read_results(tmp_path)["table_markdown"].startswith("| a |")


def test_save_figure_rejects_bad_name(tmp_path):
  fig, _ = plt.subplots()
  with pytest.raises(ValueError, match="bare file stem"):
    core.save_figure(fig, tmp_path, "a/b.png")
  plt.close(fig)


@dataclasses.dataclass(frozen=True)
class Model:
  width: int = 8


@dataclasses.dataclass(frozen=True)
class Cfg:
  lr: float
  model: Model = Model()


def test_config_to_dataclass_and_unknown_fields():
  cfg = core.config_to_dataclass(ml_collections.ConfigDict({"lr": 0.1, "model": {"width": 4}}), Cfg)
  assert cfg == Cfg(lr=0.1, model=Model(width=4))
  with pytest.raises(ValueError, match=r"Unknown config field\(s\) \['lrr'\].*allowed fields are \['lr', 'model'\]"):
    core.config_to_dataclass({"lrr": 0.1}, Cfg)
  with pytest.raises(ValueError, match=r"Unknown config field\(s\) \['depth'\] for Model"):
    core.config_to_dataclass({"lr": 0.1, "model": {"depth": 2}}, Cfg)
  with pytest.raises(ValueError, match="Missing required"):
    core.config_to_dataclass({}, Cfg)


def test_validators():
  assert core.validate_choice("adam", name="optimizer", allowed=["adam", "sgd"]) == "adam"
  with pytest.raises(ValueError, match=r"optimizer must be one of \['adam', 'sgd'\], got 'adm'"):
    core.validate_choice("adm", name="optimizer", allowed=["adam", "sgd"])
  with pytest.raises(ValueError, match="lr must be > 0"):
    core.validate_positive(0.0, name="lr")
  assert core.validate_positive(0, name="wd", allow_zero=True) == 0
  with pytest.raises(TypeError, match="lr must be a real number"):
    core.validate_positive("1", name="lr")


def test_resolve_data_dir_order(tmp_path, monkeypatch):
  explicit = tmp_path / "explicit"
  (explicit / "hg").mkdir(parents=True)
  env = tmp_path / "env"
  (env / "hg").mkdir(parents=True)
  monkeypatch.setenv(core.DATA_DIR_ENV_VAR, str(env))
  assert core.resolve_data_dir(explicit, subdir="hg") == (explicit / "hg").resolve()
  assert core.resolve_data_dir(None, subdir="hg") == (env / "hg").resolve()
  with pytest.raises(FileNotFoundError) as err:
    core.resolve_data_dir(tmp_path / "nope", subdir="missing_set")
  msg = str(err.value)
  assert "data_dir argument" in msg and "JAXPAPERS_DATA_DIR" in msg and "../shared/data" in msg
  assert core.resolve_data_dir(None, subdir="missing_set", required=False) is None
