"""Bad-input battery for ``jaxpapers.goskills``: malformed calls, eagerly and
under jit."""

import numpy as np

import jaxpapers.goskills as S
from tests.bad_input_util import Case, assert_covers, parametrize, run_case

N, R = 6, 3
REQ = np.eye(N, R, dtype=bool)
G = S.skill_graph(
  [0, 1, 2], [1, 2, 3], [0, 1, 5], REQ, [0, 0, 2, 0, 1, 0], [10] * N
)
BAD_G = S.skill_graph(
  [0, 1, 9], [1, 2, 3], [0, 1, 5], REQ, [0, 0, 2, 0, 1, 0], [10] * N
)
T = np.full((N, N), 1.0 / N, np.float32)
SEED = np.ones(N, np.float32)
SC = np.linspace(1.0, 0.0, 2 * N, dtype=np.float32).reshape(2, N)
SC_NAN = SC.copy()
SC_NAN[0, 1] = np.nan
VIS = np.ones((2, R), bool)
CANDS = np.array([0, 1, 2], np.int32)
ROLES3 = np.array([0, 1, 2], np.int32)
MASK3 = np.ones(3, bool)
TEXTS = [S.SkillText(f"s{i}", f"skill {i}", f"# s{i}") for i in range(N)]
HOST = "host-side (numpy text and data building)"
_LIB = S.make_skill_library(0, n_skills=20, reuse=0.3, decoy_rate=0.0)
_WORLD = (_LIB, S.make_tasks(1, _LIB, n=2))
# The smallest pipeline (one group, no BFS, one pick): its jit case compiles
# fastest.
TINY_CFG = S.GoSkillsConfig(
  budget=1,
  n_anchors=1,
  n_groups=2,
  plan_size=1,
  depth=0,
  max_support=0,
  max_check=0,
  max_avoid=0,
  iters=1,
)


def _all_minus_one(field):
  def check(out):
    arr = np.asarray(getattr(out, field) if field else out)
    assert (arr == -1).all(), arr

  return check


def _ids_minus_one(out):
  assert (np.asarray(out[0].ids) == -1).all()


