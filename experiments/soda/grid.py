"""The grids of the SODA experiment: optimizer families, the groups trained as
one program, the (family, hyperparameters) runs of a task, and the stored cells
they fill stage by stage."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

# Optimizer families trained as one compiled program
# (``jaxpapers.soda.horizon_sweep``): every run carries all the group's
# optimizer states. Muon and SODA(Muon) are groups of their own: a Muon update
# costs several times the digits MLP's whole step
# (``benchmarks/soda_muon_step.py``).
GROUPS = {
  "muon": ("muon",),
  "soda_muon": ("soda_muon",),
  "adam": ("adamw", "soda_adamw"),
}


MUON_GROUPS = ("muon", "soda_muon")


def group_horizons(task_cfg: Any, group: str) -> tuple[int, ...]:
  """The horizons of a group: ``muon_horizons`` for the Muon groups when set,
  else ``horizons``."""
  if group in MUON_GROUPS and task_cfg.get("muon_horizons", ()):
    return tuple(task_cfg["muon_horizons"])
  return tuple(task_cfg["horizons"])


def group_seeds(task_cfg: Any, group: str) -> int:
  """Seeds per grid point: ``muon_num_seeds`` for the Muon groups when > 0, else
  ``num_seeds``."""
  if group in MUON_GROUPS and task_cfg.get("muon_num_seeds", 0):
    return int(task_cfg["muon_num_seeds"])
  return int(task_cfg["num_seeds"])


def base_horizons(task_cfg: Any, base: str) -> tuple[int, ...]:
  """The horizons at which ``base`` and its SODA arm were both run."""
  return group_horizons(task_cfg, "muon" if base == "muon" else "adam")


def family_grid(task_cfg: Any) -> list[tuple[str, dict[str, float]]]:
  """All (family, hyperparameters) of a task, in a fixed order."""
  c = task_cfg
  return (
    [
      ("adamw", {"lr": lr, "wd": wd})
      for lr in c.adamw_lrs
      for wd in c.adamw_wds
    ]
    + [("soda_adamw", {"lr": lr}) for lr in c.soda_adamw_lrs]
    + [
      ("muon", {"lr": lr, "wd": wd, "adam_lr": c.muon_adam_lr})
      for lr in c.muon_lrs
      for wd in c.muon_wds
    ]
    + [
      ("soda_muon", {"lr": lr, "adam_lr": c.muon_adam_lr})
      for lr in c.soda_muon_lrs
    ]
  )


def cell_blocks(
  task_cfg: Any, runs: Sequence[tuple[str, dict[str, float]]]
) -> list[tuple[str, list[tuple[str, dict[str, float]]]]]:
  """The stored cells of one (horizon, group): ``[(name suffix, runs), ...]``,
  stage by stage.

  ``task_cfg.cell_stages`` is the grid's history, ``((suffix, ((family, learning rates), ...)),
  ...)`` (pairs, as a frozen config view holds them; a ``{family: learning rates}`` mapping, the
  form of earlier records, reads the same; absent: one stage): the first run's grid (suffix
  ``''``), then each extension (``'+ext'``, ...). A run belongs to the stage that lists its
  family's learning rate (a family no stage names: the first stage); the runs of one stage form
  the cell ``<task>/T<h>/<group><suffix>``, so earlier cells are read back as stored when a stage
  is added. Empty cells are left out; the order of ``runs`` is kept.

  Raises:
    ValueError: if ``cell_stages`` is malformed, a learning rate is listed by
      two stages of one family, or a run's family is named by a stage but its
      learning rate by none.
  """
  raw = task_cfg.get("cell_stages", ())  # a task without it: one stage
  bad = ValueError(
    "cell_stages must be a sequence of (suffix, ((family, learning rates), "
    f"...)) pairs, got {raw!r}"
  )
  try:
    stages = [(suffix, dict(lrs)) for suffix, lrs in raw]
  except (TypeError, ValueError):
    raise bad from None
  if not all(isinstance(suffix, str) for suffix, _ in stages):
    raise bad
  if not stages:
    return [("", list(runs))] if runs else []
  suffixes = [suffix for suffix, _ in stages]
  if len(set(suffixes)) != len(suffixes):
    raise ValueError(f"cell_stages: the suffixes {suffixes} must be distinct")
  blocks = {suffix: [] for suffix in suffixes}
  for family, hp in runs:
    hits = [
      s
      for s, lrs in stages
      if any(math.isclose(hp["lr"], x) for x in lrs.get(family, ()))
    ]
    if len(hits) > 1:
      raise ValueError(
        f"cell_stages: {family} lr {hp['lr']:g} is listed by the stages {hits}"
      )
    if not hits and any(family in lrs for _, lrs in stages):
      raise ValueError(
        f"cell_stages: {family} lr {hp['lr']:g} is in the grid but in no "
        "stage; add it to the stage that trains it"
      )
    blocks[hits[0] if hits else suffixes[0]].append((family, hp))
  return [(suffix, blocks[suffix]) for suffix in suffixes if blocks[suffix]]


def check_cell(
  name: str,
  value: list[dict],
  runs: Sequence[tuple[str, dict[str, float]]],
  total: int,
) -> None:
  """Raises ``ValueError`` unless a stored cell holds exactly ``runs`` at
  horizon ``total``."""
  got = [(r["family"], r["horizon"], r["hp"]) for r in value]
  want = [(f, total, hp) for f, hp in runs]
  same = len(got) == len(want) and all(
    gf == wf
    and gt == wt
    and set(gh) == set(wh)
    and all(math.isclose(float(gh[k]), float(wh[k])) for k in wh)
    for (gf, gt, gh), (wf, wt, wh) in zip(got, want)
  )
  if not same:
    raise ValueError(
      f"stored cell {name!r} holds the runs {got}, "
      f"but the config asks for {want}: the grid changed since the cell was "
      "stored; use a fresh workdir or delete that cell"
    )
