"""Bad-input battery for jaxpapers.panda (eager and under jax.jit)."""

import jax
import numpy as np
from flax import nnx

from jaxpapers import hypergraph as hg
from jaxpapers import panda
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

f32 = np.float32
INC = hg.from_directed_hyperedges([[0], [2]], [[1, 2], [3]], 4)
X = np.arange(12, dtype=f32).reshape(4, 3) / 10
Y = np.array([0, 1, 1, 0])
MASK = np.array([True, True, False, False])
DATA = hg.make_data(INC, X, Y, train_mask=MASK, val_mask=~MASK, test_mask=~MASK)
UNDIR = hg.as_undirected(DATA)
CFG = panda.PandaConfig(heads=2)
X2 = np.ones((4, 2), f32)  # 2 features for models built for 3


def _model(backbone, in_features=3):
  return panda.make_model(
    backbone,
    CFG,
    in_features=in_features,
    num_classes=2,
    hidden=4,
    rngs=nnx.Rngs(0),
  )


MODELS = {b: _model(b) for b in ("gedi", "hgnn", "hypergcn", "phenomnn")}
LAYER = panda.PandaLayer(3, 4, CFG, rngs=nnx.Rngs(0))
STAGE = panda.PandaStage(2, CFG, rngs=nnx.Rngs(0))


def _fed(backbone, x):
  data = DATA if backbone == "gedi" else UNDIR
  return MODELS[backbone](data.replace(x=x))


def _hgnn_fn(in_features):
  return lambda rngs: panda.PandaHGNN(in_features, 2, CFG, hidden=4, rngs=rngs)


def _eval_step(x):
  gd, params, rest, _ = panda.init(_hgnn_fn(3), jax.random.key(0))
  return panda.eval_step(gd, params, rest, UNDIR.replace(x=x))


def _train_step(x):
  gd, params, rest, opt = panda.init(_hgnn_fn(3), jax.random.key(0))
  return panda.train_step(
    gd,
    params,
    rest,
    opt,
    UNDIR.replace(x=x),
    MASK.astype(f32),
    jax.random.key(1),
    1e-2,
    0.0,
  )[2]


SPACE = dict(
  num_layers=("choice", (1,)),
  hidden=("choice", (4,)),
  dropout=("uniform", 0.0, 0.5),
  lr=("loguniform", 1e-3, 1e-2),
  wd=("loguniform", 1e-6, 1e-3),
  heads=("choice", (1,)),
  lam0=("choice", (1.0,)),
  lam1=("choice", (1.0,)),
  phenom_steps=("choice", (2,)),
)
HP = panda.applicable_hparams(panda.draw_trial(SPACE, 0, 0), "hgnn", "panda")


def _stage_call(xs):
  p = INC.nnz
  return STAGE(
    (xs, None),
    None,
    INC.node,
    INC.edge,
    np.ones(p, f32),
    None,
    INC.num_edges,
    conj_phase=True,
  )[0][0]