CASES = [
  Case(
    "skill_graph",
    S.skill_graph,
    ([0], [1, 2], [0], REQ, [0] * N, [1] * N),
    match=("dst"),
  ),
  Case(
    "transition_weights",
    S.transition_weights,
    (BAD_G,),
    match=("src and dst must lie"),
    jit=("nan"),
  ),
  Case(
    "transition_matrix",
    S.transition_matrix,
    (G, np.ones(4, np.float32)),
    match=r"rev_factor must have shape \(6,\)",
  ),
  Case(
    "row_normalize",
    S.row_normalize,
    (np.ones((2, 3), np.float32),),
    match=("square"),
  ),
  Case(
    "row_normalize",
    S.row_normalize,
    (T,),
    {"dangling": "teleport"},
    match="dangling must be one of",
    id="row_normalize-dangling",
  ),
  Case(
    "typed_adjacency",
    S.typed_adjacency,
    (T,),
    error=TypeError,
    match=("g must be a SkillGraph"),
  ),
  Case(
    "personalized_pagerank",
    S.personalized_pagerank,
    (T, -SEED),
    match="seed must be finite and non-negative",
    jit="nan",
  ),
  Case(
    "personalized_pagerank",
    S.personalized_pagerank,
    (T, SEED),
    {"teleport": 0.0},
    match="teleport must be > 0",
    id="ppr-teleport",
  ),
  Case(
    "personalized_pagerank",
    S.personalized_pagerank,
    (T * 2, SEED),
    match="row-stochastic",
    jit="nan",
    id="ppr-not-stochastic",
  ),
  Case("rank_seed_weights", S.rank_seed_weights, (0,), match="k must be >= 1"),
  Case(
    "tokenize",
    S.tokenize,
    (3,),
    error=TypeError,
    match="text must be a str",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "build_vocab",
    S.build_vocab,
    ("abc",),
    error=TypeError,
    match="sequence of strings",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "term_counts",
    S.term_counts,
    (["a"], {}),
    error=TypeError,
    match="vocab must be",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "hashed_embeddings",
    S.hashed_embeddings,
    (["a"],),
    {"dim": 4},
    match="dim must be >= 8",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "bm25_scores",
    S.bm25_scores,
    (np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)),
    match="share the vocabulary",
  ),
  Case(
    "bm25_scores",
    S.bm25_scores,
    (-np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)),
    match="q_counts must be finite and >= 0",
    jit="nan",
    id="bm25-negative",
  ),
  Case(
    "hybrid_scores",
    S.hybrid_scores,
    (np.ones((2, 4), np.float32), np.ones((N, 4), np.float32), SC),
    {"alpha": 2.0},
    match="alpha must be <= 1",
  ),
  Case(
    "hybrid_scores",
    S.hybrid_scores,
    (np.ones((2, 4), np.float32), np.ones((N, 4), np.float32), SC_NAN),
    match="bm25 must be finite",
    jit="nan",
    id="hybrid-nan",
  ),
  Case(
    "role_priority",
    S.role_priority,
    (np.zeros(3, np.float32),),
    error=TypeError,
    match="roles must have a integer",
  ),
  Case(
    "build_groups",
    S.build_groups,
    (G, np.array([0, 9]), VIS[0]),
    match=r"anchors must lie in \[0, n=6\)",
    jit="nan",
    jit_check=_all_minus_one("members"),
  ),
  Case(
    "build_groups",
    S.build_groups,
    (G, np.array([0]), VIS[0]),
    {"start": "goal"},
    match="start must be one of",
    id="build_groups-start",
  ),
  Case(
    "group_graph",
    S.group_graph,
    (
      S.build_groups(G, np.array([0, 1]), VIS[0]),
      np.ones((N, N - 1), np.float32),
    ),
    match="w must be square",
  ),
  Case(
    "budgeted_coverage",
    S.budgeted_coverage,
    (CANDS, ROLES3, MASK3, REQ, VIS[0]),
    {"budget": 0},
    match="budget must be >= 1",
  ),
  Case(
    "budgeted_coverage",
    S.budgeted_coverage,
    (CANDS + 9, ROLES3, MASK3, REQ, VIS[0]),
    {"budget": 2},
    match="cands must lie in",
    jit="nan",
    jit_check=_all_minus_one(None),
    id="budgeted_coverage-range",
  ),
  Case(
    "budgeted_coverage",
    S.budgeted_coverage,
    (CANDS, ROLES3, MASK3, REQ, VIS[0]),
    {"budget": 2, "token_budget": 100},
    match="token_budget needs cost",
    id="budgeted_coverage-cost",
  ),
  Case(
    "visible_requirement_coverage",
    S.visible_requirement_coverage,
    (np.array([[0, 1]]), REQ, np.ones((2, R), bool)),
    match="visible must have shape",
  ),
  Case(
    "visible_requirement_coverage",
    S.visible_requirement_coverage,
    (np.array([[0, 7]]), REQ, np.ones((1, R), bool)),
    match="selected must lie in",
    jit="nan",
    id="coverage-range",
  ),
  Case(
    "GoSkillsConfig",
    S.GoSkillsConfig,
    (),
    {"plan_size": 9},
    match=("plan_size"),
  ),
  Case(
    "goskills_retrieve",
    S.goskills_retrieve,
    (G, SC_NAN, VIS, TINY_CFG),
    match="scores must be finite",
    jit="nan",
    jit_check=_ids_minus_one,
  ),
  Case(
    "goskills_retrieve",
    S.goskills_retrieve,
    (G, SC[:, :4], VIS, S.GoSkillsConfig(n_groups=4, plan_size=2)),
    match="scores must be",
    id="goskills_retrieve-shape",
  ),
  Case("flat_topk", S.flat_topk, (SC, 9), match="k must be <= 6"),
  Case(
    "gos_bundle",
    S.gos_bundle,
    (T, SC),
    {"seeds": 0},
    match=("seeds must be >= 1"),
  ),
  Case(
    "render_contract",
    S.render_contract,
    (np.zeros((2, 2), int), np.zeros((2, 2), int), np.zeros(0, int), TEXTS),
    match="one contract",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_skill_library",
    S.make_skill_library,
    (0,),
    {"n_skills": 5},
    match="n_skills must be >= 20",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "make_tasks",
    S.make_tasks,
    (0, None),
    {"n": 3},
    error=TypeError,
    match="lib must be a SkillLibrary",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "simulate_execution",
    S.simulate_execution,
    (
      np.zeros(3, int),
      np.zeros(3, int),
      np.zeros((1, 0), int),
      None,
      None,
      np.random.default_rng(0),
    ),
    error=TypeError,
    match="tasks must be a TaskSet",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "root_first",
    S.root_first,
    (np.zeros((2, 3), np.int32), np.zeros(3, np.int32), 2),
    match=r"root \[T\]",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "start_only",
    S.start_only,
    (np.zeros((2, 3), np.int32), np.zeros((2, 2), np.int32)),
    match="one shape",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "anchor_scores",
    S.anchor_scores,
    ("lib", None, None),
    {"alpha": 0.5},
    error=TypeError,
    match="lib must be a SkillLibrary",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "method_contracts",
    S.method_contracts,
    (_WORLD[0], _WORLD[1], SC, {"budget": 2}, np.random.default_rng(0)),
    error=TypeError,
    match="config must be a GoSkillsConfig",
    jit=None,
    jit_reason=HOST,
  ),
  Case(
    "evaluate_methods",
    S.evaluate_methods,
    ({"goskills": None}, _WORLD[0], _WORLD[1], SC),
    {"budgets": (1,), "rng": np.random.default_rng(0), "p_decoy": 0.5},
    match=(
      r"contracts must hold every method of METHODS, missing \['anchor_start'"
    ),
    jit=None,
    jit_reason=HOST,
  ),
]

