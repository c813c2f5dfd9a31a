"""Checkpointer: save/restore against abstract targets, async saves, sharding
kept, digests."""

import logging
import random

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxpapers import core
from jaxpapers.core import checkpoint as checkpoint_lib
from tests import corruption_util


def test_roundtrip_with_namedtuple_states_and_dtypes(tmp_path):
  params = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3, jnp.bfloat16)}
  tree = {
    "step": jnp.int32(3),
    "params": params,
    "opt": optax.adam(1e-3).init(params),
  }
  with core.Checkpointer(tmp_path / "ck") as ck:
    assert ck.latest_step() is None
    assert ck.save(3, tree)
  with core.Checkpointer(tmp_path / "ck") as ck:
    assert ck.latest_step() == 3
    zeros = jax.tree.map(jnp.zeros_like, tree)
    restored = ck.restore(None, zeros)
  assert type(restored["opt"][0]).__name__ == "ScaleByAdamState"
  assert restored["params"]["b"].dtype == jnp.bfloat16
  for a, b in zip(
    jax.tree.leaves(tree), jax.tree.leaves(restored), strict=True
  ):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_restore_keeps_target_sharding(tmp_path):
  mesh = core.make_mesh()
  x = jax.device_put(jnp.arange(16.0).reshape(8, 2), core.data_sharding(mesh))
  with core.Checkpointer(tmp_path) as ck:
    ck.save(1, {"x": x})
  with core.Checkpointer(tmp_path) as ck:
    out = ck.restore(1, {"x": x})
  assert out["x"].sharding.is_equivalent_to(x.sharding, 2)
  np.testing.assert_array_equal(np.asarray(out["x"]), np.asarray(x))


def test_max_to_keep_and_errors(tmp_path):
  with core.Checkpointer(tmp_path, max_to_keep=2) as ck:
    for s in (1, 2, 3):
      ck.save(s, {"a": jnp.float32(s)})
    ck.wait()
    assert ck.all_steps() == [2, 3]
  with pytest.raises(ValueError, match="max_to_keep"):
    core.Checkpointer(tmp_path / "x", max_to_keep=0)
  with pytest.raises(FileNotFoundError, match="no checkpoint"):
    with core.Checkpointer(tmp_path / "empty") as ck:
      ck.restore(None, {"a": jnp.float32(0)})


# ------------------------------------------------------------------ digests --


def _lanes_reference(words: list[int]) -> tuple[int, int]:
  """The two digest lanes in Python integers (mod 2**32), from their
  definition."""
  m = 2**32

  def fmix(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) % m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) % m
    return h ^ (h >> 16)

  a = sum(w * (2 * i + 1) for i, w in enumerate(words)) % m
  b = sum(fmix(w ^ fmix((i + 0x9E3779B9) % m)) for i, w in enumerate(words)) % m
  return a, b


def test_digest_matches_its_definition_on_device_sharded_and_on_host():
  x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
  expected = _lanes_reference([int(w) for w in x.view(np.uint32).reshape(-1)])
  mesh = core.make_mesh()
  # rows over the 8 devices
  sharded = jax.device_put(x, core.data_sharding(mesh))
  for value in (x, jnp.asarray(x), sharded):
    assert (
      tuple(int(v) for v in checkpoint_lib.tree_digests(value)[0]) == expected
    )
  # Every dtype digests alike on the host (numpy) and on the device.
  rng = np.random.default_rng(1)
  for dtype in (
    np.int32,
    np.uint8,
    np.int8,
    np.bool_,
    jnp.bfloat16,
    np.float16,
    np.complex64,
  ):
    a = (4 * rng.standard_normal((5, 3))).astype(dtype)
    np.testing.assert_array_equal(
      checkpoint_lib.tree_digests(a),
      checkpoint_lib.tree_digests(jnp.asarray(a)),
      err_msg=dtype,
    )
  key = jax.random.key(7)
  np.testing.assert_array_equal(
    checkpoint_lib.tree_digests(key),
    checkpoint_lib.tree_digests(jax.random.key_data(key)),
  )


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.int8, np.bool_])
def test_every_single_bit_flip_changes_both_lanes(dtype):
  x = np.random.default_rng(2).standard_normal(6)
  a = np.asarray(x > 0 if dtype == np.bool_ else x, dtype)
  base = checkpoint_lib.tree_digests(jnp.asarray(a))[0]
  raw = a.view(np.uint8).copy()
  # Every bit of every element (a bool holds one meaningful bit).
  bits = [
    (i, b)
    for i in range(raw.size)
    for b in range(1 if dtype == np.bool_ else 8)
  ]
  for i, b in bits:
    flipped = raw.copy()
    flipped[i] ^= 1 << b
    d = checkpoint_lib.tree_digests(jnp.asarray(flipped.view(a.dtype)))[0]
    assert (d != base).all(), (i, b)


