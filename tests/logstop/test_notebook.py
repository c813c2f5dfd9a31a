"""Executes colab/logstop.ipynb on its smoke setting."""

from tests.notebook_util import run_notebook


def test_notebook_runs():
  run_notebook("colab/logstop.ipynb", timeout=300)
