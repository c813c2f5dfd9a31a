"""The parity cases: tiny hypergraphs, the reference tuner's settings and random
reference weights.

Shared by ``tests/panda/test_parity.py`` (against the float64 NumPy
transcription in ``reference_np``) and ``benchmarks/panda_parity.py`` (against
the reference's PyTorch layers). Weights are drawn in the reference's naming and
shapes (``nn.Linear`` weights ``[out, in]``), so the loader
:func:`jaxpapers.panda.load_reference_weights` is part of what the cases check.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda

HEADS, CHANNELS, FEATURES, AUX_DIM = 2, 2, 3, 16

# Undirected: 9 nodes, 9 hyperedges: two singletons ({4}, {7}: HyperGCN's self
# pair, -2 with mediators), a size-2 edge whose members share their features
# (HyperGCN's fast projection ties there); each singleton node also sits in two
# size-2 edges, so that no row of HyperGCN's A + I sums to a negative number
# (the reference's normalisation gives NaN there). Hyperedges do not outnumber
# nodes (the reference sizes its stage-1 output by the senders).
UNDIRECTED = [
  [0, 1, 2],
  [1, 4],
  [4, 5],
  [2, 3, 5, 8],
  [5, 6],
  [4],
  [7],
  [7, 8],
  [0, 7],
]
TIE = (5, 6)
# Directed (GeDi): (tails, heads); 8 nodes, 6 hyperedges.
DIRECTED = (
  [[0], [1], [2, 3], [], [5], [7]],
  [[1, 2, 3], [4, 5], [6], [0, 6, 7], [4, 6, 1], [2]],
)


@dataclasses.dataclass(frozen=True)
class Case:
  """One parity case: backbone, the tuner's attention string and the other
  reference options."""

  backbone: str
  attention_types: str
  layers: int = 1  # nconv, or PhenomNN's prop_step
  attention_version: str = "v2"
  distinct_att_weights: bool = False
  other_complex: bool = False
  fast: bool = True
  mediators: bool = False
  alp: float = 0.0
  h_setting: int = 0

  @property
  def name(self) -> str:
    parts = [
      self.backbone,
      self.attention_types,
      f"L{self.layers}",
      self.attention_version,
    ]
    parts.append("distinct" if self.distinct_att_weights else "shared")
    if self.backbone == "gedi":
      parts.append(f"other_complex={self.other_complex}")
    if self.backbone == "hypergcn":
      parts += [f"fast={self.fast}", f"mediators={self.mediators}"]
    if self.backbone == "phenomnn":
      parts += [f"alp={self.alp}", f"H={self.h_setting}"]
    return "/".join(parts)

  def config(self) -> panda.PandaConfig:
    return panda.reference_config(
      self.backbone,
      self.attention_types,
      n_heads=HEADS,
      attention_version=self.attention_version,
      distinct_att_weights=self.distinct_att_weights,
    )

  def model_kwargs(self) -> dict:
    kw = dict(hidden=CHANNELS, dropout=0.0)
    if self.backbone == "phenomnn":
      kw.update(
        num_steps=self.layers,
        lam0=2.5,
        lam1=4.0,
        alp=self.alp,
        h_setting=self.h_setting,
      )
    else:
      kw["num_layers"] = self.layers
    if self.backbone == "gedi":
      kw["other_complex"] = self.other_complex
    if self.backbone == "hypergcn":
      kw.update(fast=self.fast, mediators=self.mediators)
    return kw


def cases(full: bool = True) -> list[Case]:
  """Every backbone x tuner attention setting x version x shared/distinct x
  depth 1, 2, plus the backbone options the tuner searches (GeDi's
  ``other_complex``, HyperGCN's mediators and fast mode, PhenomNN's ``alp`` and
  ``H_setting``) and the ``hgat`` reading. ``full=False``: a subset that still
  covers every option value once."""
  out = []
  grid = list(itertools.product((1, 2), ("v2", "v1"), (False, True)))
  short = {(1, "v2", False), (2, "v1", True)}
  for bb, types in panda.REFERENCE_ATTENTION_TYPES.items():
    for i, t in enumerate(types):
      for layers, ver, distinct in grid:
        if not full and (layers, ver, distinct) not in short:
          continue
        c = Case(bb, t, layers, ver, distinct)
        if bb == "hypergcn":
          c = dataclasses.replace(c, mediators=bool((i + layers) % 2))
        out.append(c)
  extra = [
    Case("gedi", "gedi+gedi-att++gedi+att", 2, other_complex=True),
    Case("hypergcn", "gcn+att++gcn+att", 2, fast=False, mediators=True),
    Case("gedi", "gedi+hgat++gedi+att", 2),
    Case("hgnn", "gedi+hgat++gedi+att", 2),
    Case("phenomnn", "phenom+hgat++phenom+att", 2),
  ]
  if full:
    extra += [
      Case("gedi", "gedi-att++att", 1, "v1", True, other_complex=True),
      Case("hypergcn", "att++att", 1, fast=False),
      Case("hypergcn", "gcn+att++gcn+att", 1, fast=False),
    ]
  for alp, h in itertools.product((0.0, 0.05, 0.1, 1.0), (0, 1, 2, 3)):
    if (alp, h) != (0.0, 0) and (
      full or (alp, h) in ((0.05, 1), (0.1, 2), (1.0, 3))
    ):
      extra.append(
        Case(
          "phenomnn", "phenom+phenom-att++phenom+att", 2, alp=alp, h_setting=h
        )
      )
  return out + extra


def features(seed: int, directed: bool) -> np.ndarray:
  rng = np.random.default_rng(seed)
  n = 8 if directed else 9
  x = rng.normal(size=(n, FEATURES))
  if not directed:
    x[TIE[1]] = x[TIE[0]]
  return x


def _stage_weights(rng, pre, case: Case, a: int, c: int) -> dict:
  cfg = case.config()
  g = lambda *shape: 0.6 * rng.normal(size=shape)
  sd = {}
  if cfg.shared_att_weights:
    sd[pre + "lin.weight"] = g(a, a)
    sd[pre + "att"] = g(1, HEADS, a)
  elif cfg.att_version == "v2":
    sd[pre + "lin_src.weight"], sd[pre + "lin_dst.weight"] = g(a, a), g(a, a)
    sd[pre + "att"] = g(1, HEADS, a)
  else:
    sd[pre + "lin.weight"] = g(a, a)
    sd[pre + "att_src"], sd[pre + "att_dst"] = g(1, HEADS, a), g(1, HEADS, a)
  if cfg.mix == "learned":
    sd[pre + "att_wt_lin1.weight"], sd[pre + "att_wt_lin2.weight"] = (
      g(8, a),
      g(2, 8),
    )
  for nm in ("aux_src", "aux_dst"):
    sd[pre + nm + ".weight"], sd[pre + nm + ".bias"] = g(AUX_DIM, a), g(AUX_DIM)
  sd[pre + "aux_out.weight"], sd[pre + "aux_out.bias"] = g(1, AUX_DIM), g(1)
  sd[pre + "aux_lin.weight"], sd[pre + "aux_lin.bias"] = g(c, c), g(c)
  return sd


def reference_weights(case: Case, seed: int = 0) -> dict:
  """Random float64 weights in the reference's names and shapes for ``case``."""
  rng = np.random.default_rng(seed)
  h, c, f = HEADS, CHANNELS, FEATURES
  w = h * c
  sd = {}
  if case.backbone in ("gedi", "hgnn"):
    a = 2 * c if case.backbone == "gedi" else c
    for l in range(case.layers):
      fin = f if l == 0 else w
      pre = f"Chebs.{l}."
      sd[pre + "lin_update.weight"] = 0.6 * rng.normal(size=(w, fin))
      sd[pre + "lin_res.weight"] = 0.6 * rng.normal(size=(w, fin))
      sd[pre + "bias"] = 0.3 * rng.normal(size=w)
      for st in ("att_conv1.", "att_conv2."):
        sd.update(_stage_weights(rng, pre + st, case, a, c))
  elif case.backbone == "hypergcn":
    for l in range(case.layers):
      pre = f"layers.{l}."
      sd[pre + "W"] = 0.6 * rng.normal(size=(f if l == 0 else w, w))
      sd[pre + "bias"] = 0.3 * rng.normal(size=w)
      sd.update(_stage_weights(rng, pre, case, c, c))
  else:
    pre = "midlayer.0."
    sd[pre + "fcs.0.weight"] = 0.6 * rng.normal(size=(w, f))
    sd[pre + "fcs.0.bias"] = 0.3 * rng.normal(size=w)
    if case.h_setting:
      for t in ("beta", "gamma1", "gamma2"):
        sd[pre + f"convs.0.H.{t}"] = rng.normal(size=(w, w)) / w + np.eye(w)
    for st in ("node_to_edge.", "edge_to_node."):
      sd.update(_stage_weights(rng, pre + "convs.0." + st, case, c, c))
  return sd


