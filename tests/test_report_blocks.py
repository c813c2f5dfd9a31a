"""Generated README blocks: regenerated from results files, and stale ones are
caught."""

import json

import pytest

from experiments import report
from jaxpapers import core

README = """# alpha

Intro text with a number that is not generated: 12.

<!-- generated: claims alpha -->
<!-- /generated -->

The gain is <!--value alpha claims.gain.measured .2f-->?<!--/value--> (verdict
<!--value alpha claims.gain.verdict s-->?<!--/value-->).

<!-- generated: table alpha -->
<!-- /generated -->

<!-- generated: figures alpha -->
<!-- /generated -->

<!-- generated: changes alpha -->
<!-- /generated -->
"""


def _root(tmp_path):
  root = tmp_path / "repo"
  res = root / "experiments" / "alpha" / "results"
  res.mkdir(parents=True)
  (root / "experiments" / "alpha" / "main.py").write_text("")
  (res / "curve.png").write_bytes(b"png")
  claims = (
    dict(
      id="gain",
      statement="alpha gains",
      metric="g",
      noise="ci",
      held=0.1,
      fmt=(".2f"),
    ),
    dict(id="ub", statement="with oracle", metric="o", held=0.1, oracle=True),
  )
  rec = {
    "claims": core.judge_all(claims, {"g": 0.25, "ci": 0.05, "o": 0.9}),
    "table_markdown": "| m | v |\n|---|---|\n| g | 0.25 |",
    "plots": ["curve.png", "gone.png"],
    "command": (
      "python -m experiments.alpha.main "
      "--config=experiments/alpha/configs/default.py"
    ),
    "registration": {
      "status": "rejudged",
      "lock_commit": "1" * 40,
      "lock_date": "2026-12-04T10:00:00+00:00",
      "why": "the rules were committed after the run started",
    },
    "git": {"start_commit": None, "end_commit": "2" * 40, "dirty": None},
    "written_at": "2026-11-30T19:30:55+00:00",
    "verdict_changes": [
      {
        "claim": "gain",
        "from": "held",
        "to": "inconclusive",
        "at": "2026-12-04T11:00:00+00:00",
        "reason": "precondition failed: x",
      }
    ],
  }
  (res / "results.json").write_text(json.dumps(rec))
  (root / "README.md").write_text(
    "# top\n\n<!-- generated: verdicts -->\n<!-- /generated -->\n"
  )
  (root / "experiments" / "alpha" / "README.md").write_text(README)
  return root


def test_blocks_are_generated_and_then_up_to_date(tmp_path):
  root = _root(tmp_path)
  stale = report.run(check=True, root=root)
  # 4 blocks + 2 spans in alpha's README, 1 block in the top one
  assert len(stale) == 7
  report.run(check=False, root=root)
  assert report.run(check=True, root=root) == []
  text = (root / "experiments" / "alpha" / "README.md").read_text()
  assert "Intro text with a number that is not generated: 12." in text
  assert (
    "The gain is <!--value alpha claims.gain.measured .2f-->0.25<!--/value-->"
    in text
  )
  assert "<!--value alpha claims.gain.verdict s-->held<!--/value-->" in text
  assert "| alpha gains (`gain`) | - | 0.25 ± 0.05 | – | **held** |" in text
  assert "| rejudged | 1111111 (2026-12-04) | 2222222 (2026-11-30) |" in text
  assert "| g | 0.25 |" in text
  assert "![curve](results/curve.png)" in text and "gone" not in text
  assert (
    "| gain | held | inconclusive | 2026-12-04 | precondition failed: x |"
    in text
  )
  top = (root / "README.md").read_text()
  assert (
    "| [alpha](experiments/alpha/README.md) | alpha gains (`gain`) | 0.25 ± "
    "0.05 | – |"
  ) in top
  # the oracle claim is counted, never the headline
  assert "| 2 held | rejudged |" in top


