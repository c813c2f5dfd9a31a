"""The config files are the only place a default lives: each one builds the typed Config."""

import dataclasses
import importlib
import pathlib

import pytest

from experiments.msretrieval import train
from experiments.msretrieval.configs import default
from jaxpapers import core

CONFIGS = sorted(
  p.stem
  for p in (pathlib.Path(train.__file__).parent / "configs").glob("*.py")
  if p.stem != "__init__"
)
FIELDS = [f.name for f in dataclasses.fields(train.Config)]


def test_config_is_frozen_and_every_field_required():
  assert train.Config.__dataclass_params__.frozen
  for f in dataclasses.fields(train.Config):
    assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, f.name


@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_file_builds_the_dataclass(name):
  cfg = importlib.import_module(f"experiments.msretrieval.configs.{name}").get_config()
  built = core.config_to_dataclass(cfg, train.Config)
  assert {f: getattr(built, f) for f in FIELDS} == {f: cfg[f] for f in FIELDS}


@pytest.mark.parametrize("field", FIELDS)
def test_a_config_without_a_field_is_rejected(field):
  cfg = default.get_config().to_dict()
  del cfg[field]
  with pytest.raises(ValueError, match=rf"Missing required config field\(s\) \['{field}'\]"):
    core.config_to_dataclass(cfg, train.Config)
