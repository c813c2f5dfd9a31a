"""PANDA parity: the reference's PyTorch layers (jainris/panda) and jaxpapers on the same inputs.

  python benchmarks/panda_parity.py --reference_dir /path/to/jainris-panda   # needs torch, PyG
  python benchmarks/panda_parity.py                  # no checkout: the float64 NumPy transcription
  python benchmarks/panda_parity.py --quick          # two cases per backbone

For every case of ``tests/panda/parity_cases.py`` (each backbone under every
attention setting the reference's tuner searches, GATv1/v2, shared/distinct
attention weights, depth 1 and 2, and the backbone options the tuner searches:
GeDi's ``other_complex``, HyperGCN's fast mode and mediators, PhenomNN's ``alp``
and ``H_setting``), both implementations get the same float64 weights (drawn in
the reference's names, loaded here with
:func:`jaxpapers.panda.load_reference_weights`), the same hypergraph and
features, and run in float64 without dropout. Two numbers per case: ``layer1``
(the first layer alone; PhenomNN: one unrolled step) and ``forward`` (the whole
propagation stack up to the classifier, whose form differs by design). The
maximum absolute difference per case goes to
``benchmarks/results/panda_parity.json``.

The reference code is imported from ``--reference_dir`` (``models/panda/*.py``)
as it is, with dtype adjustments so that it computes in float64: torch's default
dtype is float64 (GeDi's zero imaginary input is created with it), GeDi's
identity matrix (``GeDiPANDALayer.process``, built in float32) takes the
features' dtype, and HyperGCN's graph (``adjacency``/``ssm2tst``, built in
float32) is kept in float64; ``models.mlp`` (the classifier, not compared) is
stubbed when the checkout lacks it. Test hypergraphs have no more hyperedges
than nodes, because the reference sizes its stage-1 output by the number of
senders.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import platform
import sys
import time
import types

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402

from jaxpapers.core import benchmark as bench  # noqa: E402
from tests.panda import parity_cases as pc  # noqa: E402
from tests.panda import reference_np as ref_np  # noqa: E402

TARGET = 1e-10


def _truncate(case: pc.Case, sd: dict):
  """The case with one layer (one step) and its weights."""
  if case.backbone == "phenomnn":
    return case.__class__(**{**case.__dict__, "layers": 1}), sd
  keep = ("Chebs.0.", "layers.0.")
  return case.__class__(**{**case.__dict__, "layers": 1}), {
    k: v for k, v in sd.items() if k.startswith(keep)
  }


def jax_forward(case, sd, data, x, rvs):
  kw = {"hidden": HYPERGCN_CHANNELS} if case.backbone == "hypergcn" else {}
  with jax.enable_x64(True):
    return pc.project_forward(case, sd, data, x, vectors=rvs, **kw)


# ---------------------------------------------------------------- the reference


# the reference's HyperGCN widths are 2^(l+2)...: 16 at depth 2
HYPERGCN_CHANNELS = 16


def _load_reference(reference_dir: pathlib.Path):
  """Imports ``models/panda/{gedi,hgnn,hypergcn,phenomnn}.py`` from the checkout
  by path."""
  import torch

  # GeDiPANDA's zero imaginary input, float32 otherwise
  torch.set_default_dtype(torch.float64)
  root = pathlib.Path(reference_dir)
  if not (root / "models" / "panda" / "gedi.py").is_file():
    raise FileNotFoundError(
      f"{root} is not a checkout of jainris/panda (no models/panda/gedi.py)"
    )
  if "models" not in sys.modules:
    pkg = types.ModuleType("models")
    pkg.__path__ = [str(root / "models")]
    sys.modules["models"] = pkg
  try:
    importlib.import_module("models.mlp")
  # the classifier is not compared: a stub that builds and passes through
  except Exception:
    stub = types.ModuleType("models.mlp")

    class MLP(torch.nn.Module):
      def __init__(self, **kwargs):
        super().__init__()

      def reset_parameters(self):
        pass

      def forward(self, x):
        return x

    stub.MLP = MLP
    sys.modules["models.mlp"] = stub
  mods = {}
  for name in ("gedi", "hgnn", "hypergcn", "phenomnn"):
    spec = importlib.util.spec_from_file_location(
      f"_panda_reference_{name}", root / "models" / "panda" / f"{name}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    # PyG resolves message() annotations through sys.modules
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    mods[name] = mod

  # float64 adjustments (see the module docstring)
  gedi_process = mods["gedi"].GeDiPANDALayer.process

  def process(self, mul_l_real, mul_l_imag, x_real, x_imag):
    return gedi_process(
      self,
      mul_l_real.to(x_real.dtype),
      mul_l_imag.to(x_real.dtype),
      x_real,
      x_imag,
    )

  mods["gedi"].GeDiPANDALayer.process = process

  class _Float64Numpy:
    def __getattr__(self, k):
      return getattr(np, "float64" if k == "float32" else k)

  def ssm2tst(m):
    m = m.tocoo()
    idx = torch.from_numpy(np.vstack((m.row, m.col))).long()
    return torch.sparse_coo_tensor(
      idx, torch.from_numpy(m.data.astype(np.float64)), m.shape
    )

  mods["hypergcn"].np = _Float64Numpy()
  mods["hypergcn"].ssm2tst = ssm2tst
  return mods


def _args(case, **kw):
  base = dict(
    att_dropout=0.0,
    n_heads=pc.HEADS,
    Classifier_hidden=8,
    Classifier_num_layers=2,
    dropout=0.0,
    normalization="ln",
    nconv=case.layers,
    dname="parity",
    HyperGCN_fast=case.fast,
    HyperGCN_mediators=case.mediators,
    lam4=0.0,
    lam0=2.5,
    lam1=4.0,
    alp=case.alp,
    prop_step=case.layers,
    notresidual=False,
    normalize_type="sym",
    H=case.h_setting != 0,
    HisI=case.h_setting == 2,
    twoHgamma=case.h_setting == 3,
    lamda=0.5,
    alpha=0.1,
    variant=False,
  )
  base.update(kw)
  return types.SimpleNamespace(**base)


def torch_forward(mods, case, sd, data, x, seed):
  """The reference model's representation before its classifier, float64."""
  import torch

  t1, t2 = case.attention_types.split("++")
  cfg = case.config()
  att = dict(
    attention_version=cfg.att_version,
    shared_att_weights=cfg.shared_att_weights,
    conv_name="aux",
    aux_type="diff-mlp",
    symmetric_aux=False,
  )
  inc = data.incidence
  edge_index = torch.as_tensor(
    np.stack([np.asarray(inc.node), np.asarray(inc.edge)]), dtype=torch.long
  )
  from torch_geometric.data import Data

  xt = torch.as_tensor(x, dtype=torch.float64)
  tdata = Data(x=xt, edge_index=edge_index)
  args = _args(case)
  if case.backbone == "gedi":
    weight = torch.as_tensor(
      np.where(np.asarray(inc.phase_im) > 0.5, 1j, 1.0 + 0j)
    )
    model = mods["gedi"].GeDiPANDA(
      num_features=pc.FEATURES,
      hidden=pc.CHANNELS,
      label_dim=2,
      i_complex=False,
      layer=case.layers,
      other_complex=case.other_complex,
      edge_index=edge_index,
      edge_weight=weight,
      dropout=0.0,
      args=args,
      attention_type1=t1,
      attention_type2=t2,
      attention_combination1="only-src",
      attention_combination2="only-src",
      **att,
    )
  elif case.backbone == "hgnn":
    model = mods["hgnn"].HGNNPANDA(
      num_features=pc.FEATURES,
      hidden=pc.CHANNELS,
      label_dim=2,
      layer=case.layers,
      edge_index=edge_index,
      edge_weight=None,
      dropout=0.0,
      args=args,
      attention_type1=t1,
      attention_type2=t2,
      attention_combination1="only-src",
      attention_combination2="only-src",
      **att,
    )
  elif case.backbone == "hypergcn":
    att.pop("aux_type"), att.pop("symmetric_aux")
    model = mods["hypergcn"].HyperGCNPANDA(
      pc.FEATURES,
      HYPERGCN_CHANNELS,
      args,
      heads=pc.HEADS,
      concat=True,
      dropout=0.0,
      attention_type=t1,
      attention_combination="only-src",
      **att,
    )
    model.lin_out = torch.nn.Identity()
  else:
    model = mods["phenomnn"].PhenomNNPANDA(
      nfeat=pc.FEATURES,
      nhid=pc.CHANNELS,
      nclass=2,
      nhidlayer=1,
      dropout=0.0,
      baseblock="phenomnn",
      nbaselayer=0,
      heads=pc.HEADS,
      attention_type1=t1,
      attention_type2=t2,
      attention_combination1="only-src",
      attention_combination2="only-src",
      args=args,
      **att,
    )
    model.midlayer[0].fcs[1] = torch.nn.Identity()
  if hasattr(model, "classifier"):
    model.classifier = torch.nn.Identity()
  model = model.double().eval()
  state = {k: torch.as_tensor(v) for k, v in sd.items()}
  missing, unexpected = model.load_state_dict(state, strict=False)
  missing = [
    k
    for k in missing
    if not k.startswith(("classifier.", "lin_out.", "midlayer.0.fcs.1."))
  ]
  if missing or unexpected:
    raise RuntimeError(
      f"{case.name}: weights missing {missing[:5]}, unexpected {unexpected[:5]}"
    )
  # HyperGCN's projection vectors come from numpy's global generator
  np.random.seed(seed)
  with torch.no_grad():
    out = model(tdata)
  return out.numpy()


