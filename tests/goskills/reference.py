"""Independent float64 / pure-Python references for the GoSkills tests (loops,
sets, sorts)."""

from __future__ import annotations

import itertools

import numpy as np

DEP, WF, SEM, ALT, VAL, CONF = range(6)
PROC, VALIDATOR, NOTE = range(3)
GOS_REV = {DEP: 1.0, WF: 0.5, SEM: 0.2, ALT: 0.1}


def transition(n, edges, rev=GOS_REV, dangling="self_loop", normalize=True):
  """GoS build_transition_matrix, transcribed (edges: (src, dst, type,
  weight))."""
  t = np.zeros((n, n))
  for s, d, typ, w in edges:
    t[s, d] += w
    r = rev.get(typ, 0.0)
    if r > 0:
      t[d, s] += w * r
  if not normalize:
    return t
  for i in range(n):
    tot = t[i].sum()
    if tot > 0:
      t[i] /= tot
    elif dangling == "self_loop":
      t[i, i] = 1.0
    else:
      t[i] = 1.0 / n
  return t


def ppr(t, p, d=0.2, iters=50, tol=1e-6):
  """GoS personalized_pagerank, transcribed."""
  p = np.asarray(p, float)
  if p.sum() > 0:
    p = p / p.sum()
  s = p.copy()
  for _ in range(iters):
    nxt = d * p + (1 - d) * t.T.dot(s)
    if np.abs(nxt - s).sum() <= tol:
      s = nxt
      break
    s = nxt
  return s / s.sum() if s.sum() > 0 else s


def bm25(q, docs, k1=1.5, b=0.75):
  q = np.asarray(q, float)
  docs = np.asarray(docs, float)
  n, v = docs.shape
  avg = docs.sum(1).mean()
  out = np.zeros((q.shape[0], n))
  for i in range(q.shape[0]):
    for j in range(n):
      dl = docs[j].sum()
      for w in range(v):
        if q[i, w] == 0:
          continue
        df = (docs[:, w] > 0).sum()
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        f = docs[j, w]
        out[i, j] += (
          q[i, w] * idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avg))
        )
  return out


def greedy(
  cands,
  roles,
  mask,
  req,
  visible,
  budget,
  mu=0.1,
  cost=None,
  token_budget=None,
  force_start=True,
):
  """Greedy eq. (6) with Python sets; returns candidate positions (-1
  padded)."""
  prio = {0: 3.0, 1: 2.0, 2: 1.0, 3: 0.0, -1: 0.0}
  vis = set(np.nonzero(visible)[0])
  covered, chosen, picks, spent = set(), set(), [], 0.0
  for k in range(budget):
    best, best_v = -1, -np.inf
    pool = [i for i in range(len(cands)) if mask[i] and i not in chosen]
    if force_start and k == 0:
      starts = [i for i in pool if roles[i] == 0]
      if starts:
        pool = starts
    for i in pool:
      gain = (
        len((set(np.nonzero(req[cands[i]])[0]) & vis) - covered)
        + mu * prio[int(roles[i])]
      )
      if gain <= 0:
        continue
      v = gain
      if token_budget is not None:
        c = float(cost[cands[i]])
        if spent + c > token_budget:
          continue
        v = gain / max(c, 1e-6)
      if v > best_v:
        best, best_v = i, v
    if best < 0:
      picks.append(-1)
      continue
    picks.append(best)
    chosen.add(best)
    covered |= set(np.nonzero(req[cands[best]])[0]) & vis
    if token_budget is not None:
      spent += float(cost[cands[best]])
  return picks


def best_coverage(cands, req, visible, budget):
  vis = set(np.nonzero(visible)[0])
  best = 0
  for r in range(1, budget + 1):
    for sub in itertools.combinations(range(len(cands)), r):
      cov = set()
      for i in sub:
        cov |= set(np.nonzero(req[cands[i]])[0])
      best = max(best, len(cov & vis))
  return best


