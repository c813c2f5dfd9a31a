"""Setting names resolve to the energy and parametrisation they name."""

import pytest

import jaxpapers.denseam as D


def test_parse_setting_names_energy_and_parametrisation():
  model, p = D.parse_setting(
    "poly3:derived", base_width=16, beta=2.0, dt=0.25, steps=3
  )
  assert (model.energy, model.n, model.beta, model.dt, model.steps) == (
    "poly",
    3,
    2.0,
    0.25,
    3,
  )
  assert model.task == "classify"
  assert p == D.Parametrization.derived("poly", 3, 16)
  assert D.parse_setting("lse:standard", base_width=8)[
    1
  ] == D.Parametrization.standard(8)
  hyp = D.parse_setting("poly5:hypothesis", base_width=8)[1]
  assert hyp == D.Parametrization.hypothesis_poly(5, 8)
  with pytest.raises(ValueError, match="energy must be"):
    D.parse_setting("relu:standard", base_width=8)
  with pytest.raises(ValueError, match="look like"):
    D.parse_setting("lse", base_width=8)
