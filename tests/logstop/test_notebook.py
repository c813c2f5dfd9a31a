"""Executes colab/logstop.ipynb on its smoke setting."""

import pytest

from tests.notebook_util import run_notebook


@pytest.mark.notebook
def test_notebook_runs():
  run_notebook("colab/logstop.ipynb", timeout=300)
