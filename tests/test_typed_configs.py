"""An experiment's config files are the only place its defaults live.

The experiments below read their settings through ``core.config_view`` of their
base config (``configs/default.py``, or the base of a second binary): every
``configs/*.py`` file must have exactly its base's fields, each of the same
kind, and a config missing any one field is refused by name.
"""

from __future__ import annotations

import importlib
import pathlib

import pytest

from jaxpapers import core

# experiment -> {config-file prefix: its base config}; "" matches every file not
# claimed by a longer prefix.
VIEWS = {
  "bayes_memory": {"": "default"},
  "cs_clip": {"": "default"},
  "denseam": {"": "default"},
  "dense_limits": {"": "default"},
  "dual_rate": {"": "default"},
  "evidence_coverage": {"": "default"},
  "flashssm3d": {"": "default"},
  "goskills": {"": "default"},
  "lanr": {"": "default"},
  "logstop": {"": "default"},
  "locos": {
    "": "default",
    "needle": "needle",
    "size_needle": "needle",
    "smollm2_pilot": "smollm2_pilot",
    "gemma3_pilot": "smollm2_pilot",
  },
  "leansearch": {"": "default"},
  "margins": {"": "default", "e4": "e4"},
  "mlaire": {"": "default"},
  "msretrieval": {"": "default"},
  "panda": {"": "default", "budget": "search", "search": "search"},
  "soda": {"": "default"},
  "sola": {"": "default"},
  "sscl": {"": "default"},
}


def _get_config(paper: str, name: str):
  return importlib.import_module(
    f"experiments.{paper}.configs.{name}"
  ).get_config()


def _base(paper: str, name: str):
  prefixes = VIEWS[paper]
  return _get_config(
    paper, prefixes[max((p for p in prefixes if name.startswith(p)), key=len)]
  )


def _cases() -> list[tuple[str, str]]:
  root = pathlib.Path(__file__).resolve().parent.parent
  return [
    (paper, p.stem)
    for paper in VIEWS
    for p in sorted((root / "experiments" / paper / "configs").glob("[!_]*.py"))
  ]


@pytest.mark.parametrize("paper, name", _cases())
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
