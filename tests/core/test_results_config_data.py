"""results.json contents, config validation and data-directory resolution."""

import dataclasses
import json
import sys

import jax
import jax.numpy as jnp
import matplotlib
import ml_collections
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from jaxpapers import core
from jaxpapers.core import data as core_data


def test_results_json_contents(tmp_path):
  fig, ax = plt.subplots()
  ax.plot([0, 1], [1, 0])
  png = core.save_figure(fig, tmp_path, "curve")
  assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  cfg = ml_collections.ConfigDict({"lr": 1e-3, "model": {"width": 8}})
  path = core.write_results(
    tmp_path,
    metrics={"loss": jnp.float32(0.5), "acc": np.array([1, 2])},
    config=cfg,
    table_markdown="| a |\n|---|\n| 1 |",
    wall_time_s=1.5,
  )
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
  cfg = core.config_to_dataclass(
    ml_collections.ConfigDict({"lr": 0.1, "model": {"width": 4}}), Cfg
  )
  assert cfg == Cfg(lr=0.1, model=Model(width=4))
  with pytest.raises(
    ValueError,
    match=(
      r"Unknown config field\(s\) \['lrr'\].*allowed fields are \['lr', "
      r"'model'\]"
    ),
  ):
    core.config_to_dataclass({"lrr": 0.1}, Cfg)
  with pytest.raises(
    ValueError, match=(r"Unknown config field\(s\) \['depth'\] for Model")
  ):
    core.config_to_dataclass({"lr": 0.1, "model": {"depth": 2}}, Cfg)
  with pytest.raises(ValueError, match="Missing required"):
    core.config_to_dataclass({}, Cfg)


def test_validators():
  assert (
    core.validate_choice("adam", name="optimizer", allowed=["adam", "sgd"])
    == "adam"
  )
  with pytest.raises(
    ValueError, match=(r"optimizer must be one of \['adam', 'sgd'\], got 'adm'")
  ):
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
  assert (
    core.resolve_data_dir(explicit, subdir="hg") == (explicit / "hg").resolve()
  )
  assert core.resolve_data_dir(None, subdir="hg") == (env / "hg").resolve()
  with pytest.raises(FileNotFoundError) as err:
    core.resolve_data_dir(tmp_path / "nope", subdir="missing_set")
  msg = str(err.value)
  assert (
    "data_dir argument" in msg
    and "JAXPAPERS_DATA_DIR" in msg
    and "../shared/data" in msg
  )
  monkeypatch.delenv(core.DATA_DIR_ENV_VAR)
  monkeypatch.setattr(core_data, "_SIBLING_SHARED", tmp_path / "no_shared")
  assert (
    core.resolve_data_dir(None, subdir="missing_set", required=False) is None
  )


@pytest.fixture
def places(tmp_path, monkeypatch):
  """A data_dir argument, an environment directory and a ../shared/data, each
  holding 'hg'."""
  out = {}
  for name in ("arg", "env", "shared"):
    (tmp_path / name / "hg").mkdir(parents=True)
    out[name] = tmp_path / name
  monkeypatch.setattr(core_data, "_SIBLING_SHARED", out["shared"])
  monkeypatch.delenv(core.DATA_DIR_ENV_VAR, raising=False)
  return out


def test_locate_data_dir_says_which_place_it_used(places, monkeypatch):
  hg = lambda name: (places[name] / "hg").resolve()
  assert core.locate_data_dir(None, subdir="hg") == (
    hg("shared"),
    "../shared/data beside the checkout",
  )
  monkeypatch.setenv(core.DATA_DIR_ENV_VAR, str(places["env"]))
  assert core.locate_data_dir("", subdir="hg") == (
    hg("env"),
    "$JAXPAPERS_DATA_DIR",
  )
  assert core.locate_data_dir(places["arg"], subdir="hg") == (
    hg("arg"),
    "data_dir argument",
  )
  monkeypatch.delenv(core.DATA_DIR_ENV_VAR)
  assert core.locate_data_dir(subdir="other", required=False) == (
    None,
    "none found",
  )


@pytest.mark.parametrize("required", [True, False])
@pytest.mark.parametrize("what", ["missing", "file", "lacks_subdir"])
def test_a_given_environment_directory_is_never_skipped(
  places, monkeypatch, what, required
):
  """$JAXPAPERS_DATA_DIR pointing nowhere (or at a folder without the set) is an error naming
  it, never a silent switch to ../shared/data (which holds 'hg' here) or to synthetic data."""
  target = {
    "missing": places["env"] / "nowhere",
    "file": places["env"] / "hg" / "a_file",
    "lacks_subdir": places["arg"].parent,  # exists, but has no 'hg'
  }[what]
  if what == "file":
    target.write_text("x")
  monkeypatch.setenv(core.DATA_DIR_ENV_VAR, str(target))
  with pytest.raises(
    FileNotFoundError, match=(r"\$JAXPAPERS_DATA_DIR = '.*' was given")
  ) as err:
    core.locate_data_dir(None, subdir="hg", required=required)
  assert str(target) in str(err.value)
  assert "never replaced" in str(err.value)


