"""Fault injection on a real binary: kill -9, bit flips, torn lines, two runs on
one workdir.

The subject is ``tests/faults/tiny_experiment.py``, a binary on the harness (app
entry, ``train_loop`` with checkpoints and history, ``Sweep`` inside a
``CellStore`` cell, the file cache, ``write_results``). Each test damages a run
the way a pre-empted or unlucky user's run is damaged, reruns the binary on the
same workdir and requires what an uninterrupted run gives: the same results bit
for bit and every training step logged exactly once.

The default tests take five runs of the binary (a few seconds each); the
``slow`` ones repeat the faults at many random points. ``JAXPAPERS_FAULTS_SEED``
fixes the random points (the seed in use is in each assertion message).
"""

import json
import os
import pathlib
import random
import socket
import subprocess
import time
from typing import NamedTuple

import numpy as np
import pytest

from tests import corruption_util
from tests.faults import binary

SEED = int(os.environ.get("JAXPAPERS_FAULTS_SEED", random.randrange(2**31)))


class Reference(NamedTuple):
  workdir: pathlib.Path
  outcome: dict  # binary.outcome of the run
  seconds: float  # its wall time


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Reference:
  """An uninterrupted run."""
  workdir = tmp_path_factory.mktemp("faults") / "reference"
  t0 = time.monotonic()
  binary.run(workdir)
  seconds = time.monotonic() - t0
  out = binary.outcome(workdir)
  assert [r["step"] for r in out["history"]] == list(range(1, binary.STEPS + 1))
  return Reference(workdir, out, seconds)


def _assert_history_durable(workdir: pathlib.Path, context: str) -> None:
  """What a killed run leaves: whole lines only, and a record for every
  checkpointed step."""
  lines = binary.history_lines(workdir) or [""]  # no file yet: no records
  assert lines[-1] == "", (
    f"{context}: history.jsonl ends in a cut-off line {lines[-1:]}"
  )
  steps = [json.loads(line)["step"] for line in lines[:-1]]
  saved = binary.checkpoint_steps(workdir)
  assert steps == list(range(1, len(steps) + 1)), f"{context}: steps {steps}"
  assert not saved or len(steps) >= max(saved), (
    f"{context}: checkpoints up to step {max(saved)} but history records up "
    f"to {len(steps)}"
  )


def test_killed_while_a_second_run_is_refused_then_rerun_equals_uninterrupted(
  reference, tmp_path
):
  expected = reference.outcome
  rng = random.Random(SEED)
  workdir = tmp_path / "run"
  first = binary.start(workdir)
  # Let it reach its training loop (a checkpoint exists), then stop it at a
  # random moment: whatever it was doing (a step, a history append, a checkpoint
  # save) is cut off there.
  assert binary.wait_for(lambda: binary.checkpoint_steps(workdir), first), (
    binary.stderr(first)
  )
  # within its training loop (21 more steps of >= 30 ms)
  delay = rng.uniform(0.0, 0.6)
  context = f"seed {SEED}: stopped {delay:.3f} s after the first checkpoint"
  time.sleep(delay)
  binary.freeze(first)
  assert first.poll() is None, f"{context}: it had finished already"
  try:
    # A second run on the same workdir, while the first holds it, refuses and
    # names it.
    second = binary.start(workdir)
    assert binary.wait(second) != 0, (
      f"{context}: a second run on the same workdir ran"
    )
    err = binary.stderr(second)
    assert f"in use by pid {first.pid} on host {socket.gethostname()}" in err, (
      err[-3000:]
    )
  finally:
    binary.kill(first)  # kill -9 where it was stopped
  _assert_history_durable(workdir, context)
  err = binary.run(workdir)  # takes over the dead run's lock and resumes
  assert "taking over the stale lock" in err, f"{context}:\n{err[-3000:]}"
  assert binary.outcome(workdir) == expected, context


