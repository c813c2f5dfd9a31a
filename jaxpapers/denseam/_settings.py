"""Named settings: an energy with a parametrisation, as ``'lse:derived'`` or
``'poly3:standard'``."""

from __future__ import annotations

from jaxpapers.denseam._model import DenseAMConfig
from jaxpapers.denseam._param import Parametrization


def parse_setting(
  name: str,
  *,
  base_width: int,
  beta: float = 1.0,
  dt: float = 0.5,
  steps: int = 4,
  readout_scale: float = 4.0,
) -> tuple[DenseAMConfig, Parametrization]:
  """A classifier's model config and parametrisation from a setting name.

  ``'<energy>:<param>'`` with energy ``lse`` or ``poly<n>`` and param
  ``standard`` (:meth:`Parametrization.standard`), ``derived``
  (:meth:`Parametrization.derived`) or ``hypothesis``
  (:meth:`Parametrization.hypothesis_lse` / ``hypothesis_poly``).

  Args:
    name: the setting, e.g. ``'poly3:derived'``.
    base_width: the base width ``K0`` of the parametrisation.
    beta: the LSE inverse temperature.
    dt: the Euler step of the dynamics.
    steps: the number of Euler steps ``T``.
    readout_scale: the logit scale of the classifier readout.

  Returns:
    ``(DenseAMConfig(task='classify', ...), Parametrization)``.
  """
  try:
    energy, param = name.split(":")
  except ValueError:
    raise ValueError(
      "settings entries look like 'lse:standard' or 'poly3:hypothesis', "
      f"got {name!r}"
    ) from None
  if energy == "lse":
    kind, n = "lse", 3
  elif energy.startswith("poly") and energy[4:].isdigit():
    kind, n = "poly", int(energy[4:])
  else:
    raise ValueError(f"setting {name!r}: energy must be 'lse' or 'poly<n>'")
  model = DenseAMConfig(
    energy=kind,
    n=n,
    beta=beta,
    dt=dt,
    steps=steps,
    task="classify",
    readout_scale=readout_scale,
  )
  if param == "standard":
    p = Parametrization.standard(base_width)
  elif param == "derived":
    p = Parametrization.derived(kind, n, base_width)
  elif param == "hypothesis":
    p = (
      Parametrization.hypothesis_lse(base_width)
      if kind == "lse"
      else Parametrization.hypothesis_poly(n, base_width)
    )
  else:
    raise ValueError(
      f"setting {name!r}: parametrisation must be 'standard', "
      "'derived' or 'hypothesis'"
    )
  return model, p
