"""PANDA performance: full-batch epoch time and compile time, vanilla vs PANDA, per dataset.

  XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    python -m benchmarks.panda_perf --cpu-time --repeats 3   # email-EU, chameleon-directed, Pubmed
  python -m benchmarks.panda_perf --quick             # email-Enron, HGNN and GeDi (about a minute)
  python -m benchmarks.panda_perf --smoke             # tiny synthetic only (seconds)

The headline is PANDA's epoch over its vanilla backbone's, per dataset and backbone, with the
target <= 3x: both programs are compiled first, then timed in ``--repeats`` alternating blocks
of ``--epochs`` epochs (the first epochs of each block are warm-up and excluded); each arm's
time is the minimum over blocks of the block medians, so that both arms are judged in their
least disturbed block. The result goes to ``benchmarks/results/panda_perf.json`` (``--out``):
``{"benchmark", "command", "quick", "host", "rows", "summary"}`` with one summary entry per
(dataset, backbone) ratio.

For each (dataset, backbone, arm) one jitted train step (forward + backward + Adam, one split,
dropout on) is compiled once; the epoch time is the median over epochs 10..N. A trace counter
asserts that no epoch recompiles. Times on a shared machine are noisy; compare ratios measured in
the same run. ``--compare-opt`` also times XLA's default optimisation level against the
fast-compile options used by the experiment. ``--cpu-time`` times each epoch with the process's
CPU clock instead of the wall clock: with XLA's CPU runtime held to one thread
(``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"``) this is
the work one epoch needs, and it stays meaningful on a host shared with other jobs, where the wall
clock also counts the time the process waits for a core.

``--host-memory`` chooses glibc's allocator behaviour: ``system`` (its defaults: XLA:CPU's
per-step temporary buffer is mmapped afresh and page-faulted in every epoch), ``reuse``
(:func:`jaxpapers.core.reuse_host_memory`, what the experiment binaries apply) or ``both``: each
dataset runs in two child processes, one per setting, in alternating order, and the table puts
the two side by side. Each row also records the minor page faults per epoch.

Each row also records XLA's static cost analysis of the compiled step (``bytes_accessed``: the
bytes every top-level operation of the program reads and writes, ``flops``). It does not depend on
the host's load, and on a CPU the epoch time follows it: a PANDA step on the larger graphs is
memory-bound. ``--traffic`` compiles (does not time) the vanilla step, PANDA and each of
``panda.ABLATIONS`` per (dataset, backbone) and prints the megabytes per step, so the difference
between two arms is the traffic of the part one of them removes (the auxiliary path, the
attention and its mixture gate).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's package, not another installed copy
  sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxpapers import core, panda  # noqa: E402
from jaxpapers import hypergraph as hg  # noqa: E402
from jaxpapers.core import benchmark as bench  # noqa: E402

NAME = "panda_perf"


def _cost(compiled) -> dict:
  """``bytes_accessed`` and ``flops`` of XLA's cost analysis of one compiled program."""
  ca = compiled.cost_analysis()
  ca = (ca[0] if ca else {}) if isinstance(ca, (list, tuple)) else (ca or {})
  return dict(bytes_accessed=ca.get("bytes accessed"), flops=ca.get("flops"))


def _program(data, backbone, cfg, *, hidden, fast_compile):
  """``(jitted step, its first arguments, trace counter)`` of one full-batch train step."""
  d = hg.backbone_input(backbone, data)
  kw = dict(num_steps=2) if backbone == "phenomnn" else {}
  mf = lambda rngs: panda.make_model(
    backbone,
    cfg,
    in_features=int(d.x.shape[1]),
    num_classes=d.num_classes,
    hidden=hidden,
    rngs=rngs,
    **kw,
  )
  graphdef, params, rest, opt_state = panda.init(mf, jax.random.key(0))
  mask = jnp.asarray(d.train_mask[0], jnp.float32)
  traces = [0]

  def step(params, opt_state, data, key):  # data is an argument: no constant folding of it
    traces[0] += 1
    p, o, loss = panda.train_step(graphdef, params, rest, opt_state, data, mask, key, 5e-3, 5e-4)
    return p, o, loss

  opts = panda.FAST_COMPILE if fast_compile else None
  return jax.jit(step, compiler_options=opts), (params, opt_state, d), traces


