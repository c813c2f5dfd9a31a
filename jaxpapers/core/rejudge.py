"""Re-judging a committed results record under the claims of a committed lock.

Re-judging keeps every measured number of a ``results.json`` record and replaces
its claims block by the verdicts of the rules that the experiment's committed
``claims.lock.json`` holds for the config that produced it. When the experiment
can derive ``metrics.derived`` from the metrics alone
(:func:`derives_from_metrics`), the derived block is recomputed first. The
record then says how its rules relate to the run (a status of
:mod:`jaxpapers.core.registration`) and lists every verdict that changed in
``verdict_changes``.

``python -m experiments.reproduce --rejudge=<paper>`` applies
:func:`rejudge_record` to every committed results file of a paper.
"""

from __future__ import annotations

import datetime
import inspect
import pathlib
import re
import subprocess
import types
from collections.abc import Mapping
from typing import Any

from jaxpapers.core import claims as claims_lib
from jaxpapers.core import registration
from jaxpapers.core import results as results_lib

_CONFIG_IN_COMMAND = re.compile(r"--config=(?:\S*/)?configs/(\w+)\.py")
# The errors of a derivation that meets a record laid out before the derivation
# existed.
_LAYOUT_ERRORS = (KeyError, TypeError, AttributeError, IndexError, ValueError)


def commit_label(git: Mapping[str, Any] | None) -> str | None:
  """``'<7 hex digits>'`` (``-dirty`` appended when ``git['dirty']``), or None
  without a commit."""
  if not git or not git.get("commit"):
    return None
  return git["commit"][:7] + ("-dirty" if git.get("dirty") else "")


def measured_in(results: Mapping[str, Any]) -> str:
  """The commit that measured a results record (recorded by the run or by a
  re-judging)."""
  git = results.get("git") or {}
  commit = git.get("start_commit") or git.get("end_commit") or git.get("commit")
  dirty = git.get("dirty")
  return (
    commit_label({"commit": commit, "dirty": dirty})
    or commit_label(results.get("measured_in"))
    or "unrecorded commit"
  )


def config_of(rec: Mapping[str, Any]) -> str | None:
  """The config a results record was produced by (from its registration or its
  command)."""
  reg = rec.get("registration") or {}
  if reg.get("config"):
    return reg["config"]
  match = _CONFIG_IN_COMMAND.search(rec.get("command") or "")
  return match.group(1) if match else None


def derives_from_metrics(train: types.ModuleType) -> bool:
  """Whether re-judging recomputes ``metrics.derived`` with ``train`` (see
  :func:`derive`)."""
  if getattr(train, "rejudge_metrics", None) is not None:
    return True
  # one argument: it needs only the metrics
  fn = getattr(train, "derived_metrics", None)
  return fn is not None and len(inspect.signature(fn).parameters) == 1


def derive(
  train: types.ModuleType, metrics: Mapping[str, Any], config: Mapping[str, Any]
) -> tuple[dict | None, str | None]:
  """The derived block recomputed from a committed record's metrics, if the
  experiment can.

  Args:
    train: the experiment's training module.
    metrics: the record's ``metrics``.
    config: the record's ``config``.

  Returns:
    ``(derived, by)``: ``train.rejudge_metrics(metrics, config)`` when the
    experiment defines it (for derivations that need more than the metrics),
    else the one-argument ``train.derived_metrics`` of the metrics without
    ``derived``, with the name of the function that computed it;
    ``(None, None)`` when ``train`` cannot derive from the metrics.
  """
  if not derives_from_metrics(train):
    return None, None
  hook = getattr(train, "rejudge_metrics", None)
  if hook is not None:
    return hook(metrics, config), f"{train.__name__}.rejudge_metrics"
  measured = {k: v for k, v in metrics.items() if k != "derived"}
  return train.derived_metrics(measured), f"{train.__name__}.derived_metrics"


def honest_git(rec: Mapping[str, Any]) -> dict:
  """The record's git block in the current form (start/end commits, honest dirty
  flag)."""
  git = rec.get("git") or {}
  if "end_commit" in git or "start_commit" in git:
    return git
  old_commit = git.get("commit") or (rec.get("measured_in") or {}).get("commit")
  dirty = True if git.get("dirty") else None
  out = {"start_commit": None, "end_commit": old_commit, "dirty": dirty}
  out["note"] = (
    "recorded before start commits and untracked files were recorded: "
    "the commit is the one checked out when the run ended"
  ) + (
    "" if dirty else "; whether untracked code files were present is unknown"
  )
  return out


def last_commit_of(path: pathlib.Path) -> str | None:
  """The last commit that wrote ``path`` (None outside git or on any git
  error)."""
  try:
    out = subprocess.run(
      ["git", "log", "-1", "--format=%H", "--", path.name],
      cwd=path.parent,
      capture_output=True,
      text=True,
      timeout=10,
      check=True,
    ).stdout.strip()
  except Exception:  # pylint: disable=broad-except
    return None
  return out or None