def test_corrupt_files_are_detected_and_recomputed(reference, tmp_path):
  """A finished run's files damaged after the fact; the rerun warns of each and
  recomputes.

  * a flipped bit in the latest checkpoint's array data, of a kind orbax alone
    restores as other values: the run falls back to the checkpoint before it and
    retrains the last steps;
  * a last history line cut off mid-write: dropped (and logged again);
  * the sweep's finished cell cut off: computed again;
  * a flipped bit in the cached data's array bytes: prepared again.
  """
  ref_dir, expected = reference.workdir, reference.outcome
  rng = random.Random(SEED)
  workdir = binary.copy(ref_dir, tmp_path / "run")
  latest = max(binary.checkpoint_steps(workdir))
  flip = corruption_util.flip_silently(
    workdir / "checkpoints" / str(latest), tmp_path / "scratch", rng
  )
  context = f"seed {SEED}: {flip}"
  with (workdir / "history.jsonl").open("a") as f:
    f.write('{"train/loss": 0.5, "st')
  cell = workdir / "cells" / "sweep.json"
  cell.write_bytes(cell.read_bytes()[: len(cell.read_bytes()) // 2])
  data = workdir / "data.npz"
  with np.load(data) as z:
    x = z["x"].tobytes()
  # np.savez stores the arrays' bytes as they are
  at = data.read_bytes().find(x[:64])
  assert at > 0
  corruption_util.flip_bit(data, at + rng.randrange(len(x)), rng.randrange(8))

  err = binary.run(workdir)
  assert (
    f"checkpoint step {latest} from" in err
    and "do not match the digests" in err
  ), f"{context}:\n{err[-3000:]}"
  assert f"falling back to step {latest - binary.CHECKPOINT_EVERY}" in err, (
    context
  )
  assert "history.jsonl: dropping its last line" in err, context
  assert f"{cell} is corrupt" in err and f"{data} is corrupt" in err, err[
    -3000:
  ]
  assert binary.outcome(workdir) == expected, context
  assert list((workdir / "checkpoints" / "corrupt").iterdir()), (
    "the bad step is kept aside"
  )


@pytest.mark.slow
def test_kill_at_many_random_points_then_rerun_equals_uninterrupted(
  reference, tmp_path
):
  """Eight runs in a row on one workdir, each killed at a uniformly random time
  of a whole run (start-up, training, sweep, results; a run that finished first
  is left alone), then a last run to the end."""
  expected = reference.outcome
  rng = random.Random(SEED)
  workdir = tmp_path / "run"
  kills = []
  for _ in range(8):
    proc = binary.start(workdir)
    delay = rng.uniform(0.0, reference.seconds)
    try:
      proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:  # still running: the kill lands now
      binary.kill(proc)
      kills.append(round(delay, 3))
      _assert_history_durable(workdir, f"seed {SEED}, kills at {kills}")
    else:
      assert proc.returncode == 0, binary.stderr(proc)[-3000:]
  binary.run(workdir)
  assert kills, f"seed {SEED}: no run was killed"
  assert binary.outcome(workdir) == expected, f"seed {SEED}, kills at {kills}"


@pytest.mark.slow
def test_two_runs_started_together_one_refuses_one_finishes(
  reference, tmp_path
):
  expected = reference.outcome
  workdir = tmp_path / "run"
  procs = [binary.start(workdir), binary.start(workdir)]
  codes = [binary.wait(p) for p in procs]
  assert sorted(codes)[0] == 0 and sorted(codes)[1] != 0, codes
  winner, loser = (
    (procs[0], procs[1]) if codes[0] == 0 else (procs[1], procs[0])
  )
  assert f"in use by pid {winner.pid}" in binary.stderr(loser)
  assert binary.outcome(workdir) == expected


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_random_bit_flips_in_a_checkpoint_never_restore_other_values(
  reference, tmp_path, trial
):
  """Any flipped bit in the latest checkpoint (any file, not only array data)
  gives either the uninterrupted result, or, where the flip changed a value,
  that result after a fallback."""
  ref_dir, expected = reference.workdir, reference.outcome
  rng = random.Random(SEED + trial)
  workdir = binary.copy(ref_dir, tmp_path / "run")
  step_dir = (
    workdir / "checkpoints" / str(max(binary.checkpoint_steps(workdir)))
  )
  files = sorted(
    p for p in step_dir.rglob("*") if p.is_file() and p.stat().st_size
  )
  f = rng.choice(files)
  pos, bit = rng.randrange(f.stat().st_size), rng.randrange(8)
  corruption_util.flip_bit(f, pos, bit)
  binary.run(workdir)
  assert binary.outcome(workdir) == expected, (
    f"seed {SEED + trial}: bit {bit} of {pos} of {f}"
  )
