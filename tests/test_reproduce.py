"""The reproduce harness: discovery, failures, the claims table, exit status,
re-judging."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from experiments import reproduce
from jaxpapers.core import rejudge

ROOT = pathlib.Path(__file__).resolve().parents[1]

# A paper's binary: writes results.json with its own (fresh-run) claims block,
# or fails.
_MAIN = textwrap.dedent("""
    import json, pathlib, sys
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
    if "{fail}" == "yes":
        raise RuntimeError("deliberate failure in {name}")
    wd = pathlib.Path(args["workdir"]); wd.mkdir(parents=True, exist_ok=True)
    (wd / "curve.png").write_bytes(b"png")
    claim = {{"id": "acc", "statement": "accuracy is high", "paper_text": "0.95", "fmt": ".2f"}}
    (wd / "results.json").write_text(json.dumps({{
        "claims": [{{"claim": claim, "claim_id": "acc", "verdict": "held", "measured": 0.9,
                    "noise": 0.0, "reason": "fresh"}}],
        "git": {{"commit": "f" * 40, "dirty": False}},
        "metrics": {{"acc": 0.9}}, "table_markdown": "| m | v |\\n|---|---|\\n| acc | 0.9 |",
        "wall_time_s": 0.1, "plots": ["curve.png"], "notes": "config " + pathlib.Path(args["config"]).name}}))
""")

_DEFAULT = textwrap.dedent("""
    def get_config():
      return {"claims": (dict(id="acc", statement="accuracy is high", metric="acc", held=0.8,
                              partly=0.5, paper_text="0.95", fmt=".2f"),
                         dict(id="gain", statement="{name} gains", metric="derived.gain",
                              held=1.0, paper_value=2.0))}
""")

_TRAIN = textwrap.dedent("""
    def derived_metrics(metrics):
      return {"gain": 2 * metrics["acc"]}
