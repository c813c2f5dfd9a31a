"""MetricWriter: JSONL records, TensorBoard events, resume, process-0 guard,
epath paths."""

import json
import logging
import os
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from etils import epath

from jaxpapers import core
from jaxpapers.core import metric_writer as mw


def read_lines(path):
  return [json.loads(line) for line in path.read_text().splitlines()]


def test_jsonl_one_record_per_write_with_converted_values(tmp_path):
  with core.MetricWriter(tmp_path, tensorboard=False) as writer:
    writer.write(1, {"loss": jnp.float32(0.5), "acc": np.float64(0.25)})
    writer.write(
      np.int64(2), {"loss": 0.125, "hist": np.arange(3), "n": jnp.int32(7)}
    )
  lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
  assert len(lines) == 2
  assert json.loads(lines[0]) == {"step": 1, "loss": 0.5, "acc": 0.25}
  assert json.loads(lines[1]) == {
    "step": 2,
    "loss": 0.125,
    "hist": [0, 1, 2],
    "n": 7,
  }
  assert core.read_metrics(tmp_path) == [json.loads(line) for line in lines]


def test_flush_makes_records_visible_before_close(tmp_path):
  writer = core.MetricWriter(tmp_path, tensorboard=False)
  writer.write(3, {"x": 1.0})
  writer.flush()
  assert read_lines(tmp_path / "metrics.jsonl") == [{"step": 3, "x": 1.0}]
  writer.close()
  writer.close()  # idempotent
  with pytest.raises(ValueError, match="closed"):
    writer.write(4, {"x": 2.0})


def test_bad_arguments_are_named(tmp_path):
  with core.MetricWriter(tmp_path, tensorboard=False) as writer:
    with pytest.raises(TypeError, match="step"):
      writer.write(1.5, {"x": 1.0})
    with pytest.raises(TypeError, match="metrics"):
      writer.write(1, [("x", 1.0)])
    with pytest.raises(ValueError, match="'step' key"):
      writer.write(1, {"step": 1})
  with pytest.raises(ValueError, match="filename"):
    core.MetricWriter(tmp_path, filename="a/b.jsonl")


def test_fresh_writer_replaces_and_resume_keeps_earlier_steps(tmp_path):
  with core.MetricWriter(tmp_path, tensorboard=False) as w:
    for step in (1, 2, 3, 4):
      w.write(step, {"v": float(step)})
  with core.MetricWriter(tmp_path, tensorboard=False, resume_step=2) as w:
    w.write(3, {"v": 30.0})
  assert read_lines(tmp_path / "metrics.jsonl") == [
    {"step": 1, "v": 1.0},
    {"step": 2, "v": 2.0},
    {"step": 3, "v": 30.0},
  ]
  with core.MetricWriter(tmp_path, tensorboard=False) as w:
    w.write(9, {"v": 9.0})
  assert read_lines(tmp_path / "metrics.jsonl") == [{"step": 9, "v": 9.0}]


def test_other_processes_write_nothing(tmp_path, monkeypatch):
  monkeypatch.setattr(jax, "process_index", lambda *a, **k: 1)
  out = tmp_path / "run"
  with core.MetricWriter(out) as writer:
    assert not writer.enabled
    writer.write(1, {"loss": 1.0})
    writer.flush()
  assert not out.exists()


def _tfrecords(path):
  """Decodes a TFRecord file by hand: length, crc, payload, crc."""
  data, records, i = path.read_bytes(), [], 0
  while i < len(data):
    (n,) = struct.unpack("<Q", data[i : i + 8])
    records.append(data[i + 12 : i + 12 + n])
    i += 12 + n + 4
  return records


def test_tensorboard_event_file_holds_the_scalars(tmp_path):
  pytest.importorskip("tensorboardX")
  from tensorboardX.proto import event_pb2

  with core.MetricWriter(tmp_path) as writer:
    assert writer.tensorboard
    writer.write(5, {"train/loss": 0.75, "vec": [1.0, 2.0]})
    writer.write(6, {"train/loss": 0.5})
  [events] = list(tmp_path.glob("events.out.tfevents.*"))
  scalars = []
  for payload in _tfrecords(events):
    event = event_pb2.Event.FromString(payload)
    for value in event.summary.value:
      scalars.append((event.step, value.tag, value.simple_value))
  # lists: JSONL only
  assert scalars == [(5, "train/loss", 0.75), (6, "train/loss", 0.5)]