def random_vectors(case: Case, seed: int = 0) -> list[np.ndarray]:
  """HyperGCN's projection vectors ``U[0, 1)``: one over the input features
  (fast), else one per layer over its ``heads * hidden`` outputs."""
  rng = np.random.default_rng(seed + 1)
  if case.fast:
    return [rng.uniform(size=FEATURES)]
  return [rng.uniform(size=HEADS * CHANNELS) for _ in range(case.layers)]


def make_data(directed: bool):
  """(data, x): the directed (GeDi) or undirected case hypergraph, every node in
  every split."""
  if directed:
    inc = hg.from_directed_hyperedges(*DIRECTED, 8)
  else:
    inc = hg.from_hyperedges(UNDIRECTED, 9)
  x = features(0, directed)
  n = inc.num_nodes
  m = np.ones(n, bool)
  data = hg.make_data(
    inc, x, np.zeros(n, int), train_mask=m, val_mask=m, test_mask=m
  )
  return data, x


class _Identity(nnx.Module):
  def __call__(self, x, *, deterministic=True, rngs=None):
    return x


def project_forward(
  case: Case, sd: dict, data, x, vectors=None, **model_kwargs
) -> np.ndarray:
  """The project model's representation before its classifier, with the
  reference weights `sd` loaded, in float64 (call it with x64 enabled).

  Args:
    vectors: HyperGCN's projection vectors (default :func:`random_vectors` of
      the case).
    **model_kwargs: overrides of ``case.model_kwargs()`` for
      :func:`panda.make_model`.
  """
  data = data.replace(x=jnp.asarray(x, jnp.float64))
  model = panda.make_model(
    case.backbone,
    case.config(),
    in_features=FEATURES,
    num_classes=2,
    rngs=nnx.Rngs(0),
    **{**case.model_kwargs(), **model_kwargs},
  )
  panda.load_reference_weights(model, sd)
  if case.backbone == "hypergcn":
    for r, v in zip(
      model.r, random_vectors(case) if vectors is None else vectors
    ):
      r.set_value(jnp.asarray(v))
  model.head = _Identity()
  return np.asarray(model(data, deterministic=True))
