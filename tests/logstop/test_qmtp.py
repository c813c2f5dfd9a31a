"""The QMTP-video loader on files written here in the authors' benchmark
format."""

import csv
import json

import numpy as np
import pytest

from jaxpapers import logstop as L
from jaxpapers.logstop import qmtp
from tests.logstop import _oracles

COLUMNS = (
  "sample_id,video_id,source_video_id,start_frame,end_frame,query,satisfied,"
  "temporal_property_template,temporal_property_category,video_length"
).split(",")


def _write(tmp_path, rows, traces, fmt="json"):
  with (tmp_path / "qmtp_video.csv").open("w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=COLUMNS)
    w.writeheader()
    for r in rows:
      w.writerow({c: r.get(c, "") for c in COLUMNS})
  (tmp_path / "traces").mkdir(exist_ok=True)
  for vid, tr in traces.items():
    if fmt == "json":
      (tmp_path / "traces" / f"{vid}.json").write_text(json.dumps(tr))
    else:
      np.savez(
        tmp_path / "traces" / f"{vid}.npz",
        **{k: np.asarray(v) for k, v in tr.items()},
      )


def _row(i, vid, start, end, query, sat, template):
  return dict(
    sample_id=f"s{i}",
    video_id=vid,
    start_frame=start,
    end_frame=end,
    query=query,
    satisfied="true" if sat else "false",
    temporal_property_template=template,
    temporal_property_category="cat",
  )


def test_parse_query_in_the_authors_syntax():
  assert qmtp.parse_query("(car) Until (person)") == L.parse('"car" U "person"')
  assert qmtp.parse_query("Eventually (Always (bus))") == L.parse('F G "bus"')
  got = qmtp.parse_query("Always ((Traffic Light) and (not (Next (car))))")
  # a two-word class, lower-cased
  assert got == L.parse('G("traffic light" & !X "car")')
  assert set(L.atoms(got)) == {"traffic light", "car"}
  with pytest.raises(ValueError, match="syntax"):
    qmtp.parse_query("(car) Until")


@pytest.mark.parametrize("fmt", ["json", "npz"])
def test_load_and_match_equal_an_independent_float64_scorer(tmp_path, fmt):
  rng = np.random.default_rng(0)
  queries = [
    ("(car) Until (person)", "([prop1]) Until ([prop2])"),
    ("Eventually (car)", "F"),
  ]
  traces, rows = {}, []
  for v in range(4):
    T = 7  # one clip length: one compiled program per query
    traces[f"clip{v}"] = {
      "car": rng.random(T).tolist(),
      "Person": rng.random(T).tolist(),
    }
    for q, (query, tmpl) in enumerate(queries):
      rows.append(
        _row(len(rows), f"clip{v}", 3, 3 + T, query, (v + q) % 2 == 0, tmpl)
      )
  _write(tmp_path, rows, traces, fmt)
  samples = qmtp.load_qmtp(tmp_path)
  assert [s.sample_id for s in samples] == [r["sample_id"] for r in rows]
  for radius in (0, 1):
    res = qmtp.evaluate_qmtp(samples, smoothing_radius=radius, baselines=False)
    pred = res["decisions"]["LogSTOP w=1"]
    for r, s in zip(rows, samples):
      tr = traces[r["video_id"]]
      T = len(tr["car"])
      sm = {}
      for name, vals in (("car", tr["car"]), ("person", tr["Person"])):
        vals = np.asarray(vals)
        sm[name] = [  # centred window mean, truncated at the ends
          vals[max(t - radius, 0) : min(t + radius, T - 1) + 1].mean()
          for t in range(T)
        ]
      f = s.formula
      score = _oracles.logstop_rec(f, sm, 0, T - 1, 1)
      thr = _oracles.logstop_rec(f, {n: [0.5] * T for n in sm}, 0, T - 1, 1)
      assert pred[r["sample_id"]] == (score > thr), (r, score, thr)
    labels = np.array([r["satisfied"] == "true" for r in rows])
    p = np.array([pred[r["sample_id"]] for r in rows])
    expect = 0.5 * ((p[labels]).mean() + (~p[~labels]).mean())
    assert res["overall"]["LogSTOP w=1"] == pytest.approx(expect)
    assert res["num_samples"] == 8 and res["num_satisfied"] == labels.sum()
    assert set(res["per_template"]) == {t for _, t in queries}


def test_bad_benchmark_files_raise_naming_the_sample(tmp_path):
  _write(
    tmp_path,
    [_row(0, "c", 0, 5, "(car) Until (bus)", True, "U")],
    {"c": {"car": [0.1] * 5}},
  )
  with pytest.raises(ValueError, match=r"s0.*'bus'"):
    qmtp.load_qmtp(tmp_path)
  _write(
    tmp_path,
    [_row(0, "c", 0, 6, "Eventually (car)", True, "F")],
    {"c": {"car": [0.1] * 5}},
  )
  with pytest.raises(ValueError, match="6 frames"):
    qmtp.load_qmtp(tmp_path)
  _write(
    tmp_path,
    [_row(0, "c", 0, 5, "Eventually (car)", True, "F")],
    {"c": {"car": [1.5] * 5}},
  )
  with pytest.raises(ValueError, match=r"\[0, 1\]"):
    qmtp.load_qmtp(tmp_path)
  _write(tmp_path, [_row(0, "d", 0, 5, "Eventually (car)", True, "F")], {})
  with pytest.raises(FileNotFoundError, match="d.json"):
    qmtp.load_qmtp(tmp_path)


def test_experiment_scores_the_benchmark_from_qmtp_dir(tmp_path):
  from experiments.logstop import train
  from experiments.logstop.configs import smoke
  from jaxpapers import core

  rng = np.random.default_rng(1)
  traces = {
    f"c{v}": {"car": rng.random(7).tolist(), "person": rng.random(7).tolist()}
    for v in range(3)
  }
  rows = [
    _row(v, f"c{v}", 0, 7, "(car) Until (person)", v != 1, "U")
    for v in range(3)
  ]
  _write(tmp_path, rows, traces)
  cfg = smoke.get_config()
  # LogSTOP only: the programs compiled by the test above (the baselines' wiring
  # is the same loop; their semantics are tested in test_baselines.py).
  cfg.qmtp_dir, cfg.windows, cfg.qmtp_baselines = str(tmp_path), (1,), False
  out = train.train_and_evaluate(cfg, str(tmp_path / "run"))
  saved = core.read_results(tmp_path / "run")["metrics"]
  assert saved["num_samples"] == 3 and set(out["overall"]) == {"LogSTOP w=1"}
  samples = qmtp.load_qmtp(tmp_path)
  pred = []
  for r, s in zip(rows, samples):
    tr = {n: v for n, v in traces[r["video_id"]].items()}
    score = _oracles.logstop_rec(s.formula, tr, 0, 6, 1)
    pred.append(
      score
      > _oracles.logstop_rec(s.formula, {n: [0.5] * 7 for n in tr}, 0, 6, 1)
    )
  pred, labels = np.array(pred), np.array([True, False, True])
  expect = 0.5 * (pred[labels].mean() + (~pred[~labels]).mean())
  assert saved["overall"]["LogSTOP w=1"] == pytest.approx(expect)


def test_video_ids_and_the_table_stay_inside_data_dir(tmp_path):
  """A video_id such as '../../x' (read from the table) cannot pick files
  outside data_dir."""
  root, outside = tmp_path / "root", tmp_path / "outside"
  root.mkdir()
  outside.mkdir()
  (outside / "x.json").write_text(json.dumps({"car": [0.1] * 5}))
  _write(
    root, [_row(0, "../../outside/x", 0, 5, "Eventually (car)", True, "F")], {}
  )
  with pytest.raises(
    ValueError, match=(r"video_id .* must be a relative path inside")
  ):
    qmtp.load_qmtp(root)
  _write(root, [_row(0, "c", 0, 5, "Eventually (car)", True, "F")], {})
  (root / "traces" / "c.json").symlink_to(outside / "x.json")
  with pytest.raises(
    ValueError, match=(r"video_id 'traces/c.json' leads outside")
  ):
    qmtp.load_qmtp(root)
  with pytest.raises(
    ValueError, match=(r"config '../outside/t.csv' must be a relative path")
  ):
    qmtp.load_qmtp(root, config="../outside/t.csv")


def test_bad_arguments_are_named(tmp_path):
  with pytest.raises(
    FileNotFoundError, match=("data_dir must be an existing directory")
  ):
    qmtp.load_qmtp(tmp_path / "missing")
  with pytest.raises(TypeError, match="data_dir must be a path"):
    qmtp.load_qmtp(3)
  with pytest.raises(TypeError, match="query must be a string"):
    qmtp.parse_query(None)
  rows = [_row(i, "c", 0, 5, "Eventually (car)", True, "F") for i in (0, 0)]
  _write(tmp_path, rows, {"c": {"car": [0.1] * 5}})
  with pytest.raises(ValueError, match="sample_id 's0' occurs more than once"):
    qmtp.load_qmtp(tmp_path)
  _write(tmp_path, rows[:1], {"c": {"car": [0.1] * 5}})
  samples = qmtp.load_qmtp(tmp_path)
  for kw, match in [
    (dict(smoothing_radius=-1), "smoothing_radius must be >= 0"),
    (dict(windows=(0,)), "windows must be >= 1"),
    (dict(windows=()), "windows must name at least one window"),
    (dict(local_threshold=1.5), "local_threshold must be <= 1"),
  ]:
    with pytest.raises(ValueError, match=match):
      qmtp.evaluate_qmtp(samples, **kw)
  with pytest.raises(ValueError, match="samples must hold at least one"):
    qmtp.evaluate_qmtp([])
  with pytest.raises(ValueError, match="sample_id 's0' occurs more than once"):
    qmtp.evaluate_qmtp(samples * 2)
