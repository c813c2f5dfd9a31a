"""Progress bars for long loops (tqdm, with rate and ETA)."""

from __future__ import annotations

import os
import sys
from typing import Iterable, TypeVar

import tqdm.auto as _tqdm

T = TypeVar("T")


def progress(
    iterable: Iterable[T] | None = None,
    *,
    total: int | None = None,
    desc: str | None = None,
    initial: int = 0,
    disable: bool | None = None,
) -> "_tqdm.tqdm[T]":
  """A tqdm progress bar showing count, rate and ETA.

  Set ``JAXPAPERS_NO_PROGRESS=1`` to silence every bar (e.g. in CI logs).
  """
  if disable is None:
    disable = os.environ.get("JAXPAPERS_NO_PROGRESS", "") not in ("", "0")
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