def _big_tree(seed):
  """Arrays of several KiB: orbax stores them in its data files (small ones are
  inlined)."""
  rng = np.random.default_rng(seed)
  return {
    "w": jnp.asarray(rng.standard_normal((64, 32)), jnp.float32),
    "b": jnp.zeros(32),
  }


def test_a_silently_flipped_bit_is_caught_and_the_previous_checkpoint_used(
  tmp_path, caplog
):
  d = tmp_path / "ck"
  with core.Checkpointer(d, async_save=False) as ck:
    ck.save(1, _big_tree(1))
    ck.save(2, _big_tree(2))
  flip = corruption_util.flip_silently(
    d / "2", tmp_path / "scratch", random.Random(0)
  )
  target = jax.tree.map(jnp.zeros_like, _big_tree(0))
  with core.Checkpointer(d) as ck:
    with pytest.raises(
      core.CorruptCheckpointError, match=(r"step 2 .*do not match the digests")
    ):
      ck.restore(2, target)  # an explicit step: no fallback
    with caplog.at_level(logging.WARNING):
      step, tree = ck.restore_latest(target)
    assert step == 1, flip
    for a, b in zip(
      jax.tree.leaves(tree), jax.tree.leaves(_big_tree(1)), strict=True
    ):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert (
      "checkpoint step 2" in caplog.text
      and "falling back to step 1" in caplog.text
    )
    # The bad step is moved aside, so the run can save step 2 again.
    assert ck.all_steps() == [1] and len(list((d / "corrupt").iterdir())) == 1
    ck.save(2, _big_tree(2))
    ck.wait()
    np.testing.assert_array_equal(
      ck.restore(None, target)["w"], _big_tree(2)["w"]
    )


def test_no_good_checkpoint_is_an_error_naming_each(tmp_path):
  d = tmp_path / "ck"
  with core.Checkpointer(d, async_save=False) as ck:
    ck.save(1, _big_tree(1))
    ck.save(2, _big_tree(2))
  corruption_util.flip_silently(d / "2", tmp_path / "scratch", random.Random(1))
  for f in (d / "1").rglob("*"):
    if f.is_file() and f.parent.name == "d":
      f.write_bytes(f.read_bytes()[:7])  # truncated
  with core.Checkpointer(d) as ck:
    with pytest.raises(
      core.CorruptCheckpointError, match=(r"no checkpoint .* can be restored")
    ):
      ck.restore(None, _big_tree(0))
    assert ck.all_steps() == [1, 2]  # nothing moved: all kept for inspection


def test_checkpoints_without_digests_restore_with_a_warning(tmp_path, caplog):
  import orbax.checkpoint as ocp

  tree = _big_tree(3)
  # the layout written before digests
  with ocp.CheckpointManager(tmp_path / "old") as m:
    m.save(5, args=ocp.args.StandardSave(tree))
  with (
    core.Checkpointer(tmp_path / "old") as ck,
    caplog.at_level(logging.WARNING),
  ):
    out = ck.restore(None, tree)
  np.testing.assert_array_equal(np.asarray(out["w"]), np.asarray(tree["w"]))
  assert "records no digests" in caplog.text