""")


def _make_package(
  root: pathlib.Path, *, committed: bool = True
) -> pathlib.Path:
  pkg = root / "fakeexp"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("")
  for name, fail in (("alpha", "no"), ("beta", "yes")):
    d = pkg / name
    (d / "configs").mkdir(parents=True)
    (d / "__init__.py").write_text("")
    (d / "configs" / "__init__.py").write_text("")
    (d / "configs" / "default.py").write_text(_DEFAULT.replace("{name}", name))
    (d / "configs" / "smoke.py").write_text("")
    (d / "main.py").write_text(_MAIN.format(name=name, fail=fail))
    (d / "train.py").write_text(_TRAIN)
  if committed:  # alpha has a committed default run, judged; beta has none
    (pkg / "alpha" / "results").mkdir()
    (pkg / "alpha" / "results" / "results.json").write_text(
      json.dumps(
        {
          "claims": [
            {
              "claim": {
                "id": "acc",
                "statement": "accuracy is high",
                "paper_text": "0.95",
                "fmt": ".2f",
              },
              "claim_id": "acc",
              "verdict": "partly",
              "measured": 0.6,
              "noise": 0.05,
              "reason": "committed",
            }
          ],
          "git": {"commit": "abcdef0" + "1" * 33, "dirty": False},
          "metrics": {"acc": 0.6},
        }
      )
    )
  (pkg / "not_a_paper").mkdir()
  return pkg


def _run(pkg, out, **kw):
  env = dict(os.environ, PYTHONPATH=str(pkg.parent))
  return reproduce.reproduce(
    workdir=out,
    package="fakeexp",
    package_dir=pkg,
    env=env,
    timeout_s=120,
    **kw,
  )


def test_quick_report_shows_committed_verdicts_and_the_failure(tmp_path):
  pkg = _make_package(tmp_path)
  out = _run(pkg, tmp_path / "out", quick=True)
  assert out.failed == ("beta",)
  text = out.report.read_text()
  assert reproduce.discover(pkg) == ["alpha", "beta"]
  # The report opens with the claims table: committed verdicts, never the smoke
  # run's own.
  head = text[: text.index("## Runs")]
  assert (
    "| paper | claim | paper's number | measured | verdict | rules | "
    "registered at | measured in |"
  ) in head
  assert (
    "| alpha | accuracy is high (`acc`) | 0.95 | 0.60 ± 0.05 | **partly** | "
    "unregistered | – | abcdef0 (committed default run) |"
  ) in head
  assert (
    "| beta | accuracy is high (`acc`) | 0.95 | – | no committed run | - | - "
    "| - |"
  ) in head
  assert (
    "| beta | beta gains (`gain`) | 2 | – | no committed run | - | - | - |"
    in head
  )
  assert "**held**" not in text and "Failed to run: beta" in head
  assert "| [alpha](#alpha) | ok |" in text
  assert "| [beta](#beta) | failed |" in text
  # the error is shown, not swallowed
  assert "deliberate failure in beta" in text
  assert "| acc | 0.9 |" in text and "config smoke.py" in text
  assert "![alpha: curve.png](alpha/curve.png)" in text
  assert "--config=fakeexp/alpha/configs/smoke.py" in text


def test_default_report_takes_verdicts_from_the_fresh_run(tmp_path):
  pkg = _make_package(tmp_path)
  out = _run(pkg, tmp_path / "o", quick=False, only=["alpha"])
  text = out.report.read_text()
  assert out.failed == ()
  assert (
    "| alpha | accuracy is high (`acc`) | 0.95 | 0.90 | **held** | "
    "unregistered | – | fffffff (this run) |"
  ) in text
  assert (
    "| accuracy is high (`acc`) | 0.95 | 0.90 | **held** | fresh | "
    "unregistered | – | fffffff ("
  ) in text
  assert "beta" not in text and "config default.py" in text
  with pytest.raises(ValueError, match=r"unknown paper\(s\) \['gamma'\]"):
    _run(pkg, tmp_path / "o2", quick=True, only=["gamma"])


def test_exits_nonzero_and_names_the_failed_paper(tmp_path):
  pkg = _make_package(tmp_path, committed=False)
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.reproduce",
      "--quick",
      "--package=fakeexp",
      f"--package_dir={pkg}",
      f"--workdir={tmp_path / 'cli'}",
      "--timeout_per_paper=120",
    ],
    capture_output=True,
    text=True,
    env=env,
    cwd=ROOT,
    timeout=300,
  )
  assert proc.returncode == 1, proc.stderr[-2000:]
  assert "FAILED to run: beta" in proc.stderr
  assert (
    "| alpha | accuracy is high (`acc`) | 0.95 | – | no committed run | - | "
    "- | - |"
  ) in proc.stdout


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


def _commit_lock(pkg, name):
  from jaxpapers.core import registration

  mod = reproduce._import("fakeexp", pkg, f"{name}.configs.default")
  record = registration.lock_record(
    name, {"default": mod.get_config()["claims"]}
  )
  registration.write_lock(pkg / name / registration.LOCK_FILE, record)
  _git(pkg, "add", "-A")
  _git(pkg, "commit", "-qm", f"register {name}")
  return _git(pkg, "rev-parse", "HEAD"), record


def test_exit_zero_without_a_new_results_json_is_stale(tmp_path):
  pkg = _make_package(tmp_path, committed=False)
  out_dir = tmp_path / "o"
  assert _run(pkg, out_dir, quick=True, only=["alpha"]).failed == ()
  old = (out_dir / "alpha" / "results.json").read_text()
  # A rerun whose binary exits 0 but writes nothing: the old results.json must
  # not pass as new.
  (pkg / "alpha" / "main.py").write_text("print('did nothing')\n")
  rec = reproduce.run_paper(
    "alpha",
    package="fakeexp",
    package_dir=pkg,
    workdir=out_dir,
    quick=True,
    timeout_s=120,
    env=dict(os.environ, PYTHONPATH=str(pkg.parent)),
  )
  assert rec["returncode"] == 0
  assert rec["status"] == "failed" and rec["error"].startswith(
    "stale results.json"
  ), rec
  assert (
    "results" not in rec
    and (out_dir / "alpha" / "results.json").read_text() == old
  )
  out = _run(pkg, out_dir, quick=True, only=["alpha"])
  assert out.failed == ("alpha",)
  assert "**Failed**: stale results.json" in out.report.read_text()


@pytest.mark.parametrize(
  ("written_id", "status"),
  [("os.environ['JAXPAPERS_RUN_ID']", "ok"), ("'an-older-run'", "failed")],
)
def test_results_json_recording_another_run_id_is_stale(
  tmp_path, written_id, status
):
  pkg = _make_package(tmp_path, committed=False)
  (pkg / "alpha" / "main.py").write_text(
    textwrap.dedent(f"""
      import json, os, pathlib, sys
      args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
      wd = pathlib.Path(args["workdir"])
      (wd / "results.json").write_text(json.dumps({{"metrics": {{}}, "run_id": {written_id}}}))
    """)
  )
  rec = reproduce.run_paper(
    "alpha",
    package="fakeexp",
    package_dir=pkg,
    workdir=tmp_path / "o",
    quick=True,
    timeout_s=120,
    env=dict(os.environ, PYTHONPATH=str(pkg.parent)),
  )
  assert rec["status"] == status, rec
  if status == "ok":
    assert rec["results"]["run_id"] == rec["run_id"]
  else:
    assert (
      rec["error"].startswith("stale results.json")
      and "an-older-run" in rec["error"]
    )


def test_unreadable_results_json_is_a_failure_not_a_crash(tmp_path):
  pkg = _make_package(tmp_path, committed=False)
  (pkg / "alpha" / "main.py").write_text(
    "import pathlib, sys\n"
    "args = dict(a[2:].split('=', 1) for a in sys.argv[1:])\n"
    "(pathlib.Path(args['workdir']) / "
    "'results.json').write_text('{\"metrics\": {')\n"
  )
  out = _run(pkg, tmp_path / "o", quick=True, only=["alpha"])
  assert out.failed == ("alpha",)
  assert "unreadable results.json" in out.report.read_text()


def test_rejudge_adds_verdicts_and_keeps_the_measurements(tmp_path):
  pkg = _make_package(tmp_path, committed=False)
  _git(pkg, "init", "-q")
  path = pkg / "alpha" / "results" / "results.json"
  path.parent.mkdir()
  committed = {
    "metrics": {"acc": 0.85, "rows": [1, 2]},
    "config": {"x": 1},
    "notes": "n",
    "command": (
      "python -m fakeexp.alpha.main --config=fakeexp/alpha/configs/default.py"
    ),
    "git": {"commit": "a" * 40, "dirty": False},
  }
  path.write_text(json.dumps(committed, indent=2))
  with pytest.raises(FileNotFoundError, match="no committed claims.lock.json"):
    reproduce.rejudge("alpha", package="fakeexp", package_dir=pkg)
  lock_commit, record = _commit_lock(pkg, "alpha")
  reproduce.rejudge("alpha", package="fakeexp", package_dir=pkg)
  rec = json.loads(path.read_text())
  # order kept, claims first
  assert list(rec)[:4] == ["claims", "metrics", "config", "notes"]
  assert [
    (c["claim_id"], c["verdict"], c["measured"]) for c in rec["claims"]
  ] == [
    ("acc", "held", 0.85),
    ("gain", "held", 1.7),
  ]
  assert rec["metrics"] == {
    "acc": 0.85,
    "rows": [1, 2],
    "derived": {"gain": 1.7},
  }
  assert rec["config"] == committed["config"] and rec["notes"] == "n"
  assert (
    rec["claims_judged"]["command"]
    == "python -m experiments.reproduce --rejudge=alpha"
  )
  # The rules were committed after the run: rejudged, never registered.
  reg = rec["registration"]
  assert reg["status"] == "rejudged" and reg["config"] == "default"
  assert reg["lock_commit"] == lock_commit
  assert reg["lock_sha256"] == record["configs"]["default"]["sha256"]
  # The old record counted tracked files only: its clean flag is unknown, not
  # False.
  assert rec["git"]["end_commit"] == "a" * 40 and rec["git"]["dirty"] is None
  with pytest.raises(FileNotFoundError, match="beta has no committed results"):
    reproduce.rejudge("beta", package="fakeexp", package_dir=pkg)


def test_rejudge_keeps_registered_only_under_the_same_rules(tmp_path):
  pkg = _make_package(tmp_path, committed=False)
  _git(pkg, "init", "-q")
  lock_commit, record = _commit_lock(pkg, "alpha")
  path = pkg / "alpha" / "results" / "results.json"
  path.parent.mkdir()
  sha = record["configs"]["default"]["sha256"]
  run = {
    "metrics": {"acc": 0.6},
    "registration": {
      "status": "registered",
      "config": "default",
      "lock_sha256": sha,
    },
    "git": {
      "start_commit": lock_commit,
      "end_commit": lock_commit,
      "dirty": False,
    },
  }
  path.write_text(json.dumps(run))
  reproduce.rejudge("alpha", package="fakeexp", package_dir=pkg)
  rec = json.loads(path.read_text())
  assert rec["registration"]["status"] == "registered"
  assert rec["claims"][0]["verdict"] == "partly"
  # The rule changes after the run: the same measurements are now only rejudged.
  default = pkg / "alpha" / "configs" / "default.py"
  default.write_text(default.read_text().replace("held=0.8", "held=0.55"))
  reproduce._import("fakeexp", pkg, "alpha.configs.default")  # package cache
  import importlib

  importlib.reload(sys.modules["fakeexp.alpha.configs.default"])
  _commit_lock(pkg, "alpha")
  path.write_text(json.dumps(run))
  reproduce.rejudge("alpha", package="fakeexp", package_dir=pkg)
  rec = json.loads(path.read_text())
  assert rec["registration"]["status"] == "rejudged"
  assert rec["claims"][0]["verdict"] == "held"
  assert rec["git"] == run["git"]
  changed = [(c["claim"], c["from"], c["to"]) for c in rec["verdict_changes"]]
  assert ("acc", None, "held") in changed  # the file had no claims block before


def test_report_without_papers(tmp_path):
  empty = tmp_path / "emptyexp"
  empty.mkdir()
  out = reproduce.reproduce(
    quick=True, workdir=tmp_path / "e", package="emptyexp", package_dir=empty
  )
  assert "No paper experiments are implemented yet" in out.report.read_text()
  assert out.failed == ()


PAPERS = reproduce.discover(ROOT / "experiments")
COMMITTED = [
  p
  for p in PAPERS
  if (ROOT / "experiments" / p / "results" / "results.json").exists()
]


def test_discovery_finds_the_papers():
  assert {"soda", "panda", "margins", "locos"} <= set(PAPERS)


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_declares_claims(paper):
  claims = reproduce.declared_claims(
    paper, package="experiments", package_dir=ROOT / "experiments"
  )
  assert claims and all(c.statement for c in claims)


@pytest.mark.parametrize("paper", COMMITTED)
def test_committed_results_carry_verdicts(paper):
  rec = json.loads(
    (ROOT / "experiments" / paper / "results" / "results.json").read_text()
  )
  declared = reproduce.declared_claims(
    paper, package="experiments", package_dir=ROOT / "experiments"
  )
  assert [c["claim_id"] for c in rec["claims"]] == [c.id for c in declared]
  assert all(
    c["verdict"] in ("held", "partly", "not reproduced", "inconclusive")
    for c in rec["claims"]
  )
  assert rejudge.measured_in(rec) != "unrecorded commit"


@pytest.mark.parametrize("paper", PAPERS)
def test_every_claims_lock_matches_its_configs(paper):
  """The committed claims.lock.json is what `python -m experiments.register`
  writes now."""
  from experiments import register
  from jaxpapers.core import registration

  path, fresh = register.register(paper, check=True)
  assert path.exists(), (
    f"{paper} has no claims.lock.json: run python -m experiments.register"
  )
  registration.check_lock(json.loads(path.read_text()), str(path))
  assert fresh, (
    f"{path} differs from the configs' claims: run python -m "
    "experiments.register"
  )
