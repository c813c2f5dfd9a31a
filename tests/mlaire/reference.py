"""Independent float64 / brute-force references for the MLAIRE metrics (plain
Python loops)."""

import math

import numpy as np


def labels(b):
  sem = (b["doc_content"] == b["q_content"][:, None]) & b["mask"]
  lm = (b["doc_lang"] == b["q_lang"][:, None]) & b["mask"]
  return sem, lm


def ranks(b, ties="pessimistic"):
  """Ranks by sorting (−score, tier, index) tuples per query with Python's
  sorted."""
  sem, lm = labels(b)
  q, p = b["scores"].shape
  out = np.full((q, p), p + 1, np.int64)
  for i in range(q):
    valid = [j for j in range(p) if b["mask"][i, j]]

    def key(j):
      tier = (2 if lm[i, j] else 1) if sem[i, j] else 0
      return (
        -float(b["scores"][i, j]),
        tier if ties == "pessimistic" else 0,
        j,
      )

    for pos, j in enumerate(sorted(valid, key=key)):
      out[i, j] = pos + 1
  return out


def per_query(b, k, ties="pessimistic", w_lang=2.0, w_other=1.0, gain="linear"):
  """Dict name -> list of (value, eligible) per query."""
  r = ranks(b, ties)
  sem, lm = labels(b)
  q, p = r.shape
  res = {
    n: []
    for n in (
      "lpr_strict",
      "lpr_pairwise",
      "lpr_topk",
      "lang_ndcg",
      "ndcg",
      "recall",
      "mrr",
      "sem_at_1",
    )
  }
  for i in range(q):
    star = [r[i, j] for j in range(p) if sem[i, j] and lm[i, j]]
    other = [r[i, j] for j in range(p) if sem[i, j] and not lm[i, j]]
    rel = [j for j in range(p) if sem[i, j]]
    elig = bool(star) and bool(other)
    rs = min(star) if star else math.inf
    res["lpr_strict"].append((float(elig and rs < min(other)), elig))
    res["lpr_pairwise"].append(
      (sum(rs < ro for ro in other) / len(other) if elig else 0.0, elig)
    )
    top = [j for j in rel if r[i, j] <= k]
    share = sum(lm[i, j] for j in top) / len(top) if top else 0.0
    res["lpr_topk"].append((share, elig and bool(top)))
    for name, g in (
      (
        "lang_ndcg",
        lambda j: (w_lang if lm[i, j] else w_other) if sem[i, j] else 0.0,
      ),
      ("ndcg", lambda j: float(sem[i, j])),
    ):
      gains = {j: g(j) for j in range(p) if b["mask"][i, j]}
      if gain == "exp" and name == "lang_ndcg":
        gains = {j: 2.0**v - 1.0 for j, v in gains.items()}
      dcg = sum(
        v / math.log2(r[i, j] + 1) for j, v in gains.items() if r[i, j] <= k
      )
      ideal = sorted(gains.values(), reverse=True)[:k]
      idcg = sum(v / math.log2(n + 2) for n, v in enumerate(ideal))
      res[name].append((dcg / idcg if idcg > 0 else 0.0, bool(rel)))
    res["recall"].append((len(top) / len(rel) if rel else 0.0, bool(rel)))
    first = min((r[i, j] for j in rel), default=None)
    res["mrr"].append((1.0 / first if rel else 0.0, bool(rel)))
    res["sem_at_1"].append((float(first == 1) if rel else 0.0, bool(rel)))
  return res


def mean(pairs, group=None):
  xs = [
    x for n, (x, e) in enumerate(pairs) if e and (group is None or group[n])
  ]
  return float(np.mean(xs)) if xs else math.nan


def four_way(b, rank, ties="pessimistic"):
  r = ranks(b, ties)
  sem, lm = labels(b)
  counts = np.zeros(4)
  for i in range(r.shape[0]):
    js = [j for j in range(r.shape[1]) if r[i, j] == rank]
    if not js:
      continue
    j = js[0]
    cell = (0 if lm[i, j] else 1) if sem[i, j] else (2 if lm[i, j] else 3)
    counts[cell] += 1
  return counts / counts.sum() if counts.sum() else np.full(4, np.nan)
