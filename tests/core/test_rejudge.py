"""Re-judging a results record under a committed lock
(jaxpapers.core.rejudge)."""

import pathlib
import types

import pytest

from jaxpapers.core import registration, rejudge

CLAIM = dict(
  id="gain",
  statement="x beats y",
  metric="derived.gain",
  direction=("higher"),
  held=0.5,
)


def _lock(claims=(CLAIM,), config="default"):
  record = registration.lock_record("paper", {config: list(claims)})
  return registration.CommittedLock(
    record, "a" * 40, "2026-01-01", "paper/claims.lock.json"
  )


def _record(
  gain,
  *,
  verdict="held",
  registered_sha=None,
  command=("--config=p/configs/default.py"),
):
  rec = {
    "claims": [{"claim_id": "gain", "claim": CLAIM, "verdict": verdict}],
    "metrics": {"gain": gain, "derived": {"gain": gain}},
    "command": f"python -m experiments.paper.main {command} --workdir=w",
    "git": {"start_commit": "b" * 40, "end_commit": "b" * 40, "dirty": False},
  }
  if registered_sha is not None:
    rec["registration"] = {
      "status": registration.REGISTERED,
      "lock_sha256": registered_sha,
    }
  return rec


def _rejudge(rec, lock=None, train=None):
  return rejudge.rejudge_record(
    rec,
    lock=lock or _lock(),
    train=train,
    by_main=True,
    command="python -m experiments.reproduce --rejudge=paper",
    path=pathlib.Path("results.json"),
  )


def test_config_of_reads_the_registration_then_the_command():
  assert (
    rejudge.config_of({"registration": {"config": "seeds"}, "command": "x"})
    == "seeds"
  )
  assert (
    rejudge.config_of({"command": ("-m e.p.main --config=e/p/configs/full.py")})
    == "full"
  )
  assert rejudge.config_of({"command": "-m e.p.main"}) is None


def test_measured_in_prefers_the_start_commit_and_marks_dirty_runs():
  git = {
    "start_commit": "1234567890",
    "end_commit": "abcdefabcd",
    "dirty": True,
  }
  assert rejudge.measured_in({"git": git}) == "1234567-dirty"
  assert (
    rejudge.measured_in({"measured_in": {"commit": "feedbeef00"}}) == "feedbee"
  )
  assert rejudge.measured_in({}) == "unrecorded commit"


def test_derive_prefers_the_rejudge_hook_and_skips_derivations_that_need_more():
  hook = types.ModuleType("hooked")
  hook.rejudge_metrics = lambda metrics, config: {
    "n": len(metrics),
    "c": config["k"],
  }
  hook.derived_metrics = lambda metrics: pytest.fail("the hook must win")
  assert rejudge.derive(hook, {"a": 1, "derived": {}}, {"k": 3}) == (
    {"n": 2, "c": 3},
    "hooked.rejudge_metrics",
  )
  one = types.ModuleType("one")
  one.derived_metrics = lambda metrics: {"keys": sorted(metrics)}
  assert rejudge.derive(one, {"a": 1, "derived": {}}, {}) == (
    {"keys": ["a"]},
    "one.derived_metrics",
  )
  two = types.ModuleType("two")
  two.derived_metrics = lambda q, c: {}
  assert not rejudge.derives_from_metrics(two)
  assert rejudge.derive(two, {"a": 1}, {}) == (None, None)


def test_same_rules_keep_the_registered_status_and_the_verdict():
  lock = _lock()
  sha = lock.record["configs"]["default"]["sha256"]
  out = _rejudge(_record(0.9, registered_sha=sha), lock)
  assert out["registration"]["status"] == registration.REGISTERED
  assert out["registration"]["lock_commit"] == "a" * 40
  assert [c["verdict"] for c in out["claims"]] == ["held"]
  assert "verdict_changes" not in out
  assert list(out)[0] == "claims" and list(out)[-1] == "claims_judged"


def test_other_rules_rejudge_and_record_the_changed_verdict():
  out = _rejudge(_record(0.1, registered_sha="0" * 64))
  assert out["registration"]["status"] == registration.REJUDGED
  assert out["claims"][0]["verdict"] == "not reproduced"
  [change] = out["verdict_changes"]
  assert (change["claim"], change["from"], change["to"]) == (
    "gain",
    "held",
    "not reproduced",
  )


def test_a_config_without_a_lock_entry_is_post_hoc_and_keeps_its_own_claims():
  out = _rejudge(_record(0.9, command="--config=p/configs/pilot.py"))
  assert out["registration"] == {
    "status": registration.POST_HOC,
    "config": "pilot",
    "why": (
      "no entry 'pilot' in the committed lock: the file's own claims are judged"
    ),
  }
  assert out["claims"][0]["claim"]["id"] == "gain"


def test_a_run_without_verdicts_stays_without_verdicts():
  out = _rejudge(
    _record(0.9, verdict=None, command=("--config=p/configs/smoke.py"))
  )
  assert out["registration"]["status"] == registration.NOT_REQUIRED
  assert out["claims"][0]["verdict"] is None


def test_derived_values_are_recomputed_only_from_the_main_binary():
  train = types.ModuleType("paper.train")
  train.derived_metrics = lambda metrics: {"gain": 2 * metrics["gain"]}
  out = _rejudge(_record(0.3), train=train)
  assert out["metrics"]["derived"] == {"gain": 0.6}
  assert out["claims"][0]["verdict"] == "held"
  assert out["claims_judged"]["derived_metrics"].endswith(
    "by paper.train.derived_metrics"
  )
  other = rejudge.rejudge_record(
    _record(0.3),
    lock=_lock(),
    train=train,
    by_main=False,
    command="c",
    path=pathlib.Path("results.json"),
  )
  assert other["metrics"]["derived"] == {"gain": 0.3}
  assert other["claims_judged"]["derived_metrics"].startswith("not recomputed")
