"""Damaging files the way storage does: flipped bits, and the kind of flip that
goes unseen.

A flipped bit in a checkpoint is only a test of the verification if, without
verification, it would come back as other values: many flips land where orbax or
tensorstore notice them anyway (a checksummed b-tree node, metadata) or change
nothing (padding). :func:`flip_silently` keeps flipping bits of a checkpoint's
data files, undoing each one, until it finds one that plain orbax restores
without complaint as different values, and leaves that one in place.
"""

from __future__ import annotations

import pathlib
import random
import shutil

import jax
import numpy as np


def flip_bit(path: pathlib.Path, offset: int, bit: int) -> None:
  """Flips bit ``bit`` (0-7) of byte ``offset`` of the file ``path`` in
  place."""
  raw = bytearray(path.read_bytes())
  raw[offset] ^= 1 << bit
  path.write_bytes(bytes(raw))


def restore_plain(
  step_dir: pathlib.Path, scratch: pathlib.Path
) -> dict[str, np.ndarray] | None:
  """The arrays of an orbax checkpoint step as orbax alone reads them; None if
  it refuses.

  ``step_dir`` is copied to ``scratch`` first, so no cache can answer from an
  earlier read.
  """
  import orbax.checkpoint as ocp

  if scratch.exists():
    shutil.rmtree(scratch)
  shutil.copytree(step_dir, scratch)
  try:
    with ocp.StandardCheckpointer() as ckptr:
      tree = ckptr.restore(scratch / "default")
  except Exception:  # orbax and tensorstore raise many types
    return None
  return {
    jax.tree_util.keystr(p): np.asarray(v)
    for p, v in jax.tree_util.tree_leaves_with_path(tree)
  }


def flip_silently(
  step_dir: pathlib.Path,
  scratch: pathlib.Path,
  rng: random.Random,
  tries: int = 500,
) -> str:
  """Flips one bit of ``step_dir``'s data files that plain orbax restores as
  other values.

  Needs arrays of a few KiB at least (orbax inlines small ones into checksummed
  nodes).

  Returns:
    Which bit was flipped, for messages.
  """
  clean = restore_plain(step_dir, scratch)
  assert clean is not None, f"{step_dir} does not restore before any flip"
  data = sorted(
    p for p in step_dir.rglob("*") if p.is_file() and p.parent.name == "d"
  )
  for _ in range(tries):
    f = rng.choice(data)
    offset, bit = rng.randrange(f.stat().st_size), rng.randrange(8)
    flip_bit(f, offset, bit)
    flipped = restore_plain(step_dir, scratch)
    if flipped is not None and any(
      not np.array_equal(flipped[k], clean[k], equal_nan=True) for k in clean
    ):
      return f"bit {bit} of byte {offset} of {f.relative_to(step_dir)}"
    flip_bit(f, offset, bit)  # undo: orbax refused it, or nothing changed
  raise AssertionError(
    f"no bit flip in {tries} tries restored silently from {step_dir}"
  )
