r"""Pre-registration of claims that can be proven from the git history.

An experiment registers its claims by committing
``experiments/<paper>/claims.lock.json`` (written by ``python -m
experiments.register <paper>``): the claims of every config of the experiment
that issues verdicts, in canonical JSON, with their SHA-256. A run is
**registered** when

1. the claims it judges hash to an entry of the lock as committed at the commit
   the run starts from (``HEAD``, not the working tree), and
2. the commit that last wrote that lock is an ancestor of (or equal to) the
   run's start commit: the rule provably existed before the run began.

Otherwise the app refuses to start a run that issues verdicts, unless it is
given ``--post_hoc``; such a run is recorded as **post-hoc**. Re-judging a
finished run under a lock committed after it started (``experiments.reproduce
--rejudge``) is recorded as **rejudged**: the rules were declared after the run.
Smoke runs issue no verdicts and need no registration.

The record of a run (``results.json``) carries::

  "registration": {"status": "registered" | "rejudged" | "post-hoc" | "not required",
                   "config": <lock entry>, "lock_sha256", "lock_commit", "lock_date", "why"},
  "git": {"start_commit", "end_commit", "dirty", "changed_files"},
  "started_at": <UTC ISO time>, "written_at": <UTC ISO time>

``dirty`` counts modified tracked files anywhere and untracked files under
``jaxpapers/`` and ``experiments/`` at the start of the run (the code that ran),
not files the run writes.

Canonical form: each claim is :meth:`Claim.to_dict` without the fields that are
at their default value, so that adding a field to
:class:`~jaxpapers.core.claims.Claim` does not change the hash of claims that do
not use it; JSON with sorted keys, no spaces, UTF-8.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import pathlib
import subprocess
from collections.abc import Mapping
from typing import Any

from jaxpapers.core import claims as claims_lib

LOCK_FILE = "claims.lock.json"
REGISTERED = "registered"
REJUDGED = "rejudged"
POST_HOC = "post-hoc"
NOT_REQUIRED = "not required"
STATUSES = (REGISTERED, REJUDGED, POST_HOC, NOT_REQUIRED)
# Untracked files here change what a run executes; elsewhere (runs/, notes) they
# do not.
_CODE_DIRS = ("jaxpapers/", "experiments/")


class RegistrationError(RuntimeError):
  """A run that issues verdicts was started without a committed lock of its
  claims."""


# ------------------------------------------------------------- canonical claims

_DEFAULTS = {
  f.name: (
    f.default_factory()
    if f.default_factory is not dataclasses.MISSING
    else f.default
  )
  for f in dataclasses.fields(claims_lib.Claim)
}


def canonical_claims(claims: Any) -> list[dict[str, Any]]:
  """The claims as plain dicts without default-valued fields, in declaration
  order.

  Args:
    claims: claims or their dicts (a config's ``claims`` field).

  Returns:
    One dict per claim (see the module docstring's canonical form).
  """
  out = []
  for c in claims_lib.parse_claims(claims):
    d = c.to_dict()
    out.append({k: v for k, v in d.items() if _plain_default(k) != v})
  return out


def _plain_default(name: str) -> Any:
  v = _DEFAULTS[name]
  return list(v) if isinstance(v, tuple) else v


def canonical_json(value: Any) -> str:
  """``value`` as canonical JSON: sorted keys, no whitespace, UTF-8 characters
  kept."""
  return json.dumps(
    value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
  )


def claims_sha256(claims: Any) -> str:
  """SHA-256 (hex) of the canonical JSON of ``claims``."""
  return hashlib.sha256(
    canonical_json(canonical_claims(claims)).encode("utf-8")
  ).hexdigest()


def lock_record(paper: str, configs: Mapping[str, Any]) -> dict[str, Any]:
  """The content of a ``claims.lock.json``.

  Args:
    paper: the experiment's name.
    configs: ``{config name: claims}`` for every config that issues verdicts.

  Returns:
    ``{"paper", "configs": {name: {"sha256", "claims"}}, "sha256"}``; the outer
    hash covers the configs' names and hashes.
  """
  if not isinstance(paper, str) or not paper:
    raise ValueError(f"paper must be a non-empty name, got {paper!r}")
  entries = {}
  for name in sorted(configs):
    entries[name] = {
      "sha256": claims_sha256(configs[name]),
      "claims": canonical_claims(configs[name]),
    }
  digest = hashlib.sha256(
    canonical_json({k: v["sha256"] for k, v in entries.items()}).encode("utf-8")
  ).hexdigest()
  return {"paper": paper, "configs": entries, "sha256": digest}


def check_lock(record: Any, where: str = "lock") -> dict[str, Any]:
  """Checks that a lock's hashes match its claims (a hand-edited lock is
  refused).

  Raises:
    ValueError: naming the entry whose hash does not match, or a malformed
      record.
  """
  if not isinstance(record, Mapping) or not isinstance(
    record.get("configs"), Mapping
  ):
    raise ValueError(f"{where}: not a claims lock (no 'configs' mapping)")
  for name, entry in record["configs"].items():
    if (
      not isinstance(entry, Mapping)
      or "claims" not in entry
      or "sha256" not in entry
    ):
      raise ValueError(
        f"{where}: configs[{name!r}] needs 'claims' and 'sha256'"
      )
    if claims_sha256(entry["claims"]) != entry["sha256"]:
      raise ValueError(
        f"{where}: configs[{name!r}]: sha256 does not match its claims "
        "(edited by hand?); regenerate it with python -m experiments.register"
      )
  again = lock_record(
    record.get("paper", "?"),
    {k: v["claims"] for k, v in record["configs"].items()},
  )
  if again["sha256"] != record.get("sha256"):
    raise ValueError(
      f"{where}: the outer sha256 does not match the configs' hashes"
    )
  return dict(record)


def write_lock(
  path: str | os.PathLike[str], record: Mapping[str, Any]
) -> pathlib.Path:
  """Writes a lock as indented, sorted JSON (one claim field per line, for
  readable diffs)."""
  check_lock(record, str(path))
  path = pathlib.Path(path)
  tmp = path.with_name(path.name + ".tmp")
  tmp.write_text(
    json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
  )
  tmp.replace(path)
  return path


# -------------------------------------------------------------------------- git


def _git(cwd: pathlib.Path, *args: str) -> str:
  return subprocess.run(
    ["git", *args],
    cwd=cwd,
    capture_output=True,
    text=True,
    timeout=20,
    check=True,
  ).stdout


def _top(path: pathlib.Path) -> pathlib.Path | None:
  where = path if path.is_dir() else path.parent
  try:
    return pathlib.Path(_git(where, "rev-parse", "--show-toplevel").strip())
  except Exception:  # pylint: disable=broad-except
    return None


def git_state(
  path: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | None:
  """The checkout holding ``path`` (default: this package): commit and honest
  dirty flag.

  Returns:
    ``{"commit", "dirty", "changed_files"}``: ``dirty`` is True when a tracked
    file differs from the commit or an untracked, not ignored file lies under
    ``jaxpapers/`` or ``experiments/``; ``changed_files`` lists up to 20 of
    them. None outside a git checkout (or without git).
  """
  where = (
    pathlib.Path(path)
    if path is not None
    else pathlib.Path(__file__).resolve().parent
  )
  top = _top(where)
  if top is None:
    return None
  try:
    commit = _git(top, "rev-parse", "HEAD").strip()
    lines = _git(
      top, "status", "--porcelain", "--untracked-files=all"
    ).splitlines()
  except Exception:  # pylint: disable=broad-except
    return None
  changed = []
  for line in lines:
    status, name = line[:2], line[3:].strip().strip('"')
    if status == "??" and not name.startswith(_CODE_DIRS):
      continue
    changed.append(name)
  return {
    "commit": commit,
    "dirty": bool(changed),
    "changed_files": changed[:20],
  }


def commit_date(
  commit: str, path: str | os.PathLike[str] | None = None
) -> str | None:
  """The committer date (ISO 8601) of ``commit``, or None."""
  top = _top(
    pathlib.Path(path)
    if path is not None
    else pathlib.Path(__file__).resolve().parent
  )
  if top is None or not commit:
    return None
  try:
    return _git(top, "show", "-s", "--format=%cI", commit).strip() or None
  except Exception:  # pylint: disable=broad-except
    return None


def is_ancestor(
  ancestor: str, commit: str, path: str | os.PathLike[str] | None = None
) -> bool:
  """Whether ``ancestor`` is ``commit`` or one of its ancestors (False when
  unknown)."""
  top = _top(
    pathlib.Path(path)
    if path is not None
    else pathlib.Path(__file__).resolve().parent
  )
  if top is None or not ancestor or not commit:
    return False
  return (
    subprocess.run(
      ["git", "merge-base", "--is-ancestor", ancestor, commit],
      cwd=top,
      capture_output=True,
    ).returncode
    == 0
  )


@dataclasses.dataclass(frozen=True)
class CommittedLock:
  """A lock as committed at a commit.

  Attributes:
    record: the lock's content at that commit.
    commit: the last commit (at or before it) that wrote the lock.
    date: that commit's date.
    path: the lock's path relative to the repository root.
  """

  record: Mapping[str, Any]
  commit: str
  date: str | None
  path: str


def committed_lock(
  lock_path: str | os.PathLike[str], at: str = "HEAD"
) -> CommittedLock | None:
  """The lock at ``lock_path`` as committed at ``at``; None if it is not
  committed there."""
  lock_path = pathlib.Path(lock_path).resolve()
  top = _top(lock_path.parent)
  if top is None:
    return None
  rel = lock_path.relative_to(top.resolve()).as_posix()
  try:
    text = _git(top, "show", f"{at}:{rel}")
    commit = _git(top, "log", "-1", "--format=%H", at, "--", rel).strip()
  except Exception:  # pylint: disable=broad-except
    return None
  if not commit:
    return None
  record = check_lock(json.loads(text), f"{rel} at {at}")
  return CommittedLock(record, commit, commit_date(commit, top), rel)


def matching_config(record: Mapping[str, Any], claims: Any) -> str | None:
  """The name of the lock entry whose claims hash like ``claims`` (None if none
  does)."""
  sha = claims_sha256(claims)
  names = sorted(
    n for n, e in record.get("configs", {}).items() if e.get("sha256") == sha
  )
  return names[0] if names else None


# ---------------------------------------------------------------------- the run

_CURRENT: dict[str, Any] | None = None


def _now() -> str:
  return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _config_get(config: Any, name: str, default: Any = None) -> Any:
  if isinstance(config, Mapping) or hasattr(config, "get"):
    try:
      return config.get(name, default)
    except TypeError:
      pass
  return getattr(config, name, default)


def issues_verdicts(config: Any) -> bool:
  """Whether a run of ``config`` decides claims (it declares some and is not a
  smoke run)."""
  return bool(_config_get(config, "issue_verdicts", True)) and bool(
    claims_lib.parse_claims(_config_get(config, "claims"))
  )


def begin_run(
  config: Any,
  experiment_dir: str | os.PathLike[str] | None,
  *,
  post_hoc: bool = False,
) -> dict[str, Any]:
  """Checks a run's claims against the committed lock and records the run's
  start.

  Called by the app entry before the experiment starts; :func:`write_results`
  adds what it records to ``results.json``.

  Args:
    config: the run's config (its ``claims`` and ``issue_verdicts``).
    experiment_dir: the experiment's folder (where ``claims.lock.json`` lives).
    post_hoc: start even when the claims are not registered; the run is then
      *post-hoc*.

  Returns:
    The start record: ``{"registration", "git", "started_at"}``.

  Raises:
    RegistrationError: if the run issues verdicts, its claims are not in the
      committed lock (or the lock's commit is not an ancestor of the start
      commit), and not ``post_hoc``.
  """
  global _CURRENT
  state = git_state(experiment_dir)
  start = {
    "git": {
      "start_commit": None if state is None else state["commit"],
      "dirty": None if state is None else state["dirty"],
      "changed_files": None if state is None else state["changed_files"],
    },
    "started_at": _now(),
  }
  start["registration"] = _decide(
    config, experiment_dir, state, post_hoc=post_hoc
  )
  _CURRENT = dict(
    start, where=None if experiment_dir is None else str(experiment_dir)
  )
  return start


def _decide(
  config: Any,
  experiment_dir: Any,
  state: Mapping[str, Any] | None,
  *,
  post_hoc: bool,
) -> dict[str, Any]:
  if not issues_verdicts(config):
    return {
      "status": NOT_REQUIRED,
      "why": ("this run issues no verdicts (smoke setting)"),
    }
  claims = _config_get(config, "claims")
  sha = claims_sha256(claims)
  problem = None
  lock = None
  if experiment_dir is None:
    problem = "the experiment's folder is unknown, so there is no lock to check"
  elif state is None:
    problem = (
      "not a git checkout: the lock's commit cannot be proven to precede the "
      "run"
    )
  else:
    path = pathlib.Path(experiment_dir) / LOCK_FILE
    try:
      lock = committed_lock(path)
    except ValueError as e:
      problem = str(e)
    if lock is None and problem is None:
      problem = (
        f"{path.name} is not committed in {pathlib.Path(experiment_dir).name}/"
      )
  if problem is None:
    # every other path set a problem
    assert lock is not None and state is not None
    name = matching_config(lock.record, claims)
    if name is None:
      problem = (
        f"the run's claims (sha256 {sha[:12]}) match no entry of the "
        f"committed {lock.path} (entries: "
        f"{', '.join(sorted(lock.record['configs'])) or 'none'})"
      )
    elif not is_ancestor(lock.commit, state["commit"], experiment_dir):
      problem = (
        f"the lock's commit {lock.commit[:12]} is not an ancestor of "
        f"{state['commit'][:12]}"
      )
    else:
      return {
        "status": REGISTERED,
        "config": name,
        "claims_sha256": sha,
        "lock_sha256": lock.record["configs"][name]["sha256"],
        "lock_commit": lock.commit,
        "lock_date": lock.date,
        "lock_path": lock.path,
        "why": "the claims match the lock committed before the run started",
      }
  if not post_hoc:
    raise RegistrationError(
      "This run issues verdicts, but its claims are not registered: "
      f"{problem}. Register them first (python -m experiments.register "
      "<paper>, then commit claims.lock.json), or pass --post_hoc to run "
      "anyway; its verdicts are then marked post-hoc."
    )
  return {"status": POST_HOC, "claims_sha256": sha, "why": problem}


def current_run() -> dict[str, Any] | None:
  """The start record of the run in progress in this process, if the app began
  one."""
  return _CURRENT


def end_run() -> None:
  """Forgets the current run (the app calls it when the experiment returns)."""
  global _CURRENT
  _CURRENT = None


def run_record(config: Any) -> dict[str, Any]:
  """What ``results.json`` records about registration, git and times, at the end
  of a run.

  Uses the start record of :func:`begin_run` when the app began the run; a run
  started some other way (a direct call of ``train_and_evaluate``) that issues
  verdicts is *post-hoc*.
  """
  start = current_run()
  end = git_state(start.get("where") if start is not None else None)
  if start is None:
    if issues_verdicts(config):
      registration = {
        "status": POST_HOC,
        "claims_sha256": claims_sha256(_config_get(config, "claims")),
        "why": (
          "not started through the app entry: the claims were not checked "
          "against a lock"
        ),
      }
    else:
      registration = {
        "status": NOT_REQUIRED,
        "why": ("this run issues no verdicts"),
      }
    start = {
      "registration": registration,
      "git": {
        "start_commit": None,
        "dirty": None if end is None else end["dirty"],
        "changed_files": None if end is None else end["changed_files"],
      },
      "started_at": None,
    }
  git = dict(start["git"])
  git["end_commit"] = None if end is None else end["commit"]
  if (
    git.get("start_commit")
    and git["end_commit"]
    and git["start_commit"] != git["end_commit"]
  ):
    git["note"] = "the checkout moved to another commit while the run was going"
  return {
    "registration": dict(start["registration"]),
    "git": git,
    "started_at": start["started_at"],
  }


def status_label(registration: Mapping[str, Any] | None) -> str:
  """A short label for tables: ``registered``, ``rejudged``, ``post-hoc`` or
  ``unregistered``."""
  if not registration:
    return "unregistered"
  return str(registration.get("status") or "unregistered")


def short_commit(commit: str | None) -> str:
  return commit[:7] if commit else "?"


def describe(results: Mapping[str, Any]) -> dict[str, str]:
  """``{"status", "registered_at", "run_at"}`` cells for a results record's
  claims.

  ``registered_at`` is the lock's commit and date; ``run_at`` the start commit
  (else the commit recorded at the end) and the start (else end) date.
  """
  reg = results.get("registration") or {}
  git = results.get("git") or {}
  run_commit = (
    git.get("start_commit") or git.get("end_commit") or git.get("commit")
  )
  run_date = results.get("started_at") or results.get("written_at")
  lock_commit = reg.get("lock_commit")
  return {
    "status": status_label(reg),
    "registered_at": (
      f"{short_commit(lock_commit)} ({(reg.get('lock_date') or '?')[:10]})"
      if lock_commit
      else "–"
    ),
    "run_at": f"{short_commit(run_commit)} ({(run_date or '?')[:10]})"
    if run_commit
    else "–",
  }
