"""Every config file sets every field of the frozen typed config, which has no defaults."""

import dataclasses
import importlib
import pathlib

import pytest

from experiments.evidence_coverage import train
from experiments.evidence_coverage.configs import default
from jaxpapers import core

CONFIGS = sorted(p.stem for p in pathlib.Path(default.__file__).parent.glob("[!_]*.py"))


@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_file_builds_the_frozen_config(name):
  config = importlib.import_module(f"{default.__package__}.{name}").get_config()
  cfg = core.config_to_dataclass(config, train.Config)
  with pytest.raises(dataclasses.FrozenInstanceError):
    setattr(cfg, dataclasses.fields(cfg)[0].name, None)


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(train.Config)])
def test_a_config_without_a_field_is_refused(field):
  config = default.get_config().to_dict()
  del config[field]
  with pytest.raises(ValueError, match=rf"Missing required config field\(s\) \['{field}'\]"):
    core.config_to_dataclass(config, train.Config)
