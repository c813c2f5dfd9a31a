"""Digit videos: a synthetic, offline stand-in for object-in-video benchmarks.

A reconstruction (the paper uses YOLO/OWLv2 detections on real videos). Each
frame is a 16x32 canvas with two 16x16 slots holding 0-2 handwritten digits from
scikit-learn's bundled `load_digits` (8x8 images upsampled 2x, randomly
shifted). The atomic propositions are "digit k is visible" for k in a small
pool. Ground truth comes from a latent Boolean timeline per atom; frames are
rendered from it and then corrupted by realistic noise (pixel noise, blur,
occlusion patches and flicker: dropped, blank frames), so a per-frame detector
is noisy.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.ndimage
from sklearn.datasets import load_digits

# Query templates over atoms a, b, c (>= 15; QMTP-like shapes).
TEMPLATES = (
  "F {a}",
  "G {a}",
  "{a} U {b}",
  "F({a} & X {b})",
  "G({a} -> F {b})",
  "{a} U ({b} & X {c})",
  "F({a} & F {b})",
  "G !{a}",
  "F {a} & F {b}",
  "F({a} & {b})",
  "!{a} U {b}",
  "F G {a}",
  "F {a} -> F {b}",
  "F({a} & X X {b})",
  "G({a} | {b})",
  "F({a} & !{b}) & F({b} & !{a})",
)

H, W, SLOT = 16, 32, 16


def atom_name(digit: int) -> str:
  return f"d{digit}"


def instantiate(template: str, digits) -> str:
  names = dict(zip("abc", [atom_name(d) for d in digits]))
  return template.format(**names)


def template_atoms(template: str) -> tuple[str, ...]:
  return tuple(v for v in "abc" if "{" + v + "}" in template)


@dataclasses.dataclass
class DigitBank:
  """Upsampled, padded digit images by class: images[c] is [n_c, 20, 20]."""

  images: dict

  @classmethod
  def from_split(cls, split: str, seed: int = 0, train_fraction: float = 0.5):
    """Disjoint halves of sklearn digits: 'train' for the detector, 'video' for
    videos."""
    d = load_digits()
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(d.target))
    cut = int(train_fraction * len(perm))
    idx = perm[:cut] if split == "train" else perm[cut:]
    imgs = d.images[idx].astype(np.float32) / 16.0
    big = np.kron(imgs, np.ones((1, 2, 2), np.float32))  # [n, 16, 16]
    big = np.pad(big, ((0, 0), (2, 2), (2, 2)))  # [n, 20, 20]
    labels = d.target[idx]
    return cls({c: big[labels == c] for c in range(10)})


def render(slot_digits: np.ndarray, bank: DigitBank, rng) -> np.ndarray:
  """Renders frames from slot contents.

  Args:
    slot_digits: int [N, 2], digit class per slot or -1 for empty.
    bank: digit images.
    rng: numpy Generator.

  Returns:
    float32 [N, 16, 32] frames in [0, 1].
  """
  N = slot_digits.shape[0]
  frames = np.zeros((N, H, W), np.float32)
  for s in range(2):
    dig = slot_digits[:, s]
    patch = np.zeros((N, 20, 20), np.float32)
    for c in np.unique(dig[dig >= 0]):
      rows = np.flatnonzero(dig == c)
      patch[rows] = bank.images[c][
        rng.integers(len(bank.images[c]), size=len(rows))
      ]
    dy = rng.integers(0, 5, size=N)
    dx = rng.integers(0, 5, size=N)
    r = dy[:, None] + np.arange(SLOT)
    col = dx[:, None] + np.arange(SLOT)
    frames[:, :, s * SLOT : (s + 1) * SLOT] = patch[
      np.arange(N)[:, None, None], r[:, :, None], col[:, None, :]
    ]
  return frames


def slots_from_presence(presence: np.ndarray, pool, rng, distractor_prob=0.3):
  """Assigns visible atom digits (presence bool [N, K] over `pool`) to slots."""
  N, K = presence.shape
  others = [d for d in range(10) if d not in pool]
  slots = np.full((N, 2), -1, np.int64)
  pool = np.asarray(pool)
  for i in range(N):
    on = list(pool[presence[i]])
    rng.shuffle(on)
    on = on[:2]
    while len(on) < 2:
      on.append(
        int(rng.choice(others)) if rng.random() < distractor_prob else -1
      )
    if rng.random() < 0.5:
      on = on[::-1]
    slots[i] = on
  return slots


def corrupt(
  frames: np.ndarray,
  rng,
  *,
  pixel_noise: float,
  blur_probs,
  occlusion_prob: float,
  flicker_prob: float,
) -> np.ndarray:
  """Adds noise to videos [B, T, 16, 32]: blur per video, occlusion and flicker
  per frame."""
  B, T = frames.shape[:2]
  out = frames.copy()
  sigmas = rng.choice([0.0, 0.8, 1.3], size=B, p=blur_probs)
  for i in np.flatnonzero(sigmas > 0):
    out[i] = scipy.ndimage.gaussian_filter(
      out[i], sigma=(0, sigmas[i], sigmas[i])
    )
  occ = rng.random((B, T)) < occlusion_prob
  for i, t in zip(*np.nonzero(occ)):
    h, w = rng.integers(8, 13), rng.integers(10, 17)
    y, x = rng.integers(0, H - h + 1), rng.integers(0, W - w + 1)
    out[i, t, y : y + h, x : x + w] = (
      rng.random((h, w)) if rng.random() < 0.5 else 0.0
    )
  flick = rng.random((B, T)) < flicker_prob
  out[flick] = 0.0
  out = out + pixel_noise * rng.standard_normal(out.shape).astype(np.float32)
  return np.clip(out, 0.0, 1.0)


def random_timelines(
  rng, n: int, T: int, k: int, *, sparse: bool = False
) -> np.ndarray:
  """Latent presence timelines bool [n, k, T] (sticky Markov chains, some
  constant).

  At most two atoms are visible per frame (two slots).
  """
  out = np.zeros((n, k, T), bool)
  for i in range(n):
    for j in range(k):
      u = rng.random()
      if not sparse and u < 0.15:
        out[i, j] = True
        continue
      if not sparse and u < 0.35:
        continue
      rate = rng.uniform(0.02, 0.15) if sparse else rng.uniform(0.05, 0.6)
      seg = rng.uniform(2, 5) if sparse else rng.uniform(2, 12)
      p_off = 1.0 / seg
      p_on = min(1.0, rate / (1 - rate) * p_off)
      state = rng.random() < rate
      for t in range(T):
        out[i, j, t] = state
        state = (rng.random() >= p_off) if state else (rng.random() < p_on)
  return _at_most_two(out, rng)


def near_misses(rng, timelines: np.ndarray) -> np.ndarray:
  """Flips one short segment (1-3 frames) of one atom per timeline."""
  out = timelines.copy()
  n, k, T = out.shape
  for i in range(n):
    j = rng.integers(k)
    L = int(rng.integers(1, 4))
    s = int(rng.integers(0, max(T - L, 0) + 1))
    out[i, j, s : s + L] = ~out[i, j, s : s + L]
  return _at_most_two(out, rng)


def _at_most_two(out: np.ndarray, rng) -> np.ndarray:
  """Timelines bool [n, k, T] with a random visible atom hidden in every frame
  showing more than two (two slots), in place."""
  for i, t in zip(*np.nonzero(out.sum(1) > 2)):
    out[i, rng.choice(np.flatnonzero(out[i, :, t])), t] = False
  return out


def noise_kwargs(cfg, train: bool) -> dict:
  """The corruption (:func:`corrupt` keywords) of the detector's training frames
  or of the videos, from the config's noise fields."""
  if train:
    return dict(
      pixel_noise=cfg.pixel_noise,
      blur_probs=(0.6, 0.3, 0.1),
      occlusion_prob=0.05,
      flicker_prob=0.0,
    )
  return dict(
    pixel_noise=cfg.pixel_noise,
    blur_probs=tuple(cfg.blur_probs),
    occlusion_prob=cfg.occlusion_prob,
    flicker_prob=cfg.flicker_prob,
  )


def render_videos(timelines, digits, pool, bank, rng, cfg):
  """timelines bool [n, k, T] over `digits` -> noisy frames [n, T, 16, 32]."""
  n, k, T = timelines.shape
  presence = np.zeros((n, T, len(pool)), bool)
  for j, d in enumerate(digits):
    presence[:, :, pool.index(d)] = timelines[:, j]
  slots = slots_from_presence(presence.reshape(n * T, -1), pool, rng)
  frames = render(slots, bank, rng).reshape(n, T, H, W)
  return corrupt(frames, rng, **noise_kwargs(cfg, train=False))
