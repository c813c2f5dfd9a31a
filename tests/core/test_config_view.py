"""core.config_view: the typed, frozen view an experiment reads its config file
through."""

import ml_collections
import pytest

from jaxpapers import core

BASE = ml_collections.ConfigDict(
  dict(
    steps=10,
    lr=0.1,
    name="a",
    flag=False,
    ds=(1, 2),
    model=dict(width=8),
    free={},
    opt=None,
  )
)
GOOD = dict(
  steps=20,
  lr=1,
  name="b",
  flag=True,
  ds=[3],
  model=dict(width=16),
  free=dict(x=1),
  opt=3,
)


def test_a_matching_config_gives_a_frozen_view_without_the_claims():
  view = core.config_view({**GOOD, "claims": [dict(id="c")]}, BASE)
  assert isinstance(view, ml_collections.FrozenConfigDict)
  assert (view.steps, view.lr, view.model.width, view.free.x, view.opt) == (
    20,
    1,
    16,
    1,
    3,
  )
  assert "claims" not in view
  with pytest.raises((AttributeError, ValueError)):
    view.steps = 3


@pytest.mark.parametrize(
  "change, error, names",
  [
    # misspelt: unknown and its base field missing
    (dict(stpes=1), ValueError, "stpes"),
    (dict(model=dict(widht=16)), ValueError, "model.widht"),
    (dict(steps="ten"), TypeError, "steps"),
    (dict(steps=2.5), TypeError, "steps"),  # a float where the base has an int
    (dict(flag=1), TypeError, "flag"),  # an int is not a bool
    (dict(ds=3), TypeError, "ds"),
    # a value of no known kind is not any value
    (dict(steps=object()), TypeError, "steps"),
    (dict(name=1), TypeError, "name"),
    (dict(model=3), TypeError, "model"),
  ],
)
def test_unknown_missing_or_mistyped_fields_fail_naming_the_field(
  change, error, names
):
  config = {**GOOD, **change}
  if "stpes" in change:
    del config["steps"]
  with pytest.raises(error, match=names.replace(".", r"\.")):
    core.config_view(config, BASE)


def test_a_missing_field_is_named():
  with pytest.raises(ValueError, match=r"\['lr'\] missing"):
    core.config_view({k: v for k, v in GOOD.items() if k != "lr"}, BASE)
