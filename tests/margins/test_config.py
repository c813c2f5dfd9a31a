"""Every config file sets every field of its frozen typed config, which has no defaults.

``configs/e4*.py`` configure ``e4.py`` (``e4.Config``); the others ``train.py`` (``train.Config``).
"""

import dataclasses
import importlib
import pathlib

import pytest

from experiments.margins import e4, train
from experiments.margins.configs import default
from experiments.margins.configs import e4 as e4_config
from jaxpapers import core

CONFIGS = sorted(p.stem for p in pathlib.Path(default.__file__).parent.glob("[!_]*.py"))


def _config_class(name):
  return e4.Config if name.startswith("e4") else train.Config


@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_file_builds_the_frozen_config(name):
  config = importlib.import_module(f"{default.__package__}.{name}").get_config()
  cfg = core.config_to_dataclass(config, _config_class(name))
  with pytest.raises(dataclasses.FrozenInstanceError):
    setattr(cfg, dataclasses.fields(cfg)[0].name, None)


@pytest.mark.parametrize(
  "module, cls, field",
  [(default, train.Config, f.name) for f in dataclasses.fields(train.Config)]
  + [(e4_config, e4.Config, f.name) for f in dataclasses.fields(e4.Config)],
)
def test_a_config_without_a_field_is_refused(module, cls, field):
  config = module.get_config().to_dict()
  del config[field]
  with pytest.raises(ValueError, match=rf"Missing required config field\(s\) \['{field}'\]"):
    core.config_to_dataclass(config, cls)
