"""Margin notions and relevance matrices against hand-made instances and numpy
float64."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpapers.margins as M


def _unit(x):
  x = np.asarray(x, np.float64)
  return x / np.linalg.norm(x, axis=1, keepdims=True)


def _ref_margins(U, V, A):
  """float64 numpy reference for m_0, m_g, m_q straight from the definitions."""
  U, V, A = _unit(U), _unit(V), np.asarray(A, bool)
  S = U @ V.T
  m0 = min(
    S[j, i] if A[j, i] else -S[j, i]
    for j in range(A.shape[0])
    for i in range(A.shape[1])
  )
  mg = 0.5 * (S[A].min() - S[~A].max())
  gaps = [
    0.5 * (S[j, A[j]].min() - S[j, ~A[j]].max())
    for j in range(A.shape[0])
    if A[j].any() and (~A[j]).any()
  ]
  return m0, mg, min(gaps)


def test_hand_made_2x2():
  # Two antipodal documents; query 0 wants doc 0, query 1 wants doc 1.
  V = np.array([[1.0, 0.0], [-1.0, 0.0]])
  c, s = math.cos(0.3), math.sin(0.3)
  U = np.array([[c, s], [-c, s]])
  A = np.eye(2)
  # Scores: in-set cos(0.3), out-of-set -cos(0.3): every notion equals cos(0.3).
  for f in (M.margin, M.global_threshold_margin, M.per_query_margin):
    np.testing.assert_allclose(float(f(U, V, A)), c, rtol=1e-6)


def test_hand_made_3x3_with_violation_and_shift():
  # Documents: the three coordinate axes; queries with a common positive offset.
  V = np.eye(3)
  # scores 2/sqrt6 and 1/sqrt6
  U = _unit([[2.0, 1.0, 1.0], [1.0, 2.0, 1.0], [1.0, 1.0, 2.0]])
  A = np.eye(3)
  hi, lo = 2 / math.sqrt(6), 1 / math.sqrt(6)
  # Every score is positive, so the zero-threshold margin is violated on the
  # negatives.
  np.testing.assert_allclose(float(M.margin(U, V, A)), -lo, rtol=1e-6)
  np.testing.assert_allclose(
    float(M.global_threshold_margin(U, V, A)), (hi - lo) / 2, rtol=1e-6
  )
  np.testing.assert_allclose(
    float(M.per_query_margin(U, V, A)), (hi - lo) / 2, rtol=1e-6
  )
  assert float(M.topk_accuracy(U, V, A)) == 1.0


def test_per_query_vs_global_differ():
  # Query 1's scores are all shifted up: ranking fine, global threshold not.
  V = np.eye(2)
  U = _unit([[1.0, -1.0], [1.0, 3.0]])
  A = np.eye(2)
  m0, mg, mq = _ref_margins(U, V, A)
  assert m0 < mg < mq
  np.testing.assert_allclose(float(M.margin(U, V, A)), m0, rtol=1e-6)
  np.testing.assert_allclose(
    float(M.global_threshold_margin(U, V, A)), mg, rtol=1e-6
  )
  np.testing.assert_allclose(float(M.per_query_margin(U, V, A)), mq, rtol=1e-6)


@pytest.mark.parametrize("n,k", [(10, 1), (10, 2), (12, 3)])
def test_orthogonal_construction_exact_margin(n, k):
  c = M.orthogonal_construction(n, k)
  A = M.k_sparse_relevance(n, k)
  m = 1 / (2 * math.sqrt(k) + 1)
  assert c.U.shape == (math.comb(n, k), n + 1) and c.V.shape == (n, n + 1)
  np.testing.assert_allclose(c.certificate, m, atol=1e-12)
  out = M.all_margins(c.U, c.V, A, chunk_size=7)  # chunks that do not divide N
  for key in ("m0", "mg", "mq"):
    np.testing.assert_allclose(float(out[key]), m, atol=1e-6)
  assert float(out["topk_accuracy"]) == 1.0


def test_k1_case_identity_and_simplex():
  # k = 1: A = I_n. Docs = queries = regular simplex: in-set 1, out-of-set
  # -1/(n-1).
  n = 5
  A = M.k_sparse_relevance(n, 1)
  np.testing.assert_array_equal(A, np.eye(n, dtype=bool))
  # centred basis: unit after normalisation, pairwise -1/(n-1)
  V = np.eye(n) - 1.0 / n
  V = _unit(V)
  np.testing.assert_allclose(float(M.margin(V, V, A)), 1 / (n - 1), rtol=1e-5)
  np.testing.assert_allclose(
    float(M.per_query_margin(V, V, A)), 0.5 * (1 + 1 / (n - 1)), rtol=1e-5
  )
  # Exact optimum for k = 1 from the symmetric dual: n / (3n - 4) -> 1/3.
  for n in (2, 3, 7, 50):
    np.testing.assert_allclose(
      M.k_sparse_optimal_margin(n, 1), n / (3 * n - 4), rtol=1e-7
    )


def test_random_inputs_match_float64_reference_and_order():
  rng = np.random.default_rng(0)
  for _trial in range(4):
    N, n, d = 7, 6, 4
    U, V = rng.normal(size=(N, d)), rng.normal(size=(n, d))
    A = rng.random((N, n)) < 0.4
    A[:, 0] = True
    A[:, 1] = False
    m0, mg, mq = _ref_margins(U, V, A)
    out = M.all_margins(
      U.astype(np.float32),
      V.astype(np.float32),
      A,
      normalize=True,
      chunk_size=3,
    )
    np.testing.assert_allclose(
      [float(out["m0"]), float(out["mg"]), float(out["mq"])],
      [m0, mg, mq],
      atol=2e-6,
    )
    assert m0 <= mg + 1e-7 and mg <= mq + 1e-7


def test_invariance_rotation_and_row_scaling():
  rng = np.random.default_rng(1)
  U, V = rng.normal(size=(8, 5)), rng.normal(size=(6, 5))
  A = rng.random((8, 6)) < 0.5
  A[:, 0], A[:, 1] = True, False
  Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))  # random orthogonal matrix
  scale_u, scale_v = (
    rng.uniform(0.1, 10, size=(8, 1)),
    rng.uniform(0.1, 10, size=(6, 1)),
  )
  for f in (M.margin, M.global_threshold_margin, M.per_query_margin):
    base = float(f(U, V, A, normalize=True))
    np.testing.assert_allclose(
      float(f(U @ Q, V @ Q, A, normalize=True)), base, atol=1e-6
    )
    np.testing.assert_allclose(
      float(f(U * scale_u, V * scale_v, A, normalize=True)), base, atol=1e-6
    )


def test_margin_under_jit_and_dtype():
  c = M.orthogonal_construction(6, 2)
  A = jnp.asarray(M.k_sparse_relevance(6, 2))
  f = jax.jit(lambda U, V, A: M.margin(U, V, A))
  np.testing.assert_allclose(
    float(f(c.U, c.V, A)), 1 / (2 * math.sqrt(2) + 1), atol=1e-6
  )


def test_validation_errors():
  U, V, A = np.ones((2, 3)) / math.sqrt(3), np.eye(3)[:2], np.eye(2)
  with pytest.raises(ValueError, match="binary"):
    M.margin(U, V, np.array([[1, 0.5], [0, 1]]))
  with pytest.raises(ValueError, match="unit-norm"):
    M.margin(2 * U, V, A)
  with pytest.raises(ValueError, match=r"shape \[N, n\]"):
    M.margin(U, V, np.eye(3))
  with pytest.raises(ValueError, match="embedding dimension"):
    M.margin(U, np.eye(2), A)
  with pytest.raises(ValueError, match="2-D"):
    M.margin(U[0], V, A)
  with pytest.raises(ValueError, match="all-zero row"):
    M.margin(np.zeros((2, 3)), V, A, normalize=True)
  with pytest.raises(TypeError):
    M.margin(U, V, np.array([["a", "b"], ["c", "d"]]))
  with pytest.raises(ValueError, match="chunk_size"):
    M.all_margins(U, V, A, chunk_size=0)


def test_k_sparse_relevance():
  A = M.k_sparse_relevance(6, 3)
  assert A.shape == (20, 6) and A.dtype == bool and (A.sum(1) == 3).all()
  rows = [tuple(np.flatnonzero(r)) for r in A]
  # lexicographic, each once
  assert rows == list(itertools.combinations(range(6), 3))
  with pytest.raises(ValueError, match="max_rows"):
    M.k_sparse_relevance(64, 4, max_rows=1000)
  with pytest.raises(ValueError, match="k"):
    M.k_sparse_relevance(5, 6)


def test_random_and_limit_relevance():
  A = np.asarray(M.random_k_sparse_relevance(jax.random.key(0), 50, 9, 3))
  assert A.shape == (50, 9) and (A.sum(1) == 3).all()
  B = M.sample_k_subsets(0, 30, 10, 2)
  assert (B.sum(1) == 2).all() and len({tuple(r) for r in B}) == 30
  L = M.limit_relevance(46, 2, num_queries=1000, num_docs=60, seed=0)
  assert L.shape == (1000, 60) and (L.sum(1) == 2).all() and not L[:, 46:].any()
  assert len({tuple(r) for r in L}) == 1000
  with pytest.raises(ValueError, match="num_queries"):
    M.limit_relevance(10, 2, num_queries=46)


def test_margins_float64_matches_the_definitions():
  rng = np.random.default_rng(3)
  U, V = rng.normal(size=(12, 5)), rng.normal(size=(7, 5))
  A = rng.random((12, 7)) < 0.4
  # every row has a relevant and an irrelevant document
  A[:, 0], A[:, 1] = True, False
  out = M.margins_float64(3.0 * U, V, A)  # rows are normalised first
  m0, mg, mq = _ref_margins(U, V, A)
  S = _unit(U) @ _unit(V).T
  acc = np.mean([S[j, A[j]].min() > S[j, ~A[j]].max() for j in range(12)])
  np.testing.assert_allclose(
    [out["m0"], out["mg"], out["mq"]], [m0, mg, mq], rtol=1e-12
  )
  assert out["topk_accuracy"] == acc
  jx = M.all_margins(U, V, A, normalize=True)
  np.testing.assert_allclose(
    [out[k] for k in jx], [float(v) for v in jx.values()], atol=1e-5
  )
  with pytest.raises(ValueError, match="A \\[N, n\\]"):
    M.margins_float64(U, V, A[:, :3])


@pytest.mark.parametrize("n,k", [(8, 2), (10, 3)])
def test_orthogonal_construction_on_sampled_rows(n, k):
  """On a subset of the k-subsets the rows are those of the full construction,
  margin m."""
  full = M.orthogonal_construction(n, k)
  A_all = M.k_sparse_relevance(n, k)
  idx = np.array([0, 3, 7, len(A_all) - 1])
  part = M.orthogonal_construction(n, k, A=A_all[idx])
  np.testing.assert_array_equal(np.asarray(part.U), np.asarray(full.U)[idx])
  np.testing.assert_array_equal(np.asarray(part.V), np.asarray(full.V))
  m = 1.0 / (2.0 * math.sqrt(k) + 1.0)
  assert part.bound == m and part.certificate == pytest.approx(m, abs=1e-12)
  with pytest.raises(ValueError, match="ones per row"):
    M.orthogonal_construction(n, k, A=np.eye(n, dtype=bool))


def test_critical_n_grid():
  assert M.critical_n_grid(8, 2) == [3, 4, 5, 6, 7, 8]
  # 12 -> 15 -> 19 -> 24 -> 30 -> 38 -> 48 (ceil of 1.25 n, capped at n_max).
  assert M.critical_n_grid(48, 2) == [*range(3, 13), 15, 19, 24, 30, 38, 48]
  assert M.critical_n_grid(40, 3) == [*range(4, 13), 15, 19, 24, 30, 38, 40]


def test_all_margins_independent_of_the_block_size_and_edge_rows():
  # Blocks of 1, 5 (not dividing N), N and more than N give the float64
  # reference (up to the float32 rounding of the score matmul, whose kernel
  # depends on the block's shape); rows with no positives or no negatives are
  # included.
  rng = np.random.default_rng(3)
  N, n, d = 23, 9, 5
  U, V = _unit(rng.normal(size=(N, d))), _unit(rng.normal(size=(n, d)))
  A = rng.random((N, n)) < 0.4
  A[0], A[1] = True, False
  Uf, Vf = U.astype(np.float32), V.astype(np.float32)
  m0, mg, mq = _ref_margins(Uf.astype(np.float64), Vf.astype(np.float64), A)
  S = Uf.astype(np.float64) @ Vf.astype(np.float64).T
  pos_min = np.where(A, S, np.inf).min(1)
  neg_max = np.where(A, -np.inf, S).max(1)
  acc = np.mean(pos_min > neg_max)
  outs = [M.all_margins(Uf, Vf, A, chunk_size=c) for c in (1, 5, N, 100)]
  for out in outs:
    np.testing.assert_allclose(
      [float(out[k]) for k in ("m0", "mg", "mq", "topk_accuracy")],
      [m0, mg, mq, acc],
      atol=1e-6,
    )
    # an exact count, in float32
    assert float(out["topk_accuracy"]) == np.float32(acc)


def test_unit_row_check_decides_as_float64_near_the_tolerance():
  # The eager check screens in float32 and falls back to float64 near the
  # tolerance: a row just inside 1 + 1e-3 passes, one just outside fails, as the
  # float64 check decides.
  V = np.eye(3)
  A = np.eye(2, 3, dtype=bool)
  for norm, ok in (
    (1 + 1e-3 - 2e-6, True),
    (1 + 1e-3 + 2e-6, False),
    (1 - 1e-3 - 2e-6, False),
  ):
    U = np.array([[norm, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
    assert (abs(np.linalg.norm(U[0].astype(np.float64)) - 1) <= 1e-3) == ok
    if ok:
      M.margin(U, V, A)
    else:
      with pytest.raises(ValueError, match="unit-norm"):
        M.margin(U, V, A)
  with pytest.raises(ValueError, match="unit-norm"):
    M.margin(np.array([[np.nan, 0, 0], [0, 1, 0]], np.float32), V, A)
