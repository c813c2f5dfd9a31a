r"""Claims as data: a paper's claim, the metric that tests it, and the rule that
decides.

A :class:`Claim` is declared in an experiment's config *before* the run (a plain
dict, so it lives in an ``ml_collections`` config), and :func:`judge` turns it
and the run's metrics into a :class:`Verdict`: one of ``held``, ``partly``,
``not reproduced`` or ``inconclusive``.

The decision rule
-----------------
The measured value ``x`` is read from the metrics at the dotted path ``claim.metric``; with
``compare_to`` it is ``x - ref`` (``comparison='difference'``) or ``x / ref`` (``'ratio'``).
An optional noise half-width ``h >= 0`` (a metric path, e.g. a 95% CI half-width or a seed std,
or a literal number) gives the interval ``[lo, hi] = [x - h, x + h]``; without noise
``lo = hi = x``. For ``direction='lower'`` everything is negated first, so below "higher" means
"better for the claim". With ``floor = partly`` if a partly threshold is declared, else
``held``:

1. a missing, non-numeric or NaN value (or noise) -> **inconclusive**, with the
   reason;
2. ``hi < floor`` -> **not reproduced** (the whole interval misses the lowest
   bar);
3. ``lo < floor`` -> **inconclusive** (the interval straddles the lowest bar:
   inside the noise);
4. no partly threshold -> **held** (the whole interval clears ``held``);
5. ``held_when='clears'`` (default): ``lo >= held`` -> **held**, else
   **partly**; ``held_when='reaches'``: ``hi >= held`` -> **held** (the paper's
   number lies inside or below the interval: not measurably short of it), else
   **partly**. (``held_when`` matters only with a partly threshold: without one,
   step 4 already requires the whole interval.)

All comparisons with a threshold are inclusive (``x >= held`` holds at equality;
for ``direction='lower'``, ``x <= held``). A claim with ``metric=None`` is
declared but not tested by the experiment: its verdict is inconclusive, with
``note`` as the reason.

The guards
----------
The rule judges the method's number alone. Three guards stop it from issuing a verdict that
the setup cannot support; each is declared on the claim, before the run, and the verdict's
``guard`` field names the one that decided (``'rule'`` when none did):

6. ``requires`` (preconditions): ``[{"metric": path, "op": ">=" | "<=" | ">" | "<", "value":
   number, "why": text}, ...]``, each optionally with ``"minus": path`` (then the tested
   quantity is ``metric - minus``, e.g. the teacher's accuracy minus the trivial
   predictor's): what must be true for the experiment to be able to test the
   claim at all (the reader answers from the gold evidence, the teacher beats the mean pose).
   If one fails, or its metric is missing, the verdict is **inconclusive** with the reason
   ``precondition failed: <why> (<metric> = <value>)``, whatever the rule said: a setup that
   cannot test a claim yields neither *held* nor *not reproduced*.
7. ``controls``: ``{name: path}`` or ``{name: {"metric": path, "noise": path |
   number}}`` of trivial, placebo, shuffled or oracle-free variants. Each is
   judged by the claim's own rule (the same ``compare_to``, ``comparison``,
   ``direction``, ``held``, ``partly``, ``held_when``); a control given as a
   bare path is judged on its point value (no noise interval), which is the
   stricter test for the claim. When the claim would be *held* or *partly* and a
   control reaches the same level or a better one, or cannot be read, the
   verdict is **inconclusive**: ``vacuous: control <name> also clears the
   rule``. Each control's own verdict and value are recorded beside the claim's.
8. ``chance``: a *held* or *partly* verdict needs the whole noise interval
   beyond the chance level, strictly, on the side the claim's ``direction``
   favours; otherwise **inconclusive** (``at chance``). ``chance`` is a number,
   compared with the claim's measured interval, or ``{"value": number, "metric":
   path, "noise": path | number}``, compared with another metric's interval
   (e.g. the method's own accuracy when the claim reads a difference).

Guards are applied in this order; the first that fails decides. ``oracle=True``
marks a claim whose metric uses information a user does not have: it is judged
the same way, but reports show its value as an upper bound, never as a paper's
headline. ``baselines`` are for display only and decide nothing.

The verdicts stored in results files are printed as a markdown table by ``python
-m jaxpapers.core.report <results.json> ...``; re-judging committed results
lives in ``experiments.reproduce --rejudge``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

HELD = "held"
PARTLY = "partly"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
VERDICTS = (HELD, PARTLY, NOT_REPRODUCED, INCONCLUSIVE)

_DIRECTIONS = ("higher", "lower")
_HELD_WHEN = ("clears", "reaches")
_COMPARISONS = ("difference", "ratio")


@overload
def _check_number(
  value: Any, name: str, *, optional: Literal[False] = False
) -> float: ...


@overload
def _check_number(value: Any, name: str, *, optional: bool) -> float | None: ...


def _check_number(
  value: Any, name: str, *, optional: bool = False
) -> float | None:
  if value is None and optional:
    return None
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f"{name} must be a real number, got {value!r}")
  value = float(value)
  if math.isnan(value):
    raise ValueError(f"{name} must not be NaN")
  return value


_OPS = {
  ">=": lambda a, b: a >= b,
  "<=": lambda a, b: a <= b,
  ">": lambda a, b: a > b,
  "<": lambda a, b: a < b,
}
_REQUIRE_KEYS = ("metric", "op", "value", "why")
_REQUIRE_OPTIONAL = ("minus",)
_CONTROL_KEYS = ("metric", "noise")
_CHANCE_KEYS = ("value", "metric", "noise")
_RANK = {HELD: 2, PARTLY: 1}


def _check_path(value: Any, name: str) -> str:
  if not isinstance(value, str) or not value:
    raise ValueError(
      f"{name} must be a non-empty dotted metric path, got {value!r}"
    )
  return value


def _check_noise(value: Any, name: str) -> str | float | None:
  if value is None or isinstance(value, str):
    return _check_path(value, name) if value is not None else None
  v = _check_number(value, name)
  if v < 0:
    raise ValueError(f"{name} must be >= 0, got {value!r}")
  return v


def _plain(d: Any, name: str) -> Mapping[str, Any]:
  if hasattr(d, "to_dict") and callable(d.to_dict):
    d = d.to_dict()
  if not isinstance(d, Mapping):
    raise TypeError(f"{name} must be a mapping, got {type(d).__name__}: {d!r}")
  return d


def _only_keys(d: Mapping[str, Any], allowed: Sequence[str], name: str) -> None:
  unknown = sorted(set(d) - set(allowed))
  if unknown:
    raise ValueError(
      f"{name}: unknown key(s) {unknown}; allowed keys are {list(allowed)}"
    )


def _normalise_requires(requires: Any, cid: str) -> tuple[dict[str, Any], ...]:
  if requires is None:
    return ()
  if isinstance(requires, Mapping) or hasattr(requires, "to_dict"):
    requires = [requires]
  if isinstance(requires, (str, bytes)) or not isinstance(requires, Sequence):
    raise TypeError(
      f"Claim {cid!r}: requires must be a list of {{metric, op, value, "
      f"why}} mappings, got {requires!r}"
    )
  out = []
  for i, r in enumerate(requires):
    where = f"Claim {cid!r}: requires[{i}]"
    r = _plain(r, where)
    _only_keys(r, _REQUIRE_KEYS + _REQUIRE_OPTIONAL, where)
    missing = [k for k in _REQUIRE_KEYS if k not in r]
    if missing:
      raise ValueError(
        f"{where}: missing key(s) {missing}; each precondition needs "
        f"{_REQUIRE_KEYS}"
      )
    if r["op"] not in _OPS:
      raise ValueError(
        f"{where}: op must be one of {list(_OPS)}, got {r['op']!r}"
      )
    if not isinstance(r["why"], str) or not r["why"].strip():
      raise ValueError(
        f"{where}: why must say in words what the precondition shows"
      )
    req = {
      "metric": _check_path(r["metric"], f"{where}.metric"),
      "op": r["op"],
      "value": _check_number(r["value"], f"{where}.value"),
      "why": r["why"],
    }
    if r.get("minus") is not None:
      req["minus"] = _check_path(r["minus"], f"{where}.minus")
    out.append(req)
  return tuple(out)


def _normalise_controls(controls: Any, cid: str) -> dict[str, dict[str, Any]]:
  if controls is None:
    return {}
  controls = _plain(controls, f"Claim {cid!r}: controls")
  out = {}
  for name, spec in controls.items():
    where = f"Claim {cid!r}: controls[{name!r}]"
    if not isinstance(name, str) or not name:
      raise ValueError(
        f"Claim {cid!r}: control names must be non-empty strings, got {name!r}"
      )
    if isinstance(spec, str):
      spec = {"metric": spec}
    spec = _plain(spec, where)
    _only_keys(spec, _CONTROL_KEYS, where)
    if "metric" not in spec:
      raise ValueError(f"{where}: needs a 'metric' path")
    out[name] = {
      "metric": _check_path(spec["metric"], f"{where}.metric"),
      "noise": _check_noise(spec.get("noise"), f"{where}.noise"),
    }
  return out


def _normalise_chance(chance: Any, cid: str) -> dict[str, Any] | None:
  if chance is None:
    return None
  where = f"Claim {cid!r}: chance"
  if isinstance(chance, numbers.Real) and not isinstance(chance, bool):
    chance = {"value": chance}
  chance = _plain(chance, where)
  _only_keys(chance, _CHANCE_KEYS, where)
  if "value" not in chance:
    raise ValueError(f"{where}: needs a 'value' (the chance level)")
  metric = chance.get("metric")
  return {
    "value": _check_number(chance["value"], f"{where}.value"),
    "metric": None
    if metric is None
    else _check_path(metric, f"{where}.metric"),
    "noise": _check_noise(chance.get("noise"), f"{where}.noise"),
  }


@dataclasses.dataclass(frozen=True)
class Claim:
  """One claim of a paper and the rule that decides it (see the module
  docstring).

  Each argument is kept as the field of the same name.

  Args:
    id: short identifier, unique within an experiment (e.g. ``'mean_gain'``).
    statement: the paper's claim, in words.
    paper_value: the paper's number, if it states one.
    paper_text: how the paper states it, with where (e.g.
      ``'+5.18 pp, Table 2'``).
    metric: dotted path into the run's metrics (``'headline.fd'``; a key that
      itself contains dots or slashes is matched whole, longest key first; list
      items by integer index), or None for a claim the experiment cannot test.
    direction: ``'higher'`` or ``'lower'``: which way supports the claim.
    held: threshold for *held*.
    partly: optional threshold for *partly* (on the weaker side of ``held``).
    held_when: ``'clears'`` (the whole noise interval must clear ``held``) or
      ``'reaches'`` (the interval must reach it; for "reproduces the paper's
      number" claims).
    noise: half-width of the noise interval: a metric path, a number, or None.
    compare_to: optional metric path of a reference value.
    comparison: ``'difference'`` (metric - reference) or ``'ratio'`` (metric /
      reference).
    requires: preconditions ``{metric, op, value, why[, minus]}`` that show the
      setup can test the claim; one that fails or is missing makes the verdict
      inconclusive.
    controls: ``{name: path | {metric, noise}}``: variants judged by the same
      rule; one that clears it makes a held or partly verdict inconclusive
      (vacuous).
    chance: the chance level (a number, or ``{value, metric, noise}``): a held
      or partly verdict needs the whole interval beyond it.
    oracle: True when the metric uses information a user does not have (an upper
      bound).
    baselines: ``{name: metric path}`` of trivial baselines reported beside the
      verdict (display only).
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
  requires: Sequence[Mapping[str, Any]] = ()
  controls: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  chance: Any = None
  oracle: bool = False
  baselines: Mapping[str, str] = dataclasses.field(default_factory=dict)
  unit: str = ""
  fmt: str = ".3g"
  note: str = ""

  def __post_init__(self):
    if not isinstance(self.id, str) or not self.id:
      raise ValueError(f"Claim.id must be a non-empty string, got {self.id!r}")
    if not isinstance(self.statement, str) or not self.statement:
      raise ValueError(
        f"Claim {self.id!r}: statement must be a non-empty string"
      )
    if self.direction not in _DIRECTIONS:
      raise ValueError(
        f"Claim {self.id!r}: direction must be one of {list(_DIRECTIONS)}, "
        f"got {self.direction!r}"
      )
    if self.held_when not in _HELD_WHEN:
      raise ValueError(
        f"Claim {self.id!r}: held_when must be one of {list(_HELD_WHEN)}, "
        f"got {self.held_when!r}"
      )
    if self.comparison not in _COMPARISONS:
      raise ValueError(
        f"Claim {self.id!r}: comparison must be one of {list(_COMPARISONS)}, "
        f"got {self.comparison!r}"
      )
    if self.metric is not None and (
      not isinstance(self.metric, str) or not self.metric
    ):
      raise ValueError(
        f"Claim {self.id!r}: metric must be a non-empty dotted path or None, "
        f"got {self.metric!r}"
      )
    if self.metric is not None:
      held = _check_number(self.held, f"Claim {self.id!r}: held")
      partly = _check_number(
        self.partly, f"Claim {self.id!r}: partly", optional=True
      )
      if partly is not None:
        weaker = (
          partly <= held if self.direction == "higher" else partly >= held
        )
        if not weaker:
          raise ValueError(
            f"Claim {self.id!r}: partly ({partly:g}) must be on the weaker "
            f"side of held ({held:g}) for direction={self.direction!r}"
          )
    _check_number(
      self.paper_value, f"Claim {self.id!r}: paper_value", optional=True
    )
    _check_noise(self.noise, f"Claim {self.id!r}: noise")
    if not isinstance(self.oracle, bool):
      raise TypeError(
        f"Claim {self.id!r}: oracle must be True or False, got {self.oracle!r}"
      )
    if not isinstance(self.baselines, Mapping):
      raise TypeError(
        f"Claim {self.id!r}: baselines must be a mapping name -> metric path"
      )
    object.__setattr__(self, "baselines", dict(self.baselines))
    object.__setattr__(
      self, "requires", _normalise_requires(self.requires, self.id)
    )
    object.__setattr__(
      self, "controls", _normalise_controls(self.controls, self.id)
    )
    object.__setattr__(self, "chance", _normalise_chance(self.chance, self.id))
    if self.metric is None and (self.requires or self.controls or self.chance):
      raise ValueError(
        f"Claim {self.id!r}: a claim without a metric is not tested, "
        "so it cannot have requires, controls or chance"
      )

  @classmethod
  def from_dict(cls, d: Any) -> Claim:
    """Builds a claim from a plain dict (or ConfigDict), rejecting unknown keys.

    Args:
      d: a mapping of field name -> value (the form :meth:`to_dict` writes).

    Returns:
      the validated claim.

    Raises:
      ValueError: a key is not a field, or a value is invalid.
    """
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
    """The claim as plain JSON-able data; ``from_dict`` inverts it.

    Returns:
      field name -> value, with ``requires`` as a list of dicts.
    """
    d = dataclasses.asdict(self)
    d["requires"] = [dict(r) for r in self.requires]
    return d

  def describe_rule(self) -> str:
    """The decision rule in one line.

    Returns:
      e.g. ``'gain: held if >= 5.18 by the whole interval; not reproduced if <
      5.18; ...'``, or ``'not tested by this experiment'`` for a claim without a
      metric.
    """
    if self.metric is None:
      return "not tested by this experiment"
    op = ">=" if self.direction == "higher" else "<="
    miss = "<" if self.direction == "higher" else ">"
    what = (
      self.metric
      if self.compare_to is None
      else (
        f"{self.metric} {'-' if self.comparison == 'difference' else '/'} "
        f"{self.compare_to}"
      )
    )
    end = (
      ""
      if self.noise is None
      else (
        " by the whole interval"
        if self.held_when == "clears"
        else " by the interval's best end"
      )
    )
    parts = [f"{what}: held if {op} {self.held:g}{end}"]
    if self.partly is not None:
      parts.append(f"partly if {op} {self.partly:g}")
    floor = self.partly if self.partly is not None else self.held
    parts.append(f"not reproduced if {miss} {floor:g}")
    if self.noise is not None:
      parts.append(
        f"noise ± {self.noise}; straddling {floor:g} is inconclusive"
      )
    for r in self.requires:
      minus = f" - {r['minus']}" if "minus" in r else ""
      parts.append(f"requires {r['metric']}{minus} {r['op']} {r['value']:g}")
    if self.controls:
      parts.append(
        f"controls judged by the same rule: {', '.join(self.controls)}"
      )
    if self.chance is not None:
      beyond = ">" if self.direction == "higher" else "<"
      on = self.chance["metric"] or "the interval"
      parts.append(f"chance: {on} {beyond} {self.chance['value']:g} throughout")
    if self.oracle:
      parts.append("oracle: an upper bound, never a headline")
    return "; ".join(parts)


@dataclasses.dataclass(frozen=True)
class Verdict:
  """The outcome of :func:`judge`.

  Attributes:
    claim_id: the claim's id.
    verdict: one of :data:`VERDICTS`.
    measured: the measured value (after ``compare_to``), or None when missing.
    noise: the noise half-width used (0.0 without noise), or None when
      unavailable.
    reason: one line saying why (naming the guard that decided, if one did).
    baselines: ``{name: value or None}`` for the claim's trivial baselines.
    guard: what decided: ``'rule'``, ``'requires'``, ``'controls'``,
      ``'chance'``, ``'missing'`` (the value could not be read) or
      ``'untested'`` (no metric).
    rule_verdict: the verdict of the rule alone, before the guards (None when
      untested or missing).
    requires: each precondition with its measured value and ``ok``.
    controls: ``{name: {metric, verdict, measured, noise, reason}}``: each
      control judged by the claim's rule.
    chance: ``{value, metric, lo, hi, ok}`` when a chance level is declared.
    oracle: the claim's ``oracle`` flag.
  """

  claim_id: str
  verdict: str
  measured: float | None
  noise: float | None
  reason: str
  baselines: Mapping[str, float | None] = dataclasses.field(
    default_factory=dict
  )
  guard: str = "rule"
  rule_verdict: str | None = None
  requires: Sequence[Mapping[str, Any]] = ()
  controls: Mapping[str, Mapping[str, Any]] = dataclasses.field(
    default_factory=dict
  )
  chance: Mapping[str, Any] | None = None
  oracle: bool = False

  def __post_init__(self):
    if self.verdict not in VERDICTS:
      raise ValueError(
        f"Verdict.verdict must be one of {list(VERDICTS)}, got {self.verdict!r}"
      )

  def to_dict(self) -> dict[str, Any]:
    """The verdict as plain JSON-able data.

    Returns:
      field name -> value, with ``requires`` as a list of dicts.
    """
    d = dataclasses.asdict(self)
    d["requires"] = [dict(r) for r in self.requires]
    return d


class _Missing(Exception):
  pass


def lookup(metrics: Any, path: str) -> Any:
  """Value at a dotted ``path`` in nested mappings/lists.

  At each mapping the longest key equal to the remaining path or followed by
  ``'.'`` is taken, so keys such as ``'student/vs_gt/depth_delta1.25'`` are
  matched whole. List items are addressed by integer index.

  Raises:
    KeyError: naming the part of the path that was not found.
  """
  cur, rest, walked = metrics, path, []
  while True:
    if isinstance(cur, Mapping):
      keys = [
        k
        for k in cur
        if isinstance(k, str) and (rest == k or rest.startswith(k + "."))
      ]
      if not keys:
        raise KeyError(
          f"{path!r}: no key for {rest!r} under "
          f"{'.'.join(walked) or 'the metrics'}"
        )
      key = max(keys, key=len)
    elif isinstance(cur, (list, tuple)):
      key = rest.split(".", 1)[0]
      if not key.lstrip("-").isdigit() or not -len(cur) <= int(key) < len(cur):
        raise KeyError(
          f"{path!r}: {key!r} is not an index of a list of {len(cur)}"
        )
      cur = cur[int(key)]
      walked.append(key)
      rest = rest[len(key) + 1 :]
      if not rest:
        return cur
      continue
    else:
      raise KeyError(
        f"{path!r}: {'.'.join(walked)} is a {type(cur).__name__}, not a mapping"
      )
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


def _half_width(metrics: Mapping[str, Any], noise: str | float | None) -> float:
  if noise is None:
    return 0.0
  h = (
    _number(metrics, noise, "noise") if isinstance(noise, str) else float(noise)
  )
  if h < 0:
    raise _Missing(f"noise {noise!r} is negative ({h:g})")
  return h


def _value(claim: Claim, metrics: Mapping[str, Any], metric: str) -> float:
  """The value at ``metric`` after the claim's ``compare_to`` (difference or
  ratio)."""
  x = _number(metrics, metric, "metric")
  if claim.compare_to is not None:
    ref = _number(metrics, claim.compare_to, "reference")
    if claim.comparison == "difference":
      x = x - ref
    elif ref == 0:
      raise _Missing(
        f"reference {claim.compare_to!r} is 0, the ratio is undefined"
      )
    else:
      x = x / ref
  if math.isnan(x):
    raise _Missing("measured value is NaN")
  return x


def _rule(claim: Claim, x: float, h: float) -> tuple[str, str]:
  """The rule of the module docstring (steps 2-5) on the interval ``x ± h``."""
  s = 1.0 if claim.direction == "higher" else -1.0
  lo, hi = sorted((s * (x - h), s * (x + h)))  # oriented: higher is better
  if claim.held is None:  # __post_init__ requires it whenever a metric is set
    raise ValueError(f"Claim {claim.id!r}: a metric needs a held threshold")
  held = s * claim.held
  partly = None if claim.partly is None else s * claim.partly
  floor = held if partly is None else partly
  sh = f"{_fmt(x, claim.fmt)}" + (
    "" if h == 0 else f" ± {_fmt(h, claim.fmt.replace('+', ''))}"
  )
  op = ">=" if s > 0 else "<="
  floor_txt = f"{claim.held if partly is None else claim.partly:g}"
  if hi < floor:
    level = "held" if partly is None else "partly"
    return (
      NOT_REPRODUCED,
      f"{sh} misses {floor_txt} ({level} needs {op} {floor_txt})",
    )
  if lo < floor:
    return INCONCLUSIVE, f"{sh} straddles {floor_txt}: inside the noise"
  if partly is None:
    return HELD, f"{sh} {op} {claim.held:g}"
  if (lo >= held) if claim.held_when == "clears" else (hi >= held):
    if claim.held_when == "clears" or h == 0:
      return HELD, f"{sh} {op} {claim.held:g}"
    return HELD, f"{sh} reaches {claim.held:g}"
  if claim.held_when == "reaches" and h > 0:
    return (
      PARTLY,
      f"{sh} clears {claim.partly:g} but does not reach {claim.held:g}",
    )
  return PARTLY, f"{sh} {op} {claim.partly:g} but not {op} {claim.held:g}" + (
    " by the whole interval" if h > 0 else ""
  )


def _check_requires(
  claim: Claim, metrics: Mapping[str, Any]
) -> tuple[list[dict], str | None]:
  """Each precondition with its value and ``ok``; the reason of the first that
  fails."""
  out, failed = [], None
  for r in claim.requires:
    what = r["metric"] + (f" - {r['minus']}" if "minus" in r else "")
    try:
      v = _number(metrics, r["metric"], "precondition")
      if "minus" in r:
        v -= _number(metrics, r["minus"], "precondition reference")
      ok = bool(_OPS[r["op"]](v, r["value"]))
      shown = format_value(v, ".4g")
    except _Missing as e:
      v, ok, shown = None, False, f"missing: {e}"
    out.append({**r, "measured": v, "ok": ok})
    if not ok and failed is None:
      failed = (
        f"precondition failed: {r['why']} ({what} = {shown}; "
        f"needs {r['op']} {r['value']:g})"
      )
  return out, failed


def _judge_controls(
  claim: Claim, metrics: Mapping[str, Any], level: str | None
) -> tuple[dict[str, dict], str | None]:
  """Each control judged by the claim's rule; the reason when one clears
  ``level``'s rank."""
  out, vacuous = {}, None
  for name, spec in claim.controls.items():
    try:
      x, h = (
        _value(claim, metrics, spec["metric"]),
        _half_width(metrics, spec["noise"]),
      )
      verdict, why = _rule(claim, x, h)
    except _Missing as e:
      x, h, verdict, why = None, None, None, f"could not be read: {e}"
    out[name] = {
      "metric": spec["metric"],
      "verdict": verdict,
      "measured": x,
      "noise": h,
      "reason": why,
    }
    if vacuous is not None or level not in _RANK:
      continue
    if verdict is None:
      vacuous = f"vacuous: control {name} cannot be judged ({why})"
    elif _RANK.get(verdict, 0) >= _RANK[level]:
      vacuous = (
        f"vacuous: control {name} also clears the rule ({verdict}: {why})"
      )
  return out, vacuous


def _check_chance(
  claim: Claim, metrics: Mapping[str, Any], x: float, h: float
) -> tuple[dict[str, Any], str | None]:
  c = claim.chance
  try:
    if c["metric"] is None:
      v, hv = x, h
    else:
      v = _number(metrics, c["metric"], "chance metric")
      hv = _half_width(metrics, c["noise"])
  except _Missing as e:
    rec = {**c, "lo": None, "hi": None, "ok": False}
    return rec, (
      f"at chance: the value to compare with chance {c['value']:g} is missing "
      f"({e})"
    )
  lo, hi = v - hv, v + hv
  ok = lo > c["value"] if claim.direction == "higher" else hi < c["value"]
  rec = {**c, "lo": lo, "hi": hi, "ok": ok}
  if ok:
    return rec, None
  what = c["metric"] or "the measured interval"
  side = "above" if claim.direction == "higher" else "below"
  return rec, (
    f"at chance: {what} [{_fmt(lo, '.4g')}, {_fmt(hi, '.4g')}] is not wholly "
    f"{side} chance {c['value']:g}"
  )


def judge(
  claim: Claim | Mapping[str, Any], metrics: Mapping[str, Any]
) -> Verdict:
  """Decides ``claim`` on ``metrics`` (pure; see the module docstring for the
  rule and guards).

  Args:
    claim: a :class:`Claim` or its dict form.
    metrics: the run's metrics (nested mappings / lists of JSON values).

  Returns:
    The :class:`Verdict`, with each guard's record.
  """
  if not isinstance(claim, Claim):
    claim = Claim.from_dict(claim)
  base = {}
  for name, path in claim.baselines.items():
    try:
      base[name] = _number(metrics, path, "baseline")
    except _Missing:
      base[name] = None
  common: dict[str, Any] = {"baselines": base, "oracle": claim.oracle}
  if claim.metric is None:
    why = "not tested by this experiment" + (
      f": {claim.note}" if claim.note else ""
    )
    return Verdict(
      claim.id, INCONCLUSIVE, None, None, why, guard="untested", **common
    )
  requires, failed = _check_requires(claim, metrics)
  common["requires"] = requires
  x = None
  try:
    # measured, even if the noise is missing
    x = _value(claim, metrics, claim.metric)
    h = _half_width(metrics, claim.noise)
  except _Missing as e:
    controls, _ = _judge_controls(claim, metrics, None)
    why = str(e) if failed is None else f"{failed}; and {e}"
    guard = "missing" if failed is None else "requires"
    return Verdict(
      claim.id,
      INCONCLUSIVE,
      x,
      None,
      why,
      guard=guard,
      controls=controls,
      **common,
    )
  rule_verdict, why = _rule(claim, x, h)
  controls, vacuous = _judge_controls(claim, metrics, rule_verdict)
  chance, at_chance = (None, None)
  if claim.chance is not None:
    chance, at_chance = _check_chance(claim, metrics, x, h)
    if rule_verdict not in _RANK:
      at_chance = None
  verdict, guard = rule_verdict, "rule"
  for name, blocked in (
    ("requires", failed),
    ("controls", vacuous),
    ("chance", at_chance),
  ):
    if blocked is not None:  # the first guard that fails decides
      verdict, guard, why = (
        INCONCLUSIVE,
        name,
        f"{blocked} (the rule alone: {rule_verdict}, {why})",
      )
      break
  return Verdict(
    claim.id,
    verdict,
    x,
    h,
    why,
    guard=guard,
    rule_verdict=rule_verdict,
    controls=controls,
    chance=chance,
    **common,
  )


def parse_claims(claims: Any) -> list[Claim]:
  """A list of :class:`Claim` from claims / dicts (a config's ``claims`` field).

  Args:
    claims: a Claim, a mapping, a sequence of them, or None.

  Returns:
    the claims, in order; ``[]`` for None.

  Raises:
    ValueError: two claims share an id, or a claim is invalid.
  """
  if claims is None:
    return []
  if isinstance(claims, (Claim, Mapping)) and not isinstance(
    claims, (list, tuple)
  ):
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

  With ``issue_verdicts=False`` (smoke runs) the measured values are recorded
  but the verdict is None: a run too small to test a claim issues no verdict.

  Args:
    claims: what :func:`parse_claims` accepts.
    metrics: the run's metrics (nested mappings / lists of JSON values).
    issue_verdicts: whether to record the verdicts.

  Returns:
    one dict per claim: ``{'claim': Claim.to_dict(), 'rule': describe_rule(),
    **Verdict.to_dict()}``.
  """
  out = []
  for c in parse_claims(claims):
    v = judge(c, metrics)
    rec = {"claim": c.to_dict(), "rule": c.describe_rule(), **v.to_dict()}
    if not issue_verdicts:
      rec["verdict"] = None
      rec["reason"] = (
        "no verdict: this config does not test the claim (smoke setting)"
      )
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
