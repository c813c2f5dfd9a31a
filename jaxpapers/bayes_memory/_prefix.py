"""Shared-prompt scoring: prefill each shared token prefix once, score the rows
against its cache.

The scores of one question,

  log p(y | m_i, x)  and  log p(y' | m_i, x)   for every context m_i (none, placebo, each turn, all),

are sums over rows ``template(m_i, x) + y``. The rows are not independent texts:
the rows of y and of the contrast y' share their whole prompt, and every row of
a dialogue shares the memory block with the rows of the dialogue's other
questions. Under causal attention the hidden states of a shared token prefix do
not depend on what follows it, so

  log p(y | c) = Σ_t log p(y_t | c, y_<t)

is unchanged when the prefix is run once, its keys and values are cached, and each row's own
tokens are run against that cache (positions continue from the prefix; padding slots between
segments are masked). Nothing is reordered: every row scores exactly the tokens of
:func:`encode_rows` (the prompt tokenised as a whole, then y), and the split points are token-level
common prefixes of those rows, so the factor is the paper's
LBF_i = log p(y | m_i, x) - log p(y | ∅, x) to float32 round-off.

A *prefix tree* of depth D + 1 is built on the host from the rows and, for each
row, D group keys (outermost first, e.g. (context, (context, question))): rows
with equal keys up to level l share a level-l node, whose segment is the longest
common token prefix of its rows beyond its parent's. Level D holds one leaf per
row: the rest of the row, which always includes the token that predicts the
first response token. The forward runs level by level in one jitted program: a
level's cache is gathered from its parents' cache rows (``jnp.take`` on the
batch axis) and the level's segments are appended; logits are computed only at
the leaves' response-predicting positions (before the unembedding).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxpapers.core import validation as V

if TYPE_CHECKING:
  from jaxpapers import lm


@struct.dataclass
class PrefixTree:
  """Token segments of a prefix tree (see the module docstring); all arrays
  right-padded.

  :func:`build_prefix_tree` fills it with NumPy arrays (host-built, passed to
  the jitted forward as they are); jax arrays and tracers are accepted too.

  Attributes:
    ids: tuple over levels of int32 [N_l, L_l] segment tokens (0 in padding).
    mask: tuple over levels of bool [N_l, L_l], True on real tokens.
    parent: tuple over levels of int32 [N_l], the parent node in level l - 1
      (zeros at level 0).
    target_mask: bool [N_D, L_D], the response tokens of each leaf (scored).
    n_rows: the number of real rows R; leaves R .. N_D - 1 are padding copies
      (static).
    real_tokens: tokens of the real nodes (padding and padding copies excluded;
      static).
  """

  ids: tuple
  mask: tuple
  parent: tuple
  target_mask: np.ndarray | jax.Array
  n_rows: int = struct.field(pytree_node=False)
  real_tokens: int = struct.field(pytree_node=False, default=0)

  @property
  def padded_tokens(self) -> int:
    """Tokens the LM runs over, padding included."""
    return int(sum(np.asarray(m).size for m in self.mask))


def _round_up(n: int, m: int) -> int:
  return max(m, -(-n // m) * m)


def _lcp(seqs: list[np.ndarray], start: int, stop: int) -> int:
  """End of the longest common prefix of ``seqs`` within [start, stop)."""
  end = start
  first = seqs[0]
  while end < stop and all(s[end] == first[end] for s in seqs[1:]):
    end += 1
  return end


def build_prefix_tree(
  rows: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
  keys: Sequence[Sequence[Hashable]],
  *,
  row_multiple: int = 8,
  len_multiple: int = 16,
) -> PrefixTree:
  """The prefix tree of ``rows`` grouped by ``keys`` (host-side, NumPy).

  Args:
    rows: R rows ``(ids, attn_mask, target_mask)``, 1-D each, right-padded (e.g.
      the rows of :func:`encode_rows`); every row has at least one target, none
      at position 0.
    keys: R tuples of D >= 1 hashable group keys, outermost first. Rows with
      equal ``keys[r][: l + 1]`` share a level-l node. Keys only decide which
      rows share; the shared segment is always a common token prefix, so
      grouping rows that share nothing costs speed, never correctness.
    row_multiple: each level's node count is padded up to a multiple of this
      (fewer compilations); padding nodes copy node 0.
    len_multiple: each level's segment length is padded up to a multiple of
      this.

  Returns:
    A :class:`PrefixTree` with D + 1 levels.

  Raises:
    ValueError: empty rows, rows without targets or with a target at position 0,
      keys of unequal depth or of the wrong count, or level-0 groups whose rows
      do not share their first token.
  """
  row_multiple = V.check_int(row_multiple, "row_multiple", min_value=1)
  len_multiple = V.check_int(len_multiple, "len_multiple", min_value=1)
  R = len(rows)
  if R == 0:
    raise ValueError(
      "rows must hold at least one (ids, attn_mask, target_mask) row"
    )
  if len(keys) != R:
    raise ValueError(
      f"keys must hold one key tuple per row ({R}), got {len(keys)}"
    )
  keys = [tuple(k) for k in keys]
  D = len(keys[0])
  if D < 1 or any(len(k) != D for k in keys):
    raise ValueError(
      "keys must be tuples of one common depth D >= 1 (outermost key first)"
    )
  toks, caps, tgts = [], [], []
  for r, row in enumerate(rows):
    if len(row) != 3:
      raise ValueError(f"rows[{r}] must be (ids, attn_mask, target_mask)")
    ids, attn, tgt = (np.asarray(a) for a in row)
    if ids.ndim != 1 or attn.shape != ids.shape or tgt.shape != ids.shape:
      raise ValueError(f"rows[{r}] must be three 1-D arrays of one length")
    n = int(attn.astype(bool).sum())
    if not attn[:n].all():
      raise ValueError(
        f"rows[{r}] must be right-padded (attn_mask True then False)"
      )
    t = np.flatnonzero(tgt[:n])
    if len(t) == 0 or tgt[n:].any():
      raise ValueError(
        f"rows[{r}] must have at least one target, all on real tokens"
      )
    if t[0] == 0:
      raise ValueError(
        f"rows[{r}] has a target at position 0 (nothing predicts it)"
      )
    toks.append(ids[:n].astype(np.int32))
    tgts.append(tgt[:n].astype(bool))
    # the leaf keeps the token that predicts the first target
    caps.append(int(t[0]) - 1)

  # Level by level: node -> rows; its segment [start, end) of each of its rows.
  segs = []  # per level: list of (parent, row_ids, start, end)
  node_of_row = np.zeros(R, int)
  starts = np.zeros(R, int)
  for level in range(D):
    index: dict[tuple, int] = {}
    nodes: list[list[int]] = []
    parents: list[int] = []
    for r in range(R):
      k = keys[r][: level + 1]
      if k not in index:
        index[k] = len(nodes)
        nodes.append([])
        parents.append(int(node_of_row[r]))
      nodes[index[k]].append(r)
    # rows of one node must have one parent (keys nest): guaranteed by the
    # prefix keys.
    level_segs = []
    for j, members in enumerate(nodes):
      start = int(starts[members[0]])
      stop = min(caps[r] for r in members)
      stop = min([stop] + [len(toks[r]) for r in members])
      end = _lcp([toks[r] for r in members], start, max(start, stop))
      if level == 0 and end == 0:
        raise ValueError(
          f"rows {members[:4]} share level-0 keys but not their first token; "
          "every level-0 segment must hold at least one token"
        )
      level_segs.append((parents[j], members, start, end))
      for r in members:
        node_of_row[r] = j
        starts[r] = end
    segs.append(level_segs)
  # Leaves: one per row, the rest of the row.
  segs.append(
    [(int(node_of_row[r]), [r], int(starts[r]), len(toks[r])) for r in range(R)]
  )

  ids_l, mask_l, par_l = [], [], []
  # each level replaces it; the leaf level's is kept
  tgt = np.zeros((0, 0), bool)
  for level, level_segs in enumerate(segs):
    N = _round_up(len(level_segs), row_multiple)
    Lseg = _round_up(max(e - s for _, _, s, e in level_segs), len_multiple)
    ids = np.zeros((N, Lseg), np.int32)
    mask = np.zeros((N, Lseg), bool)
    par = np.zeros(N, np.int32)
    tgt = np.zeros((N, Lseg), bool)
    for j in range(N):
      p, members, s, e = level_segs[j if j < len(level_segs) else 0]
      r = members[0]
      ids[j, : e - s] = toks[r][s:e]
      mask[j, : e - s] = True
      par[j] = p if level > 0 else 0
      if level == D:
        tgt[j, : e - s] = tgts[r][s:e]
    ids_l.append(ids)
    mask_l.append(mask)
    par_l.append(par)
  return PrefixTree(
    # NumPy, not device arrays: converting a host array of a new shape compiles
    # a small program, and the level sizes change from tree to tree (jit takes
    # NumPy arguments as is).
    ids=tuple(ids_l),
    mask=tuple(mask_l),
    parent=tuple(par_l),
    target_mask=tgt,
    n_rows=R,
    real_tokens=int(
      sum(e - s for level_segs in segs for _, _, s, e in level_segs)
    ),
  )


def _check_level(x, name, kind, *, ndim=None, shape=None):
  """check_array without the device round trip for concrete arrays (returns
  NumPy then)."""
  if not V.is_concrete(x):
    return V.check_array(x, name, dtype=kind, ndim=ndim, shape=shape)
  a = np.asarray(x)
  ok = (
    np.issubdtype(a.dtype, np.integer) if kind == "int" else a.dtype == np.bool_
  )
  if not ok:
    raise TypeError(
      f"{name} must have a{'n integer' if kind == 'int' else ' bool'} dtype, "
      f"got {a.dtype}"
    )
  if ndim is not None and a.ndim != ndim:
    raise ValueError(f"{name} must have rank {ndim}, got shape {a.shape}")
  if shape is not None and a.shape != tuple(shape):
    raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")
  return a


def _check_tree(tree):
  """The tree's arrays, checked; NumPy when concrete (no per-shape device
  programs)."""
  if not isinstance(tree, PrefixTree):
    raise TypeError(
      "tree must be a PrefixTree (build_prefix_tree), "
      f"got {type(tree).__name__}"
    )
  n = len(tree.ids)
  if n < 2 or len(tree.mask) != n or len(tree.parent) != n:
    raise ValueError(
      "tree must have at least 2 levels with ids, mask and parent for each"
    )
  ids, mask, par = [], [], []
  for level in range(n):
    a = _check_level(tree.ids[level], f"tree.ids[{level}]", "int", ndim=2)
    ids.append(a)
    mask.append(
      _check_level(
        tree.mask[level], f"tree.mask[{level}]", "bool", shape=a.shape
      )
    )
    par.append(
      _check_level(
        tree.parent[level], f"tree.parent[{level}]", "int", shape=a.shape[:1]
      )
    )
  tgt = _check_level(
    tree.target_mask, "tree.target_mask", "bool", shape=ids[-1].shape
  )
  return tuple(ids), tuple(mask), tuple(par), tgt


def tree_logprobs(
  params: lm.Params, tree: PrefixTree, *, config: lm.LMConfig, max_targets: int
) -> jax.Array | np.ndarray:
  """Σ_t log p(y_t | prefix, y_<t) of every row of ``tree``, each shared prefix run once.

  Equals :func:`sequence_logprobs` on the rows the tree was built from (to
  float32 round-off).

  Args:
    params: ``jaxpapers.lm`` parameters.
    tree: a :class:`PrefixTree` (:func:`build_prefix_tree`).
    config: the ``jaxpapers.lm.LMConfig`` (static).
    max_targets: P >= the number of targets in any row (static).

  Returns:
    float32 [R], in the order of the rows given to :func:`build_prefix_tree` (a
    NumPy array when the tree is concrete, i.e. called outside a trace).

  Raises:
    TypeError, ValueError: a non-tree or inconsistent shapes; eagerly, a row
      with more than ``max_targets`` targets, a parent index out of range or a
      token id outside the vocabulary.

  Under jit: those value errors make the whole output NaN.
  """
  ids, mask, parent, target_mask = _check_tree(tree)
  max_targets = V.check_int(max_targets, "max_targets", min_value=1)
  # A concrete tree (the usual case: built on the host) is checked in NumPy: the
  # level shapes change from tree to tree, and each jnp check would compile a
  # small program per shape.
  concrete = V.is_concrete(ids, mask, parent, target_mask)
  xp = np if concrete else jnp
  oks = [
    V.check_values(
      xp.all(target_mask.sum(1) <= max_targets),
      (
        f"tree.target_mask has a row with more than max_targets={max_targets} "
        "targets"
      ),
    )
  ]
  for level in range(1, len(ids)):
    n_up = ids[level - 1].shape[0]
    p = parent[level]
    oks.append(
      V.check_values(
        xp.all((p >= 0) & (p < n_up)),
        f"tree.parent[{level}] must index level {level - 1}",
      )
    )
  for level, a in enumerate(ids):
    oks.append(
      V.check_values(
        xp.all((a >= 0) & (a < config.vocab_size)),
        (
          f"tree.ids[{level}] must be token ids in [0, "
          f"vocab_size={config.vocab_size})"
        ),
      )
    )
  out = _tree_jit(
    params,
    ids,
    mask,
    parent,
    target_mask,
    config=config,
    max_targets=max_targets,
  )
  # eager checks raised already; slicing on the host compiles nothing per R
  if concrete:
    return np.asarray(out)[: tree.n_rows]
  out = out[: tree.n_rows]
  for f in (o for o in oks if o is not True):
    out = V.poison(out, f)
  return out


@functools.partial(jax.jit, static_argnames=("config", "max_targets"))
def _tree_jit(params, ids, mask, parent, target_mask, *, config, max_targets):
  from jaxpapers import lm

  S = sum(a.shape[1] for a in ids)
  cache = lm.init_cache(config, ids[0].shape[0], S)
  for level in range(len(ids)):
    if level > 0:  # each node continues its parent's cache row
      p = parent[level]
      cache = cache._replace(
        k=jnp.take(cache.k, p, axis=1),
        v=jnp.take(cache.v, p, axis=1),
        pos=jnp.take(cache.pos, p, axis=0),
        valid=jnp.take(cache.valid, p, axis=0),
        next_pos=jnp.take(cache.next_pos, p, axis=0),
      )
    if level < len(ids) - 1:
      _, advanced, _ = lm.forward(
        params,
        ids[level],
        config=config,
        mask=mask[level],
        cache=cache,
        logits_at=("none"),
      )
      # given a cache, forward returns it advanced
      cache = cast(lm.KVCache, advanced)
  leaf, leaf_mask = ids[-1], mask[-1]
  order = jnp.argsort(~target_mask, axis=1, stable=True)[:, :max_targets]
  valid = jnp.take_along_axis(target_mask, order, axis=1)
  tok = jnp.take_along_axis(leaf, order, axis=1)
  pred = jnp.maximum(order - 1, 0)
  logits, _, _ = lm.forward(
    params,
    leaf,
    config=config,
    mask=leaf_mask,
    cache=cache,
    logits_at=pred,
    attention=("dense"),
  )
  logits = cast(jax.Array, logits)  # not None: logits_at asks for them
  logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  lp = jnp.take_along_axis(logp, tok[:, :, None], axis=-1)[..., 0]
  return jnp.sum(jnp.where(valid, lp, 0.0), axis=1)


def row_tokens(tree: PrefixTree) -> list[np.ndarray]:
  """The full token sequence of each row, read back from the tree (for checks).

  Args:
    tree: a :class:`PrefixTree`.

  Returns:
    One int array per real row (``n_rows`` of them): the row's real tokens, its
    ancestors' segments followed by its leaf segment, padding removed.
  """
  _check_tree(tree)
  ids = [np.asarray(a) for a in tree.ids]
  mask = [np.asarray(a) for a in tree.mask]
  par = [np.asarray(a) for a in tree.parent]
  out = []
  for r in range(tree.n_rows):
    parts, j = [], r
    for level in range(len(ids) - 1, -1, -1):
      parts.append(ids[level][j][mask[level][j]])
      j = par[level][j]
    out.append(np.concatenate(parts[::-1]))
  return out


def score_rows_shared(
  params: lm.Params,
  rows: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
  keys: Sequence[Sequence[Hashable]],
  *,
  config: lm.LMConfig,
  max_targets: int,
  buckets: Sequence[int],
  row_multiple: int = 8,
  len_multiple: int = 8,
) -> tuple[np.ndarray, dict]:
  """Summed response log-probs of ``rows``, one prefix tree per length bucket.

  The level-0 groups of ``keys`` are first split by the smallest bucket holding
  their longest row, so that long rows (the whole history) do not set the
  segment lengths of short ones and a group's rows stay in one tree; within a
  bucket, rows are shared by ``keys`` (:func:`build_prefix_tree`).

  Args:
    params: ``jaxpapers.lm`` parameters.
    rows: R rows ``(ids, attn_mask, target_mask)`` (see
      :func:`build_prefix_tree`).
    keys: R tuples of group keys, outermost first (see
      :func:`build_prefix_tree`).
    config: the ``jaxpapers.lm.LMConfig`` (static).
    max_targets: P >= the number of targets in any row (static).
    buckets: row-length bucket bounds (a row longer than the largest is an
      error).
    row_multiple: node-count padding of each level (see
      :func:`build_prefix_tree`).
    len_multiple: segment-length padding of each level.

  Returns:
    (float64 [R] log-probs, stats dict with ``real_tokens`` and
    ``padded_tokens`` run).
  """
  if isinstance(buckets, int) or not len(buckets):
    raise ValueError("buckets must be a non-empty sequence of int row lengths")
  bounds = sorted(V.check_int(b, "buckets[i]", min_value=2) for b in buckets)
  if len(keys) != len(rows):
    raise ValueError(
      f"keys must hold one key tuple per row ({len(rows)}), got {len(keys)}"
    )
  # level-0 groups stay whole (their rows share a prefix)
  top: dict[Hashable, list[int]] = {}
  for r, row in enumerate(rows):
    n = int(np.asarray(row[1]).sum())
    if n > bounds[-1]:
      raise ValueError(
        f"rows[{r}] has {n} tokens > the largest bucket {bounds[-1]}"
      )
    top.setdefault(tuple(keys[r])[:1], []).append(r)
  groups: dict[int, list[int]] = {}
  for members in top.values():
    n = max(int(np.asarray(rows[r][1]).sum()) for r in members)
    groups.setdefault(next(b for b in bounds if b >= n), []).extend(members)
  out = np.zeros(len(rows), np.float64)
  stats = {"real_tokens": 0, "padded_tokens": 0}
  for _, idx in sorted(groups.items()):
    tree = build_prefix_tree(
      [rows[i] for i in idx],
      [keys[i] for i in idx],
      row_multiple=row_multiple,
      len_multiple=len_multiple,
    )
    out[idx] = np.asarray(
      tree_logprobs(params, tree, config=config, max_targets=max_targets)
    )
    stats["real_tokens"] += tree.real_tokens
    stats["padded_tokens"] += tree.padded_tokens
  return out, stats
