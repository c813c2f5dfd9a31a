"""core.cache: atomic process-0 writes, digests checked on read, corrupt files
recomputed."""

import hashlib
import json
import logging

import jax
import numpy as np
import pytest

from jaxpapers import core
from jaxpapers.core import cache


def test_json_roundtrip_records_the_digest_of_the_canonical_record(tmp_path):
  path = tmp_path / "sub" / "rec.json"
  out = cache.write_json(
    path, {"b": (1, 2), "a": np.float32(0.5), "x": np.arange(3)}
  )
  assert out == {"b": [1, 2], "a": 0.5, "x": [0, 1, 2]}  # what readers see
  raw = json.loads(path.read_text())
  body = json.dumps(
    {"a": 0.5, "b": [1, 2], "x": [0, 1, 2]}, separators=(",", ":")
  )
  # independent of key order
  assert raw["sha256"] == hashlib.sha256(body.encode()).hexdigest()
  assert cache.read_json(path) == out
  # no temporary file left
  assert [p.name for p in path.parent.iterdir()] == ["rec.json"]
  with pytest.raises(ValueError, match="sha256"):
    cache.write_json(path, {"sha256": 1})


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
  path = tmp_path / "rec.json"
  cache.write_json(path, {"v": 1})
  with pytest.raises(TypeError, match="JSON-serialisable"):
    cache.write_json(path, {"v": list(range(1000)), "bad": object()})
  assert cache.read_json(path) == {"v": 1}
  assert [p.name for p in tmp_path.iterdir()] == ["rec.json"]


def test_corrupt_json_is_named(tmp_path):
  path = tmp_path / "rec.json"
  cache.write_json(path, {"value": [1.5, 2.5]})
  text = path.read_text()
  path.write_text(text[: len(text) // 2])
  with pytest.raises(
    core.CorruptFileError, match=(rf"{path} is corrupt: not valid JSON")
  ):
    cache.read_json(path)
  path.write_text(text.replace("2.5", "2.4"))  # still JSON, another value
  with pytest.raises(
    core.CorruptFileError, match=("does not match its recorded SHA-256")
  ):
    cache.read_json(path)
  # written before digests: read as it is
  path.write_text(json.dumps({"value": 3}))
  assert cache.read_json(path) == {"value": 3}


def test_arrays_roundtrip_and_a_flipped_bit_is_caught(tmp_path):
  path = tmp_path / "data.npz"
  arrays = {"x": np.arange(12.0).reshape(3, 4), "y": np.array([1, 2], np.int8)}
  out = cache.write_arrays(path, arrays)
  assert sorted(out) == ["x", "y"]
  back = cache.read_arrays(path)
  for k in arrays:
    np.testing.assert_array_equal(back[k], arrays[k])
    assert back[k].dtype == arrays[k].dtype
  raw = bytearray(path.read_bytes())
  at = raw.find(arrays["x"].tobytes())
  raw[at + 17] ^= 0x04
  path.write_bytes(bytes(raw))
  with pytest.raises(core.CorruptFileError, match=str(path)):
    cache.read_arrays(path)  # (the zip member's CRC notices this one)
  cache.write_arrays(path, arrays)
  with np.load(path) as z:
    digest = z["__sha256__"]
  # well formed, other x
  np.savez(path, x=arrays["x"] + 1, y=arrays["y"], __sha256__=digest)
  with pytest.raises(
    core.CorruptFileError, match=("do not match their recorded SHA-256")
  ):
    cache.read_arrays(path)
  path.write_bytes(b"PK\x03\x04 cut")
  with pytest.raises(core.CorruptFileError, match="not a readable .npz"):
    cache.read_arrays(path)
  np.savez(path, x=arrays["x"])  # written before digests: read as it is
  np.testing.assert_array_equal(cache.read_arrays(path)["x"], arrays["x"])
  with pytest.raises(ValueError, match="reserved"):
    cache.write_arrays(path, {"__sha256__": np.zeros(1)})
  with pytest.raises(ValueError, match="object dtype"):
    cache.write_arrays(path, {"o": np.array([None, 1])})
  # savez would silently drop it
  with pytest.raises(ValueError, match="allow_pickle"):
    cache.write_arrays(path, {"allow_pickle": np.zeros(1)})


def test_cached_computes_once_and_recomputes_a_corrupt_or_stale_file(
  tmp_path, caplog
):
  calls = []

  def compute():
    calls.append(1)
    return {"x": np.arange(4.0), "n": len(calls)}

  path = tmp_path / "c.npz"
  first = core.cached_arrays(path, compute)
  again = core.cached_arrays(path, compute)
  assert len(calls) == 1 and int(again["n"]) == 1
  np.testing.assert_array_equal(again["x"], first["x"])
  path.write_bytes(path.read_bytes()[:100])
  with caplog.at_level(logging.WARNING):
    redone = core.cached_arrays(path, compute)
  assert len(calls) == 2 and int(redone["n"]) == 2
  assert (
    f"{path} is corrupt" in caplog.text and "computing it again" in caplog.text
  )
  # A readable value the caller does not accept (computed for other inputs) is
  # recomputed.
  assert (
    int(core.cached_arrays(path, compute, valid=lambda z: z["n"] == 3)["n"])
    == 3
  )
  assert int(cache.read_arrays(path)["n"]) == 3

  jpath = tmp_path / "row.json"
  assert core.cached_json(jpath, lambda: {"fd": np.float64(1.25)}) == {
    "fd": 1.25
  }
  assert core.cached_json(jpath, lambda: pytest.fail("recomputed")) == {
    "fd": 1.25
  }
  jpath.write_text(jpath.read_text()[:-3])
  assert core.cached_json(jpath, lambda: {"fd": 2.5}) == {"fd": 2.5}
  assert core.cached_json(jpath, lambda: pytest.fail("recomputed")) == {
    "fd": 2.5
  }


def test_only_process_0_writes(tmp_path, monkeypatch):
  monkeypatch.setattr(jax, "process_index", lambda *a, **k: 1)
  assert core.cached_json(tmp_path / "a.json", lambda: [1, 2]) == [1, 2]
  assert core.cached_arrays(tmp_path / "b.npz", lambda: {"x": np.ones(2)})[
    "x"
  ].tolist() == [1, 1]
  assert not cache.atomic_write(tmp_path / "c.txt", "text")
  assert list(tmp_path.iterdir()) == []