def traffic_one(data, backbone, arm, *, hidden, heads, fast_compile):
  """XLA's cost analysis of one arm's step: ``'vanilla'``, ``'panda'`` or an ablation."""
  cfg = None if arm == "vanilla" else panda.PandaConfig(heads=heads, **panda.ABLATIONS[arm])
  jstep, args, _ = _program(data, backbone, cfg, hidden=hidden, fast_compile=fast_compile)
  d = args[2]
  compiled = jstep.lower(*args, jax.random.key(1)).compile()
  return dict(dataset=d.name, backbone=backbone, arm=arm, nnz=d.incidence.nnz, **_cost(compiled))


def bench_pair(data, backbone, *, epochs, repeats, hidden, heads, fast_compile, cpu_time=False):
  """Vanilla and PANDA of one (dataset, backbone), compiled once, timed in alternating blocks.

  Returns two rows (vanilla, PANDA) with the block medians (``block_ms``), their minimum
  (``epoch_ms``), compile time, XLA's cost analysis and the minor page faults per epoch.
  """
  progs = {}
  for use in (False, True):
    cfg = panda.PandaConfig(heads=heads) if use else None
    jstep, (params, opt_state, d), traces = _program(
      data, backbone, cfg, hidden=hidden, fast_compile=fast_compile
    )
    key = jax.random.key(1)
    t0 = time.perf_counter()
    compiled = jstep.lower(params, opt_state, d, key).compile()
    progs[use] = dict(
      step=compiled,
      state=[params, opt_state],
      d=d,
      traces=traces,
      key=key,
      compile_s=time.perf_counter() - t0,
      cost=_cost(compiled),
      blocks=[],
      faults=[],
    )
  clock = time.process_time if cpu_time else time.perf_counter
  warm = min(3, max(epochs - 1, 0))
  for r in range(repeats):
    for use in (False, True) if r % 2 == 0 else (True, False):
      p = progs[use]
      times = []
      for e in range(epochs):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = clock()
        params, opt_state, loss = p["step"](*p["state"], p["d"], jax.random.fold_in(p["key"], e))
        jax.block_until_ready(loss)
        times.append(clock() - t)
        p["faults"].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        p["state"] = [params, opt_state]
      p["blocks"].append(1e3 * statistics.median(times[warm:]))
  rows = []
  for use in (False, True):
    p = progs[use]
    rows.append(
      dict(
        dataset=p["d"].name,
        backbone=backbone,
        arm="panda" if use else "vanilla",
        nnz=p["d"].incidence.nnz,
        compile_s=p["compile_s"],
        epoch_ms=min(p["blocks"]),
        block_ms=p["blocks"],
        epochs_per_block=epochs,
        warmup_epochs=warm,
        minor_faults_per_epoch=statistics.median(p["faults"]),
        traces=p["traces"][0],
        fast_compile=fast_compile,
        clock="process_cpu" if cpu_time else "wall",
        **p["cost"],
      )
    )
  return rows


def write_results(path, rows, *, command, quick, summary, extra=None):
  """The record of :mod:`jaxpapers.core.benchmark` (``{benchmark, command, quick, host, rows,
  summary}``), with XLA's flags in ``host``."""
  host = bench.host_info()
  host["xla_flags"] = os.environ.get("XLA_FLAGS", "")
  out = dict(benchmark=NAME, command=command, quick=quick, host=host, rows=rows)
  out["summary"] = summary
  if extra:
    out.update(extra)
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(out, indent=1, default=str) + "\n")
  print(f"wrote {path}")


def ratio_summary(rows, target: float = 3.0) -> list[dict]:
  """One summary entry per (dataset, backbone, XLA level): PANDA / vanilla epoch time."""
  out = []
  for v, p in _pairs(rows):
    ratio = p["epoch_ms"] / v["epoch_ms"]
    opt = "-O0" if v["fast_compile"] else "default"
    out.append(
      bench.summary(
        f"{v['dataset']}/{v['backbone']} PANDA/vanilla epoch ({opt})",
        round(ratio, 3),
        f"<= {target:g}",
        note=f"vanilla {v['epoch_ms']:.2f} ms, PANDA {p['epoch_ms']:.2f} ms ({v['clock']} clock)"
        + (
          f"; bytes ratio {p['bytes_accessed'] / v['bytes_accessed']:.2f}"
          if v.get("bytes_accessed") and p.get("bytes_accessed")
          else ""
        ),
      )
    )
  return out


