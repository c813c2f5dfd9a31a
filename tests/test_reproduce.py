"""The reproduce harness: discovery, isolation of failures, REPORT.md."""

import json
import os
import pathlib
import sys
import textwrap

import pytest

from experiments import reproduce

_MAIN = textwrap.dedent('''
    import json, pathlib, sys
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
    if "{fail}" == "yes":
        raise RuntimeError("deliberate failure in {name}")
    wd = pathlib.Path(args["workdir"]); wd.mkdir(parents=True, exist_ok=True)
    (wd / "curve.png").write_bytes(b"png")
    (wd / "results.json").write_text(json.dumps({{
        "metrics": {{"acc": 0.9}}, "table_markdown": "| m | v |\\n|---|---|\\n| acc | 0.9 |",
        "wall_time_s": 0.1, "plots": ["curve.png"], "notes": "config " + pathlib.Path(args["config"]).name}}))
''')


def _make_package(root: pathlib.Path) -> pathlib.Path:
  pkg = root / "fakeexp"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("")
  for name, fail in (("alpha", "no"), ("beta", "yes")):
    d = pkg / name
    (d / "configs").mkdir(parents=True)
    (d / "__init__.py").write_text("")
    (d / "configs" / "default.py").write_text("")
    (d / "configs" / "smoke.py").write_text("")
    (d / "main.py").write_text(_MAIN.format(name=name, fail=fail))
  (pkg / "not_a_paper").mkdir()
  return pkg


def test_report_with_one_failing_paper(tmp_path):
  pkg = _make_package(tmp_path)
  env = dict(os.environ, PYTHONPATH=str(tmp_path))
  report = reproduce.reproduce(quick=True, workdir=tmp_path / "out", package="fakeexp",
                               package_dir=pkg, env=env, timeout_s=120)
  text = report.read_text()
  assert reproduce.discover(pkg) == ["alpha", "beta"]
  assert "| [alpha](#alpha) | ok |" in text
  assert "| [beta](#beta) | failed |" in text
  assert "deliberate failure in beta" in text  # the error is shown, not swallowed
  assert "| acc | 0.9 |" in text and "config smoke.py" in text
  assert "![alpha: curve.png](alpha/curve.png)" in text
  assert "--config=fakeexp/alpha/configs/smoke.py" in text


def test_only_selects_and_rejects_unknown(tmp_path):
  pkg = _make_package(tmp_path)
  env = dict(os.environ, PYTHONPATH=str(tmp_path))
  report = reproduce.reproduce(quick=False, only=["alpha"], workdir=tmp_path / "o",
                               package="fakeexp", package_dir=pkg, env=env)
  text = report.read_text()
  assert "alpha" in text and "beta" not in text and "config default.py" in text
  with pytest.raises(ValueError, match=r"unknown paper\(s\) \['gamma'\]"):
    reproduce.reproduce(quick=True, only=["gamma"], workdir=tmp_path / "o2",
                        package="fakeexp", package_dir=pkg, env=env)


def test_report_without_papers(tmp_path):
  empty = tmp_path / "emptyexp"
  empty.mkdir()
  report = reproduce.reproduce(quick=True, workdir=tmp_path / "e", package="emptyexp",
                               package_dir=empty)
  assert "No paper experiments are implemented yet" in report.read_text()
