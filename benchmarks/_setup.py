"""Shared set-up of the benchmarks: experiment settings read from their config
files.

A benchmark measures at an experiment's setting (its buckets, sizes, data
generator arguments), so it reads the experiment's ``configs/<name>.py`` the way
``--config=<path>`` does: as a file with ``get_config()``, not as an imported
module of the experiment code.
"""

from __future__ import annotations

import importlib.util
import pathlib

import ml_collections

ROOT = pathlib.Path(__file__).resolve().parents[1]


def experiment_config(
  paper: str, name: str = "default"
) -> ml_collections.ConfigDict:
  """``get_config()`` of ``experiments/<paper>/configs/<name>.py``, read from
  its file.

  Args:
    paper: the experiment's folder name, e.g. ``"bayes_memory"``.
    name: the config file's stem, e.g. ``"default"``, ``"smoke"``.

  Returns:
    A fresh, mutable ``ConfigDict`` (each call builds a new one).

  Raises:
    FileNotFoundError: there is no such config file.
  """
  path = ROOT / "experiments" / paper / "configs" / f"{name}.py"
  if not path.is_file():
    raise FileNotFoundError(
      f"no config file {path.relative_to(ROOT)} (paper={paper!r}, "
      f"name={name!r})"
    )
  spec = importlib.util.spec_from_file_location(
    f"benchmark_config_{paper}_{name}", path
  )
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config()


def bayes_memory_lm(c: ml_collections.ConfigDict):
  """``(LMConfig, params, tokenizer)`` of a bayes_memory config's ``model``
  (:func:`jaxpapers.bayes_memory.load_model`)."""
  from jaxpapers import bayes_memory as bm

  return bm.load_model(c.model, seed=c.seed)


def bayes_memory_dialogues(
  c: ml_collections.ConfigDict, seed: int, n_dialogues: int
):
  """Data seed ``seed``'s first ``n_dialogues`` generated dialogues of a
  bayes_memory config."""
  from jaxpapers import bayes_memory as bm

  return bm.make_preference_dialogues(
    int(seed),
    n_dialogues=n_dialogues,
    n_turns=c.n_turns,
    n_queries=c.n_queries,
    change_rate=c.change_rate,
    distractor_rate=c.distractor_rate,
    density=c.density,
    memory_free_rate=c.memory_free_rate,
  )


def panda_dataset(c: ml_collections.ConfigDict, name: str):
  """Dataset ``name`` as a PANDA config loads it
  (:func:`jaxpapers.panda.load_dataset`).

  A generated set (``'synthetic-...'``) needs no data folder; a real one is read
  from ``c.data_dir`` (or ``$JAXPAPERS_DATA_DIR``, or ``../shared/data``), which
  must exist.
  """
  from jaxpapers import core, panda

  root = None
  if not name.startswith("synthetic-"):
    root = core.resolve_data_dir(
      c.data_dir or None, subdir="hypergraph", required=True
    )
  return panda.load_dataset(
    name,
    root,
    num_splits=c.num_splits,
    seed=c.seed,
    max_features=c.max_features,
  )