def parse_args(argv=None):
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  ap.add_argument("--datasets", default="email-EU,chameleon-directed,pubmed")
  ap.add_argument("--backbones", default="gedi,hgnn,hypergcn,phenomnn")
  ap.add_argument("--epochs", type=int, default=40)
  ap.add_argument("--hidden", type=int, default=64)
  ap.add_argument("--heads", type=int, default=1)  # the reference default; width heads x hidden
  ap.add_argument("--smoke", action="store_true")
  ap.add_argument(
    "--quick", action="store_true", help="email-Enron, HGNN and GeDi, 2 short blocks (~1 min)"
  )
  ap.add_argument("--repeats", type=int, default=3, help="alternating timing blocks per arm")
  ap.add_argument("--compare-opt", action="store_true", help="same as --opt=both")
  ap.add_argument(
    "--opt",
    choices=("fast", "default", "both"),
    default="fast",
    help="XLA level: the fast-compile options (-O0), XLA's default (what the search uses), or both",
  )
  ap.add_argument("--cpu-time", action="store_true", help="time epochs with the process CPU clock")
  ap.add_argument(
    "--out",
    default=str(bench.default_out(NAME)),
    help="the JSON result ('' to skip)",
  )
  ap.add_argument("--host-memory", choices=("system", "reuse", "both"), default="system")
  ap.add_argument(
    "--traffic",
    action="store_true",
    help="compile only: megabytes per step of vanilla, PANDA and each ablation (no timing)",
  )
  ap.add_argument(
    "--data-dir",
    default="",
    help="folder holding hypergraph/ (default: $JAXPAPERS_DATA_DIR or "
    "../shared/data); a real dataset that cannot be found is an error",
  )
  return ap.parse_args(argv)


def main(argv=None):
  argv = sys.argv[1:] if argv is None else list(argv)
  a = parse_args(argv)
  a.argv = argv
  if a.quick:
    a.datasets, a.backbones, a.epochs, a.repeats = "email-Enron", "hgnn,gedi", 8, 2
    if a.out.endswith("panda_perf.json"):  # keep the committed full result
      a.out = a.out[: -len(".json")] + "_quick.json"
  if a.smoke:
    a.datasets, a.backbones, a.epochs, a.hidden, a.heads = "synthetic-small", "gedi,hgnn", 12, 8, 2
  if a.compare_opt:
    a.opt = "both"
  if a.traffic and a.host_memory == "both":
    raise SystemExit("--traffic compiles without timing: --host-memory=both has nothing to compare")
  if a.host_memory == "both":
    return _both(a)
  if a.host_memory == "reuse":
    status = core.reuse_host_memory()  # before anything starts the backend
    if not status.applied:
      raise SystemExit(f"--host-memory=reuse could not be applied: {status.reason}")
  real = [n for n in a.datasets.split(",") if not n.startswith("synthetic")]
  # An explicit --data-dir must exist; real datasets need a data folder (never a silent skip).
  root = core.resolve_data_dir(a.data_dir or None, subdir="hypergraph", required=bool(real))
  levels = {"fast": (True,), "default": (False,), "both": (True, False)}[a.opt]
  rows = []
  print(f"devices: {jax.devices()}")
  for name in a.datasets.split(","):
    if name.startswith("synthetic"):
      small = name == "synthetic-small"
      data = hg.make_synthetic(
        0,
        nodes_per_class=20 if small else 100,
        n_inter=3 if small else int(name.rsplit("inter", 1)[-1]),
        num_splits=1,
        name=name,
      )
    else:
      data = hg.load(name, root, num_splits=1)
    if a.traffic:
      rows += _traffic(data, a, levels)
      continue
    for b in a.backbones.split(","):
      for fc in levels:
        pair = bench_pair(
          data,
          b,
          epochs=a.epochs,
          repeats=a.repeats,
          hidden=a.hidden,
          heads=a.heads,
          fast_compile=fc,
          cpu_time=a.cpu_time,
        )
        for r in pair:
          r["host_memory"] = a.host_memory
          rows.append(r)
          print(
            f"{r['dataset']:40s} {b:9s} {r['arm']:8s} fast={fc!s:5s} nnz={r['nnz']:6d} "
            f"compile {r['compile_s']:6.1f} s  epoch {r['epoch_ms']:8.2f} ms "
            f"(blocks {', '.join(f'{x:.2f}' for x in r['block_ms'])})  "
            f"faults/epoch {r['minor_faults_per_epoch']:.0f}",
            flush=True,
          )
  command = "python -m benchmarks.panda_perf " + " ".join(
    x for x in argv if not x.startswith("--out")
  )
  if a.traffic:
    _write(a.out, rows, command=command, quick=a.quick)
    return
  print(
    "\n| dataset | backbone | XLA opt | vanilla ms/epoch | PANDA ms/epoch | ratio "
    "| vanilla MB/step | PANDA MB/step | ratio | vanilla compile s | PANDA compile s |"
  )
  print("|---|---|---|---|---|---|---|---|---|---|---|")
  for r, p in _pairs(rows):
    opt = "-O0" if r["fast_compile"] else "default"
    print(
      f"| {r['dataset']} | {r['backbone']} | {opt} | {r['epoch_ms']:.1f} | {p['epoch_ms']:.1f} | "
      f"{p['epoch_ms'] / r['epoch_ms']:.2f} | {_mb(r)} | {_mb(p)} | {_ratio(p, r)} | "
      f"{r['compile_s']:.1f} | {p['compile_s']:.1f} |"
    )
  if a.out:
    write_results(a.out, rows, command=command, quick=a.quick, summary=ratio_summary(rows))


