"""The experiment's context store keeps its reads in a digest-checked file of the harness cache."""

import logging

import numpy as np

from experiments.lanr import input_pipeline
from jaxpapers import core


def _store(path):
  return input_pipeline.ContextStore(None, {}, [], {}, None, str(path))


def _row(i):
  return {
    "z": np.full(3, i, np.float32),
    "h_answer": np.full(3, -i, np.float32),
    "h_pred": np.arange(3, dtype=np.float32) + i,
    "correct": np.asarray(i % 2 == 0),
    "logp": np.asarray(-0.5 * i, np.float32),
  }


def test_saved_reads_come_back_and_a_damaged_file_is_read_again(tmp_path, caplog):
  path = tmp_path / "contexts.npz"
  s = _store(path)
  s.memo = {"test/0/": _row(0), "test/1/4-2": _row(1)}
  s.save()
  again = _store(path)
  assert list(again.memo) == ["test/0/", "test/1/4-2"]
  for k, row in s.memo.items():
    for f in input_pipeline.FIELDS:
      np.testing.assert_array_equal(again.memo[k][f], row[f])
  core.cache.read_arrays(path)  # written with its digest
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0xFF  # one flipped byte
  path.write_bytes(bytes(data))
  with caplog.at_level(logging.WARNING):
    damaged = _store(path)
  assert damaged.memo == {}  # nothing silently wrong: every context is read again
  assert "reading its contexts again" in caplog.text and str(path) in caplog.text