def test_tensorboard_off_writes_jsonl_only(tmp_path):
  with core.MetricWriter(tmp_path, tensorboard=False) as writer:
    assert not writer.tensorboard
    writer.write(1, {"x": 1.0})
  assert [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]


def test_remote_path_goes_through_epath(tmp_path, monkeypatch):
  """A gs:// logdir is written through epath's backend (mocked onto
  tmp_path)."""
  monkeypatch.chdir(tmp_path)
  bucket = tmp_path / "bucket"
  bucket.mkdir()

  seen = []

  def local(p):
    s = str(p)
    seen.append(s)
    return (
      s.replace("gs://bucket", str(bucket), 1)
      if s.startswith("gs://bucket")
      else s
    )

  def one(fn, path, *a, **k):
    return fn(local(path), *a, **k)

  def two(fn, path, dst, *a, **k):
    return fn(local(path), local(dst), *a, **k)

  with epath.testing.mock_epath(
    open=one,
    exists=one,
    makedirs=one,
    mkdir=one,
    replace=two,
    rename=two,
    isdir=one,
  ):
    with mw.MetricWriter("gs://bucket/run", tensorboard=False) as writer:
      writer.write(1, {"loss": 2.0})
      writer.flush()
      writer.write(2, {"loss": 1.0})
    assert mw.read_metrics("gs://bucket/run") == [
      {"step": 1, "loss": 2.0},
      {"step": 2, "loss": 1.0},
    ]
  assert read_lines(bucket / "run" / "metrics.jsonl")[1] == {
    "step": 2,
    "loss": 1.0,
  }
  assert "gs://bucket/run/metrics.jsonl" in seen
  # no local ./gs: folder
  assert sorted(p.name for p in tmp_path.iterdir()) == ["bucket"]


def test_each_record_is_in_the_file_as_one_whole_line_when_write_returns(
  tmp_path, monkeypatch
):
  """No buffer: a process killed right after ``write`` has the record; one
  ``os.write`` per record, so a kill at any moment leaves whole lines."""
  calls = []
  real_write = os.write
  monkeypatch.setattr(
    os,
    "write",
    lambda fd, data: calls.append(bytes(data)) or real_write(fd, data),
  )
  writer = core.MetricWriter(tmp_path, tensorboard=False)
  for step in (1, 2):
    writer.write(step, {"loss": 1.0 / step, "curve": list(range(300))})
    assert [r["step"] for r in read_lines(tmp_path / "metrics.jsonl")] == list(
      range(1, step + 1)
    )
  assert [json.loads(c)["step"] for c in calls] == [1, 2]
  assert all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in calls)
  writer.close()


def test_resume_drops_a_cut_off_last_line_with_a_warning(tmp_path, caplog):
  path = tmp_path / "metrics.jsonl"
  path.write_text(
    '{"step": 1, "v": 1.0}\n{"step": 2, "v": 2.0}\n{"step": 3, "v"'
  )
  with pytest.raises(ValueError, match="line 3 is not a JSON record"):
    # by default a reader is told, not silently given less
    core.read_metrics(tmp_path)
  with caplog.at_level(logging.WARNING):
    assert [
      r["step"] for r in core.read_metrics(tmp_path, allow_torn_tail=True)
    ] == [1, 2]
    with core.MetricWriter(tmp_path, tensorboard=False, resume_step=2) as w:
      w.write(3, {"v": 3.0})
  assert f"{path}: dropping its last line" in caplog.text
  assert read_lines(path) == [{"step": s, "v": float(s)} for s in (1, 2, 3)]
  # A bad line that is not the last one is corruption, not a cut-off append: it
  # still raises.
  path.write_text(
    '{"step": 1, "v": 1.0}\n{"step": 2, "v\n{"step": 3, "v": 3.0}\n'
  )
  with pytest.raises(ValueError, match="line 2 is not a JSON record"):
    core.MetricWriter(tmp_path, tensorboard=False, resume_step=3)
