"""Seeded synthetic directed hypergraphs with planted classes (GeDi-HNN's
recipe) [reconstruction]."""

from __future__ import annotations

import numpy as np

from jaxpapers.hypergraph import _io
from jaxpapers.hypergraph import _structure as st

__all__ = ["make_synthetic"]


def make_synthetic(
  seed: int,
  *,
  num_classes: int = 5,
  nodes_per_class: int = 100,
  n_intra: int = 30,
  n_inter: int = 10,
  size_range: tuple[int, int] = (3, 10),
  directed: bool = True,
  features: str = "degree",
  feature_dim: int = 16,
  feature_noise: float = 1.0,
  direction_noise: float = 0.0,
  q: float = 0.25,
  num_splits: int = 10,
  name: str | None = None,
) -> st.HypergraphData:
  """Planted-class hypergraph following GeDi-HNN's synthetic recipe (as observed
  in its files).

  * labels in contiguous blocks of ``nodes_per_class``;
  * ``n_intra`` undirected hyperedges per class, members drawn from that class
    (homophily);
  * ``n_inter`` directed hyperedges per class pair ``i < j``: tail members from
    class i, head members from class j (the direction carries the class order).
    ``direction_noise`` is the probability of swapping tail and head, which
    weakens the direction signal;
  * tail, head and intra member counts uniform in ``size_range`` (inclusive).

  Homophily is tuned by ``n_intra`` vs ``n_inter``. Features: ``'degree'`` (the
  one degree feature, as for GeDi's sets) or ``'gaussian'`` (class means +
  ``feature_noise`` noise). Splits: per-class 60/20/20, ``num_splits`` seeded
  draws.

  Args:
    seed: non-negative int seeding the graph, the features and the splits.
    num_classes: C, the number of classes.
    nodes_per_class: nodes in each class (n = C * nodes_per_class).
    n_intra: undirected hyperedges within each class.
    n_inter: directed hyperedges per class pair.
    size_range: ``(lo, hi)``, inclusive bounds of the member counts.
    directed: False merges every tail into its head set (undirected hyperedges).
    features: ``'degree'`` ([n, 1]) or ``'gaussian'`` ([n, feature_dim]).
    feature_dim: width of the Gaussian features.
    feature_noise: standard deviation of the Gaussian features around their
      class mean.
    direction_noise: probability in [0, 1] of swapping a hyperedge's tail and
      head.
    q: the phase parameter of the tails.
    num_splits: number of splits.
    name: the dataset's name (default derived from ``seed`` and ``n_inter``).

  Returns:
    A :class:`HypergraphData` with n nodes, C classes and [num_splits, n] masks.
  """
  for nm, v, low in (
    ("seed", seed, 0),
    ("num_classes", num_classes, 1),
    ("nodes_per_class", nodes_per_class, 1),
    ("n_intra", n_intra, 0),
    ("n_inter", n_inter, 0),
    ("feature_dim", feature_dim, 1),
    ("num_splits", num_splits, 1),
  ):
    if (
      isinstance(v, (bool, np.bool_))
      or not isinstance(v, (int, np.integer))
      or v < low
    ):
      raise ValueError(f"{nm} must be an int >= {low}, got {v!r}")
  for nm, v, upper in (
    ("direction_noise", direction_noise, 1.0),
    ("feature_noise", feature_noise, np.inf),
  ):
    if (
      isinstance(v, bool)
      or not isinstance(v, (int, float, np.floating))
      or not 0.0 <= v <= upper
      or not np.isfinite(v)
    ):
      raise ValueError(
        f"{nm} must be a finite float in [0, {upper}], got {v!r}"
      )
  if len(size_range) != 2:
    raise ValueError(f"size_range must be (lo, hi), got {size_range!r}")
  lo, hi = size_range
  if not (1 <= lo <= hi <= nodes_per_class):
    raise ValueError(
      "size_range must satisfy 1 <= lo <= hi <= nodes_per_class, "
      f"got {size_range}"
    )
  for nm, v in (
    ("num_classes", num_classes),
    ("nodes_per_class", nodes_per_class),
  ):
    if v <= 0:
      raise ValueError(f"{nm} must be positive, got {v}")
  if features not in ("degree", "gaussian"):
    raise ValueError(
      f"features must be 'degree' or 'gaussian', got {features!r}"
    )
  rng = np.random.default_rng(seed)
  n = num_classes * nodes_per_class
  y = np.repeat(np.arange(num_classes), nodes_per_class)
  block = lambda c, k: (
    c * nodes_per_class + rng.choice(nodes_per_class, size=k, replace=False)
  )
  tails, heads = [], []
  for c in range(num_classes):
    for _ in range(n_intra):
      tails.append([])
      heads.append(block(c, rng.integers(lo, hi + 1)).tolist())
  for i in range(num_classes):
    for j in range(i + 1, num_classes):
      for _ in range(n_inter):
        t = block(i, rng.integers(lo, hi + 1)).tolist()
        h = block(j, rng.integers(lo, hi + 1)).tolist()
        if rng.random() < direction_noise:
          t, h = h, t
        if directed:
          tails.append(t)
          heads.append(h)
        else:
          tails.append([])
          heads.append(t + h)
  inc = st.from_directed_hyperedges(tails, heads, n, q=q)
  if features == "degree":
    x = np.asarray(inc.deg_node, np.float32)[:, None]
  else:
    means = rng.normal(size=(num_classes, feature_dim))
    x = means[y] + feature_noise * rng.normal(size=(n, feature_dim))
  masks = _io.random_splits(
    y, seed, train=0.6, val=0.2, num_splits=num_splits, per_class=True
  )
  return st.make_data(
    inc,
    x,
    y,
    train_mask=masks[0],
    val_mask=masks[1],
    test_mask=masks[2],
    num_classes=num_classes,
    name=name or f"synthetic(seed={seed},inter={n_inter})",
  )