def _metrics(
  rec: Mapping[str, Any], train: types.ModuleType | None, by_main: bool
) -> tuple[dict, str | None]:
  """The record's metrics with ``derived`` recomputed where possible, and how it
  was made."""
  metrics = dict(rec.get("metrics") or {})
  if train is None:
    return metrics, None
  if not by_main:
    return metrics, (
      "not recomputed: the file was not written by the experiment's main binary"
    )
  try:
    derived, by = derive(train, metrics, rec.get("config") or {})
  except _LAYOUT_ERRORS as e:
    return (
      metrics,
      f"not recomputed: the file's layout predates its derivation ({e!r})"[
        :300
      ],
    )
  if derived is None:
    return metrics, None
  metrics["derived"] = results_lib.to_jsonable(derived)
  return metrics, f"metrics.derived computed from the committed metrics by {by}"


def _rules(
  rec: Mapping[str, Any], lock: registration.CommittedLock
) -> tuple[list, dict[str, Any], bool]:
  """The claims to judge, the registration block and whether the run issues no
  verdicts.

  The claims of the lock entry of the config that produced the record; a record
  that no registered config produced keeps its own claims (post-hoc); one whose
  claims carry no verdict (a smoke or pilot run) is judged without verdicts.
  """
  config = config_of(rec)
  entry = lock.record["configs"].get(config) if config else None
  prev = rec.get("registration") or {}
  recorded = [
    c for c in rec.get("claims", []) if isinstance(c.get("claim"), dict)
  ]
  verdict_free = all(c.get("verdict") is None for c in recorded) and bool(
    recorded or entry is None
  )
  if verdict_free:
    status, why = registration.NOT_REQUIRED, "the run issued no verdicts"
  elif entry is None:
    why = (
      f"no entry {config!r} in the committed lock: "
      "the file's own claims are judged"
    )
    status = registration.POST_HOC
  elif (
    prev.get("status") == registration.REGISTERED
    and prev.get("lock_sha256") == entry["sha256"]
  ):
    status, why = (
      registration.REGISTERED,
      "registered before the run; re-judged, same rules",
    )
  elif prev.get("status") == registration.POST_HOC:
    status, why = (
      registration.POST_HOC,
      prev.get("why") or "the run was post-hoc",
    )
  else:
    status, why = (
      registration.REJUDGED,
      "the rules were committed after the run started",
    )
  if verdict_free or entry is None:
    return (
      [c["claim"] for c in recorded],
      {"status": status, "config": config, "why": why},
      verdict_free,
    )
  reg = {
    "status": status,
    "config": config,
    "lock_sha256": entry["sha256"],
    "lock_commit": lock.commit,
    "lock_date": lock.date,
    "lock_path": lock.path,
    "why": why,
  }
  return entry["claims"], reg, False


def _verdict_changes(
  rec: Mapping[str, Any], judged: list[dict], now: str
) -> list[dict]:
  """The record's ``verdict_changes`` with one entry appended per claim whose
  verdict changed."""
  was = {c.get("claim_id"): c.get("verdict") for c in rec.get("claims", [])}
  changes = list(rec.get("verdict_changes") or [])
  for c in judged:
    if c.get("claim_id") in was and was[c["claim_id"]] == c.get("verdict"):
      continue
    changes.append(
      {
        "claim": c.get("claim_id"),
        "from": was.get(c.get("claim_id")),
        "to": c.get("verdict"),
        "at": now,
        "reason": c.get("reason", ""),
      }
    )
  return changes


def rejudge_record(
  rec: Mapping[str, Any],
  *,
  lock: registration.CommittedLock,
  train: types.ModuleType | None,
  by_main: bool,
  command: str,
  path: pathlib.Path,
) -> dict:
  """Re-judges one results record under a committed claims lock.

  The registration status is *registered* only if the run was registered under
  the same lock entry; otherwise *rejudged* (the rules were committed after the
  run started), or *post-hoc* if the run was. Every measured number is kept.

  Args:
    rec: the record, as read from its ``results.json``.
    lock: the experiment's committed lock (:func:`registration.committed_lock`).
    train: the experiment's training module (its derivation of
      ``metrics.derived``), or None.
    by_main: whether the record was written by the experiment's main binary
      (only then is ``metrics.derived`` recomputed).
    command: the command that re-judges, recorded in ``claims_judged``.
    path: where the record lives (for the commit that wrote it, if the record
      names none).

  Returns:
    The new record: the judged ``claims`` first, then the record's other fields,
    then ``verdict_changes`` (if any), ``registration``, ``git``,
    ``measured_in`` (if needed) and ``claims_judged``.
  """
  metrics, derived_by = _metrics(rec, train, by_main)
  claims, reg, verdict_free = _rules(rec, lock)
  out: dict[str, Any] = {
    "claims": claims_lib.judge_all(
      claims, metrics, issue_verdicts=not verdict_free
    )
  }
  for k, v in rec.items():
    if k not in ("claims", "registration", "git", "verdict_changes"):
      out[k] = metrics if k == "metrics" else v
  now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
  changes = _verdict_changes(rec, out["claims"], now)
  if changes:
    out["verdict_changes"] = changes
  out["registration"] = reg
  out["git"] = honest_git(rec)
  if not out["git"].get("end_commit") and not rec.get("measured_in"):
    out["measured_in"] = {
      "commit": last_commit_of(path),
      "how": "the last commit of this file before its claims "
      "were judged (the run predates commit recording)",
    }
  out["claims_judged"] = {
    "command": command,
    "git": results_lib.git_info(),
    "at": now,
    "derived_metrics": derived_by,
  }
  return out
