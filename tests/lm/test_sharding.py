"""The decoder's forward and generation sharded over a batch mesh of 8 fake
devices.

The mesh axis is `AxisType.Auto` (the compiler propagates the input shardings
through the jitted forward); explicit-sharding meshes are not supported by
`jaxpapers.lm` yet.
"""

import jax
import numpy as np
import pytest
from jax.sharding import AxisType

from jaxpapers import core, lm
from tests.lm.test_model import GEMMA_LIKE, _params

B = 8


@pytest.fixture(scope="module")
def setup():
  params = _params(GEMMA_LIKE)
  rng = np.random.default_rng(0)
  seqs = [
    rng.integers(0, GEMMA_LIKE.vocab_size, size=n).tolist()
    for n in (9, 3, 7, 9, 1, 5, 8, 2)
  ]
  ids, mask = lm.left_pad(seqs)
  return params, np.asarray(ids), np.asarray(mask)


def test_batch_sharded_forward_and_generate_equal_single_device(setup):
  """Dense and blockwise forward and generation on 8 devices equal the
  single-device run."""
  if jax.device_count() < B:
    pytest.skip("needs 8 devices (tests/conftest.py sets 8 fake CPU devices)")
  params, ids, mask = setup
  single, _, _ = lm.forward(params, ids, config=GEMMA_LIKE, mask=mask)
  g1 = lm.greedy_generate(
    params, ids, config=GEMMA_LIKE, prompt_mask=mask, max_new_tokens=3
  )
  mesh = core.make_mesh(B, axis_type=AxisType.Auto)
  with jax.set_mesh(mesh):
    p = core.replicate(params, mesh)
    sid, smask = core.shard_batch((ids, mask), mesh)
    sharded, _, _ = lm.forward(p, sid, config=GEMMA_LIKE, mask=smask)
    blockwise, _, _ = lm.forward(
      p, sid, config=GEMMA_LIKE, mask=smask, attention="blockwise", block_size=4
    )
    g8 = lm.greedy_generate(
      p, sid, config=GEMMA_LIKE, prompt_mask=smask, max_new_tokens=3
    )
  assert len(sharded.sharding.device_set) == B
  np.testing.assert_allclose(
    np.asarray(sharded), np.asarray(single), rtol=1e-5, atol=1e-5
  )
  np.testing.assert_array_equal(np.asarray(g8.tokens), np.asarray(g1.tokens))
  # the blockwise (online-softmax) path, sharded, equals the dense single-device
  # forward
  assert len(blockwise.sharding.device_set) == B
  np.testing.assert_allclose(
    np.asarray(blockwise)[mask], np.asarray(single)[mask], rtol=1e-5, atol=1e-5
  )
