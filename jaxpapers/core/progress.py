"""Progress bars for long loops (tqdm, with rate and ETA), drawn by process 0
only."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

import tqdm.auto as _tqdm

from jaxpapers.core import distributed

if TYPE_CHECKING:
  # the base of every class tqdm.auto may pick
  from tqdm.std import tqdm as std_tqdm

T = TypeVar("T")


@overload
def progress(
  iterable: Iterable[T],
  *,
  total: int | None = None,
  desc: str | None = None,
  initial: int = 0,
  disable: bool | None = None,
) -> std_tqdm[T]: ...


@overload
def progress(
  iterable: None = None,
  *,
  total: int | None = None,
  desc: str | None = None,
  initial: int = 0,
  disable: bool | None = None,
) -> std_tqdm[NoReturn]: ...


def progress(
  iterable: Iterable[Any] | None = None,
  *,
  total: int | None = None,
  desc: str | None = None,
  initial: int = 0,
  disable: bool | None = None,
) -> std_tqdm[Any]:
  """A tqdm progress bar showing count, rate and ETA.

  Only process 0 draws bars: on the other processes of a multi-host job the bar
  is always disabled (it still iterates and counts). Set
  ``JAXPAPERS_NO_PROGRESS=1`` to silence every bar (e.g. in CI logs);
  ``disable`` overrides that variable.

  Args:
    iterable: what to iterate over, or None for a bar updated by hand.
    total: the expected number of iterations.
    desc: the bar's label.
    initial: the count to start from (e.g. a resumed step).
    disable: hide the bar; None reads ``JAXPAPERS_NO_PROGRESS``.

  Returns:
    the ``tqdm`` bar (iterate over it, or call ``update``).
  """
  if disable is None:
    disable = os.environ.get("JAXPAPERS_NO_PROGRESS", "") not in ("", "0")
  disable = bool(disable) or not distributed.is_main_process()
  return _tqdm.tqdm(
    iterable,
    total=total,
    desc=desc,
    initial=initial,
    disable=disable,
    dynamic_ncols=True,
    mininterval=0.5,
    file=sys.stderr,
  )