@pytest.mark.parametrize("required", [True, False])
def test_a_given_data_dir_without_the_dataset_is_an_error(places, required):
  with pytest.raises(
    FileNotFoundError, match=(r"data_dir argument .* has no 'missing_set'")
  ):
    core.locate_data_dir(places["arg"], subdir="missing_set", required=required)


@pytest.mark.parametrize("subdir", ["../env/hg", "/etc", "hg/../../env/hg"])
def test_subdir_cannot_leave_the_data_dir(places, subdir):
  with pytest.raises(
    ValueError, match=(r"subdir .* must be a relative path inside")
  ):
    core.locate_data_dir(places["arg"], subdir=subdir)


def test_resolve_inside_refuses_escapes(tmp_path):
  root = tmp_path / "root"
  (root / "inside").mkdir(parents=True)
  (tmp_path / "outside").mkdir()
  (tmp_path / "outside" / "secret.txt").write_text("s")
  (root / "out_link").symlink_to(tmp_path / "outside")
  (root / "file_link.txt").symlink_to(tmp_path / "outside" / "secret.txt")
  (root / "in_link").symlink_to(root / "inside")
  for bad in ("../outside", "inside/../../outside", str(tmp_path / "outside")):
    with pytest.raises(
      ValueError, match=(r"dataset name .* must be a relative path inside")
    ):
      core.resolve_inside(root, bad, name="dataset name")
  for bad in ("out_link", "out_link/secret.txt", "file_link.txt"):
    with pytest.raises(
      ValueError, match=(r"dataset name .* leads outside .*through a symlink")
    ):
      core.resolve_inside(root, bad, name="dataset name")
  with pytest.raises(TypeError, match="dataset name must be a path"):
    core.resolve_inside(root, 3, name="dataset name")
  # Inside: plain names, a symlink that stays inside, a not-yet-existing file, a
  # linked root.
  assert (
    core.resolve_inside(root, "inside", "x.npz")
    == (root / "inside" / "x.npz").resolve()
  )
  assert core.resolve_inside(root, "in_link") == (root / "inside").resolve()
  (tmp_path / "root_link").symlink_to(root)
  assert (
    core.resolve_inside(tmp_path / "root_link", "inside")
    == (root / "inside").resolve()
  )
  # A trusted folder above the root (e.g. a model cache whose snapshots link to
  # its blobs).
  got = core.resolve_inside(root, "out_link", within=tmp_path)
  assert got == (tmp_path / "outside").resolve()


def test_results_claims_commit_and_command(tmp_path, monkeypatch):
  cfg = ml_collections.ConfigDict(
    {
      "lr": 0.1,
      "claims": (
        dict(
          id="acc",
          statement="accuracy above 0.8",
          metric="acc",
          held=0.8,
          partly=0.5,
        ),
        dict(
          id="loss",
          statement="loss below 0.1",
          metric="loss",
          direction=("lower"),
          held=0.1,
        ),
      ),
    }
  )
  monkeypatch.setattr(
    "sys.argv",
    ["/x/experiments/demo/main.py", "--config=c.py", "--workdir=w d"],
  )
  path = core.write_results(
    tmp_path, metrics={"acc": np.float32(0.75)}, config=cfg
  )
  rec = json.loads(path.read_text())
  assert [c["verdict"] for c in rec["claims"]] == ["partly", "inconclusive"]
  assert (
    rec["claims"][0]["measured"] == 0.75
    and "missing" in rec["claims"][1]["reason"]
  )
  assert rec["config"]["claims"][0]["id"] == "acc"
  # The module that __main__ was run as (pytest's, or an xdist worker's), then
  # the arguments.
  spec = getattr(sys.modules["__main__"], "__spec__", None)
  head = (
    f"python -m {spec.name.removesuffix('.__main__')}"
    if spec
    else "python /x/experiments/demo/main.py"
  )
  assert rec["command"] == f"{head} --config=c.py '--workdir=w d'"
  git = rec["git"]
  assert git["start_commit"] is None  # not started through the app entry
  assert git["end_commit"] is None or len(git["end_commit"]) == 40
  assert git["dirty"] is None or isinstance(git["dirty"], bool)
  # verdicts issued outside the app entry cannot be shown to follow a committed
  # lock
  assert rec["registration"]["status"] == "post-hoc"
  assert "started_at" in rec and rec["written_at"]
  # claims passed explicitly win; issue_verdicts=False records values without
  # verdicts
  path = core.write_results(
    tmp_path,
    metrics={"acc": 0.9},
    config={"lr": 0.1},
    claims=cfg.claims[:1],
    issue_verdicts=False,
  )
  rec = json.loads(path.read_text())
  assert (
    rec["claims"][0]["verdict"] is None and rec["claims"][0]["measured"] == 0.9
  )
  path = core.write_results(
    tmp_path, metrics={}, config={"issue_verdicts": False, "claims": ()}
  )
  assert json.loads(path.read_text())["claims"] == []
  # a malformed claim is recorded as an error; the finished run's results are
  # still written
  path = core.write_results(
    tmp_path,
    metrics={"acc": 1.0},
    config={},
    claims=[dict(id="x", statement="s", metric="acc", held="high")],
  )
  rec = json.loads(path.read_text())
  assert rec["metrics"] == {"acc": 1.0}
  assert "held must be a real number" in rec["claims"][0]["error"]
  assert "held must be a real number" in core.claims_table(
    rec["claims"], measured_in=("c")
  )


