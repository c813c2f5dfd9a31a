"""Executes the Colab notebooks on their smoke setting.

The notebook reads ``JAXPAPERS_SMOKE=1`` to choose a seconds-long setting; its
install cell runs only under Colab. The kernel is the current interpreter, so
the notebook sees exactly the installed project. It inherits the test process's
environment, hence the persistent compilation cache set up in ``conftest.py``:
a rerun reuses the notebook's compiled programs. Each cell gets ``timeout``
seconds (300 by default; the smoke settings need far less).
"""

from __future__ import annotations

import os
import pathlib
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_notebook(
  path: str | os.PathLike[str], timeout: int = 300
) -> nbformat.NotebookNode:
  """Executes every cell of ``path`` (relative to the repo root or absolute).

  Returns the executed notebook; a failing cell raises ``CellExecutionError``
  with the cell's traceback.
  """
  path = pathlib.Path(path)
  if not path.is_absolute():
    path = ROOT / path
  nb = nbformat.read(path, as_version=4)
  env_backup = dict(os.environ)
  os.environ["JAXPAPERS_SMOKE"] = "1"
  os.environ["JAXPAPERS_NO_PROGRESS"] = "1"
  os.environ["MPLBACKEND"] = "Agg"
  # A single device in the kernel, whatever the test process uses; other XLA
  # flags carry over.
  xla_flags = [
    f
    for f in os.environ.get("XLA_FLAGS", "").split()
    if not f.startswith("--xla_force_host_platform_device_count")
  ]
  os.environ["XLA_FLAGS"] = " ".join(xla_flags)
  try:
    client = NotebookClient(
      nb,
      timeout=timeout,
      kernel_name="python3",
      resources={"metadata": {"path": str(ROOT)}},
    )
    # Make sure the kernel runs this interpreter (the project's environment).
    client.kernel_manager_class = _manager_for(sys.executable)
    client.execute()
  finally:
    os.environ.clear()
    os.environ.update(env_backup)
  return nb


def _manager_for(executable: str):
  from jupyter_client.manager import KernelManager

  class _Manager(KernelManager):
    def format_kernel_cmd(self, extra_arguments=None):
      cmd = super().format_kernel_cmd(extra_arguments)
      if cmd and "python" in pathlib.Path(cmd[0]).name:
        cmd[0] = executable
      return cmd

  return _Manager
