"""Pre-registration: locks, the app's refusal, and the statuses a run
records."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from absl import app as absl_app
from absl import flags

from jaxpapers import core
from jaxpapers.core import app, distributed, registration

CLAIMS = (dict(id="acc", statement="accurate", metric="acc", held=0.8),)


def _git(cwd, *args):
  env = dict(
    os.environ,
    GIT_AUTHOR_NAME="t",
    GIT_AUTHOR_EMAIL="t@t",
    GIT_COMMITTER_NAME=("t"),
  )
  env["GIT_COMMITTER_EMAIL"] = "t@t"
  return subprocess.run(
    ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
  ).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
  """A git checkout with one experiment, ``regexp``, whose config declares
  CLAIMS."""
  root = tmp_path / "repo"
  exp = root / "experiments" / "regexp"
  exp.mkdir(parents=True)
  (root / "experiments" / "__init__.py").write_text("")
  (exp / "__init__.py").write_text("")
  (exp / "train.py").write_text(
    textwrap.dedent("""
      from jaxpapers import core

      def train_and_evaluate(config, workdir):
        core.write_results(workdir, metrics={"acc": 0.9}, config=config)
    """)
  )
  (root / "default.py").write_text(
    textwrap.dedent(f"""
      import ml_collections
      def get_config():
        c = ml_collections.ConfigDict()
        c.claims = {CLAIMS!r}
        c.issue_verdicts = True
        return c
    """)
  )
  (root / ".gitignore").write_text("runs/\n")
  _git(root, "init", "-q")
  _git(root, "add", "-A")
  _git(root, "commit", "-qm", "experiment")
  monkeypatch.syspath_prepend(str(root))
  for name in [
    k for k in sys.modules if k == "experiments" or k.startswith("experiments.")
  ]:
    monkeypatch.delitem(sys.modules, name)
  monkeypatch.setattr(distributed, "_initialized", False)
  monkeypatch.setattr(registration, "_CURRENT", None)
  return root


def _lock(repo, claims=CLAIMS, commit=True):
  record = registration.lock_record("regexp", {"default": claims})
  registration.write_lock(
    repo / "experiments" / "regexp" / registration.LOCK_FILE, record
  )
  if commit:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "register")
  return record


def _run(repo, *args):
  argv = [
    "prog",
    f"--config={repo / 'default.py'}",
    f"--workdir={repo / 'runs' / 'r'}",
    *args,
  ]
  fv = flags.FlagValues()
  app.define_flags(fv, argv=argv)
  fv(argv)
  app.main(["prog"], "experiments.regexp.train", flag_values=fv)
  return json.loads((repo / "runs" / "r" / "results.json").read_text())


def test_the_canonical_hash_ignores_defaults_and_layout():
  a = registration.claims_sha256(CLAIMS)
  b = registration.claims_sha256(
    [dict(CLAIMS[0], direction="higher", requires=[], oracle=False)]
  )
  assert a == b  # default-valued fields do not enter the hash
  assert a != registration.claims_sha256([dict(CLAIMS[0], held=0.81)])
  assert registration.canonical_claims(CLAIMS) == [
    {"id": "acc", "statement": "accurate", "metric": "acc", "held": 0.8}
  ]


def test_a_lock_edited_by_hand_is_refused(tmp_path):
  record = registration.lock_record("p", {"default": CLAIMS})
  registration.check_lock(record)
  record["configs"]["default"]["claims"][0]["held"] = 0.1
  with pytest.raises(ValueError, match="does not match its claims"):
    registration.check_lock(record)


def test_a_run_with_a_committed_lock_is_registered(repo):
  record = _lock(repo)
  head = _git(repo, "rev-parse", "HEAD")
  rec = _run(repo)
  reg = rec["registration"]
  assert reg["status"] == "registered" and reg["config"] == "default"
  assert (
    reg["lock_commit"] == head
    and reg["lock_sha256"] == record["configs"]["default"]["sha256"]
  )
  assert rec["git"]["start_commit"] == rec["git"]["end_commit"] == head
  assert rec["git"]["dirty"] is False  # runs/ is ignored; nothing else changed
  assert rec["started_at"] <= rec["written_at"]
  assert rec["claims"][0]["verdict"] == "held"
  # forgotten when the experiment returns
  assert registration.current_run() is None


def test_unregistered_claims_refuse_to_start_unless_post_hoc(repo):
  with pytest.raises(absl_app.UsageError, match="not committed"):
    _run(repo)
  # written but not committed: the working tree does not count
  _lock(repo, commit=False)
  with pytest.raises(absl_app.UsageError, match="not committed"):
    _run(repo)
  _git(repo, "add", "-A")
  _git(repo, "commit", "-qm", "register")
  rec = _run(repo, "--post_hoc")
  # --post_hoc is harmless when registered
  assert rec["registration"]["status"] == "registered"
  (repo / "default.py").write_text(
    (repo / "default.py").read_text().replace("0.8", "0.5")
  )
  with pytest.raises(absl_app.UsageError, match="match no entry"):
    _run(repo)


def test_a_changed_rule_runs_post_hoc_and_says_so(repo):
  _lock(repo)
  (repo / "default.py").write_text(
    (repo / "default.py").read_text().replace("0.8", "0.5")
  )
  rec = _run(repo, "--post_hoc")
  assert rec["registration"]["status"] == "post-hoc"
  assert "match no entry" in rec["registration"]["why"]
  assert (
    rec["git"]["dirty"] is True and "default.py" in rec["git"]["changed_files"]
  )


def test_untracked_code_makes_the_start_dirty(repo):
  _lock(repo)
  (repo / "experiments" / "regexp" / "helper.py").write_text("X = 1\n")
  rec = _run(repo)
  assert rec["git"]["dirty"] is True
  assert rec["git"]["changed_files"] == ["experiments/regexp/helper.py"]


def test_smoke_runs_need_no_registration(repo):
  rec = _run(repo, "--config.issue_verdicts=False")
  assert rec["registration"]["status"] == "not required"
  assert rec["claims"][0]["verdict"] is None


def test_a_direct_call_that_issues_verdicts_is_post_hoc(tmp_path):
  path = core.write_results(
    tmp_path, metrics={"acc": 0.9}, config={"claims": CLAIMS}
  )
  rec = json.loads(path.read_text())
  assert rec["registration"]["status"] == "post-hoc"
  assert "app entry" in rec["registration"]["why"]


def test_describe_gives_the_table_cells():
  rec = {
    "registration": {
      "status": "rejudged",
      "lock_commit": "a" * 40,
      "lock_date": ("2026-12-04T1"),
    },
    "git": {"start_commit": "b" * 40},
    "started_at": "2026-12-01T00:00:00+00:00",
  }
  assert registration.describe(rec) == {
    "status": "rejudged",
    "registered_at": "aaaaaaa (2026-12-04)",
    "run_at": "bbbbbbb (2026-12-01)",
  }
  assert registration.describe({})["status"] == "unregistered"
