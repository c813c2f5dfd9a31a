"""Side-by-side: HGNN training step in JAX (jaxpapers) vs an equivalent PyTorch model, on CPU.

  pip install torch          # optional extra; the script records that it was skipped without it
  python -m benchmarks.panda_torch_hgnn [--quick] --datasets email-EU,cora

Both models: Linear(F, h) -> D_v^{-1/2} H D_e^{-1} H^T D_v^{-1/2} (two index-add / segment-sum
stages over the same incidence pairs) -> ReLU -> Linear -> LayerNorm -> ReLU -> Linear, Adam
with coupled L2, full batch, dropout off (so both do identical arithmetic). Reports the median
step time over epochs 10..N of each, measured in one run, and the ratio torch / JAX. The forward
outputs are checked to agree to 1e-4 after copying the JAX weights into torch. Without a data
folder the generated ``synthetic-inter50`` hypergraph stands in for each dataset. ``--quick``:
the generated ``synthetic-small`` hypergraph, 20 epochs.
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxpapers import core, panda
from jaxpapers import hypergraph as hg
from jaxpapers.core import benchmark as bench

NAME = "panda_torch_hgnn"


def _torch_model(torch, params, inc, n, m):
  nn = torch.nn
  node = torch.as_tensor(np.asarray(inc.node), dtype=torch.long)
  edge = torch.as_tensor(np.asarray(inc.edge), dtype=torch.long)
  dv = torch.as_tensor(np.asarray(hg.inv_sqrt(inc.deg_node)))
  de = torch.as_tensor(
    np.where(np.asarray(inc.deg_edge) > 0, 1 / np.maximum(np.asarray(inc.deg_edge), 1), 0),
    dtype=torch.float32,
  )

  class HGNN(nn.Module):
    def __init__(self):
      super().__init__()
      p = params
      lin = p["lins"][0]
      self.lin = nn.Linear(*np.asarray(lin["kernel"]).shape)
      self.fc1 = nn.Linear(*np.asarray(p["head"]["fc1"]["kernel"]).shape)
      self.norm = nn.LayerNorm(np.asarray(p["head"]["norm"]["scale"]).shape[0], eps=1e-6)
      self.fc2 = nn.Linear(*np.asarray(p["head"]["fc2"]["kernel"]).shape)
      with torch.no_grad():
        for mod, src in (
          (self.lin, lin),
          (self.fc1, p["head"]["fc1"]),
          (self.fc2, p["head"]["fc2"]),
        ):
          mod.weight.copy_(torch.as_tensor(np.asarray(src["kernel"]).T))
          mod.bias.copy_(torch.as_tensor(np.asarray(src["bias"])))
        self.norm.weight.copy_(torch.as_tensor(np.asarray(p["head"]["norm"]["scale"])))
        self.norm.bias.copy_(torch.as_tensor(np.asarray(p["head"]["norm"]["bias"])))

    def forward(self, x):
      s = self.lin(x) * dv[:, None]
      h = torch.zeros(m, s.shape[1]).index_add_(0, edge, s[node]) * de[:, None]
      y = torch.zeros(n, s.shape[1]).index_add_(0, node, h[edge]) * dv[:, None]
      y = torch.relu(y)
      return self.fc2(torch.relu(self.norm(self.fc1(y))))

  return HGNN()


def _plain(tree):
  if hasattr(tree, "items"):
    return {k: _plain(v) for k, v in tree.items()}
  return getattr(tree, "value", tree)


def parse_args(argv=None):
  p = bench.parser(NAME, __doc__)
  p.add_argument("--datasets", default="email-EU,cora")
  p.add_argument("--epochs", type=int, default=60)
  p.add_argument("--hidden", type=int, default=64)
  return p.parse_args(argv)


def main(argv=None):
  a = parse_args(argv)
  host = bench.host_info()
  try:
    import torch
  except (ImportError, OSError) as e:  # absent, or a broken install
    msg = (
      f"torch is not available ({type(e).__name__}): the PyTorch comparison was skipped "
      "(pip install 'jaxpapers[torch]' or pip install torch)"
    )
    print(msg)
    bench.write(
      NAME, a, rows=[{"case": "skipped", "reason": msg}], summary=[], host=host, argv=argv
    )
    return 0
  root = None if a.quick else core.resolve_data_dir(subdir="hypergraph", required=False)
  datasets, epochs = (("synthetic-small",), 20) if a.quick else (a.datasets.split(","), a.epochs)
  rows, summary = [], []
  print(
    f"torch {torch.__version__} threads={torch.get_num_threads()}; jax {jax.__version__} "
    f"{jax.devices()}"
  )
  print("\n| dataset | nnz | JAX ms/step | torch ms/step | torch / JAX |\n|---|---|---|---|---|")
  for name in datasets:
    if a.quick:
      data = hg.make_synthetic(0, nodes_per_class=20, n_inter=3, num_splits=1, name=name)
    elif root is None:
      data = hg.make_synthetic(0, n_inter=50, num_splits=1, name="synthetic-inter50")
    else:
      data = hg.load(name, root, num_splits=1)
    d = hg.as_undirected(data)
    n, m = d.num_nodes, d.incidence.num_edges
    mf = lambda rngs: hg.HGNN(
      int(d.x.shape[1]), d.num_classes, hidden=a.hidden, dropout=0.0, rngs=rngs
    )
    graphdef, params, rest, opt = panda.init(mf, jax.random.key(0))
    mask = d.train_mask[0].astype(jnp.float32)
    step = jax.jit(
      lambda p, o, dd, k: panda.train_step(graphdef, p, rest, o, dd, mask, k, 5e-3, 5e-4)
    )
    tm = _torch_model(torch, _plain(nnx_state_dict(params)), d.incidence, n, m)
    x_t = torch.as_tensor(np.asarray(d.x))
    y_t = torch.as_tensor(np.asarray(d.y), dtype=torch.long)
    m_t = torch.as_tensor(np.asarray(mask))
    ref = np.asarray(panda.eval_step(graphdef, params, rest, d))
    with torch.no_grad():
      got = tm(x_t).numpy()
    assert np.allclose(ref, got, atol=1e-4), float(np.abs(ref - got).max())
    topt = torch.optim.Adam(tm.parameters(), lr=5e-3, weight_decay=5e-4)

    def tstep():
      topt.zero_grad()
      out = tm(x_t)
      loss = (torch.nn.functional.cross_entropy(out, y_t, reduction="none") * m_t).sum() / m_t.sum()
      loss.backward()
      topt.step()
      return loss

    key = jax.random.key(1)
    jt, tt = [], []
    p, o = params, opt
    for e in range(epochs):  # interleaved so both see the same machine load
      t = time.perf_counter()
      p, o, loss = step(p, o, d, jax.random.fold_in(key, e))
      jax.block_until_ready(loss)
      jt.append(time.perf_counter() - t)
      t = time.perf_counter()
      tstep()
      tt.append(time.perf_counter() - t)
    js, ts = statistics.median(jt[10:]), statistics.median(tt[10:])
    print(
      f"| {d.name} | {d.incidence.nnz} | {1e3 * js:.2f} | {1e3 * ts:.2f} | {ts / js:.2f} |",
      flush=True,
    )
    rows.append(
      {
        "case": d.name,
        "nnz": d.incidence.nnz,
        "epochs": epochs,
        "jax_ms_per_step": 1e3 * js,
        "torch_ms_per_step": 1e3 * ts,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
      }
    )
    summary.append(
      bench.summary(
        f"HGNN training step on {d.name}: PyTorch / JAX",
        ts / js,
        ">= 1",
        note="median over epochs 10..N, interleaved",
      )
    )
  bench.write(NAME, a, rows=rows, summary=summary, host=host, argv=argv)
  return 0


def nnx_state_dict(state):
  return state.to_pure_dict() if hasattr(state, "to_pure_dict") else state


if __name__ == "__main__":
  main()