def test_the_top_table_reads_the_deciding_run(tmp_path):
  root = _root(tmp_path)
  res = root / "experiments" / "alpha" / "results"
  rec = json.loads((res / "results.json").read_text())
  claims = (
    dict(
      id="gain",
      statement="alpha gains",
      metric="g",
      noise="ci",
      held=0.1,
      fmt=(".2f"),
    ),
  )
  # the re-run does not hold
  rec["claims"] = core.judge_all(claims, {"g": 0.05, "ci": 0.01})
  (res / "seeds8").mkdir()
  (res / "seeds8" / "results.json").write_text(json.dumps(rec))
  report.run(check=False, root=root)
  # no pointer: results.json
  assert "| 0.25 ± 0.05 |" in (root / "README.md").read_text()
  (res / "DECIDING").write_text("seeds8\n")
  assert (
    report.deciding_results(root, "alpha") == res / "seeds8" / "results.json"
  )
  report.run(check=False, root=root)
  top = (root / "README.md").read_text()
  assert "| 0.05 ± 0.01 |" in top and "| 1 not reproduced |" in top
  for bad in ("", "missing", "../../alpha"):
    (res / "DECIDING").write_text(bad)
    with pytest.raises(ValueError, match="DECIDING"):
      report.deciding_results(root, "alpha")


@pytest.mark.parametrize(
  "old,new",
  [
    (
      "| alpha gains (`gain`) | - | 0.25 ± 0.05 |",
      "| alpha gains (`gain`) | - | 0.26 ± 0.05 |",
    ),
    ("| g | 0.25 |", "| g | 0.27 |"),
    ("-->0.25<!--/value-->", "-->0.3<!--/value-->"),
  ],
)
def test_a_number_edited_by_hand_is_stale(tmp_path, old, new):
  root = _root(tmp_path)
  report.run(check=False, root=root)
  path = root / "experiments" / "alpha" / "README.md"
  assert old in path.read_text()
  path.write_text(path.read_text().replace(old, new))
  stale = report.run(check=True, root=root)
  assert [s.readme for s in stale] == [path]
  report.run(check=False, root=root)
  assert old in path.read_text() and new not in path.read_text()


def test_malformed_markers_are_errors(tmp_path):
  root = _root(tmp_path)
  path = root / "experiments" / "alpha" / "README.md"
  path.write_text("<!-- generated: claims alpha -->\nno end\n")
  with pytest.raises(report.ReportError, match="no <!-- /generated --> line"):
    report.run(check=True, root=root)
  path.write_text("<!-- generated: plot alpha -->\n<!-- /generated -->\n")
  with pytest.raises(
    report.ReportError, match=("unknown generated block 'plot'")
  ):
    report.run(check=True, root=root)
  path.write_text("<!-- generated: claims beta -->\n<!-- /generated -->\n")
  with pytest.raises(report.ReportError, match="does not exist"):
    report.run(check=True, root=root)
  path.write_text("<!--value alpha claims.nope.measured .2f-->1<!--/value-->\n")
  with pytest.raises(report.ReportError, match="nope"):
    report.run(check=True, root=root)


def test_the_repositorys_readmes_are_up_to_date():
  stale = report.run(check=True)
  assert stale == [], "run python -m experiments.report: " + ", ".join(
    s.spec for s in stale
  )


def test_shorten_cuts_at_a_word():
  assert report.shorten("a b c", 10) == "a b c"
  assert report.shorten("alpha beta, gamma delta", 14) == "alpha beta…"
  assert len(report.shorten("x " * 100, 90)) <= 90


def test_inline_formats():
  assert (
    report.format_inline(87, "d") == "87"
    and report.format_inline(87, ".1f") == "87.0"
  )
  assert report.format_inline(9.1e-13, ".1e") == "9.1e-13"
  assert (
    report.format_inline(None, ".2f") == "–"
    and report.format_inline("held", "s") == "held"
  )
  assert report.format_inline(True, "s") == "True"


@pytest.mark.slow
def test_declared_figures_render_from_every_committed_record():
  """Every committed record of an experiment that declares its report renders
  (no missing path, no figure its record does not list) without a run."""
  assert report.render_committed(check=True) == []