def hypergcn_vectors(case, seed):
  """The projection vectors the reference draws after ``np.random.seed(seed)``,
  in order."""
  rs = np.random.RandomState(seed)
  if case.fast:
    return [rs.rand(pc.FEATURES)]
  return [rs.rand(pc.HEADS * HYPERGCN_CHANNELS) for _ in range(case.layers)]


def numpy_forward(case, sd, data, x, rvs):
  """The float64 NumPy transcription (used without ``--reference_dir``)."""
  inc = data.incidence
  node, edge = (
    np.asarray(inc.node).astype(np.int64),
    np.asarray(inc.edge).astype(np.int64),
  )
  cfg = case.config()
  t1, t2 = (t.split("+") for t in case.attention_types.split("++"))
  kw = dict(
    heads=pc.HEADS, version=cfg.att_version, shared=cfg.shared_att_weights
  )
  if case.backbone == "gedi":
    weight = np.where(np.asarray(inc.phase_im) > 0.5, 1j, 1.0 + 0j)
    return ref_np.gedi_forward(
      sd,
      x,
      node,
      edge,
      weight,
      layers=case.layers,
      channels=pc.CHANNELS,
      types1=t1,
      types2=t2,
      other_complex=case.other_complex,
      **kw,
    )[0]
  if case.backbone == "hgnn":
    return ref_np.hgnn_forward(
      sd,
      x,
      node,
      edge,
      layers=case.layers,
      channels=pc.CHANNELS,
      types1=t1,
      types2=t2,
      **kw,
    )[0]
  if case.backbone == "hypergcn":
    return ref_np.hypergcn_forward(
      sd,
      x,
      [sorted(m) for m in pc.UNDIRECTED],
      layers=case.layers,
      channels=HYPERGCN_CHANNELS,
      types=t1,
      rv=rvs,
      fast=case.fast,
      mediators=case.mediators,
      **kw,
    )[0]
  mk = case.model_kwargs()
  return ref_np.phenom_forward(
    sd,
    x,
    node,
    edge,
    channels=pc.CHANNELS,
    types1=t1,
    types2=t2,
    steps=case.layers,
    lam0=mk["lam0"],
    lam1=mk["lam1"],
    alp=case.alp,
    h_setting=case.h_setting,
    **kw,
  )[0]


