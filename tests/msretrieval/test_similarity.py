"""Similarities against float64 numpy transcriptions; bit-packed == float
Tanimoto; sharding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.msretrieval as M

RNG = np.random.default_rng(0)


def _np_tanimoto(a, b):
  a, b = a.astype(bool), b.astype(bool)
  u = (a | b).sum(-1)
  return np.where(u > 0, (a & b).sum(-1) / np.maximum(u, 1), 0.0)


@pytest.mark.parametrize("f", [1, 31, 32, 33, 100])
def test_packed_tanimoto_equals_float_tanimoto_and_numpy(f):
  a = (RNG.random((7, f)) < 0.4).astype(np.uint8)
  b = (RNG.random((7, f)) < 0.4).astype(np.uint8)
  a[0] = 0
  b[0] = 0  # empty union -> 0 by convention
  want = _np_tanimoto(a, b)
  np.testing.assert_allclose(np.asarray(M.tanimoto(a, b)), want, rtol=1e-6)
  packed = np.asarray(M.packed_tanimoto(M.pack_bits(a), M.pack_bits(b)))
  np.testing.assert_allclose(
    packed, np.asarray(M.tanimoto(a, b)), rtol=0, atol=0
  )
  assert packed[0] == 0.0


def test_pack_bits_layout():
  bits = np.zeros((40,), np.uint8)
  bits[[0, 5, 31, 32, 39]] = 1
  w = np.asarray(M.pack_bits(bits))
  assert w.dtype == np.uint32 and w.shape == (2,)
  assert w[0] == (1 | 1 << 5 | 1 << 31) and w[1] == (1 | 1 << 7)


def test_thresholded_tanimoto_is_strict_and_broadcasts():
  pred = np.array([[0.5, 0.6, 0.1]], np.float32)
  fp = np.array([[[1, 1, 0], [0, 1, 0]]], np.uint8)  # [1, 2, 3] against [1, 3]
  got = np.asarray(M.thresholded_tanimoto(pred[:, None], fp))
  # 0.5 is not > 0.5: only bit 1 is on.
  np.testing.assert_allclose(got, [[0.5, 1.0]])


def test_continuous_tanimoto_is_ruzicka_and_reduces_to_tanimoto():
  p = RNG.random((5, 20))
  y = RNG.random((5, 20))
  want = np.minimum(p, y).sum(-1) / np.maximum(p, y).sum(-1)
  np.testing.assert_allclose(
    np.asarray(M.continuous_tanimoto(p, y)), want, rtol=1e-5
  )
  a = (RNG.random((5, 20)) < 0.5).astype(np.float32)
  b = (RNG.random((5, 20)) < 0.5).astype(np.float32)
  np.testing.assert_allclose(
    M.continuous_tanimoto(a, b), _np_tanimoto(a, b), rtol=1e-6
  )
  assert float(M.continuous_tanimoto(np.zeros(4), np.zeros(4))) == 0.0


def test_cosine_similarity_zero_vector_is_zero():
  assert float(M.cosine_similarity(np.zeros(3), np.ones(3))) == 0.0
  np.testing.assert_allclose(
    M.cosine_similarity(np.array([1.0, 0]), np.array([1.0, 1])), 2**-0.5
  )


@pytest.fixture(scope="module")
def cands():
  b, c, f = 4, 6, 50
  p = RNG.random((b, f)).astype(np.float32)
  y = (RNG.random((b, c, f)) < 0.3).astype(np.uint8)
  y[1, 2] = 0  # an empty candidate
  mask = np.ones((b, c), bool)
  mask[0, 4:] = False
  return p, y, mask


@pytest.mark.parametrize("sim", ["cosine", "tanimoto", "cont_iou"])
def test_candidate_scores_against_per_pair_numpy(cands, sim):
  p, y, mask = cands
  got = np.asarray(M.candidate_scores(p, y, mask, sim=sim))
  ref = np.zeros(mask.shape)
  for i in range(mask.shape[0]):
    for j in range(mask.shape[1]):
      q, t = p[i].astype(np.float64), y[i, j].astype(np.float64)
      if sim == "cosine":
        n = np.linalg.norm(q) * np.linalg.norm(t)
        ref[i, j] = q @ t / n if n > 0 else 0.0
      elif sim == "tanimoto":
        ref[i, j] = _np_tanimoto(q > 0.5, t)
      else:
        d = np.maximum(q, t).sum()
        ref[i, j] = np.minimum(q, t).sum() / d if d > 0 else 0.0
  assert np.all(np.isneginf(got[~mask]))
  np.testing.assert_allclose(got[mask], ref[mask], rtol=1e-5, atol=1e-7)


def test_candidate_scores_row_chunks_value_and_gradient_against_numpy(
  monkeypatch,
):
  """Chunks of 3 query rows over 5 (a remainder chunk of 2): cosine scores and
  their gradient w.r.t. the predictions against float64 numpy (a chunk read at
  the wrong offset, a dropped remainder or a gradient through a stale row
  fails)."""
  from jaxpapers.msretrieval import _similarity

  b, c, f = 5, 4, 40
  monkeypatch.setattr(_similarity, "_CHUNK_ENTRIES", 3 * c * f)
  p = RNG.random((b, f)).astype(np.float32)
  y = (RNG.random((b, c, f)) < 0.4).astype(np.uint8)
  mask = np.ones((b, c), bool)
  w = RNG.normal(size=(b, c))
  got = np.asarray(M.candidate_scores(p, y, mask))
  grad = np.asarray(
    jax.grad(lambda q: (M.candidate_scores(q, y, mask) * w).sum())(p)
  )
  q, t = p.astype(np.float64), y.astype(np.float64)
  nq, nt = np.linalg.norm(q, axis=-1), np.linalg.norm(t, axis=-1)  # [B], [B, C]
  dot = np.einsum("bf,bcf->bc", q, t)
  ref = dot / (nq[:, None] * nt)
  # d cos / d q = y / (|q| |y|) - cos q / |q|^2
  dref = np.einsum("bc,bcf->bf", w / (nq[:, None] * nt), t) - (w * ref).sum(1)[
    :, None
  ] * q / (nq[:, None] ** 2)
  np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(grad, dref, rtol=1e-4, atol=1e-6)


def test_candidate_scores_sharded_equals_single_device(cands):
  p, y, mask = cands
  n = jax.device_count()
  reps = n // p.shape[0] if n >= p.shape[0] else 1
  p2, y2, m2 = (np.concatenate([a] * max(2, reps)) for a in (p, y, mask))
  b = p2.shape[0] - p2.shape[0] % n
  p2, y2, m2 = p2[:b], y2[:b], m2[:b]
  mesh = jax.make_mesh((n,), ("data",))
  sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  f = jax.jit(lambda a, c, m: M.candidate_scores(a, c, m, sim="cont_iou"))
  got = f(*(jax.device_put(a, sh) for a in (p2, y2, m2)))
  want = M.candidate_scores(p2, y2, m2, sim="cont_iou")
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert len(got.sharding.device_set) == n


def test_candidate_scores_does_not_recompile(cands):
  p, y, mask = cands
  f = jax.jit(lambda a, c, m: M.candidate_scores(a, c, m))
  f(p, y, mask)
  before = f._cache_size()
  f(p + 0.0, 1 - y, mask)
  assert f._cache_size() == before
  assert jnp.asarray(f(p, y, mask)).dtype == jnp.float32


@pytest.mark.parametrize(
  ("dtype", "bad"),
  [
    (np.uint8, 2),
    (np.uint8, 255),
    (np.int8, -1),
    (np.int32, 2),
    (np.float32, 0.5),
  ],
)
def test_candidate_scores_rejects_non_binary_entries_of_each_dtype(
  cands, dtype, bad
):
  """The binary check is a range check for integer candidates: one entry out of
  {0, 1} in the last query row raises eagerly and makes every score NaN under
  jit; binary candidates of the same dtype score as the uint8 ones."""
  p, y, mask = cands
  good = y.astype(dtype)
  np.testing.assert_array_equal(
    M.candidate_scores(p, good, mask), M.candidate_scores(p, y, mask)
  )
  wrong = good.copy()
  wrong[-1, 1, 7] = bad
  with pytest.raises(ValueError, match="cand_fp must be binary"):
    M.candidate_scores(p, wrong, mask)
  assert np.all(np.isnan(jax.jit(M.candidate_scores)(p, wrong, mask)))
