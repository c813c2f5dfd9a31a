"""Losses against float64 numpy transcriptions of the reference definitions."""

import numpy as np
import pytest

import jaxpapers.msretrieval as M

RNG = np.random.default_rng(1)
Z = RNG.normal(size=(5, 24)).astype(np.float32)
Y = (RNG.random((5, 24)) < 0.3).astype(np.float32)
P = 1.0 / (1.0 + np.exp(-Z.astype(np.float64)))
BCE = -(Y * np.log(P) + (1 - Y) * np.log(1 - P))


def test_bce():
  assert float(M.bce_loss(Z, Y)) == pytest.approx(BCE.mean(), rel=1e-5)


@pytest.mark.parametrize("gamma", [0.0, 2.0, 5.0])
def test_focal(gamma):
  want = ((1 - np.exp(-BCE)) ** gamma * BCE).mean()
  assert float(M.focal_loss(Z, Y, gamma=gamma)) == pytest.approx(want, rel=1e-5)


def test_focal_gamma_zero_is_bce():
  assert float(M.focal_loss(Z, Y, gamma=0.0)) == pytest.approx(
    float(M.bce_loss(Z, Y)), rel=1e-6
  )


def test_cosine_acts_on_probabilities():
  cos = (P * Y).sum(1) / np.linalg.norm(P, axis=1) / np.linalg.norm(Y, axis=1)
  assert float(M.cosine_loss(Z, Y)) == pytest.approx(np.mean(1 - cos), rel=1e-5)


def test_soft_iou():
  inter = (P * Y).sum(1)
  want = 1 - np.mean(inter / (P.sum(1) + Y.sum(1) - inter))
  assert float(M.soft_iou_loss(Z, Y)) == pytest.approx(want, rel=1e-5)


S = RNG.normal(size=(4, 6)).astype(np.float32)
LAB = np.zeros((4, 6), bool)
LAB[0, 2] = LAB[1, 0] = LAB[2, 3] = True
LAB[1, 4] = True  # a second positive: excluded from both sides
MASK = np.ones((4, 6), bool)
MASK[2, 5] = False  # padding
# query 3 has no positive: left out of the mean


def _np_list(s, lab, mask, tau):
  out = []
  for b in range(s.shape[0]):
    pos = np.where(lab[b] & mask[b])[0]
    if not len(pos):
      continue
    neg = s[b][mask[b] & ~lab[b]]
    logits = np.concatenate([[s[b, pos[0]]], neg]).astype(np.float64) / tau
    out.append(-logits[0] + np.log(np.exp(logits).sum()))
  return np.mean(out)


def _np_pair(s, lab, mask, tau):
  out = []
  for b in range(s.shape[0]):
    pos = np.where(lab[b] & mask[b])[0]
    neg = s[b][mask[b] & ~lab[b]]
    if not len(pos) or not len(neg):
      continue
    out.append(np.mean(np.log1p(np.exp((neg - s[b, pos[0]]) / tau))))
  return np.mean(out)


@pytest.mark.parametrize("tau", [1.0, 0.1])
def test_listwise_and_pairwise(tau):
  got = float(M.listwise_contrastive_loss(S, LAB, MASK, temperature=tau))
  assert got == pytest.approx(_np_list(S, LAB, MASK, tau), rel=1e-5)
  got = float(M.pairwise_contrastive_loss(S, LAB, MASK, temperature=tau))
  assert got == pytest.approx(_np_pair(S, LAB, MASK, tau), rel=1e-5)


def test_contrastive_ignores_padding_and_second_positive_scores():
  s2 = S.copy()
  s2[2, 5] = 50.0  # padded slot
  s2[1, 4] = 50.0  # the second positive
  for fn in (M.listwise_contrastive_loss, M.pairwise_contrastive_loss):
    assert float(fn(s2, LAB, MASK)) == pytest.approx(
      float(fn(S, LAB, MASK)), rel=1e-6
    )


def test_contrastive_without_usable_query_is_zero():
  none = np.zeros_like(LAB)
  assert float(M.listwise_contrastive_loss(S, none, MASK)) == 0.0
  assert float(M.pairwise_contrastive_loss(S, none, MASK)) == 0.0


def test_combined_and_weighted_loss_match_parts():
  rng = np.random.default_rng(3)
  cand = (rng.random((5, 6, 24)) < 0.3).astype(np.uint8)
  cand[:, 0] = Y
  lab = np.zeros((5, 6), bool)
  lab[:, 0] = True
  mask = np.ones((5, 6), bool)
  s = np.asarray(M.candidate_scores(P.astype(np.float32), cand, mask))
  lst = float(M.listwise_contrastive_loss(s, lab, mask))
  iou = float(M.soft_iou_loss(Z, Y))
  got = float(M.combined_loss(Z, Y, cand, lab, mask, weight=0.3))
  assert got == pytest.approx(0.3 * lst + 0.7 * iou, rel=1e-5)
  singles = {
    "bce": float(M.bce_loss(Z, Y)),
    "fl": float(M.focal_loss(Z, Y, gamma=5.0)),
    "cosine": float(M.cosine_loss(Z, Y)),
    "iou": iou,
    "list_fp_cos": lst,
    "pair_fp_cos": float(M.pairwise_contrastive_loss(s, lab, mask)),
    "combined": 0.5 * lst + 0.5 * iou,
  }
  for name, want in singles.items():
    w = M.loss_weights(name)
    got, parts = M.weighted_loss(Z, Y, cand, lab, mask, w, gamma=5.0)
    assert float(got) == pytest.approx(want, rel=1e-5), name
  assert parts.shape == (len(M.BASE_LOSSES),)
