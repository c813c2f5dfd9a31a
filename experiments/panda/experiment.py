"""The PANDA binary's experiment: the fixed sweep of ``train`` or, for a config with a search
space, the random search of ``search`` (chosen here so that ``train`` never imports ``search``).
"""

from __future__ import annotations

from typing import Any


def train_and_evaluate(config: Any, workdir: str) -> dict[str, Any]:
  """Runs the experiment ``config`` describes into ``workdir``.

  Args:
    config: an ``ml_collections.ConfigDict`` from ``experiments/panda/configs/``.
    workdir: the run's folder (results, cells, checkpoints).

  Returns:
    the run's metrics, as the chosen module's ``train_and_evaluate`` returns them.
  """
  if "space" in config:
    from experiments.panda import search

    return search.train_and_evaluate(config, workdir)
  from experiments.panda import train

  return train.train_and_evaluate(config, workdir)
