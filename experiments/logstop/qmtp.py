"""QMTP-video (the paper's query-matching benchmark) from per-frame detector scores on disk.

The authors' benchmark (avishreekh/logstop, ``benchmarks/``) describes every query-clip sample
in one CSV and computes each clip's per-frame scores with a detector (YOLOv8x by default)
before scoring. This module reads that CSV together with the per-frame scores saved to disk,
so a user who has run the detector gets the paper's matching table from this library.

Format of ``data_dir``
----------------------
``<data_dir>/qmtp_video.csv``: the benchmark's sample table, exactly as shipped by the authors
(``benchmarks/configs/qmtp_video.csv``), one row per query-clip sample with at least the
columns

* ``sample_id`` (unique), ``video_id`` (the clip; several samples share one clip),
* ``start_frame``, ``end_frame``: the clip is frames ``[start_frame, end_frame)`` of the source
  video, so it has ``T = end_frame - start_frame`` frames (10-50 in QMTP-video),
* ``query``: the temporal property in the authors' syntax, e.g. ``Eventually (Always (bus))``
  or ``(car) Until (person)``: case-insensitive word operators ``always``, ``eventually``,
  ``next``, ``not``, ``and``, ``or``, ``until``, parentheses, and class names as atoms (a
  class name may contain spaces, e.g. ``traffic light``; the authors lower-case it),
* ``satisfied``: ``true`` / ``false``, the ground-truth label,
* optional ``temporal_property_template`` and ``temporal_property_category`` (for the per
  template and per category breakdown).

``<data_dir>/traces/<video_id>.json``: the per-frame scores of one clip, as the mapping
``{class name: [p_0, ..., p_{T-1}]}`` with scores in [0, 1] that the authors'
``LocalPropertyPredictor.generate_trace`` returns (their benchmark script keeps it in memory;
save it with ``json.dump`` per clip). ``<data_dir>/traces/<video_id>.npz`` with one 1-D array
per class name is read the same way. Class names are matched lower-cased. Every class of a
sample's query must be present with exactly ``T`` scores; anything else raises ``ValueError``
naming the sample, as the authors' script does.

Matching follows the authors' benchmark script: the trace of each class is smoothed by a
centred moving average of radius ``smoothing_radius`` (truncated at the clip's ends; 0 = none,
their default), the query is scored on the whole clip, and the sample matches iff its score is
strictly above the score of the constant trace at ``local_threshold`` (0.5) under the same
smoothing and window. (The spec's adaptive threshold additionally caps the threshold at
log 0.5; the benchmark script does not, and neither does this module.) ``window`` > 1 applies
this library's window semantics on top (an extension; the authors' benchmark uses 1).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import pathlib
import re

import jax.numpy as jnp
import numpy as np

from jaxpapers import logstop as L
from jaxpapers.core.data import resolve_inside

_KEYWORDS = ("always", "eventually", "next", "not", "and", "or", "until")
_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


@dataclasses.dataclass(frozen=True)
class QMTPSample:
  """One query-clip sample: ``props`` maps each class of the query to ``f32[T]`` scores."""

  sample_id: str
  video_id: str
  query: str
  formula: L.Formula
  label: bool
  props: dict
  template: str = ""
  category: str = ""


def parse_query(query: str) -> L.Formula:
  """Parses a query in the authors' syntax (``(car) Until (person)``) into a `Formula`.

  Operators are the case-insensitive words always/eventually/next/not/and/or/until; every
  maximal run of other words is one class name (lower-cased, inner spaces kept).
  """
  out, atom = [], []

  def flush():
    if atom:
      name = " ".join(atom).lower().replace('"', "")
      out.append(f'"{name}"')
      atom.clear()

  pos = 0
  while pos < len(query):
    m = _TOKEN.match(query, pos)
    if m is None:  # only trailing whitespace is left
      break
    tok = m.group(1)
    pos = m.end()
    if tok in "()" or tok.lower() in _KEYWORDS:
      flush()
      out.append(tok.lower())
    else:
      atom.append(tok)
  flush()
  try:
    return L.parse(" ".join(out))
  except ValueError as e:
    raise ValueError(f"query {query!r} is not in the benchmark's syntax: {e}") from None


def _read_trace(data_dir: pathlib.Path, traces: str, video_id: str) -> dict:
  js, npz = (
    resolve_inside(data_dir, traces, f"{video_id}{ext}", name="video_id")
    for ext in (".json", ".npz")
  )
  if js.is_file():
    raw = json.loads(js.read_text())
    if not isinstance(raw, dict):
      raise ValueError(f"{js}: expected a JSON object {{class name: [scores]}}")
  elif npz.is_file():
    with np.load(npz) as z:
      raw = {k: z[k] for k in z.files}
  else:
    raise FileNotFoundError(f"no per-frame scores for clip {video_id!r}: expected {js} or {npz}")
  return {str(k).lower(): np.asarray(v, np.float64) for k, v in raw.items()}


def load_qmtp(
  data_dir, *, config: str = "qmtp_video.csv", traces: str = "traces"
) -> list[QMTPSample]:
  """Reads the QMTP sample table and the clips' per-frame scores (format: module docstring).

  Args:
    data_dir: directory holding ``config`` and the ``traces`` folder; every file read (the
      table and each ``video_id``'s scores) must lie inside it (``ValueError`` otherwise).
    config: the sample table's file name inside ``data_dir``.
    traces: the per-clip score folder inside ``data_dir``.

  Returns:
    The samples in table order.
  """
  data_dir = pathlib.Path(data_dir)
  table = resolve_inside(data_dir, config, name="config")
  if not table.is_file():
    raise FileNotFoundError(f"QMTP sample table not found: {table}")
  with table.open(newline="", encoding="utf-8") as fh:
    rows = list(csv.DictReader(fh))
  need = {"sample_id", "video_id", "start_frame", "end_frame", "query", "satisfied"}
  if not rows or not need <= set(rows[0]):
    raise ValueError(f"{table}: needs the columns {sorted(need)}")
  cache, out = {}, []
  for row in rows:
    vid, sid = row["video_id"], row["sample_id"]
    if vid not in cache:
      cache[vid] = _read_trace(data_dir, traces, vid)
    T = int(row["end_frame"]) - int(row["start_frame"])
    label = row["satisfied"].strip().lower()
    if label not in ("true", "false"):
      raise ValueError(f"sample {sid}: satisfied must be true or false, got {row['satisfied']!r}")
    formula = parse_query(row["query"])
    props = {}
    for name in L.atoms(formula):
      v = cache[vid].get(name)
      if v is None:
        raise ValueError(f"sample {sid}: no scores for {name!r} in clip {vid}")
      if v.shape != (T,):
        raise ValueError(f"sample {sid}: scores for {name!r} must have {T} frames, got {v.shape}")
      if not (np.isfinite(v).all() and (v >= 0).all() and (v <= 1).all()):
        raise ValueError(f"sample {sid}: scores for {name!r} must be finite and in [0, 1]")
      props[name] = v.astype(np.float32)
    out.append(
      QMTPSample(
        sample_id=sid,
        video_id=vid,
        query=row["query"],
        formula=formula,
        label=label == "true",
        props=props,
        template=row.get("temporal_property_template", ""),
        category=row.get("temporal_property_category", ""),
      )
    )
  return out


def smooth(v, radius: int):
  """Centred moving average of radius r along the last axis, truncated at both ends."""
  v = np.asarray(v, np.float64)
  if radius == 0:
    return v
  T = v.shape[-1]
  c = np.concatenate([np.zeros(v.shape[:-1] + (1,)), np.cumsum(v, -1)], -1)
  t = np.arange(T)
  lo, hi = np.maximum(t - radius, 0), np.minimum(t + radius, T - 1) + 1
  return (c[..., hi] - c[..., lo]) / (hi - lo)


def _balanced_accuracy(pred, label) -> float:
  pred, label = np.asarray(pred, bool), np.asarray(label, bool)
  rec = [(pred[label == c] == c).mean() for c in (True, False) if (label == c).any()]
  return float(np.mean(rec)) if rec else float("nan")


def evaluate_qmtp(
  samples,
  *,
  windows=(1,),
  smoothing_radius: int = 0,
  local_threshold: float = 0.5,
  baselines: bool = True,
) -> dict:
  """Query matching on loaded QMTP samples: balanced accuracy per arm, template, category.

  Samples with the same query and clip length are scored in one batched call (one compiled
  program per (query, T, window)).

  Args:
    samples: from :func:`load_qmtp`.
    windows: LogSTOP windows to run (1 = the authors' benchmark).
    smoothing_radius: centred moving-average radius applied to every trace first.
    local_threshold: the constant trace that sets each query's threshold.
    baselines: also run Boolean LTLf on scores >= local_threshold and STL robustness > 0
      (at the same windows, on the same smoothed traces).

  Returns:
    ``{'overall': {arm: balanced accuracy}, 'per_template': {template: {arm: ...}},
    'per_category': {...}, 'decisions': {arm: {sample_id: bool}}, 'num_samples',
    'num_satisfied'}``.
  """
  if smoothing_radius < 0 or int(smoothing_radius) != smoothing_radius:
    raise ValueError(f"smoothing_radius must be a non-negative int, got {smoothing_radius!r}")
  groups: dict = {}
  for s in samples:
    T = next(iter(s.props.values())).shape[0]
    groups.setdefault((s.formula, T), []).append(s)
  decisions: dict = {}
  for (formula, T), group in groups.items():
    props = {
      n: np.stack([smooth(s.props[n], smoothing_radius) for s in group]) for n in L.atoms(formula)
    }
    ext = {
      n: jnp.asarray(np.concatenate([v, np.full((1, T), local_threshold)]), jnp.float32)
      for n, v in props.items()
    }
    plain = {n: jnp.asarray(v, jnp.float32) for n, v in props.items()}
    for w in windows:
      sc = np.asarray(L.score(formula, ext, window=w))
      arms = {f"LogSTOP w={w}": sc[:-1] > sc[-1]}
      if baselines:
        arms[f"Boolean LTLf w={w}"] = np.asarray(
          L.boolean_ltlf(formula, plain, threshold=local_threshold, window=w)
        )
        arms[f"STL robustness > 0 w={w}"] = (
          np.asarray(L.robustness(formula, plain, threshold=local_threshold, window=w)) > 0
        )
      for arm, pred in arms.items():
        for s, p in zip(group, pred):
          decisions.setdefault(arm, {})[s.sample_id] = bool(p)
  labels = {s.sample_id: s.label for s in samples}

  def bacc(arm, ids):
    return _balanced_accuracy([decisions[arm][i] for i in ids], [labels[i] for i in ids])

  ids = [s.sample_id for s in samples]
  by = lambda key: {
    v: [s.sample_id for s in samples if getattr(s, key) == v]
    for v in dict.fromkeys(getattr(s, key) for s in samples)
  }
  return {
    "overall": {a: bacc(a, ids) for a in decisions},
    "per_template": {t: {a: bacc(a, i) for a in decisions} for t, i in by("template").items()},
    "per_category": {c: {a: bacc(a, i) for a in decisions} for c, i in by("category").items()},
    "decisions": decisions,
    "num_samples": len(samples),
    "num_satisfied": int(sum(labels.values())),
  }