CASES = [
  Case(
    "panda.prior_table_layout",
    lambda: panda.prior_table_layout(0).__enter__(),
    error=ValueError,
    match="pair_entry_cost must be an int >= 1 or None, got 0",
    jit=None,
    jit_reason="a host-side trace-time setting, not a traced computation",
    id="prior_table_layout-zero",
  ),
  Case(
    "panda.check_search_space",
    lambda: panda.check_search_space(
      {k: v for k, v in SPACE.items() if k != "heads"}
    ),
    error=ValueError,
    match="lacks \\['heads'\\]",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="check_search_space",
  ),
  Case(
    "panda.draw_trial",
    lambda: panda.draw_trial(SPACE, 0, -1),
    error=ValueError,
    match="trial must be an int >= 0",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="draw_trial",
  ),
  Case(
    "panda.applicable_hparams",
    lambda: panda.applicable_hparams(
      panda.draw_trial(SPACE, 0, 0), "hgnn", "matched"
    ),
    error=ValueError,
    match="arm must be one of",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="applicable_hparams",
  ),
  Case(
    "panda.select_trial",
    lambda: panda.select_trial([]),
    error=ValueError,
    match="no trials",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="select_trial",
  ),
  Case(
    "panda.trial_structure",
    lambda: panda.trial_structure([("hidden", 4)]),
    error=TypeError,
    match="hp must be a mapping",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="trial_structure",
  ),
  Case(
    "panda.trial_model_fn",
    lambda: panda.trial_model_fn(UNDIR, "gat", "panda", HP),
    error=ValueError,
    match="backbone must be one of",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="trial_model_fn",
  ),
  Case(
    "panda.structure_model_fn",
    lambda: panda.structure_model_fn(UNDIR.x, "hgnn", "panda", HP),
    error=TypeError,
    match="data must be a HypergraphData",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="structure_model_fn",
  ),
  Case(
    "panda.trial_keys",
    lambda: panda.trial_keys(0, 2, 0, 3),
    error=ValueError,
    match="phase must be 0 \\(search trial\\) or 1",
    jit=None,
    jit_reason="builds the search's key list from static ints",
    id="trial_keys",
  ),
  Case(
    "panda.count_params",
    lambda: panda.count_params(None),
    error=TypeError,
    match="model_fn must be a callable",
    jit=None,
    jit_reason=(
      "abstract initialisation of a model function, not a traced computation"
    ),
    id="count_params",
  ),
  Case(
    "panda.match_hidden",
    lambda: panda.match_hidden(UNDIR, "hgnn", "panda", {}, 0),
    error=ValueError,
    match="target must be an int >= 1, got 0",
    jit=None,
    jit_reason=(
      "searches a width over abstract initialisations, not a traced computation"
    ),
    id="match_hidden",
  ),
  Case(
    "panda.TrialCache",
    lambda: panda.TrialCache(UNDIR, "hgnn", epochs=0, runs=2),
    error=ValueError,
    match="epochs must be a positive int",
    jit=None,
    jit_reason="host-side search bookkeeping, not a traced computation",
    id="TrialCache",
  ),
  Case(
    "panda.load_dataset",
    lambda: panda.load_dataset("texas", None, num_splits=2, seed=0),
    error=ValueError,
    match="root must be given",
    jit=None,
    jit_reason="reads files from a folder, not a traced computation",
    id="load_dataset",
  ),
  Case(
    "panda.reduce_features",
    lambda: panda.reduce_features(DATA, 2.5, 0),
    error=TypeError,
    match="k must be an int",
    jit=None,
    jit_reason=(
      "a host-side SVD of the feature matrix, not a traced computation"
    ),
    id="reduce_features",
  ),
  Case(
    "panda.PandaGeDi",
    lambda x: _fed("gedi", x),
    (X2,),
    match=(
      r"data.x has shape \(4, 2\), but the model was built for in_features=3"
    ),
    id="gedi-features",
  ),
  Case(
    "panda.PandaHGNN",
    lambda x: _fed("hgnn", x),
    (X2,),
    match="built for in_features=3",
    id="hgnn-features",
  ),
  Case(
    "panda.PandaHyperGCN",
    lambda x: _fed("hypergcn", x),
    (X2,),
    match="built for in_features=3",
    id="hypergcn-features",
  ),
  Case(
    "panda.PandaPhenomNN",
    lambda x: _fed("phenomnn", x),
    (X2,),
    match="built for in_features=3",
    id="phenomnn-features",
  ),
  Case(
    "panda.PandaHyperGCN",
    lambda: panda.PandaHyperGCN(
      3, 2, CFG, hidden=4, flow="target", rngs=nnx.Rngs(0)
    ),
    match="flow must be 'code' or 'receiver'",
    id="hypergcn-flow",
  ),
  Case(
    "panda.PandaGeDi",
    lambda: panda.PandaGeDi(3, 2, "panda", rngs=nnx.Rngs(0)),
    error=TypeError,
    match="cfg must be a PandaConfig",
    id="gedi-cfg-type",
  ),
  Case(
    "panda.make_model",
    lambda: _model("gat"),
    match="backbone must be one of",
    id="make-model-backbone",
  ),
  Case(
    "panda.make_model",
    lambda: _model("hgnn", in_features=0),
    match="in_features must be an int >= 1",
    id="make-model-features",
  ),
  Case(
    "panda.make_model",
    lambda: panda.make_model(
      "hgnn", {"heads": 2}, in_features=3, num_classes=2, rngs=nnx.Rngs(0)
    ),
    error=TypeError,
    match="cfg must be a PandaConfig or None",
    id="make-model-cfg",
  ),
  Case(
    "panda.PandaConfig",
    lambda: panda.PandaConfig(mix="fixed:half"),
    match="needs a number in .0, 1. after 'fixed:'",
    id="config-fixed-mix",
  ),
  Case(
    "panda.PandaConfig",
    lambda: panda.PandaConfig(heads=0),
    match="heads must be a positive int",
    id="config-heads",
  ),
  Case(
    "panda.PandaConfig",
    lambda: panda.PandaConfig(att_dropout=1.5),
    match=r"att_dropout must be None or a float in \[0, 1\)",
    id="config-dropout",
  ),
  Case(
    "panda.PandaLayer",
    lambda x: LAYER((x, None), None, INC, panda.stage_priors(INC))[0][0],
    (X2,),
    match=r"x re must have shape \[num_nodes, in_features\] = \(4, 3\)",
    id="layer-features",
  ),
  Case(
    "panda.coalesced_graph",
    lambda p: panda.coalesced_graph(UNDIR.incidence, p),
    (np.ones(3, f32),),
    match=r"p must have shape \(4,\)",
    id="coalesced-graph-shape",
  ),
  Case(
    "panda.PandaLayer",
    lambda: panda.PandaLayer(3, 0, CFG, rngs=nnx.Rngs(0)),
    match="channels must be a positive int",
    id="layer-channels",
  ),
  Case(
    "panda.PandaStage",
    _stage_call,
    (np.ones((4, 2, 3), f32),),
    match=r"x_send must have shape \[N, heads=2, channels=2\]",
    id="stage-shape",
  ),
  Case(
    "panda.PandaStage",
    lambda f: STAGE(
      (np.ones((4, 2, 2), f32), None),
      None,
      INC.node,
      INC.edge,
      np.ones(INC.nnz, f32),
      None,
      INC.num_edges,
      conj_phase=True,
      prior_factors=(np.ones(4, f32), f),
    )[0][0],
    (np.ones(INC.num_edges + 1, f32),),
    match=r"prior_factors: f_recv must be None or of shape \[2\]",
    id="stage-prior-factors",
  ),
  Case(
    "panda.PandaStage",
    lambda: panda.PandaStage(0, CFG, rngs=nnx.Rngs(0)),
    match="channels must be a positive int",
    id="stage-channels",
  ),
  Case(
    "panda.stage_priors",
    lambda: panda.stage_priors(INC, "rw"),
    match="kind must be one of",
    id="priors-kind",
  ),
  Case(
    "panda.stage_prior_factors",
    lambda: panda.stage_prior_factors(INC, "rw"),
    match="kind must be one of",
    id="prior-factors-kind",
  ),
  Case(
    "panda.stage_prior_factors",
    lambda: panda.stage_prior_factors(DATA),
    error=TypeError,
    match="inc must be an Incidence",
    id="prior-factors-type",
  ),
  Case(
    "panda.stage_priors",
    lambda: panda.stage_priors(DATA),
    error=TypeError,
    match="inc must be an Incidence",
    id="priors-type",
  ),
  Case(
    "panda.init",
    lambda: panda.init(_hgnn_fn(0), jax.random.key(0)),
    match="in_features must be an int >= 1",
    id="init-bad-model",
  ),
  Case(
    "panda.eval_step",
    _eval_step,
    (X2,),
    match="built for in_features=3",
    id=("eval-step-features"),
  ),
  Case(
    "panda.train_step",
    _train_step,
    (X2,),
    match="built for in_features=3",
    id="train-step-features",
  ),
  Case(
    "panda.make_trainer",
    lambda: panda.make_trainer(_hgnn_fn(3), 0),
    match="epochs must be a positive int",
    id="trainer-epochs",
  ),
  Case(
    "panda.sweep_fns",
    panda.sweep_fns,
    ("hgnn",),
    error=TypeError,
    match="model_fn must be a callable",
    jit=None,
    jit_reason="builds the per-run functions on the host",
    id="sweep-fns-model-fn",
  ),
  Case(
    "panda.with_hparams",
    lambda: panda.with_hparams(_hgnn_fn(3)(nnx.Rngs(params=0)), {"lam0": 1.0}),
    match=r"\['lam0'\] are not used by the PandaHGNN",
    jit=None,
    jit_reason=(
      "mutates a host-side module (its values may be traced; "
      "the names are static)"
    ),
    id="with-hparams-unused",
  ),
  Case(
    "panda.with_hparams",
    lambda: panda.with_hparams(_hgnn_fn(3)(nnx.Rngs(params=0)), {"heads": 2}),
    match=r"traced hyperparameters must be among .*got \['heads'\]",
    jit=None,
    jit_reason=(
      "mutates a host-side module (its values may be traced; "
      "the names are static)"
    ),
    id="with-hparams-name",
  ),
  Case(
    "panda.fit",
    lambda: panda.fit(DATA, _hgnn_fn(3), epochs=1, lr=-5e-3),
    match=r"lr must be > 0, got -0.005",
    jit=None,
    jit_reason="a host-side driver (runs its own jitted trainer)",
    id="fit-negative-lr",
  ),
  Case(
    "panda.fit",
    lambda: panda.fit(DATA, _hgnn_fn(3), epochs=1, weight_decay=float("nan")),
    match=r"weight_decay must be a finite number",
    jit=None,
    jit_reason="a host-side driver (runs its own jitted trainer)",
    id="fit-nan-wd",
  ),
  Case(
    "panda.make_trainer",
    lambda: panda.make_trainer(_hgnn_fn(3), 1)(
      DATA,
      jax.random.split(jax.random.key(0), 2),
      [5e-3, -5e-3],
      [0.0, 0.0],
      [0, 0],
    ),
    match=r"lrs must hold finite numbers > 0, got \[-0.005",
    jit=None,
    jit_reason="run() is a host-side driver of the jitted sweep",
    id="trainer-run-negative-lr",
  ),
  Case(
    "panda.make_trainer",
    lambda: panda.make_trainer(_hgnn_fn(3), 1)(
      DATA, jax.random.split(jax.random.key(0), 1), [5e-3], [-1.0], [0]
    ),
    match=r"wds must hold finite numbers >= 0",
    jit=None,
    jit_reason="run() is a host-side driver of the jitted sweep",
    id="trainer-run-negative-wd",
  ),
  Case(
    "panda.fit",
    lambda: panda.fit(DATA, _hgnn_fn(3), epochs=1, split=3),
    match=r"split must be in \[0, 1\)",
    jit=None,
    jit_reason="a host-side driver (runs its own jitted trainer)",
    id="fit-split",
  ),
]


