"""QMTP-video (the paper's query-matching benchmark) from per-frame detector
scores on disk.

The authors' benchmark (avishreekh/logstop, ``benchmarks/``) describes every
query-clip sample in one CSV and computes each clip's per-frame scores with a
detector (YOLOv8x by default) before scoring. This module reads that CSV
together with the per-frame scores saved to disk, so a user who has run the
detector gets the paper's matching table from this library (`load_qmtp`, then
`evaluate_qmtp`). Nothing is downloaded.

Format of ``data_dir``
----------------------
``<data_dir>/qmtp_video.csv``: the benchmark's sample table, exactly as shipped by the authors
(``benchmarks/configs/qmtp_video.csv``), one row per query-clip sample with at least the
columns

* ``sample_id`` (unique), ``video_id`` (the clip; several samples share one
  clip),
* ``start_frame``, ``end_frame``: the clip is frames ``[start_frame,
  end_frame)`` of the source video, so it has ``T = end_frame - start_frame``
  frames (10-50 in QMTP-video),
* ``query``: the temporal property in the authors' syntax, e.g.
  ``Eventually (Always (bus))`` or ``(car) Until (person)``: case-insensitive
  word operators ``always``, ``eventually``, ``next``, ``not``, ``and``, ``or``,
  ``until``, parentheses, and class names as atoms (a class name may contain
  spaces, e.g. ``traffic light``; the authors lower-case it),
* ``satisfied``: ``true`` / ``false``, the ground-truth label,
* optional ``temporal_property_template`` and ``temporal_property_category``
  (for the per template and per category breakdown).

``<data_dir>/traces/<video_id>.json``: the per-frame scores of one clip, as the
mapping ``{class name: [p_0, ..., p_{T-1}]}`` with scores in [0, 1] that the
authors' ``LocalPropertyPredictor.generate_trace`` returns (their benchmark
script keeps it in memory; save it with ``json.dump`` per clip).
``<data_dir>/traces/<video_id>.npz`` with one 1-D array per class name is read
the same way. Class names are matched lower-cased. Every class of a sample's
query must be present with exactly ``T`` scores; anything else raises
``ValueError`` naming the sample, as the authors' script does.

Matching follows the authors' benchmark script: the trace of each class is
smoothed by a centred moving average of radius ``smoothing_radius``
(`centred_means`; 0 = none, their default), the query is scored on the whole
clip, and the sample matches iff its score is strictly above the score of the
constant trace at ``local_threshold`` (0.5) under the same smoothing and window.
(The spec's adaptive threshold additionally caps the threshold at log 0.5; the
benchmark script does not, and neither does this module.) ``window`` > 1 applies
this library's window semantics on top (an extension; the authors' benchmark
uses 1).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import pathlib
import re
from collections.abc import Iterable, Sequence

import jax.numpy as jnp
import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.core.data import resolve_inside
from jaxpapers.logstop import _formula as F
from jaxpapers.logstop._baselines import boolean_ltlf, robustness
from jaxpapers.logstop._logstop import score
from jaxpapers.logstop._windows import centred_means

__all__ = ["QMTPSample", "parse_query", "load_qmtp", "evaluate_qmtp"]

_KEYWORDS = ("always", "eventually", "next", "not", "and", "or", "until")
_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_COLUMNS = {
  "sample_id",
  "video_id",
  "start_frame",
  "end_frame",
  "query",
  "satisfied",
}


@dataclasses.dataclass(frozen=True)
class QMTPSample:
  """One query-clip sample of the benchmark.

  Attributes:
    sample_id: the sample's unique id.
    video_id: the clip it scores (several samples share one clip).
    query: the query as written in the table.
    formula: the parsed query (`parse_query`).
    label: whether the clip satisfies the query (ground truth).
    props: each class of the query -> its float32 per-frame scores of shape [T],
      in [0, 1].
    template: the query's template ('' when the table has none).
    category: the template's category ('' when the table has none).
  """

  sample_id: str
  video_id: str
  query: str
  formula: F.Formula
  label: bool
  props: dict[str, np.ndarray]
  template: str = ""
  category: str = ""


def parse_query(query: str) -> F.Formula:
  """Parses a query in the authors' syntax (``(car) Until (person)``) into a
  `Formula`.

  Operators are the case-insensitive words
  always/eventually/next/not/and/or/until; every maximal run of other words is
  one class name (lower-cased, inner spaces kept).

  Args:
    query: the query text.

  Returns:
    The formula, with the class names as atoms.

  Raises:
    TypeError: `query` is not a string. ValueError: not in the benchmark's
      syntax.
  """
  if not isinstance(query, str):
    raise TypeError(
      f"query must be a string, got {type(query).__name__} {query!r}"
    )
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
    return F.parse(" ".join(out))
  except ValueError as e:
    raise ValueError(
      f"query {query!r} is not in the benchmark's syntax: {e}"
    ) from None


def _read_trace(
  data_dir: pathlib.Path, traces: str, video_id: str
) -> dict[str, np.ndarray]:
  """One clip's ``{class name (lower-cased): float64 scores [T]}`` from its
  .json or .npz."""
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
    raise FileNotFoundError(
      f"no per-frame scores for clip {video_id!r}: expected {js} or {npz}"
    )
  return {str(k).lower(): np.asarray(v, np.float64) for k, v in raw.items()}


def load_qmtp(
  data_dir: str | os.PathLike[str],
  *,
  config: str = "qmtp_video.csv",
  traces: str = ("traces"),
) -> list[QMTPSample]:
  """Reads the QMTP sample table and the clips' per-frame scores (format: module
  docstring).

  Args:
    data_dir: an existing directory holding ``config`` and the ``traces``
      folder; every file read (the table and each ``video_id``'s scores) must
      lie inside it.
    config: the sample table's file name inside ``data_dir``.
    traces: the per-clip score folder inside ``data_dir``.

  Returns:
    The samples in table order; each sample's ``props`` are float32 arrays of
    shape [T].

  Raises:
    TypeError: `data_dir` is not a path. FileNotFoundError: `data_dir`, the
      table or a clip's scores are missing. ValueError: a path leaves
      `data_dir`, a column is missing, or a sample is malformed (the message
      names the sample).
  """
  data_dir = pathlib.Path(V.check_path(data_dir, "data_dir"))
  if not data_dir.is_dir():
    raise FileNotFoundError(
      f"data_dir must be an existing directory, got {str(data_dir)!r}"
    )
  table = resolve_inside(data_dir, config, name="config")
  if not table.is_file():
    raise FileNotFoundError(f"QMTP sample table not found: {table}")
  with table.open(newline="", encoding="utf-8") as fh:
    rows = list(csv.DictReader(fh))
  if not rows or not _COLUMNS <= set(rows[0]):
    raise ValueError(
      f"{table}: needs the columns {sorted(_COLUMNS)} and at least one row"
    )
  cache, out, seen = {}, [], set()
  for row in rows:
    vid, sid = row["video_id"], row["sample_id"]
    if sid in seen:
      raise ValueError(f"{table}: sample_id {sid!r} occurs more than once")
    seen.add(sid)
    if vid not in cache:
      cache[vid] = _read_trace(data_dir, traces, vid)
    T = int(row["end_frame"]) - int(row["start_frame"])
    label = row["satisfied"].strip().lower()
    if label not in ("true", "false"):
      raise ValueError(
        f"sample {sid}: satisfied must be true or false, "
        f"got {row['satisfied']!r}"
      )
    formula = parse_query(row["query"])
    props = {}
    for name in F.atoms(formula):
      v = cache[vid].get(name)
      if v is None:
        raise ValueError(f"sample {sid}: no scores for {name!r} in clip {vid}")
      if v.shape != (T,):
        raise ValueError(
          f"sample {sid}: scores for {name!r} must have {T} frames, "
          f"got {v.shape}"
        )
      if not (np.isfinite(v).all() and (v >= 0).all() and (v <= 1).all()):
        raise ValueError(
          f"sample {sid}: scores for {name!r} must be finite and in [0, 1]"
        )
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


def _balanced_accuracy(pred, label) -> float:
  pred, label = np.asarray(pred, bool), np.asarray(label, bool)
  rec = [
    (pred[label == c] == c).mean() for c in (True, False) if (label == c).any()
  ]
  return float(np.mean(rec)) if rec else float("nan")


def evaluate_qmtp(
  samples: Sequence[QMTPSample],
  *,
  windows: Iterable[int] = (1,),
  smoothing_radius: int = 0,
  local_threshold: float = 0.5,
  baselines: bool = True,
) -> dict:
  """Query matching on loaded QMTP samples: balanced accuracy per arm, template,
  category.

  Samples with the same query and clip length are scored in one batched call
  (one compiled program per (query, T, window)). An arm's balanced accuracy over
  a set of samples is the mean of its recall on the satisfied and on the
  violated ones (NaN for an empty set).

  Args:
    samples: from `load_qmtp` (at least one; unique ``sample_id``).
    windows: LogSTOP windows to run (1 = the authors' benchmark).
    smoothing_radius: centred moving-average radius applied to every trace
      first.
    local_threshold: the constant trace in [0, 1] that sets each query's
      threshold.
    baselines: also run Boolean LTLf on scores >= local_threshold and STL
      robustness > 0 (at the same windows, on the same smoothed traces).

  Returns:
    ``{'overall': {arm: balanced accuracy}, 'per_template': {template:
    {arm: ...}}, 'per_category': {...}, 'decisions': {arm: {sample_id: bool}},
    'num_samples', 'num_satisfied'}``; the arms are ``'LogSTOP w=<w>'`` (and,
    with `baselines`, ``'Boolean LTLf w=<w>'`` and ``'STL robustness > 0
    w=<w>'``) for every window.

  Raises:
    TypeError / ValueError: a bad argument (the message names it), no samples,
      or a ``sample_id`` that occurs twice.
  """
  smoothing_radius = V.check_int(
    smoothing_radius, "smoothing_radius", min_value=0
  )
  local_threshold = V.check_float(
    local_threshold, "local_threshold", min_value=0, max_value=1
  )
  windows = tuple(V.check_int(w, "windows", min_value=1) for w in windows)
  if not windows:
    raise ValueError("windows must name at least one window, got none")
  samples = list(samples)
  if not samples:
    raise ValueError("samples must hold at least one QMTPSample, got none")
  ids = [s.sample_id for s in samples]
  if len(set(ids)) != len(ids):
    dup = next(i for i in ids if ids.count(i) > 1)
    raise ValueError(f"samples: sample_id {dup!r} occurs more than once")
  groups: dict = {}
  for s in samples:
    T = next(iter(s.props.values())).shape[0]
    groups.setdefault((s.formula, T), []).append(s)
  decisions: dict = {}
  for (formula, T), group in groups.items():
    props = {
      n: np.stack([centred_means(s.props[n], smoothing_radius) for s in group])
      for n in F.atoms(formula)
    }
    ext = {
      n: jnp.asarray(
        np.concatenate([v, np.full((1, T), local_threshold)]), jnp.float32
      )
      for n, v in props.items()
    }
    plain = {n: jnp.asarray(v, jnp.float32) for n, v in props.items()}
    for w in windows:
      sc = np.asarray(score(formula, ext, window=w))
      arms = {f"LogSTOP w={w}": sc[:-1] > sc[-1]}
      if baselines:
        arms[f"Boolean LTLf w={w}"] = np.asarray(
          boolean_ltlf(formula, plain, threshold=local_threshold, window=w)
        )
        arms[f"STL robustness > 0 w={w}"] = (
          np.asarray(
            robustness(formula, plain, threshold=local_threshold, window=w)
          )
          > 0
        )
      for arm, pred in arms.items():
        for s, p in zip(group, pred):
          decisions.setdefault(arm, {})[s.sample_id] = bool(p)
  labels = {s.sample_id: s.label for s in samples}

  def bacc(arm, ids):
    return _balanced_accuracy(
      [decisions[arm][i] for i in ids], [labels[i] for i in ids]
    )

  by = lambda key: {
    v: [s.sample_id for s in samples if getattr(s, key) == v]
    for v in dict.fromkeys(getattr(s, key) for s in samples)
  }
  return {
    "overall": {a: bacc(a, ids) for a in decisions},
    "per_template": {
      t: {a: bacc(a, i) for a in decisions} for t, i in by("template").items()
    },
    "per_category": {
      c: {a: bacc(a, i) for a in decisions} for c, i in by("category").items()
    },
    "decisions": decisions,
    "num_samples": len(samples),
    "num_satisfied": int(sum(labels.values())),
  }