def _mb(row) -> str:
  b = row.get("bytes_accessed")
  return "n/a" if b is None else f"{b / 1e6:.1f}"


def _ratio(row, base) -> str:
  b, b0 = row.get("bytes_accessed"), base.get("bytes_accessed")
  return "n/a" if b is None or not b0 else f"{b / b0:.2f}"


def _traffic(data, a, levels):
  """Megabytes per step of vanilla, PANDA and every ablation, one row per compiled program."""
  arms = ("vanilla", *panda.ABLATIONS)
  rows = []
  for b in a.backbones.split(","):
    for fc in levels:
      got = {}
      for arm in arms:
        got[arm] = traffic_one(data, b, arm, hidden=a.hidden, heads=a.heads, fast_compile=fc)
        got[arm]["fast_compile"] = fc
      rows += list(got.values())
      v = got["vanilla"]
      parts = " ".join(f"{arm} {_mb(got[arm])} ({_ratio(got[arm], v)}x)" for arm in arms[1:])
      opt = "-O0" if fc else "default"
      print(f"{v['dataset']:40s} {b:9s} {opt:7s} MB/step: vanilla {_mb(v)}; {parts}", flush=True)
  return rows


def _pairs(rows):
  """``(vanilla, panda)`` rows of one dataset, backbone, XLA level and host-memory setting."""
  key = lambda x: (x["dataset"], x["backbone"], x["fast_compile"], x["host_memory"])
  for r in rows:
    if r["arm"] == "vanilla":
      yield r, next(x for x in rows if x["arm"] == "panda" and key(x) == key(r))


def _write(path, rows, *, command="", quick=False):
  if path:
    write_results(
      path,
      rows,
      command=command,
      quick=quick,
      summary=[],
      extra=dict(env=core.environment_info()),
    )


def _both(a):
  """Runs every dataset under both settings in child processes, alternating which goes first."""
  rows = []
  passthrough = [f"--backbones={a.backbones}", f"--epochs={a.epochs}", f"--hidden={a.hidden}"]
  passthrough += [f"--heads={a.heads}", f"--repeats={a.repeats}"]
  passthrough += ["--cpu-time"] if a.cpu_time else []
  passthrough += [f"--opt={a.opt}"]
  passthrough += [f"--data-dir={a.data_dir}"] if a.data_dir else []
  with tempfile.TemporaryDirectory() as tmp:
    for i, name in enumerate(a.datasets.split(",")):
      for mode in ("system", "reuse") if i % 2 == 0 else ("reuse", "system"):
        out = os.path.join(tmp, f"{i}_{mode}.json")
        cmd = [
          sys.executable,
          __file__,
          f"--datasets={name}",
          f"--host-memory={mode}",
          f"--out={out}",
        ]
        subprocess.run(cmd + passthrough, check=True)
        with open(out) as f:
          rows += json.load(f)["rows"]
  print(
    "\n| dataset | backbone | XLA opt | host memory | vanilla ms | PANDA ms | PANDA / vanilla "
    "| PANDA faults/epoch |"
  )
  print("|---|---|---|---|---|---|---|---|")
  for r, p in _pairs(rows):
    print(
      f"| {r['dataset']} | {r['backbone']} | {'-O0' if r['fast_compile'] else 'default'} "
      f"| {r['host_memory']} | {r['epoch_ms']:.1f} | {p['epoch_ms']:.1f} "
      f"| {p['epoch_ms'] / r['epoch_ms']:.2f} | {p['minor_faults_per_epoch']:.0f} |"
    )
  if a.out:
    cmd = "python -m benchmarks.panda_perf " + " ".join(
      x for x in a.argv if not x.startswith("--out")
    )
    write_results(a.out, rows, command=cmd, quick=a.quick, summary=ratio_summary(rows))


if __name__ == "__main__":
  main()
