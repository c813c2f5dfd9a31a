"""An experiment's config files are the only place its defaults live.

Most experiments read their settings through ``core.config_view`` (``VIEWS``): every
``configs/*.py`` file must have exactly its base config's fields, each of the same kind, and a
config missing any one field is refused by name. The others (``EXPERIMENTS``) read a frozen
dataclass with no defaults, built by ``core.config_to_dataclass``: every config file must set
every field (and build the dataclass with exactly its values).
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib

import pytest

from jaxpapers import core

# experiment -> {config-file prefix: the module whose ``Config`` it builds}; "" matches every
# file not claimed by a longer prefix.
EXPERIMENTS = {
  "cs_clip": {"": "train"},
}
# experiment -> {config-file prefix: its base config}; "" as above.
VIEWS = {
  "bayes_memory": {"": "default"},
  "denseam": {"": "default"},
  "evidence_coverage": {"": "default"},
  "goskills": {"": "default"},
  "leansearch": {"": "default"},
  "margins": {"": "default", "e4": "e4"},
  "mlaire": {"": "default"},
  "msretrieval": {"": "default"},
  "sscl": {"": "default"},
}
ROOT = pathlib.Path(__file__).resolve().parent.parent


def _config_class(paper: str, config_name: str) -> type:
  prefixes = EXPERIMENTS[paper]
  prefix = max((p for p in prefixes if config_name.startswith(p)), key=len)
  return importlib.import_module(f"experiments.{paper}.{prefixes[prefix]}").Config


def _cases(experiments=EXPERIMENTS) -> list[tuple[str, str]]:
  return [
    (paper, p.stem)
    for paper in experiments
    for p in sorted((ROOT / "experiments" / paper / "configs").glob("[!_]*.py"))
  ]


def _base(paper: str, config_name: str):
  prefixes = VIEWS[paper]
  return _get_config(
    paper, prefixes[max((p for p in prefixes if config_name.startswith(p)), key=len)]
  )


def _get_config(paper: str, name: str):
  return importlib.import_module(f"experiments.{paper}.configs.{name}").get_config()


@pytest.mark.parametrize("paper", sorted({p for ps in EXPERIMENTS.values() for p in ps.values()}))
def test_module_names_exist(paper):
  for exp, modules in EXPERIMENTS.items():
    if paper in modules.values():
      assert (ROOT / "experiments" / exp / f"{paper}.py").exists(), (exp, paper)


@pytest.mark.parametrize("paper, name", _cases())
def test_every_config_file_builds_the_frozen_config(paper, name):
  cls = _config_class(paper, name)
  assert cls.__dataclass_params__.frozen
  for f in dataclasses.fields(cls):
    assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, f.name
  config = _get_config(paper, name)
  built = core.config_to_dataclass(config, cls)
  for f in dataclasses.fields(cls):
    value = config[f.name]
    value = value.to_dict() if hasattr(value, "to_dict") else value
    got = getattr(built, f.name)
    assert (list(got) if isinstance(got, tuple) else got) == (
      list(value) if isinstance(value, tuple | list) else value
    ) or dataclasses.is_dataclass(got), (paper, name, f.name)


@pytest.mark.parametrize(
  "paper, name, field",
  [
    (paper, name, f.name)
    for paper, prefixes in EXPERIMENTS.items()
    for name in ["default", *(p for p in prefixes if p)]
    for f in dataclasses.fields(_config_class(paper, name))
  ],
)
def test_a_config_without_a_field_is_refused(paper, name, field):
  config = _get_config(paper, name).to_dict()
  del config[field]
  with pytest.raises(ValueError, match=rf"Missing required config field\(s\) \['{field}'\]"):
    core.config_to_dataclass(config, _config_class(paper, name))


@pytest.mark.parametrize("paper, name", _cases(VIEWS))
def test_every_config_file_fits_its_base_config(paper, name):
  view = core.config_view(_get_config(paper, name), _base(paper, name))
  assert set(view) == set(_base(paper, name)) - set(core.config.HARNESS_FIELDS)


@pytest.mark.parametrize(
  "paper, name, field",
  [
    (paper, base, field)
    for paper, prefixes in VIEWS.items()
    for base in prefixes.values()
    for field in _get_config(paper, base)
    if field not in core.config.HARNESS_FIELDS
  ],
)
def test_a_config_without_a_field_is_refused_by_its_view(paper, name, field):
  config = _get_config(paper, name).to_dict()
  del config[field]
  with pytest.raises(ValueError, match=rf"\['{field}'\] missing"):
    core.config_view(config, _get_config(paper, name))