def test_command_line_script_and_module(monkeypatch):
  import types

  monkeypatch.setitem(
    __import__("sys").modules, "__main__", types.SimpleNamespace(__spec__=None)
  )
  assert core.command_line(["bench.py", "--n=3"]) == "python bench.py --n=3"
  spec = types.SimpleNamespace(name="experiments.soda.main")
  monkeypatch.setitem(
    __import__("sys").modules, "__main__", types.SimpleNamespace(__spec__=spec)
  )
  assert core.command_line(
    ["/abs/experiments/soda/main.py", "--workdir=x"]
  ) == ("python -m experiments.soda.main --workdir=x")


def test_table_file_holds_the_recorded_table(tmp_path):
  table = "| a |\n|---|\n| 1 |"
  core.write_results(
    tmp_path, metrics={}, config={}, table_markdown=table, table_file=("t.md")
  )
  assert (tmp_path / "t.md").read_text() == core.read_results(tmp_path)[
    "table_markdown"
  ] + "\n"
  assert (tmp_path / "t.md").read_text() == table + "\n"
  # No table in the record: no file (never the text "None").
  core.write_results(
    tmp_path / "empty", metrics={}, config={}, table_file=("t.md")
  )
  assert not (tmp_path / "empty" / "t.md").exists()


@pytest.mark.parametrize("bad", ["", "a/t.md", "..", 3])
def test_table_file_must_be_a_file_name(tmp_path, bad):
  with pytest.raises(ValueError, match="table_file"):
    core.write_results(tmp_path, metrics={}, config={}, table_file=bad)
  assert not (tmp_path / "results.json").exists()


def test_table_file_only_on_process_zero(tmp_path, monkeypatch):
  monkeypatch.setattr(jax, "process_index", lambda: 1)
  core.write_results(
    tmp_path, metrics={}, config={}, table_markdown="| a |", table_file=("t.md")
  )
  assert not (tmp_path / "t.md").exists()


def test_git_info_outside_a_checkout(tmp_path):
  assert core.git_info(tmp_path) is None  # never an error
  assert core.git_info(tmp_path / "missing" / "file.txt") is None


def test_only_process_zero_writes(tmp_path, monkeypatch):
  monkeypatch.setattr(jax, "process_index", lambda: 1)
  fig, _ = plt.subplots()
  assert core.save_figure(fig, tmp_path / "p", "curve") is None
  assert core.write_results(tmp_path / "p", metrics={}, config={}) is None
  assert not (tmp_path / "p").exists()
  # closed anyway
  assert not plt.get_fignums() or fig.number not in plt.get_fignums()


def test_results_through_epath(tmp_path):
  from etils import epath

  wd = epath.Path(tmp_path) / "nested" / "run"
  fig, ax = plt.subplots()
  ax.plot([0, 1])
  png = core.save_figure(fig, wd, "c")
  assert isinstance(png, epath.Path) and png.read_bytes()[:4] == b"\x89PNG"
  path = core.write_results(str(wd), metrics={"x": 1}, config={})
  assert core.read_results(wd)["plots"] == ["c.png"]
  assert not list(wd.glob("*.tmp")) and path.name == "results.json"


def test_validate_seeds_accepts_counts_and_lists():
  assert core.validate_seeds(3, name="seeds") == 3
  assert core.validate_seeds(np.int64(2), name="seeds", min_count=2) == 2
  assert core.validate_seeds((0, 4, 2), name="seeds") == (0, 4, 2)
  assert core.validate_seeds([7], name="eval_seeds") == [7]


def test_validate_learning_rates_names_the_field():
  ok = ml_collections.ConfigDict(
    {
      "lr": 1e-3,
      "digits": {
        "adamw_lrs": (1e-3, 1e-2),
        "muon_lrs": (),
        "lr_schedule": ("cosine"),
      },
      # a search-space spec: left alone
      "space": {"lr": ("loguniform", 1e-3, 3e-2)},
      "clip": -1.0,  # not a learning rate
      "teacher": {"learning_rate": 2e-4},
    }
  )
  core.validate_learning_rates(ok)
  for path, bad in (
    ("lr", -1e-3),
    ("lr", 0.0),
    ("digits.adamw_lrs", (1e-3, float("nan"))),
    ("teacher.learning_rate", float("inf")),
    ("detector_lr", -0.5),
  ):
    cfg = ml_collections.ConfigDict(ok.to_dict())
    *parents, leaf = path.split(".")
    node = cfg
    for p in parents:
      node = node[p]
    with cfg.unlocked():
      node[leaf] = bad
    with pytest.raises(
      ValueError, match=(rf"config\.{path} must be a learning rate")
    ):
      core.validate_learning_rates(cfg)
