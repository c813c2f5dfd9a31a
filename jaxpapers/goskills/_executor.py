"""A simulated executor: what an agent gets done with a contract (offline
stand-in for an LLM).

Per task (reconstruction of the spec's CPU plan; deterministic given ``rng``):

* entry: the contract's START, or for a role-less list the first listed skill;
* the task's checklist has ``1 + L + C + 1`` items: the right entry, each of the
  ``L`` required steps among the payloads, each of the ``C`` checkable visible
  requirements covered by a validator among the payloads, and "no decoy
  executed";
* a decoy among the payloads that no AVOID note names is executed with
  probability ``p_decoy`` (always when it is the entry);
* success = every item holds; reward = the fraction of items that hold;
* steps (runtime proxy) = payloads read + 2 recovery steps per failed item;
* tokens = payload tokens + ``note_tokens`` per AVOID note.

A validator counts for a requirement whatever its role (a flat list is not
penalised for the missing CHECK label): roles change the outcome only through
START (the entry) and AVOID.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from jaxpapers.core import validation as V
from jaxpapers.goskills import _graph as G
from jaxpapers.goskills._bottleneck import START
from jaxpapers.goskills._synthetic import SkillLibrary, TaskSet


def simulate_execution(
  ids: npt.ArrayLike,
  roles: npt.ArrayLike,
  avoid: npt.ArrayLike,
  tasks: TaskSet,
  lib: SkillLibrary,
  rng: np.random.Generator,
  *,
  p_decoy: float = 0.5,
  note_tokens: int = 12,
) -> dict[str, np.ndarray]:
  """Runs the simulated executor on a batch of contracts (vectorised numpy,
  host-side).

  Args:
    ids: ``[T, B]`` int skill ids (-1: empty).
    roles: ``[T, B]`` int roles (-1: none).
    avoid: ``[T, K]`` int AVOID ids (-1 padded; ``K`` may be 0).
    tasks: the :class:`TaskSet` (``T`` tasks).
    lib: the :class:`SkillLibrary`.
    rng: numpy generator for the decoy draws.
    p_decoy: probability that an un-flagged decoy in the payloads is executed.
    note_tokens: tokens per AVOID note.

  Returns:
    dict of ``[T]`` arrays: ``success`` (bool), ``reward``, ``steps``,
    ``tokens`` (float64), ``entry_ok``, ``steps_recall``, ``decoy_executed``.
  """
  if not isinstance(tasks, TaskSet):
    raise TypeError(
      f"tasks must be a TaskSet (make_tasks), got {type(tasks).__name__}"
    )
  if not isinstance(lib, SkillLibrary):
    raise TypeError(
      "lib must be a SkillLibrary (make_skill_library), "
      f"got {type(lib).__name__}"
    )
  ids = np.asarray(ids)
  roles = np.asarray(roles)
  avoid = np.asarray(avoid)
  t = tasks.entry.shape[0]
  if ids.ndim != 2 or ids.shape[0] != t or roles.shape != ids.shape:
    raise ValueError(
      f"ids and roles must both be [T={t}, B]; got {ids.shape}, {roles.shape}"
    )
  if avoid.ndim != 2 or avoid.shape[0] != t:
    raise ValueError(f"avoid must be [T={t}, K], got {avoid.shape}")
  if not isinstance(rng, np.random.Generator):
    raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
  p_decoy = V.check_float(p_decoy, "p_decoy", min_value=0.0, max_value=1.0)
  note_tokens = V.check_int(note_tokens, "note_tokens", min_value=0)
  n = lib.n
  if (
    (ids >= n).any()
    or (ids < -1).any()
    or (avoid >= n).any()
    or (avoid < -1).any()
  ):
    raise ValueError(f"ids and avoid must lie in [-1, n={n})")
  kind = np.asarray(lib.graph.kind)
  req = np.asarray(lib.graph.req)
  cost = np.asarray(lib.graph.cost)
  rows = np.arange(t)[:, None]
  present = np.zeros((t, n), bool)
  present[np.broadcast_to(rows, ids.shape)[ids >= 0], ids[ids >= 0]] = True
  avoided = np.zeros((t, n), bool)
  if avoid.shape[1]:
    avoided[
      np.broadcast_to(rows, avoid.shape)[avoid >= 0], avoid[avoid >= 0]
    ] = True
  has_start = (roles == START).any(1)
  start_pos = np.argmax(roles == START, axis=1)
  entry = np.where(has_start, ids[np.arange(t), start_pos], ids[:, 0])
  entry_ok = entry == tasks.entry
  req_ok = tasks.required >= 0
  step_in = present[rows, np.clip(tasks.required, 0, None)] & req_ok
  n_steps = req_ok.sum(1)
  val_tags = (present & (kind == G.VALIDATOR)[None]).astype(
    np.int32
  ) @ req.astype(np.int32) > 0
  n_checks = tasks.check_tags.sum(1)
  checks_ok = (tasks.check_tags & val_tags).sum(1)
  live = present & lib.is_decoy[None] & ~avoided
  draws = rng.random((t, n)) < p_decoy
  entry_decoy = np.zeros((t, n), bool)
  ent = entry >= 0
  entry_decoy[np.arange(t)[ent], entry[ent]] = True
  decoy_exec = np.asarray((live & (draws | entry_decoy)).any(1))  # [T] bool
  total = 2 + n_steps + n_checks
  got = (
    entry_ok.astype(int)
    + step_in.sum(1)
    + checks_ok
    + (~decoy_exec).astype(int)
  )
  read = (ids >= 0).sum(1)
  tokens = np.where(ids >= 0, cost[np.clip(ids, 0, None)], 0).sum(1)
  tokens = tokens + note_tokens * (avoid >= 0).sum(1)
  return {
    "success": got == total,
    "reward": got / total,
    "steps": (read + 2 * (total - got)).astype(np.float64),
    "tokens": tokens.astype(np.float64),
    "entry_ok": entry_ok,
    "steps_recall": step_in.sum(1) / np.maximum(n_steps, 1),
    "decoy_executed": decoy_exec,
  }
