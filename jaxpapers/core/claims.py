r"""Claims as data: a paper's claim, the metric that tests it, and the rule that decides.

A :class:`Claim` is declared in an experiment's config *before* the run (a plain dict, so it
lives in an ``ml_collections`` config), and :func:`judge` turns it and the run's metrics into a
:class:`Verdict`: one of ``held``, ``partly``, ``not reproduced`` or ``inconclusive``.

The decision rule
-----------------
The measured value ``x`` is read from the metrics at the dotted path ``claim.metric``; with
``compare_to`` it is ``x - ref`` (``comparison='difference'``) or ``x / ref`` (``'ratio'``).
An optional noise half-width ``h >= 0`` (a metric path, e.g. a 95% CI half-width or a seed std,
or a literal number) gives the interval ``[lo, hi] = [x - h, x + h]``; without noise
``lo = hi = x``. For ``direction='lower'`` everything is negated first, so below "higher" means
"better for the claim". With ``floor = partly`` if a partly threshold is declared, else
``held``:

1. a missing, non-numeric or NaN value (or noise) -> **inconclusive**, with the reason;
2. ``hi < floor`` -> **not reproduced** (the whole interval misses the lowest bar);
3. ``lo < floor`` -> **inconclusive** (the interval straddles the lowest bar: inside the noise);
4. no partly threshold -> **held** (the whole interval clears ``held``);
5. ``held_when='clears'`` (default): ``lo >= held`` -> **held**, else **partly**;
   ``held_when='reaches'``: ``hi >= held`` -> **held** (the paper's number lies inside or below
   the interval: not measurably short of it), else **partly**. (``held_when`` matters only
   with a partly threshold: without one, step 4 already requires the whole interval.)

All comparisons with a threshold are inclusive (``x >= held`` holds at equality; for
``direction='lower'``, ``x <= held``). A claim with ``metric=None`` is declared but not tested by
the experiment: its verdict is inconclusive, with ``note`` as the reason.

Command line (re-judging committed results lives in ``experiments.reproduce --rejudge``)::

  python -m jaxpapers.core.claims <results.json> [<results.json> ...]

prints the verdicts stored in results files as a markdown table.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import sys
from collections.abc import Mapping, Sequence
from typing import Any

HELD = "held"
PARTLY = "partly"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
VERDICTS = (HELD, PARTLY, NOT_REPRODUCED, INCONCLUSIVE)

_DIRECTIONS = ("higher", "lower")
_HELD_WHEN = ("clears", "reaches")
_COMPARISONS = ("difference", "ratio")


def _check_number(value: Any, name: str, *, optional: bool = False) -> float | None:
  if value is None and optional:
    return None
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f"{name} must be a real number, got {value!r}")
  value = float(value)
  if math.isnan(value):
    raise ValueError(f"{name} must not be NaN")
  return value


@dataclasses.dataclass(frozen=True)
class Claim:
  """One claim of a paper and the rule that decides it (see the module docstring).

  Attributes:
    id: short identifier, unique within an experiment (e.g. ``'mean_gain'``).
    statement: the paper's claim, in words.
    paper_value: the paper's number, if it states one.
    paper_text: how the paper states it, with where (e.g. ``'+5.18 pp, Table 2'``).
    metric: dotted path into the run's metrics (``'headline.fd'``; a key that itself contains
      dots or slashes is matched whole, longest key first; list items by integer index), or
      None for a claim the experiment cannot test.
    direction: ``'higher'`` or ``'lower'``: which way supports the claim.
    held: threshold for *held*.
    partly: optional threshold for *partly* (on the weaker side of ``held``).
    held_when: ``'clears'`` (the whole noise interval must clear ``held``) or ``'reaches'``
      (the interval must reach it; for "reproduces the paper's number" claims).
    noise: half-width of the noise interval: a metric path, a number, or None.
    compare_to: optional metric path of a reference value.
    comparison: ``'difference'`` (metric - reference) or ``'ratio'`` (metric / reference).
    baselines: ``{name: metric path}`` of trivial baselines reported beside the verdict.
    unit: unit of the measured value, for display.
    fmt: format spec of the measured value (``'.3g'``).
    note: scale caveats, or why the claim is not tested.
  """

  id: str
  statement: str
  held: float | None = None
  metric: str | None = None
  paper_value: float | None = None
  paper_text: str = ""
  direction: str = "higher"
  partly: float | None = None
  held_when: str = "clears"
  noise: str | float | None = None
  compare_to: str | None = None
  comparison: str = "difference"
  baselines: Mapping[str, str] = dataclasses.field(default_factory=dict)
  unit: str = ""
  fmt: str = ".3g"
  note: str = ""

  def __post_init__(self):
    if not isinstance(self.id, str) or not self.id:
      raise ValueError(f"Claim.id must be a non-empty string, got {self.id!r}")
    if not isinstance(self.statement, str) or not self.statement:
      raise ValueError(f"Claim {self.id!r}: statement must be a non-empty string")
    if self.direction not in _DIRECTIONS:
      raise ValueError(
        f"Claim {self.id!r}: direction must be one of {list(_DIRECTIONS)}, got {self.direction!r}"
      )
    if self.held_when not in _HELD_WHEN:
      raise ValueError(
        f"Claim {self.id!r}: held_when must be one of {list(_HELD_WHEN)}, got {self.held_when!r}"
      )
    if self.comparison not in _COMPARISONS:
      raise ValueError(
        f"Claim {self.id!r}: comparison must be one of {list(_COMPARISONS)}, "
        f"got {self.comparison!r}"
      )
    if self.metric is not None and (not isinstance(self.metric, str) or not self.metric):
      raise ValueError(
        f"Claim {self.id!r}: metric must be a non-empty dotted path or None, got {self.metric!r}"
      )
    if self.metric is not None:
      held = _check_number(self.held, f"Claim {self.id!r}: held")
      partly = _check_number(self.partly, f"Claim {self.id!r}: partly", optional=True)
      if partly is not None:
        weaker = partly <= held if self.direction == "higher" else partly >= held
        if not weaker:
          raise ValueError(
            f"Claim {self.id!r}: partly ({partly:g}) must be on the weaker side of held "
            f"({held:g}) for direction={self.direction!r}"
          )
    _check_number(self.paper_value, f"Claim {self.id!r}: paper_value", optional=True)
    if self.noise is not None and not isinstance(self.noise, str):
      if _check_number(self.noise, f"Claim {self.id!r}: noise") < 0:
        raise ValueError(f"Claim {self.id!r}: noise must be >= 0, got {self.noise!r}")
    if not isinstance(self.baselines, Mapping):
      raise TypeError(f"Claim {self.id!r}: baselines must be a mapping name -> metric path")
    object.__setattr__(self, "baselines", dict(self.baselines))

  @classmethod
  def from_dict(cls, d: Mapping[str, Any]) -> Claim:
    """Builds a claim from a plain dict (or ConfigDict), rejecting unknown keys."""
    if hasattr(d, "to_dict") and callable(d.to_dict):
      d = d.to_dict()
    if not isinstance(d, Mapping):
      raise TypeError(f"a claim must be a mapping, got {type(d).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
      raise ValueError(
        f"Unknown claim field(s) {unknown} in claim {d.get('id')!r}; "
        f"allowed fields are {sorted(names)}."
      )
    return cls(**d)

  def to_dict(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  def describe_rule(self) -> str:
    """The decision rule in one line, e.g. ``'held if >= 5.18 (reached by the interval) ...'``."""
    if self.metric is None:
      return "not tested by this experiment"
    op = ">=" if self.direction == "higher" else "<="
    miss = "<" if self.direction == "higher" else ">"
    what = (
      self.metric
      if self.compare_to is None
      else (f"{self.metric} {'-' if self.comparison == 'difference' else '/'} {self.compare_to}")
    )
    end = (
      ""
      if self.noise is None
      else (
        " by the whole interval" if self.held_when == "clears" else " by the interval's best end"
      )
    )
    parts = [f"{what}: held if {op} {self.held:g}{end}"]
    if self.partly is not None:
      parts.append(f"partly if {op} {self.partly:g}")
    floor = self.partly if self.partly is not None else self.held
    parts.append(f"not reproduced if {miss} {floor:g}")
    if self.noise is not None:
      parts.append(f"noise ± {self.noise}; straddling {floor:g} is inconclusive")
    return "; ".join(parts)


@dataclasses.dataclass(frozen=True)
class Verdict:
  """The outcome of :func:`judge`.

  Attributes:
    claim_id: the claim's id.
    verdict: one of :data:`VERDICTS`.
    measured: the measured value (after ``compare_to``), or None when missing.
    noise: the noise half-width used (0.0 without noise), or None when unavailable.
    reason: one line saying why.
    baselines: ``{name: value or None}`` for the claim's trivial baselines.
  """

  claim_id: str
  verdict: str
  measured: float | None
  noise: float | None
  reason: str
  baselines: Mapping[str, float | None] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    if self.verdict not in VERDICTS:
      raise ValueError(f"Verdict.verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")

  def to_dict(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


class _Missing(Exception):
  pass


def lookup(metrics: Any, path: str) -> Any:
  """Value at a dotted ``path`` in nested mappings/lists.

  At each mapping the longest key equal to the remaining path or followed by ``'.'`` is taken,
  so keys such as ``'student/vs_gt/depth_delta1.25'`` are matched whole. List items are addressed
  by integer index.

  Raises:
    KeyError: naming the part of the path that was not found.
  """
  cur, rest, walked = metrics, path, []
  while True:
    if isinstance(cur, Mapping):
      keys = [k for k in cur if isinstance(k, str) and (rest == k or rest.startswith(k + "."))]
      if not keys:
        raise KeyError(f"{path!r}: no key for {rest!r} under {'.'.join(walked) or 'the metrics'}")
      key = max(keys, key=len)
    elif isinstance(cur, (list, tuple)):
      key = rest.split(".", 1)[0]
      if not key.lstrip("-").isdigit() or not -len(cur) <= int(key) < len(cur):
        raise KeyError(f"{path!r}: {key!r} is not an index of a list of {len(cur)}")
      cur = cur[int(key)]
      walked.append(key)
      rest = rest[len(key) + 1 :]
      if not rest:
        return cur
      continue
    else:
      raise KeyError(f"{path!r}: {'.'.join(walked)} is a {type(cur).__name__}, not a mapping")
    cur = cur[key]
    walked.append(key)
    rest = rest[len(key) + 1 :]
    if not rest:
      return cur


def _number(metrics: Mapping[str, Any], path: str, what: str) -> float:
  try:
    v = lookup(metrics, path)
  except KeyError as e:
    raise _Missing(f"{what} missing: {e.args[0]}") from None
  if v is None:
    raise _Missing(f"{what} {path!r} is None")
  if isinstance(v, str):  # results.json writes NaN/inf as strings
    try:
      v = float(v)
    except ValueError:
      raise _Missing(f"{what} {path!r} is not a number: {v!r}") from None
  if isinstance(v, bool) or not isinstance(v, numbers.Real):
    raise _Missing(f"{what} {path!r} is not a number: {v!r}")
  v = float(v)
  if math.isnan(v):
    raise _Missing(f"{what} {path!r} is NaN")
  return v


def _fmt(x: float, spec: str) -> str:
  return format(x, spec)


def judge(claim: Claim | Mapping[str, Any], metrics: Mapping[str, Any]) -> Verdict:
  """Decides ``claim`` on ``metrics`` (pure; see the module docstring for the rule).

  Args:
    claim: a :class:`Claim` or its dict form.
    metrics: the run's metrics (nested mappings / lists of JSON values).

  Returns:
    The :class:`Verdict`.
  """
  if not isinstance(claim, Claim):
    claim = Claim.from_dict(claim)
  base = {}
  for name, path in claim.baselines.items():
    try:
      base[name] = _number(metrics, path, "baseline")
    except _Missing:
      base[name] = None
  if claim.metric is None:
    why = "not tested by this experiment" + (f": {claim.note}" if claim.note else "")
    return Verdict(claim.id, INCONCLUSIVE, None, None, why, base)
  x = None
  try:
    x0 = _number(metrics, claim.metric, "metric")
    if claim.compare_to is not None:
      ref = _number(metrics, claim.compare_to, "reference")
      if claim.comparison == "difference":
        x0 = x0 - ref
      elif ref == 0:
        raise _Missing(f"reference {claim.compare_to!r} is 0, the ratio is undefined")
      else:
        x0 = x0 / ref
    x = x0  # measured; the noise may still be missing
    if claim.noise is None:
      h = 0.0
    elif isinstance(claim.noise, str):
      h = _number(metrics, claim.noise, "noise")
    else:
      h = float(claim.noise)
    if h < 0:
      raise _Missing(f"noise {claim.noise!r} is negative ({h:g})")
  except _Missing as e:
    return Verdict(claim.id, INCONCLUSIVE, x, None, str(e), base)
  if math.isnan(x):
    return Verdict(claim.id, INCONCLUSIVE, None, None, "measured value is NaN", base)

  s = 1.0 if claim.direction == "higher" else -1.0
  lo, hi = sorted((s * (x - h), s * (x + h)))  # oriented: higher is better
  held = s * claim.held
  partly = None if claim.partly is None else s * claim.partly
  floor = held if partly is None else partly
  sh = f"{_fmt(x, claim.fmt)}" + ("" if h == 0 else f" ± {_fmt(h, claim.fmt.replace('+', ''))}")
  op = ">=" if s > 0 else "<="
  floor_txt = f"{claim.held if partly is None else claim.partly:g}"
  if hi < floor:
    level = "held" if partly is None else "partly"
    verdict, why = NOT_REPRODUCED, f"{sh} misses {floor_txt} ({level} needs {op} {floor_txt})"
  elif lo < floor:
    verdict, why = INCONCLUSIVE, f"{sh} straddles {floor_txt}: inside the noise"
  elif partly is None:
    verdict, why = HELD, f"{sh} {op} {claim.held:g}"
  else:
    ok = lo >= held if claim.held_when == "clears" else hi >= held
    if ok:
      verdict = HELD
      why = (
        f"{sh} {op} {claim.held:g}"
        if claim.held_when == "clears" or h == 0
        else f"{sh} reaches {claim.held:g}"
      )
    elif claim.held_when == "reaches" and h > 0:
      verdict = PARTLY
      why = f"{sh} clears {claim.partly:g} but does not reach {claim.held:g}"
    else:
      verdict = PARTLY
      why = f"{sh} {op} {claim.partly:g} but not {op} {claim.held:g}" + (
        " by the whole interval" if h > 0 else ""
      )
  return Verdict(claim.id, verdict, x, h, why, base)


def parse_claims(claims: Any) -> list[Claim]:
  """A list of :class:`Claim` from claims / dicts (a config's ``claims`` field); None -> []."""
  if claims is None:
    return []
  if isinstance(claims, (Claim, Mapping)) and not isinstance(claims, (list, tuple)):
    claims = [claims]
  out = [c if isinstance(c, Claim) else Claim.from_dict(c) for c in claims]
  ids = [c.id for c in out]
  dup = sorted({i for i in ids if ids.count(i) > 1})
  if dup:
    raise ValueError(f"claims: duplicate claim id(s) {dup}")
  return out


def judge_all(
  claims: Any, metrics: Mapping[str, Any], *, issue_verdicts: bool = True
) -> list[dict[str, Any]]:
  """The ``claims`` block of results.json: each claim, its rule and its verdict.

  With ``issue_verdicts=False`` (smoke runs) the measured values are recorded but the verdict
  is None: a run too small to test a claim issues no verdict.
  """
  out = []
  for c in parse_claims(claims):
    v = judge(c, metrics)
    rec = {"claim": c.to_dict(), "rule": c.describe_rule(), **v.to_dict()}
    if not issue_verdicts:
      rec["verdict"] = None
      rec["reason"] = "no verdict: this config does not test the claim (smoke setting)"
    out.append(rec)
  return out


def format_value(value: Any, fmt: str = ".3g", unit: str = "") -> str:
  """``value`` formatted for a table; None or NaN -> '–'."""
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "–"
  try:
    s = format(float(value), fmt)
  except (TypeError, ValueError):
    return str(value)
  return f"{s} {unit}".rstrip() if unit else s


def _main(argv: Sequence[str]) -> int:
  from jaxpapers.core.report import claims_table  # pylint: disable=import-outside-toplevel

  if len(argv) < 2:
    print(__doc__)
    return 2
  for p in argv[1:]:
    rec = json.loads(open(p, encoding="utf-8").read())
    print(f"## {p}\n")
    print(claims_table(rec.get("claims", [])))
    print()
  return 0


if __name__ == "__main__":
  sys.exit(_main(sys.argv))
