"""Bad-input battery for ``jaxpapers.dense_limits``: malformed calls, eagerly
and under jit."""

import jax
import numpy as np
import pytest
from flax import nnx

import jaxpapers.dense_limits as D
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

F32 = np.float32
M = np.random.default_rng(0).uniform(-1, 1, (4, 5)).astype(F32)
M_NAN = M.copy()
M_NAN[1, 2] = np.nan
KEY = jax.random.key(0)
NET = D.StronglyDenseMLP(2, 1, widths=(4, 4), bound=1.0, rngs=nnx.Rngs(0))
COMP = D.compress_mlp(NET, 2, KEY)
GRAPH = D.computational_graph(NET)
TARGET = D.bump_target(KEY, 2, 2)
X3 = np.zeros((3, 3), F32)
CTOR = "module constructor: static configuration"
HOST = "host-side: takes a module or static configuration"
FINITE = "m must be finite"

CASES = [
  Case("cut_norm_exact", D.cut_norm_exact, (M[0],), match="m must have rank 2"),
  Case(
    "cut_norm_exact",
    D.cut_norm_exact,
    (M_NAN,),
    match=FINITE,
    jit="nan",
    id=("exact-nan"),
  ),
  Case(
    "cut_norm_exact",
    D.cut_norm_exact,
    (np.zeros((21, 22), F32),),
    match=r"min\(rows, cols\) <= 20",
    id="exact-too-big",
  ),
  Case(
    "cut_norm_lb",
    D.cut_norm_lb,
    (M, 0),
    error=TypeError,
    match=("key must be a typed PRNG key"),
  ),
  Case(
    "cut_norm_lb",
    D.cut_norm_lb,
    (M, KEY),
    {"restarts": 0},
    match="restarts must be >= 1",
    id="lb-restarts",
  ),
  Case(
    "cut_norm_lb",
    D.cut_norm_lb,
    (M_NAN, KEY),
    match=FINITE,
    jit="nan",
    id=("lb-nan"),
  ),
  Case("cut_norm_sdp", D.cut_norm_sdp, (M_NAN, KEY), match=FINITE, jit="nan"),
  Case(
    "cut_norm_sdp",
    D.cut_norm_sdp,
    (M, KEY),
    {"rank": 0},
    match=("rank must be >= 1"),
    id=("sdp-rank"),
  ),
  Case(
    "augment",
    D.augment,
    (np.zeros((0, 3), F32),),
    match=("m must not be empty"),
  ),
  Case("fk_decompose", D.fk_decompose, (M, 0, KEY), match="k must be >= 1"),
  Case(
    "fk_decompose",
    D.fk_decompose,
    (M_NAN, 2, KEY),
    match=FINITE,
    jit="nan",
    id=("fk-nan"),
  ),
  Case(
    "fk_decompose",
    D.fk_decompose,
    (np.zeros((21, 21), F32), 2, KEY),
    {"exact": True},
    match="exact=True needs",
    id="fk-exact-big",
  ),
  Case(
    "reconstruct",
    D.reconstruct,
    (
      D.CutDecomposition(
        np.ones(2, F32), np.ones((3, 4), F32), np.ones((2, 5), F32)
      ),
    ),
    match="share the number of terms K",
    jit=None,
    jit_reason=(
      "the decomposition is a NamedTuple argument; "
      "shapes are checked the same way"
    ),
  ),
  Case(
    "compress_mlp",
    D.compress_mlp,
    (NET, 2, KEY),
    {"method": "pca"},
    match="method must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "compress_mlp",
    D.compress_mlp,
    ("net", 2, KEY),
    error=TypeError,
    match="model must be a StronglyDenseMLP",
    jit=None,
    jit_reason=HOST,
    id="compress-type",
  ),
  Case(
    "apply_compressed",
    D.apply_compressed,
    (COMP, X3),
    match=r"x must have shape \[batch, 2\]",
    jit=None,
    jit_reason="the compressed net is a pytree of arrays; x's shape is static",
  ),
  Case(
    "StronglyDenseMLP",
    D.StronglyDenseMLP,
    (2, 1),
    {"widths": (), "bound": 1.0, "rngs": nnx.Rngs(0)},
    match="widths must be a non-empty",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "StronglyDenseMLP",
    D.StronglyDenseMLP,
    (2, 1),
    {"widths": (3,), "bound": 1.0, "normalize": "max", "rngs": nnx.Rngs(0)},
    match="normalize must be one of",
    jit=None,
    jit_reason=CTOR,
    id="dense-normalize",
  ),
  Case(
    "StronglyDenseMLP",
    D.StronglyDenseMLP,
    (2, 1),
    {"widths": (3,), "bound": 1.0, "init": "xavier", "rngs": nnx.Rngs(0)},
    match="init must be one of",
    jit=None,
    jit_reason=CTOR,
    id="dense-init",
  ),
  Case(
    "StronglyDenseMLP",
    D.StronglyDenseMLP,
    (2, 1),
    {"widths": (3,), "bound": 0.0, "rngs": nnx.Rngs(0)},
    match="bound must be > 0",
    jit=None,
    jit_reason=CTOR,
    id="dense-bound",
  ),
  Case(
    "SparseFaninMLP",
    D.SparseFaninMLP,
    (2, 1),
    {"widths": (3,), "bound": 1.0, "fan_in": 0, "rngs": nnx.Rngs(0)},
    match="fan_in must be >= 1",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "PlainMLP",
    D.PlainMLP,
    (2, 1),
    {"widths": (0,), "rngs": nnx.Rngs(0)},
    match=r"widths\[0\] must be >= 1",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "project_params",
    D.project_params,
    ({"w": M}, -1.0),
    match=("bound must be > 0"),
  ),
  Case(
    "box_projection",
    D.box_projection,
    (float("nan"),),
    match="bound must be a finite number",
    jit=None,
    jit_reason="returns an optax transformation (static configuration)",
  ),
  Case(
    "computational_graph",
    D.computational_graph,
    (NET.w0,),
    error=TypeError,
    match="model must be a StronglyDenseMLP",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "message_passing_apply",
    D.message_passing_apply,
    (GRAPH, X3),
    match=r"x must have shape \[batch, 2\]",
    jit=None,
    jit_reason="the graph must be concrete (closed over under jit)",
  ),
  Case(
    "bump_target",
    D.bump_target,
    (KEY, 0, 2),
    match="d must be >= 1",
    jit=None,
    jit_reason="static sizes",
  ),
  Case(
    "eval_bumps",
    D.eval_bumps,
    (TARGET, X3),
    match=r"x must have shape \[batch, 2\]",
    jit=None,
    jit_reason="the target is a NamedTuple argument; x's shape is static",
  ),
  Case(
    "truncate_compressed",
    D.truncate_compressed,
    (COMP, 0),
    match="k",
    jit=None,
    jit_reason=(
      "the compressed net is a pytree argument; k is a static slice length"
    ),
  ),
  Case(
    "refit_compressed",
    D.refit_compressed,
    (COMP, NET, 0),
    match="k",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "compression_errors",
    D.compression_errors,
    (NET, X3, (), KEY),
    match="ks must be a non-empty sequence",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_model",
    lambda: D.make_model(
      "dense@4", 2, 1, widths=(4,), bound=1.0, fan_in=2, rngs=nnx.Rngs(0)
    ),
    match="cls must be one of",
    jit=None,
    jit_reason=CTOR,
  ),
  Case(
    "bump_data",
    lambda: D.bump_data(0, d=2, grid=2, n_train=1, n_test=4),
    match="n_train",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "lipschitz_summary",
    lambda: D.lipschitz_summary(0.0, 2, 2, (1.0,)),
    match="target_sd",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "regularity_checks",
    lambda: D.regularity_checks(
      7, bound=1.0, fk_size=4, fk_k=2, exact_size=3, exact_trials=1
    ),
    error=TypeError,
    match="key",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "regularity_summary",
    lambda: D.regularity_summary([0.5], [1.0], 1.0, 1, []),
    match="rows",
    jit=None,
    jit_reason=HOST,
  ),
]

EXEMPT = {
  "BumpTarget": "a NamedTuple result container",
  "CompressedMLP": "a NamedTuple result container",
  "ComputationalGraph": "a NamedTuple result container",
  "CutDecomposition": "a NamedTuple result container",
  "CutNormBounds": "a NamedTuple result container",
  "FKTrace": "a NamedTuple result container",
  "FactoredLayer": "a NamedTuple result container",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(D, CASES, EXEMPT)


def test_zero_matrix_is_legal_and_gives_zero():
  z = np.zeros((3, 4), F32)
  assert float(D.cut_norm_exact(z)) == 0.0
  dec, tr = D.fk_decompose(z, 2, KEY)
  np.testing.assert_array_equal(np.asarray(dec.a), 0.0)
  assert float(tr.frob_sq[-1]) == pytest.approx(0.0)
