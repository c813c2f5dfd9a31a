"""The bad-input battery: a table of malformed calls, run eagerly and under
``jax.jit``.

Each package's ``tests/<pkg>/test_bad_input.py`` declares ``CASES`` (a list of
:class:`Case`) and the public names it deliberately leaves out (``EXEMPT``, name
-> reason), then calls :func:`parametrize` and :func:`assert_covers`. A public
function added to a package without a row in its table fails ``assert_covers``.

What a case expects, by mode (the project's policy, see ``jaxpapers.core``):

* eagerly: ``error`` is raised and its message contains ``match`` (a regex);
* under jit, ``jit`` says what must happen when the array arguments are tracers:
  - ``"same"``: the same error at trace time (shapes, dtypes, static config);
  - ``"nan"``: no error, and every float output is NaN (a value check that
    cannot raise under jit poisons the result instead of returning a plausible
    number); a case whose poisoned output is not a float (e.g. generated token
    ids set to -1) gives ``jit_check``, a callable that asserts on the jitted
    output instead;
  - ``"checkify"``: ``jax.experimental.checkify`` surfaces the error: running
    the jitted, checkified function and calling ``err.throw()`` raises
    ``error``;
  - ``None``: not applicable (the function is host-side: files, parsing, numpy
    data building); ``jit_reason`` says why.

Note: inside ``jax.jit`` every ``jnp`` operation is staged, also on closed-over
numpy constants, so a value check on a static keyword array (e.g. a mask passed
as a kwarg) sees a tracer and takes the ``"nan"`` path, not ``"same"``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pytest
from jax.experimental import checkify

JIT_MODES = ("same", "nan", "checkify", None)


@dataclasses.dataclass(frozen=True)
class Case:
  """One malformed call.

  Attributes:
    name: the public name under test, e.g. ``"metrics.accuracy"`` (used by
      :func:`assert_covers`; the part after the last dot must be in the
      package's ``__all__``).
    fn: the callable.
    args: positional arguments. Under jit, the array-like ones (numpy/JAX
      arrays) are passed as traced arguments; everything else is closed over as
      static.
    kwargs: keyword arguments, always closed over (static under jit).
    error: the exception type (or tuple of types) expected.
    match: a regex that must be found in the message: name the argument and the
      expected form.
    jit: what happens under ``jax.jit`` (see the module docstring).
    jit_reason: why ``jit`` is ``None``.
    id: a short test id; defaults to ``name``.
    jit_check: with ``jit="nan"``, an optional callable ``check(out)`` replacing
      the default "every float leaf is NaN" assertion.
  """

  name: str
  fn: Callable[..., Any]
  args: tuple = ()
  kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  error: type[BaseException] | tuple[type[BaseException], ...] = ValueError
  match: str = ""
  jit: str | None = "same"
  jit_reason: str = ""
  id: str = ""
  jit_check: Callable[[Any], None] | None = None

  def __post_init__(self):
    if self.jit not in JIT_MODES:
      raise ValueError(f"jit must be one of {JIT_MODES}, got {self.jit!r}")
    if self.jit is None and not self.jit_reason:
      raise ValueError(f"case {self.name}: jit=None needs a jit_reason")


def _is_array(x: Any) -> bool:
  return isinstance(x, (np.ndarray, jax.Array))


def _split(args: Sequence[Any]):
  """Indices of array args (traced under jit) and a function rebuilding the
  call."""
  traced = [i for i, a in enumerate(args) if _is_array(a)]

  def rebuild(dynamic):
    full = list(args)
    for i, v in zip(traced, dynamic):
      full[i] = v
    return full

  return traced, rebuild


def run_eager(case: Case) -> None:
  with pytest.raises(case.error, match=case.match):
    out = case.fn(*case.args, **case.kwargs)
    jax.block_until_ready(out)


def _float_leaves(out: Any) -> list[np.ndarray]:
  leaves = []
  for leaf in jax.tree_util.tree_leaves(out):
    arr = np.asarray(leaf)
    if np.issubdtype(arr.dtype, np.floating) or np.issubdtype(
      arr.dtype, np.complexfloating
    ):
      leaves.append(arr)
  return leaves


def run_jit(case: Case) -> None:
  if case.jit is None:
    pytest.skip(f"host-side function: {case.jit_reason}")
  traced, rebuild = _split(case.args)
  dynamic = [case.args[i] for i in traced]

  def call(*dyn):
    return case.fn(*rebuild(dyn), **case.kwargs)

  if case.jit == "same":
    with pytest.raises(case.error, match=case.match):
      jax.block_until_ready(jax.jit(call)(*dynamic))
  elif case.jit == "nan":
    out = jax.jit(call)(*dynamic)
    if case.jit_check is not None:
      case.jit_check(out)
      return
    leaves = _float_leaves(out)
    assert leaves, f"{case.name}: jit='nan' but the output has no float leaves"
    for arr in leaves:
      assert np.all(np.isnan(arr)), (
        f"{case.name} under jit returned {arr!r}; bad input must give NaN, "
        "not a number"
      )
  else:  # checkify
    checked = jax.jit(checkify.checkify(call, errors=checkify.user_checks))
    err, _ = checked(*dynamic)
    # checkify raises its own error type
    with pytest.raises(Exception, match=case.match):
      err.throw()


def parametrize(cases: Sequence[Case]):
  """``@pytest.mark.parametrize`` over (case, mode) for a battery table."""
  params = []
  for c in cases:
    cid = c.id or c.name
    params.append(pytest.param(c, "eager", id=f"{cid}-eager"))
    # host-side functions have no jit mode (jit_reason says why)
    if c.jit is not None:
      params.append(pytest.param(c, "jit", id=f"{cid}-jit"))
  return pytest.mark.parametrize(("case", "mode"), params)


def run_case(case: Case, mode: str) -> None:
  if mode == "eager":
    run_eager(case)
  else:
    run_jit(case)


def public_callables(module: Any) -> list[str]:
  """The callables in ``module.__all__`` (functions and classes)."""
  names = getattr(module, "__all__", None)
  if names is None:
    raise AssertionError(f"{module.__name__} has no __all__")
  return [n for n in names if callable(getattr(module, n))]


def assert_covers(
  module: Any, cases: Iterable[Case], exempt: Mapping[str, str]
) -> None:
  """Every public callable of ``module`` has a case or a stated exemption."""
  covered = {c.name.rsplit(".", 1)[-1] for c in cases}
  missing = [
    n for n in public_callables(module) if n not in covered and n not in exempt
  ]
  assert not missing, (
    f"public callables of {module.__name__} with no bad-input case and no "
    f"exemption: {missing}"
  )
  stale = [n for n in exempt if n not in getattr(module, "__all__", [])]
  assert not stale, (
    f"exemptions name things not in {module.__name__}.__all__: {stale}"
  )
  for n, why in exempt.items():
    assert why.strip(), f"exemption {n} needs a reason"


def message_names(fragment: str) -> str:
  """A regex fragment matching ``fragment`` literally (for names with
  brackets)."""
  return re.escape(fragment)