EXEMPT = {
  "METHODS": "a constant: the benchmark's method names",
  "METRICS": "a constant: the benchmark's metric names",
  "candidate_pool_size": (
    "integer arithmetic on a GoSkillsConfig, which checks its fields"
  ),
  "top_group_root": (
    "a jitted vmap of build_groups over tasks; build_groups' cases cover its "
    "inputs"
  ),
  "pool_bottleneck": (
    "a jitted vmap of budgeted_coverage over tasks; its cases cover the inputs"
  ),
  "SkillGraph": "a pytree container; built and checked by skill_graph",
  "Groups": "a pytree result container of build_groups",
  "Contract": "a pytree result container of the retrievers",
  "SkillText": "a frozen text record",
  "SkillLibrary": "a result container of make_skill_library",
  "TaskSet": "a result container of make_tasks",
}


@parametrize(CASES)
def test_bad_input(case, mode):
  run_case(case, mode)


def test_covers_public_api():
  assert_covers(S, CASES, EXEMPT)


# --------------------------------------------------- degenerate but legal input


def test_degenerate_inputs_have_documented_values():
  # A task with no visible requirement has coverage 1; an all-zero seed gives
  # zero PageRank.
  cov = S.visible_requirement_coverage(
    np.array([[0]]), REQ, np.zeros((1, R), bool)
  )
  assert float(cov[0]) == 1.0
  # A budget larger than the candidates pads with -1.
  picks = np.asarray(
    S.budgeted_coverage(CANDS, ROLES3, MASK3, REQ, VIS[0], budget=5)
  )
  assert (picks[3:] == -1).all() and picks[0] == 0
  # Equal BM25 for every skill: the hybrid keeps only the cosine.
  h = S.hybrid_scores(
    np.ones((1, 2)), np.ones((3, 2)), np.full((1, 3), 5.0), alpha=0.5
  )
  np.testing.assert_allclose(np.asarray(h), 0.5)