def _weights(case, seed):
  if case.backbone != "hypergcn":
    return pc.reference_weights(case, seed)
  old = pc.CHANNELS
  pc.CHANNELS = HYPERGCN_CHANNELS
  try:
    return pc.reference_weights(case, seed)
  finally:
    pc.CHANNELS = old


def quick_cases() -> list:
  """The quick subset: the first two cases of each backbone among
  ``pc.cases(full=False)`` (its first attention setting at depth 1 (GATv2,
  shared weights) and depth 2 (GATv1, distinct weights))."""
  out, seen = [], {}
  for case in pc.cases(full=False):
    if seen.get(case.backbone, 0) < 2:
      out.append(case)
      seen[case.backbone] = seen.get(case.backbone, 0) + 1
  return out


def run(reference_dir, quick: bool):
  mods = _load_reference(reference_dir) if reference_dir else None
  rows = []
  for i, case in enumerate(quick_cases() if quick else pc.cases()):
    data, x = pc.make_data(case.backbone == "gedi")
    sd = _weights(case, seed=i)
    row = dict(
      case=case.name,
      backbone=case.backbone,
      attention_types=case.attention_types,
      layers=case.layers,
    )
    for part, (c, w) in (
      ("layer1", _truncate(case, sd)),
      ("forward", (case, sd)),
    ):
      if part == "layer1" and case.layers == 1:
        row["layer1_max_abs_diff"] = row.get("forward_max_abs_diff")
        continue
      rvs = hypergcn_vectors(c, seed=i)
      got = jax_forward(c, w, data, x, rvs)
      want = (
        torch_forward(mods, c, w, data, x, seed=i)
        if mods
        else numpy_forward(c, w, data, x, rvs)
      )
      diff = (
        float(np.max(np.abs(got - want)))
        if np.all(np.isfinite(want))
        else float("nan")
      )
      row[f"{part}_max_abs_diff"] = diff
      row[f"{part}_max_abs_value"] = float(np.max(np.abs(want)))
    if case.layers == 1:
      row["layer1_max_abs_diff"] = row["forward_max_abs_diff"]
      row["layer1_max_abs_value"] = row["forward_max_abs_value"]
    rows.append(row)
    print(
      f"{case.name:80s} layer1 {row['layer1_max_abs_diff']:.2e}  forward "
      f"{row['forward_max_abs_diff']:.2e}",
      flush=True,
    )
  return rows


