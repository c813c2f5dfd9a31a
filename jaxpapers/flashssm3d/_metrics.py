"""Evaluation metrics as VGGT computes them (arXiv:2503.11651;
``evaluation/test_co3d.py``).

NumPy float64 functions (evaluation is not differentiated). Extrinsics are
camera-from-world ``[S, 3, 4]`` (or ``[S, 4, 4]``) per scene; conventions in
``_geometry.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import KDTree

__all__ = [
  "relative_pose_errors",
  "pose_auc",
  "rra_rta",
  "ate",
  "umeyama_np",
  "accuracy_completeness",
  "depth_metrics",
]


def _finite(a, name):
  if not np.all(np.isfinite(a)):
    raise ValueError(f"{name} must be finite; found NaN or inf")
  return a


def _to44(e, name="extrinsics"):
  e = np.asarray(e, np.float64)
  if e.ndim != 3 or e.shape[1:] not in ((3, 4), (4, 4)):
    raise ValueError(f"{name} must be [S, 3, 4] or [S, 4, 4], got {e.shape}")
  _finite(e, name)
  out = np.tile(np.eye(4), (e.shape[0], 1, 1))
  out[:, :3, :] = e[:, :3, :]
  return out


def _quat_np(R):
  """Rotation [N,3,3] -> unit quaternion [N,4] (scalar-last), via the symmetric
  4x4 eigenproblem."""
  out = []
  for m in R:
    K = (
      np.array(
        [
          [
            m[0, 0] - m[1, 1] - m[2, 2],
            m[1, 0] + m[0, 1],
            m[2, 0] + m[0, 2],
            m[2, 1] - m[1, 2],
          ],
          [
            m[1, 0] + m[0, 1],
            m[1, 1] - m[0, 0] - m[2, 2],
            m[2, 1] + m[1, 2],
            m[0, 2] - m[2, 0],
          ],
          [
            m[2, 0] + m[0, 2],
            m[2, 1] + m[1, 2],
            m[2, 2] - m[0, 0] - m[1, 1],
            m[1, 0] - m[0, 1],
          ],
          [
            m[2, 1] - m[1, 2],
            m[0, 2] - m[2, 0],
            m[1, 0] - m[0, 1],
            m[0, 0] + m[1, 1] + m[2, 2],
          ],
        ]
      )
      / 3.0
    )
    vals, vecs = np.linalg.eigh(K)
    out.append(vecs[:, np.argmax(vals)])
  return np.array(out).reshape(-1, 4)


def relative_pose_errors(
  ext_pred: ArrayLike, ext_gt: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
  """Relative rotation and translation angle errors over all pairs ``i < j``
  (degrees).

  As VGGT: ``rel_k = E_i E_j^{-1}`` for each pair; rotation error
  ``arccos(2 (q_p·q_g)² − 1)``; translation error the angle between the relative
  translations, ``arccos(|t̂_p · t̂_g|)``, i.e. with the sign ambiguity
  ``min(e, 180° − e)``.

  Args:
    ext_pred: ``[S, 3, 4]`` (or ``[S, 4, 4]``) predicted camera-from-world
      extrinsics of one scene (S >= 2).
    ext_gt: the ground-truth extrinsics, the same shape.

  Returns:
    ``(rot_deg [S(S-1)/2], trans_deg [S(S-1)/2])``.
  """
  P, G = _to44(ext_pred, "ext_pred"), _to44(ext_gt, "ext_gt")
  if P.shape != G.shape:
    raise ValueError(f"ext_pred {P.shape} and ext_gt {G.shape} must match")
  S = P.shape[0]
  if S < 2:
    raise ValueError("need at least 2 views for relative pose errors")
  pairs = np.array(list(itertools.combinations(range(S), 2)))
  i, j = pairs[:, 0], pairs[:, 1]
  rp = P[i] @ np.linalg.inv(P[j])
  rg = G[i] @ np.linalg.inv(G[j])
  qp, qg = _quat_np(rp[:, :3, :3]), _quat_np(rg[:, :3, :3])
  dot2 = np.clip(np.sum(qp * qg, -1) ** 2, 0.0, 1.0)
  rot = np.degrees(np.arccos(np.clip(2 * dot2 - 1, -1.0, 1.0)))
  tp, tg = rp[:, :3, 3], rg[:, :3, 3]
  tp = tp / np.maximum(np.linalg.norm(tp, axis=-1, keepdims=True), 1e-15)
  tg = tg / np.maximum(np.linalg.norm(tg, axis=-1, keepdims=True), 1e-15)
  cos = np.clip(np.abs(np.sum(tp * tg, -1)), 0.0, 1.0)
  tr = np.degrees(np.arccos(cos))
  tr = np.minimum(tr, np.abs(180.0 - tr))
  return rot, tr


def pose_auc(
  rot_deg: ArrayLike, trans_deg: ArrayLike, max_threshold: int = 30
) -> float:
  """VGGT's AUC (``calculate_auc_np``): per pair ``e = max(rot, trans)``;
  histogram over 1° bins in ``[0, max_threshold]`` (last bin closed) divided by
  the number of pairs; ``mean(cumsum)``.

  Args:
    rot_deg: ``[P]`` relative rotation errors in degrees (from
      :func:`relative_pose_errors`); non-negative, no NaN (``+inf`` is a legal
      "failed" pair).
    trans_deg: ``[P]`` relative translation errors in degrees, same rules.
    max_threshold: the largest threshold in degrees (an int >= 1), e.g. 30 for
      AUC@30.

  Returns:
    The AUC in [0, 1] (VGGT reports it ×100). Bad errors raise ``ValueError``.
  """
  r, t = _check_errors(rot_deg, trans_deg)
  if (
    isinstance(max_threshold, bool)
    or not isinstance(max_threshold, (int, np.integer))
    or max_threshold < 1
  ):
    raise ValueError(
      f"max_threshold must be an int >= 1 (degrees), got {max_threshold!r}"
    )
  e = np.maximum(r, t)
  hist, _ = np.histogram(e, bins=np.arange(max_threshold + 1))
  return float(np.mean(np.cumsum(hist.astype(np.float64) / e.size)))


def _check_errors(rot_deg, trans_deg):
  r = np.asarray(rot_deg, np.float64).ravel()
  t = np.asarray(trans_deg, np.float64).ravel()
  if r.shape != t.shape or r.size == 0:
    raise ValueError(
      f"rot_deg and trans_deg must be equal-length non-empty, got {r.shape}, "
      f"{t.shape}"
    )
  if np.isnan(r).any() or np.isnan(t).any() or (r < 0).any() or (t < 0).any():
    raise ValueError(
      "rot_deg and trans_deg must be non-negative angles in degrees (no NaN)"
    )
  return r, t


def rra_rta(
  rot_deg: ArrayLike,
  trans_deg: ArrayLike,
  thresholds: Sequence[float] = (5, 15, 30),
) -> dict[str, float]:
  """Relative rotation / translation accuracy: fraction of pairs with error
  below each threshold.

  Args:
    rot_deg: ``[P]`` relative rotation errors in degrees, as in :func:`pose_auc`
      (non-empty, non-negative, no NaN).
    trans_deg: ``[P]`` relative translation errors in degrees.
    thresholds: positive thresholds in degrees.

  Returns:
    ``{'RRA@k': fraction of rot_deg < k, 'RTA@k': fraction of trans_deg < k}``
    for each threshold ``k``.
  """
  r, t = _check_errors(rot_deg, trans_deg)
  thresholds = tuple(thresholds)
  if not thresholds or any(not np.isfinite(k) or k <= 0 for k in thresholds):
    raise ValueError(
      "thresholds must be a non-empty sequence of positive degrees, "
      f"got {thresholds!r}"
    )
  out = {}
  for k in thresholds:
    out[f"RRA@{k}"] = float(np.mean(r < k))
    out[f"RTA@{k}"] = float(np.mean(t < k))
  return out


def umeyama_np(
  X: ArrayLike,
  Y: ArrayLike,
  w: ArrayLike | None = None,
  with_scale: bool = True,
) -> tuple[float, np.ndarray, np.ndarray]:
  """Float64 weighted Umeyama: ``Y ≈ s R X + t`` (same formulas as
  ``weighted_umeyama``).

  Args:
    X: ``[M, 3]`` finite source points, ``M >= 1``.
    Y: ``[M, 3]`` finite target points.
    w: ``[M]`` finite non-negative weights with a positive sum (default
      uniform).
    with_scale: if False, ``s = 1`` (an SE(3) fit).

  Returns:
    ``(s, R [3, 3], t [3])``; ``ValueError`` for bad shapes or weights.
  """
  X, Y = np.asarray(X, np.float64), np.asarray(Y, np.float64)
  if X.ndim != 2 or X.shape[-1] != 3 or X.shape != Y.shape or X.shape[0] < 1:
    raise ValueError(
      f"X and Y must both be [M, 3] with M >= 1; got {X.shape} and {Y.shape}"
    )
  _finite(X, "X")
  _finite(Y, "Y")
  wn = np.ones(len(X)) if w is None else np.asarray(w, np.float64)
  if wn.shape != (X.shape[0],):
    raise ValueError(f"w must be [M] = [{X.shape[0]}], got {wn.shape}")
  if not (np.all(np.isfinite(wn)) and np.all(wn >= 0) and wn.sum() > 0):
    raise ValueError(
      "w must be finite non-negative weights with a positive sum"
    )
  wn = wn / wn.sum()
  mx, my = wn @ X, wn @ Y
  Xc, Yc = X - mx, Y - my
  var = float(wn @ np.sum(Xc**2, -1))
  U, D, Vt = np.linalg.svd((Yc * wn[:, None]).T @ Xc)
  sg = np.sign(np.linalg.det(U) * np.linalg.det(Vt))
  S = np.array([1.0, 1.0, sg if sg != 0 else 1.0])
  R = U @ np.diag(S) @ Vt
  s = float(np.sum(D * S) / var) if (with_scale and var > 0) else 1.0
  return s, R, my - s * R @ mx


def ate(ext_pred: ArrayLike, ext_gt: ArrayLike) -> float:
  """Absolute trajectory error: RMSE of camera centres after Sim(3) (Umeyama)
  alignment.

  With one camera the alignment is exact and the ATE is 0.

  Args:
    ext_pred: ``[S, 3, 4]`` (or ``[S, 4, 4]``) finite predicted
      camera-from-world extrinsics.
    ext_gt: the ground-truth extrinsics, the same shape.

  Returns:
    The RMSE of the aligned predicted camera centres, in ground-truth units.
  """
  P, G = _to44(ext_pred, "ext_pred"), _to44(ext_gt, "ext_gt")
  if P.shape != G.shape:
    raise ValueError(f"ext_pred {P.shape} and ext_gt {G.shape} must match")
  cp = np.stack([-m[:3, :3].T @ m[:3, 3] for m in P])
  cg = np.stack([-m[:3, :3].T @ m[:3, 3] for m in G])
  s, R, t = umeyama_np(cp, cg)
  res = (s * cp @ R.T + t) - cg
  return float(np.sqrt(np.mean(np.sum(res**2, -1))))


def accuracy_completeness(
  points_pred: ArrayLike,
  points_gt: ArrayLike,
  valid: ArrayLike | None = None,
  *,
  align: bool = True,
  max_points: int | None = 20000,
  seed: int = 0,
) -> dict[str, float]:
  """Point-map Accuracy (pred→GT NN distance), Completeness (GT→pred) and
  Overall (their mean).

  Args:
    points_pred: ``[..., 3]`` predicted point map of one scene.
    points_gt: ``[..., 3]`` ground-truth point map, in correspondence with
      ``points_pred``.
    valid: ``[...]`` mask (default all).
    align: first Sim(3)-align the prediction onto GT with Umeyama on the
      correspondences.
    max_points: random subsample for speed (None = all).
    seed: seed of the subsample.

  Returns:
    ``{'accuracy', 'completeness', 'overall'}`` (means, in GT units).
  """
  P = np.asarray(points_pred, np.float64).reshape(-1, 3)
  G = np.asarray(points_gt, np.float64).reshape(-1, 3)
  if P.shape != G.shape:
    raise ValueError(
      f"points_pred {P.shape} and points_gt {G.shape} must match"
    )
  if valid is None:
    m = np.ones(len(P), bool)
  else:
    m = np.asarray(valid).reshape(-1)
    if m.shape != (len(P),):
      raise ValueError(
        f"valid must have one entry per point ({len(P)}), got {np.shape(valid)}"
      )
    m = m.astype(bool)
  P, G = P[m], G[m]
  if len(P) == 0:
    raise ValueError("no valid point: valid must mark at least one point")
  _finite(P, "points_pred")
  _finite(G, "points_gt")
  if max_points is not None and len(P) > max_points:
    sel = np.random.default_rng(seed).choice(len(P), max_points, replace=False)
    P, G = P[sel], G[sel]
  if align:
    s, R, t = umeyama_np(P, G)
    P = s * P @ R.T + t
  acc = float(np.mean(KDTree(G).query(P)[0]))
  comp = float(np.mean(KDTree(P).query(G)[0]))
  return {"accuracy": acc, "completeness": comp, "overall": 0.5 * (acc + comp)}


def depth_metrics(
  depth_pred: ArrayLike,
  depth_gt: ArrayLike,
  valid: ArrayLike | None = None,
  *,
  align: str = "median",
) -> dict[str, float]:
  """Depth AbsRel and δ<1.25 after per-view median scale alignment.

  Args:
    depth_pred: ``[S, H, W]`` (or ``[S, H, W, 1]``) predicted depth.
    depth_gt: ground-truth depth of the same shape.
    valid: ``[S, H, W]`` mask; pixels with GT depth <= 0 are excluded.
    align: ``'median'`` (per view, ``d · median(gt)/median(pred)``) or
      ``'none'``.

  Returns:
    ``{'abs_rel', 'delta_1.25'}``; both NaN when no pixel is valid (nothing was
    measured). Non-finite depths inside the mask raise ``ValueError``.
  """
  if align not in ("median", "none"):
    raise ValueError(f"align must be 'median' or 'none', got {align!r}")
  p = np.asarray(depth_pred, np.float64)
  g = np.asarray(depth_gt, np.float64)
  if p.ndim == 4:
    p = p[..., 0]
  if g.ndim == 4:
    g = g[..., 0]
  if p.shape != g.shape or p.ndim != 3:
    raise ValueError(
      f"depth_pred and depth_gt must be [S, H, W]; got {p.shape}, {g.shape}"
    )
  if valid is None:
    m = np.ones(g.shape, bool)
  else:
    m = np.asarray(valid)
    if m.ndim == 4 and m.shape[-1] == 1:
      m = m[..., 0]
    if m.shape != g.shape:
      raise ValueError(
        f"valid must be [S, H, W] = {g.shape}, got {np.shape(valid)}"
      )
    m = m.astype(bool)
  m = m & (g > 0)
  if not (np.all(np.isfinite(p[m])) and np.all(np.isfinite(g[m]))):
    raise ValueError(
      "depth_pred and depth_gt must be finite at the valid pixels"
    )
  absrel, good, n = 0.0, 0.0, 0
  for k in range(p.shape[0]):
    pk, gk = p[k][m[k]], g[k][m[k]]
    if pk.size == 0:
      continue
    if align == "median":
      pk = pk * np.median(gk) / max(np.median(pk), 1e-12)
    pk = np.maximum(pk, 1e-12)
    absrel += np.sum(np.abs(pk - gk) / gk)
    good += np.sum(np.maximum(pk / gk, gk / pk) < 1.25)
    n += pk.size
  if n == 0:
    return {"abs_rel": float("nan"), "delta_1.25": float("nan")}
  return {"abs_rel": float(absrel / n), "delta_1.25": float(good / n)}
