"""PANDA against a float64 NumPy transcription of the reference (jainris/panda),
to 1e-10.

Every backbone under every attention setting the reference's tuner searches (the
learned prior/attention mixture and attention alone; GATv1 and GATv2; shared and
distinct attention weights), at depth 1 and 2 (PhenomNN: 1 and 2 unrolled
steps), plus the options the tuner searches (GeDi's ``other_complex``,
HyperGCN's fast mode and mediators, PhenomNN's step size ``alp`` and learned
``H``) and the ``hgat`` reading of the previous hyperedge states. Weights are
drawn in the reference's names and shapes and loaded with
:func:`jaxpapers.panda.load_reference_weights`; the models run in float64
(``jax_enable_x64``), eagerly, on hypergraphs of 8-9 nodes. Depth 1 checks layer
1 alone, depth 2 the whole stack.
"""

import jax
import numpy as np
import pytest

from tests.panda import parity_cases as pc
from tests.panda import reference_np as ref

TOL = 1e-10


def reference_forward(case: pc.Case, sd: dict, data, x):
  inc = data.incidence
  node, edge = (
    np.asarray(inc.node).astype(np.int64),
    np.asarray(inc.edge).astype(np.int64),
  )
  cfg = case.config()
  t1, t2 = case.attention_types.split("++")
  kw = dict(
    heads=pc.HEADS,
    channels=pc.CHANNELS,
    version=cfg.att_version,
    shared=cfg.shared_att_weights,
  )
  if case.backbone == "gedi":
    weight = np.where(np.asarray(inc.phase_im) > 0.5, 1j, 1.0 + 0j)
    out, _ = ref.gedi_forward(
      sd,
      x,
      node,
      edge,
      weight,
      layers=case.layers,
      types1=t1.split("+"),
      types2=t2.split("+"),
      other_complex=case.other_complex,
      **kw,
    )
  elif case.backbone == "hgnn":
    out, _ = ref.hgnn_forward(
      sd,
      x,
      node,
      edge,
      layers=case.layers,
      types1=t1.split("+"),
      types2=t2.split("+"),
      **kw,
    )
  elif case.backbone == "hypergcn":
    members = [sorted(m) for m in pc.UNDIRECTED]
    out, _ = ref.hypergcn_forward(
      sd,
      x,
      members,
      layers=case.layers,
      types=t1.split("+"),
      rv=pc.random_vectors(case),
      fast=case.fast,
      mediators=case.mediators,
      **kw,
    )
  else:
    mk = case.model_kwargs()
    out, _ = ref.phenom_forward(
      sd,
      x,
      node,
      edge,
      types1=t1.split("+"),
      types2=t2.split("+"),
      steps=case.layers,
      lam0=mk["lam0"],
      lam1=mk["lam1"],
      alp=case.alp,
      h_setting=case.h_setting,
      **kw,
    )
  return out


CASES = pc.cases(full=False)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward_matches_reference_transcription(case):
  data, x = pc.make_data(case.backbone == "gedi")
  sd = pc.reference_weights(case, seed=len(case.name))
  with jax.enable_x64(True):
    got = pc.project_forward(case, sd, data, x)
  want = reference_forward(case, sd, data, x)
  assert got.dtype == np.float64 and np.all(np.isfinite(want))
  assert np.abs(want).max() > 1e-2  # the case really propagates something
  np.testing.assert_allclose(
    got, want, rtol=0, atol=TOL * max(1.0, np.abs(want).max())
  )


@pytest.mark.slow
@pytest.mark.parametrize(
  "case",
  [c for c in pc.cases(full=True) if c not in CASES],
  ids=lambda c: c.name,
)
def test_forward_matches_reference_transcription_full_grid(case):
  test_forward_matches_reference_transcription(case)
