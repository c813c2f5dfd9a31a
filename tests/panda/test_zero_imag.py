"""A complex stage given ``im=None`` (a zero imaginary part) equals the stage
given zeros.

GeDi's first layer reads real input features: its stage-1 senders and stage-2
receivers have an identically zero imaginary part, which the stage skips instead
of computing on zeros. These tests hold the skipped path to the explicit-zeros
path in float64, forward and gradient, over every stage option that treats the
imaginary part differently, and check that the skip is real (fewer gathers in
the traced program).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda


def _inc(seed=0, n=9, m=5):
  rng = np.random.default_rng(seed)
  tails, heads = [], []
  for _ in range(m):
    mem = rng.choice(n, size=rng.integers(2, 5), replace=False)
    k = int(rng.integers(0, 3))
    tails.append(mem[:k].tolist())
    heads.append(mem[k:].tolist())
  return hg.from_directed_hyperedges(tails, heads, n)


CFGS = {
  "default": dict(),
  "heads2_code": dict(heads=2),
  "heads3_code": dict(heads=3),
  "heads2_per_head": dict(heads=2, complex_layout="per_head"),
  "v1_distinct": dict(att_version="v1", shared_att_weights=False),
  "v2_distinct": dict(shared_att_weights=False),
  "same_mlp": dict(aux="same-mlp"),
  "mul": dict(mix="mul"),
  "symmetric": dict(symmetric_aux=True),
  "no_aux": dict(aux=None),
  "prior_only": dict(aux=None, mix="prior"),
}


def _stage_pair(cfg_kw, *, with_zero_recv):
  """Stage 1 (senders' Im None vs zeros) and stage 2 (receivers' Im None vs
  zeros), float64."""
  cfg = panda.PandaConfig(att_dropout=0.0, **cfg_kw)
  h, c = cfg.heads, 3
  inc = _inc()
  s1 = panda.PandaStage(c, cfg, complex_features=True, rngs=nnx.Rngs(0))
  s2 = panda.PandaStage(c, cfg, complex_features=True, rngs=nnx.Rngs(1))
  g1, p1 = nnx.split(s1)
  g2, p2 = nnx.split(s2)
  x = np.random.default_rng(2).normal(size=(inc.num_nodes, h, c))
  c1, c2 = panda.stage_priors(inc, dtype=jnp.float64)
  perm = inc.by_node

  def run(p1, p2, x, zero):
    im = jnp.zeros_like(x) if zero else None
    st1, st2 = nnx.merge(g1, p1), nnx.merge(g2, p2)
    ph = (inc.phase_re, inc.phase_im)
    hyp, _ = st1(
      (x, im),
      None,
      inc.node,
      inc.edge,
      c1,
      ph,
      inc.num_edges,
      conj_phase=True,
      recv_sorted=True,
    )
    ph2 = (ph[0][perm], ph[1][perm])
    recv = (x, im) if with_zero_recv else (x, x)
    y, _ = st2(
      hyp,
      recv,
      inc.edge[perm],
      inc.node[perm],
      c2[perm],
      ph2,
      inc.num_nodes,
      conj_phase=False,
      recv_sorted=True,
    )
    return y

  return run, p1, p2, x


# the default suite keeps one case per kind of imaginary handling; the rest run
# with --slow
SLOW = {
  "heads2_code",
  "v1_distinct",
  "v2_distinct",
  "same_mlp",
  "no_aux",
  "prior_only",
}


@pytest.mark.parametrize(
  "name",
  [
    pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else [])
    for n in sorted(CFGS)
  ],
)
def test_zero_imaginary_skip_equals_explicit_zeros(name):
  with jax.enable_x64(True):
    run, p1, p2, x = _stage_pair(CFGS[name], with_zero_recv=True)
    p1, p2 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), (p1, p2))
    x = jnp.asarray(x, jnp.float64)

    def both(p1, p2, x):  # one program: forward and gradient of the two paths
      out = {}
      for zero in (False, True):
        loss = lambda p1, p2, x: (
          lambda y: (jnp.sum(jnp.sin(y[0]) * y[1] + y[0] ** 2), y)
        )(run(p1, p2, x, zero))
        out[zero] = jax.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True)(
          p1, p2, x
        )
      return out

    out = jax.jit(both, compiler_options=panda.FAST_COMPILE)(p1, p2, x)
    (_, got), g_got = out[False]
    (_, want), g_want = out[True]
    for a, b in zip(got, want):
      np.testing.assert_allclose(
        np.asarray(a), np.asarray(b), rtol=0, atol=1e-12
      )
    for a, b in zip(jax.tree.leaves(g_got), jax.tree.leaves(g_want)):
      np.testing.assert_allclose(
        np.asarray(a), np.asarray(b), rtol=0, atol=1e-11
      )


def _gathers(fn, *args) -> int:
  """Gather operations in ``fn``'s traced program (nested jaxprs are printed
  inline)."""
  return str(jax.make_jaxpr(fn)(*args)).count("gather[")


def test_zero_imaginary_part_is_not_gathered():
  """The skipped path gathers fewer per-pair arrays than the explicit-zeros
  one."""
  run, p1, p2, x = _stage_pair({}, with_zero_recv=True)
  x = jnp.asarray(x, jnp.float32)
  skip = _gathers(lambda a, b, v: run(a, b, v, False), p1, p2, x)
  zeros = _gathers(lambda a, b, v: run(a, b, v, True), p1, p2, x)
  assert skip < zeros, (skip, zeros)


def test_gedi_first_layer_real_input_matches_zero_imaginary_input():
  """PandaGeDi's first layer with its real input equals the layer fed ``X + 0i``
  explicitly."""
  with jax.enable_x64(True):
    inc = _inc(3, n=10, m=6)
    cfg = panda.PandaConfig(heads=2, att_dropout=0.0)
    layer = panda.PandaLayer(4, 3, cfg, complex_features=True, rngs=nnx.Rngs(0))
    gd, st = nnx.split(layer)
    st = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), st)
    x = jnp.asarray(np.random.default_rng(4).normal(size=(inc.num_nodes, 4)))
    pri = panda.stage_priors(inc, dtype=jnp.float64)
    f = lambda st: [
      nnx.merge(gd, st)((x, im), None, inc, pri)[0] for im in (None, 0 * x)
    ]
    got, want = jax.jit(f, compiler_options=panda.FAST_COMPILE)(st)
    for a, b in zip(got, want):
      np.testing.assert_allclose(
        np.asarray(a), np.asarray(b), rtol=0, atol=1e-12
      )