def _load_bad_shape():
  model = _model("hgnn")
  sd = {k: np.zeros(1) for k in ("Chebs.0.lin_update.weight",)}
  return panda.load_reference_weights(model, sd)


CASES += [
  Case(
    "panda.load_reference_weights",
    _load_bad_shape,
    match=(
      r"state_dict\['Chebs.0.lin_update.weight'\] has shape \(1,\), "
      r"the model expects \(8, 3\)"
    ),
    jit=None,
    jit_reason=(
      "host-side copy of weights into a model, not a traced computation"
    ),
  ),
  Case(
    "panda.load_reference_weights",
    lambda: panda.load_reference_weights(LAYER, {}),
    error=TypeError,
    match=(
      r"model must be a PandaGeDi, PandaHGNN, PandaHyperGCN or PandaPhenomNN, "
      r"got PandaLayer"
    ),
    jit=None,
    jit_reason=(
      "host-side copy of weights into a model, not a traced computation"
    ),
  ),
  Case(
    "panda.reference_config",
    lambda: panda.reference_config("hgnn", "gedi+gedi-att++att"),
    match=r"expected 'gedi\+X\+\+gedi\+Y' or 'X\+\+Y'",
    jit=None,
    jit_reason="maps static option strings, not arrays",
  ),
  Case(
    "panda.reference_config",
    lambda: panda.reference_config("hgnn", "gedi+att++gedi+att"),
    match=r"stage 1 must use 'gedi-att' or 'hgat'",
    jit=None,
    jit_reason="maps static option strings, not arrays",
  ),
  Case(
    "panda.reference_stage_names",
    lambda: panda.reference_stage_names(LAYER),
    error=TypeError,
    match=r"stage must be a PandaStage, got PandaLayer",
    jit=None,
    jit_reason="names parameters of a built module, not a traced computation",
  ),
]

EXEMPT = {
  "SEARCH_ARMS": "a constant: the search's arm names",
  "SEARCH_SPACE_ORDER": "a constant: the order of a trial's draws",
  "TRACED_TRIAL_HPARAMS": (
    "a constant: the trial values a compiled program takes as arguments"
  ),
  "REFERENCE_ATTENTION_TYPES": (
    "a constant: the reference tuner's attention strings"
  ),
  "StageAux": (
    "a result container (per-incidence coefficients returned by a stage)"
  ),
  "best_val_test": (
    "reads the history dict that make_trainer's run returns (not user input)"
  ),
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(panda, CASES, EXEMPT)
