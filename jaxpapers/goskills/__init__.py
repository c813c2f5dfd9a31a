"""GoSkills: group-structured skill retrieval for agent skill libraries.

"Group of Skills: Group-Structured Skill Retrieval for Agent Skill Libraries"
(Zeng, Huo, Zhang, Ye, Zhuo, Liu, Lu, Wen, Tang; arXiv:2605.06978). The pipeline
follows the abstract: anchor-centred skill groups from a typed skill graph,
support groups found through a group graph, a bottleneck to a bounded set of
atomic payloads, and a fixed START / SUPPORT / CHECK / AVOID contract. Its
details are a **reconstruction** (the paper's code was not read), grounded in
the retrieval of its predecessor Graph of Skills
(``davidliuk/graph-of-skills``), whose transition matrix and personalized
PageRank are reproduced exactly (:func:`transition_matrix`,
:func:`personalized_pagerank`). A generated skill library with hidden truth
(:func:`make_skill_library`, :func:`make_tasks`) and a simulated executor
(:func:`simulate_execution`) stand in for SkillsBench/ALFWorld and an LLM agent;
:func:`method_contracts` and :func:`evaluate_methods` run GoSkills, its
ablations and the baselines on them.
"""

from jaxpapers.goskills._benchmark import (
  METHODS,
  METRICS,
  anchor_scores,
  candidate_pool_size,
  evaluate_methods,
  method_contracts,
)
from jaxpapers.goskills._bottleneck import (
  AVOID,
  CHECK,
  NO_ROLE,
  PRIORITY,
  ROLES,
  START,
  SUPPORT,
  budgeted_coverage,
  role_priority,
  visible_requirement_coverage,
)
from jaxpapers.goskills._controls import (
  pool_bottleneck,
  root_first,
  start_only,
  top_group_root,
)
from jaxpapers.goskills._executor import simulate_execution
from jaxpapers.goskills._graph import (
  DANGLING,
  EDGE_TYPES,
  GOS_REVERSE_FACTORS,
  KINDS,
  SkillGraph,
  row_normalize,
  skill_graph,
  transition_matrix,
  transition_weights,
  typed_adjacency,
)
from jaxpapers.goskills._groups import Groups, build_groups, group_graph
from jaxpapers.goskills._ppr import personalized_pagerank, rank_seed_weights
from jaxpapers.goskills._render import render_contract
from jaxpapers.goskills._retrieve import (
  Contract,
  GoSkillsConfig,
  flat_topk,
  gos_bundle,
  goskills_retrieve,
)
from jaxpapers.goskills._scores import (
  bm25_scores,
  build_vocab,
  hashed_embeddings,
  hybrid_scores,
  term_counts,
  tokenize,
)
from jaxpapers.goskills._synthetic import (
  NUM_CHECKABLE,
  REQUIREMENTS,
  SkillLibrary,
  SkillText,
  TaskSet,
  make_skill_library,
  make_tasks,
)

__all__ = [
  # graph and PageRank (GoS)
  "EDGE_TYPES",
  "KINDS",
  "GOS_REVERSE_FACTORS",
  "DANGLING",
  "SkillGraph",
  "skill_graph",
  "transition_weights",
  "transition_matrix",
  "row_normalize",
  "typed_adjacency",
  "personalized_pagerank",
  "rank_seed_weights",
  # scoring
  "tokenize",
  "build_vocab",
  "term_counts",
  "hashed_embeddings",
  "bm25_scores",
  "hybrid_scores",
  # groups, bottleneck, contract
  "ROLES",
  "START",
  "SUPPORT",
  "CHECK",
  "AVOID",
  "NO_ROLE",
  "PRIORITY",
  "Groups",
  "build_groups",
  "group_graph",
  "role_priority",
  "budgeted_coverage",
  "visible_requirement_coverage",
  "GoSkillsConfig",
  "Contract",
  "goskills_retrieve",
  "flat_topk",
  "gos_bundle",
  "render_contract",
  # matched controls (the ablation ladder)
  "top_group_root",
  "root_first",
  "pool_bottleneck",
  "start_only",
  # synthetic world and simulated executor
  "REQUIREMENTS",
  "NUM_CHECKABLE",
  "SkillText",
  "SkillLibrary",
  "TaskSet",
  "make_skill_library",
  "make_tasks",
  "simulate_execution",
  # the skill-access benchmark (every method's contract, scored by the executor)
  "METHODS",
  "METRICS",
  "anchor_scores",
  "candidate_pool_size",
  "method_contracts",
  "evaluate_methods",
]
