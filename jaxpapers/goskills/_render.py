"""The fixed execution contract (host-side text; byte-stable).

Layout (one line per role, items joined by ``"; "``, then the payloads in
contract order)::

    START:   <name> — <purpose>
    SUPPORT: <name> — <purpose>; ...
    CHECK:   <name> — <purpose>; ...
    AVOID:   <name> — <purpose>; ...
    ---
    <payload of each selected skill: START, SUPPORT (pick order), CHECK (pick order)>

A role line with no item reads ``(none)``. A role-less (flat) contract renders
one ``SKILLS:`` line in list order, then its payloads. Payloads are never
rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from jaxpapers.goskills._bottleneck import AVOID, CHECK, ROLES, START, SUPPORT
from jaxpapers.goskills._synthetic import SkillText

_SEP = " \u2014 "


def _item(texts, i):
  return f"{texts[i].name}{_SEP}{texts[i].purpose}"


def render_contract(
  ids: npt.ArrayLike,
  roles: npt.ArrayLike,
  avoid: npt.ArrayLike,
  texts: Sequence[SkillText],
) -> str:
  """Renders one contract as text.

  Args:
    ids: ``[B]`` skill ids (-1: empty slot), in pick order.
    roles: ``[B]`` roles (:data:`ROLES` index; all -1 for a flat list).
    avoid: ``[K]`` AVOID ids (-1 padded; may be empty).
    texts: per-skill objects with ``name``, ``purpose``, ``payload``
      (``SkillText``).

  Returns:
    The contract string (ends with a newline).
  """
  ids = np.asarray(ids)
  roles = np.asarray(roles)
  avoid = np.asarray(avoid)
  if ids.ndim != 1 or roles.shape != ids.shape:
    raise ValueError(
      f"ids and roles must be one contract's [B] arrays; got {ids.shape}, "
      f"{roles.shape}"
    )
  if avoid.ndim != 1:
    raise ValueError(f"avoid must be a [K] array, got shape {avoid.shape}")
  n = len(texts)
  if (ids >= n).any() or (avoid >= n).any():
    raise ValueError(f"ids and avoid must index texts (n = {n})")
  if ((roles < -1) | (roles > AVOID)).any():
    raise ValueError("roles must be in -1..3")
  sel = [(int(i), int(r)) for i, r in zip(ids, roles) if i >= 0]
  lines = []
  if all(r < 0 for _, r in sel):
    order = [i for i, _ in sel]
    lines.append(
      "SKILLS:  " + ("; ".join(_item(texts, i) for i in order) or "(none)")
    )
  else:
    order = []
    for role in (START, SUPPORT, CHECK):
      items = [i for i, r in sel if r == role]
      order += items
      label = f"{ROLES[role]}:".ljust(9)
      lines.append(
        label + ("; ".join(_item(texts, i) for i in items) or "(none)")
      )
    av = [int(i) for i in avoid if i >= 0]
    lines.append(
      "AVOID:".ljust(9) + ("; ".join(_item(texts, i) for i in av) or "(none)")
    )
  lines.append("---")
  lines += [texts[i].payload for i in order]
  return "\n".join(lines) + "\n"