def parse_args(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument(
    "--reference_dir", default=None, help=("a checkout of jainris/panda")
  )
  ap.add_argument("--quick", action="store_true", help="two cases per backbone")
  ap.add_argument("--out", default=str(bench.default_out("panda_parity")))
  return ap.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  # keep the committed full result
  if a.quick and a.out.endswith("panda_parity.json"):
    a.out = a.out[: -len(".json")] + "_quick.json"
  if a.reference_dir:
    try:
      import torch
      import torch_geometric
    except ImportError as e:
      print(
        f"--reference_dir needs torch and torch_geometric ({e}); "
        "nothing compared"
      )
      return 0
  t0 = time.time()
  rows = run(a.reference_dir, a.quick)
  diffs = [
    max(r["layer1_max_abs_diff"], r["forward_max_abs_diff"]) for r in rows
  ]
  worst = float(np.nanmax(diffs)) if diffs else float("nan")
  nan = sum(1 for d in diffs if not np.isfinite(d))
  met = sum(1 for d in diffs if d <= TARGET)
  versions = {"jax": jax.__version__, "numpy": np.__version__}
  if a.reference_dir:
    import torch
    import torch_geometric

    versions.update(
      torch=torch.__version__, torch_geometric=torch_geometric.__version__
    )
  cmd = ["python", "benchmarks/panda_parity.py"]
  if a.reference_dir:
    cmd += ["--reference_dir", "<checkout of jainris/panda>"]
  if a.quick:
    cmd.append("--quick")
  out = {
    "benchmark": "panda_parity",
    "command": " ".join(cmd),
    "quick": a.quick,
    "reference": "jainris/panda PyTorch layers"
    if a.reference_dir
    else "float64 NumPy transcription",
    "host": {
      "platform": platform.platform(),
      "python": platform.python_version(),
      **versions,
    },
    "rows": rows,
    "summary": [
      dict(
        name="max_abs_diff",
        value=worst,
        unit="abs",
        target=f"<= {TARGET:g}",
        met=bool(worst <= TARGET),
        note=(
          f"max over {len(rows)} cases of the layer-1 and whole-forward "
          "differences"
        ),
      ),
      dict(
        name="cases_within_target",
        value=met,
        unit="cases",
        target=f">= {len(rows)}",
        met=met == len(rows),
        note=f"{nan} cases where the reference is not finite",
      ),
    ],
    "wall_s": round(time.time() - t0, 1),
  }
  path = pathlib.Path(a.out)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(out, indent=1) + "\n")
  print(
    f"max abs diff {worst:.3e} over {len(rows)} cases ({met} within "
    f"{TARGET:g}); wrote {path}"
  )
  return 0


if __name__ == "__main__":
  sys.exit(main())
