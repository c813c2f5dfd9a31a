"""The experiment's context store keeps its reads in a digest-checked file of
the harness cache."""

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


def test_saved_reads_come_back_and_a_damaged_file_is_read_again(
  tmp_path, caplog
):
  path = tmp_path / "contexts.npz"
  s = _store(path)
  s.put({"test/0/": _row(0)})
  s.put({"test/1/4-2": _row(1)})  # every batch rewrites the file
  again = _store(path)
  assert list(again.rows) == ["test/0/", "test/1/4-2"] and len(again) == 2
  assert again.missing(["test/1/4-2", "test/2/", "test/2/"]) == ["test/2/"]
  stacked = again.stack(["test/1/4-2", "test/0/"])
  for f in input_pipeline.FIELDS:
    np.testing.assert_array_equal(
      stacked[f], np.stack([_row(1)[f], _row(0)[f]])
    )
  core.cache.read_arrays(path)  # written with its digest
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0xFF  # one flipped byte
  path.write_bytes(bytes(data))
  with caplog.at_level(logging.WARNING):
    damaged = _store(path)
  # nothing silently wrong: every context is read again
  assert damaged.rows == {}
  assert "computing its rows again" in caplog.text and str(path) in caplog.text
