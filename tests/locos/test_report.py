"""The experiment's declared report: committed tables re-render cell for cell,
and the decisive configs (size, size_gemma3, size_needle) render their tables
and figures from records of the shape their runs write."""

import dataclasses
import json
import pathlib

import numpy as np
import pytest

from experiments import report as report_cli
from experiments.locos import evaluate
from experiments.locos.configs import default, size, size_gemma3, size_needle
from jaxpapers import core, locos
from jaxpapers.core import reporting

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments/locos/results"


def _committed():
  return sorted(
    p.relative_to(RESULTS).parent.as_posix()
    for p in RESULTS.glob("**/results.json")
    if "cells" not in p.relative_to(RESULTS).parts
  )


@pytest.mark.parametrize("sub", _committed())
def test_committed_tables_render_from_the_declared_report(sub):
  path = RESULTS / sub / "results.json"
  record = json.loads(path.read_text())
  spec = report_cli.declared_report(record, path, ROOT)
  assert spec is not None, f"{sub}: its config declares no report"
  tables, _ = reporting.render(spec, record)
  assert tables == record["table_markdown"].rstrip()


def test_real_table_cells_read_mean_and_interval_and_name_cells_not_run():
  cv = {
    "ks": [1, 5],
    "num_probes": 7,
    "baseline": {"mean": 0.9, "lo": 0.8, "hi": 1.0},
    "locos": {"mean": [0.5, 0.0], "lo": [0.4, 0.0], "hi": [0.8, 0.1]},
    "random": {"mean": [0.85, None], "lo": [0.7, None], "hi": [0.95, None]},
  }
  record = {
    "config": {"real": {"detectors": ["locos"]}},
    "metrics": {"gemma3/curves": {"filtered": cv, "paper": None}},
  }
  md, _ = reporting.render(
    dataclasses.replace(default.REPORT, figures=()), record
  )
  assert md.splitlines() == [
    (
      "| model | protocol | probes | k | no ablation | locos [95% CI] | "
      "random [95% CI] |"
    ),
    "|---|---|---|---|---|---|---|",
    (
      "| gemma3 | filtered | 7 | 1 | 0.90 | 0.50 [0.40, 0.80] | 0.85 [0.70, "
      "0.95] |"
    ),
    "| gemma3 | filtered | 7 | 5 | 0.90 | 0.00 [0.00, 0.10] | not run |",
  ]
  view = evaluate.report_view(record)
  assert (
    list(view["real"]) == ["gemma3"]
    and "random" not in view["real"]["gemma3"]["rows"][1]
  )


def _size_metrics(track, n=10):
  """A size run's metrics (configs/size.py: LOCOS, contrastive and random heads
  at k in {1, 5, 20, 50}, both protocols) from constant per-probe scores."""
  ks = [1, 5, 20, 50]
  vals = {"locos": [0.5, 0.0, 0.0, 0.0], "contrastive": [0.9, 0.4, 0.0, 0.0]}
  vals["random"] = [1.0, 0.9, 0.8, 0.6]
  res = {("baseline", 0): np.ones(n)}
  res.update(
    {
      (d, k): np.full(n, v[i])
      for d, v in vals.items()
      for i, k in enumerate(ks)
    }
  )
  kw = dict(claim_ks=ks, claim_baselines=("contrastive",))
  cv = locos.collapse_curves(
    res, ("locos", "contrastive"), ks, np.arange(n), 50, 0, **kw
  )
  par = {"num_probes": 3, "baseline": 1.0, "ks": ks, "locos": [1.0] * 4}
  par["per_probe"] = {
    "baseline": [1.0] * 3,
    "locos": {str(k): [1.0] * 3 for k in ks},
  }
  metrics = {
    f"{track}/curves": {"filtered": cv, "paper": cv},
    f"{track}/ablated_probes": n,
    f"{track}/num_paper_probes": n,
    f"{track}/num_heads": 270,
    f"{track}/parametric": par,
  }
  metrics["derived"] = evaluate.derived_metrics(metrics)
  return metrics


@pytest.mark.parametrize(
  "module, track",
  [(size, "smollm2"), (size_gemma3, "gemma3")],
  ids=["size", "size_gemma3"],
)
def test_size_configs_render_their_table_and_figure(module, track, tmp_path):
  path = core.write_results(
    tmp_path,
    metrics=_size_metrics(track),
    config=module.get_config(),
    issue_verdicts=False,
  )
  record = json.loads(path.read_text())
  assert record["plots"] == [f"{track}_ablation.png"]
  lines = record["table_markdown"].splitlines()
  assert lines[0] == (
    "| model | protocol | probes | k | no ablation | locos [95% CI] | "
    "contrastive [95% CI] | random [95% CI] |"
  )
  assert lines[2] == (
    f"| {track} | filtered | 10 | 1 | 1.00 | 0.50 [0.50, 0.50] | 0.90 [0.90, "
    "0.90] | 1.00 [1.00, 1.00] |"
  )
  assert [r.split(" | ")[1:4:2] for r in lines[2:]] == [
    [p, str(k)] for p in ("filtered", "paper") for k in (1, 5, 20, 50)
  ]
  # experiments.report --render reads the report of the config the record's
  # command names
  record["command"] = (
    "python -m experiments.locos.main "
    f"--config=experiments/locos/configs/{module.__name__.rsplit('.', 1)[1]}.py"
  )
  spec = report_cli.declared_report(
    record, RESULTS / "size" / "results.json", ROOT
  )
  assert reporting.render(spec, record)[0] == record["table_markdown"]


def test_size_needle_config_renders_its_table(tmp_path):
  c = size_needle.get_config()
  rec = {
    "prompt_tokens": [4090, 4093, 4095],
    "accepted_detection_trials": "9/24",
    "rougeL": {
      "baseline@0": 0.9,
      "locos@12": 0.2,
      "contrastive@12": 0.5,
      "random@12": 0.85,
    },
    "ablated_probes": 3,
    "accepted_detection": 9,
  }
  path = core.write_results(
    tmp_path, metrics={"needle/T=4096": rec}, config=c, issue_verdicts=False
  )
  assert json.loads(path.read_text())["table_markdown"].splitlines() == [
    (
      "| context | eval probes | accepted detection | baseline k=0 | locos "
      "k=12 | contrastive k=12 | random k=12 |"
    ),
    "|---|---|---|---|---|---|---|",
    "| 4096 | 3 | 9/24 | 0.90 | 0.20 | 0.50 | 0.85 |",
  ]
  del rec["rougeL"]["random@12"]  # no probe answered: the ablations did not run
  md, _ = reporting.render(
    c.report,
    {
      "config": {"needle": c.needle.to_dict()},
      "metrics": {"needle/T=4096": rec},
    },
  )
  assert md.splitlines()[2].endswith("| 0.50 | not run |")