def group(
  x,
  n,
  edges,
  kind,
  req,
  visible,
  scores,
  *,
  depth=2,
  S=4,
  C=2,
  A=2,
  start=("root"),
  use_avoid=True,
):
  """One anchor-centred group as in the _groups docstring; returns the [M] slot
  list."""
  flagged = set()
  if use_avoid:
    flagged = {d for s, d, t, _ in edges if t == CONF and kind[s] == NOTE}
  nbr = {i: set() for i in range(n)}
  flow_e = set()
  for s, d, t, _ in edges:
    if t in (DEP, WF):
      nbr[s].add(d)
      nbr[d].add(s)
      flow_e.add((s, d))
  dist = {x: 0}
  frontier = [x]
  for k in range(1, depth + 1):
    nxt = []
    for u in frontier:
      for v in nbr[u]:
        if v not in dist:
          dist[v] = k
          nxt.append(v)
    frontier = nxt
  key = lambda s: (-scores[s], s)
  sup = sorted(
    [
      s
      for s, k in dist.items()
      if 1 <= k <= depth and kind[s] == PROC and s not in flagged
    ],
    key=lambda s: (dist[s],) + key(s),
  )[:S]
  core = ([x] if x not in flagged else []) + sup
  if not core:
    st = -1
  elif start == "anchor":
    st = core[0]
  else:
    st = min(
      core, key=lambda m: (sum((mm, m) in flow_e for mm in core),) + key(m)
    )
  rest = [m for m in core if m != st][:S]
  touches = lambda s: bool((np.asarray(req[s]) & np.asarray(visible)).any())
  vals = {s for s, d, t, _ in edges if t == VAL and d in core}
  vals = [s for s in vals if kind[s] == VALIDATOR and s not in flagged]
  checks = sorted(vals, key=lambda s: (not touches(s),) + key(s))[:C]
  near = set()
  for s, d, t, _ in edges:
    if t in (ALT, CONF):
      if s in core:
        near.add(d)
      if d in core:
        near.add(s)
  avoid = sorted(s for s in flagged if s in near or s == x)[:A]
  pad = lambda xs, k: list(xs) + [-1] * (k - len(xs))
  return [st] + pad(rest, S) + pad(checks, C) + pad(avoid, A)


def goskills(
  n,
  edges,
  kind,
  req,
  visible,
  scores,
  *,
  budget,
  a=3,
  c=8,
  b=4,
  depth=2,
  S=4,
  C=2,
  A=2,
  mu=0.1,
  start="root",
  use_graph=True,
  use_avoid=True,
):
  """The whole GoSkills pipeline for one task (float64, Python)."""
  order = sorted(range(n), key=lambda s: (-scores[s], s))
  anchors = order[:c]
  groups = [
    group(
      x,
      n,
      edges,
      kind,
      req,
      visible,
      scores,
      depth=depth,
      S=S,
      C=C,
      A=A,
      start=start,
      use_avoid=use_avoid,
    )
    for x in anchors
  ]
  roles_slot = [0] + [1] * S + [2] * C + [3] * A
  if use_graph:
    w = transition(n, edges, normalize=False)
    wg = np.zeros((c, c))
    for i in range(c):
      for j in range(c):
        if i == j:
          continue
        for si, ri in zip(groups[i], roles_slot):
          for sj, rj in zip(groups[j], roles_slot):
            if si >= 0 and sj >= 0 and ri != 3 and rj != 3:
              wg[i, j] += w[si, sj]
    tg = np.zeros_like(wg)
    for i in range(c):
      tg[i] = wg[i] / wg[i].sum() if wg[i].sum() > 0 else np.eye(c)[i]
    p = np.zeros(c)
    p[:a] = 1.0 / np.arange(1, a + 1)
    pi = np.round(ppr(tg, p), 6)
  else:
    pi = -np.arange(c, dtype=float)
  sets = [
    frozenset(s for s, r in zip(gr, roles_slot) if s >= 0 and r != 3)
    for gr in groups
  ]
  distinct = [i for i in range(c) if sets[i] not in sets[:i]]
  plan = sorted(distinct, key=lambda i: (-pi[i], i))[:b]
  items = [
    (s, r) for gi in plan for s, r in zip(groups[gi], roles_slot) if s >= 0
  ]
  prec = {3: 0, 0: 1, 1: 2, 2: 3}
  best = {}
  for s, r in items:
    best[s] = min(best.get(s, 9), prec[r])
  seen, cands, roles, avoid, start_seen = set(), [], [], [], False
  for s, r in items:
    if prec[r] != best[s] or (s, r) in seen:
      continue
    seen.add((s, r))
    if r == 3:
      avoid.append(s)
      continue
    if r == 0:
      r = 1 if start_seen else 0
      start_seen = True
    cands.append(s)
    roles.append(r)
  picks = greedy(cands, roles, [True] * len(cands), req, visible, budget, mu=mu)
  ids = [cands[p] if p >= 0 else -1 for p in picks]
  rls = [roles[p] if p >= 0 else -1 for p in picks]
  return ids, rls, avoid[: b * A], [anchors[i] for i in plan]
