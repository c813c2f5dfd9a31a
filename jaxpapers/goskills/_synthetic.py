"""A generated skill library and tasks with hidden truth (the offline stand-in
for SkillsBench).

**Library** (:func:`make_skill_library`; all text is templated, so BM25 and
embeddings work):

* ``n_workflows`` latent workflows of 3-6 steps on one object (a procedure
  ``"<verb> the <object> <tool>"``); each step after the first depends on an
  earlier one (the previous step with probability 0.7), and consecutive steps
  are linked by ``workflow`` edges. With probability ``reuse`` a step is an
  existing procedure of another workflow (shared steps make hubs and give a step
  several workflows' predecessors). The first step is the entry.
* Requirements: a new step carries one requirement tag (of :data:`REQUIREMENTS`)
  with probability ``tag_rate``; the first half of the tags are *checkable*. A
  tagged step with a checkable tag gets a validator (``validates`` edge) with
  probability ``validator_rate``.
* Decoys: with probability ``decoy_rate`` a new step gets a near-duplicate
  "quick" variant with the same requirement tag (an ``alternative`` edge to the
  step) and a failure note flagging it (``conflicts`` edge from the note).
* Distractors fill the library to ``n_skills``: random procedures (tagged with
  probability ``tag_rate``), with random ``semantic`` edges to and from the
  workflows.

**Tasks** (:func:`make_tasks`): a workflow with at least two tags; the text
names the goal (the last step), the starting object and 2-4 visible requirements
from the workflow's tags. Hidden truth: the required steps, the entry step, the
checkable visible requirements that have a validator in the workflow, and the
decoys of the workflow's steps.

Everything is a reconstruction of the paper's evaluation setting at CPU scale.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.goskills import _graph as G

VERBS = (
  "load",
  "parse",
  "clean",
  "merge",
  "filter",
  "aggregate",
  "plot",
  "export",
  "resample",
  "tokenize",
  "compress",
  "encrypt",
  "transcode",
  "index",
  "deduplicate",
  "normalize",
  "annotate",
  "render",
  "schedule",
  "upload",
)
OBJECTS = (
  "csv table",
  "json config",
  "parquet dataset",
  "sql database",
  "pdf report",
  "png image",
  "audio clip",
  "video file",
  "log archive",
  "spreadsheet",
  "html page",
  "xml feed",
  "time series",
  "text corpus",
  "geojson map",
  "email inbox",
  "git repository",
  "docker image",
  "sensor stream",
  "invoice batch",
)
TOOLS = (
  "with pandas",
  "with ffmpeg",
  "with sqlite",
  "with numpy",
  "with pillow",
  "with a shell script",
  "with regex",
  "with matplotlib",
  "with polars",
  "via the rest api",
  "with openpyxl",
  "with pdfplumber",
)
REQUIREMENTS = (
  "utf-8 encoding",
  "no missing values",
  "sorted by timestamp",
  "300 dpi resolution",
  "gzip compression",
  "iso dates",
  "unique row ids",
  "schema validated",
  "lossless quality",
  "redacted personal data",
  "size under ten megabytes",
  "consistent units",
  "deterministic order",
  "signed checksum",
  "alt text",
  "mono channel audio",
  "sixteen khz sampling",
  "rotated logs",
  "lowercase headers",
  "trimmed whitespace",
  "utc timezone",
  "sha256 digest",
  "page numbers",
  "embedded fonts",
  "quoted fields",
  "valid json",
  "no duplicate keys",
  "bounded memory",
  "idempotent reruns",
  "atomic writes",
  "retries on failure",
  "rate limited calls",
)
NUM_CHECKABLE = len(REQUIREMENTS) // 2
"""Tags ``0 .. NUM_CHECKABLE - 1`` are checkable (can have a validator)."""


def _slug(s: str) -> str:
  return "-".join(
    w for w in s.replace("via the ", "").replace("with ", "").split()
  )


@dataclasses.dataclass(frozen=True)
class SkillText:
  """The text of one skill: ``name``, one-line ``purpose`` (its description),
  ``payload``.

  Attributes:
    name: the skill's name (a slug).
    purpose: one line saying what the skill does (the text retrieval scores).
    payload: the instructions an executor reads when the skill is in a contract.
  """

  name: str
  purpose: str
  payload: str


@dataclasses.dataclass
class SkillLibrary:
  """A generated library.

  Attributes:
    graph: the :class:`SkillGraph` (``n`` skills, ``R = len(REQUIREMENTS)``).
    texts: ``n`` :class:`SkillText`.
    is_decoy: ``[n]`` bool, the near-duplicate decoys.
    workflows: the step ids of each workflow (entry first).
    decoys_of: step id -> its decoy ids.
  """

  graph: G.SkillGraph
  texts: list[SkillText]
  is_decoy: np.ndarray
  workflows: list[list[int]]
  decoys_of: dict[int, list[int]]

  @property
  def n(self) -> int:
    return len(self.texts)


@dataclasses.dataclass
class TaskSet:
  """Tasks with hidden truth (``T`` tasks).

  Attributes:
    texts: ``T`` task descriptions.
    visible: ``[T, R]`` bool visible requirements.
    required: ``[T, L]`` int32 required step ids (-1 padded).
    entry: ``[T]`` int32 entry step.
    check_tags: ``[T, R]`` bool checkable visible requirements with a validator
      in the library.
    pitfalls: ``[T, P]`` int32 decoys of the workflow's steps (-1 padded).
    workflow: ``[T]`` int32 workflow index.
  """

  texts: list
  visible: np.ndarray
  required: np.ndarray
  entry: np.ndarray
  check_tags: np.ndarray
  pitfalls: np.ndarray
  workflow: np.ndarray


def make_skill_library(
  seed: int,
  *,
  n_skills: int,
  n_workflows: int | None = None,
  reuse: float = 0.2,
  decoy_rate: float = 0.1,
  tag_rate: float = 0.7,
  validator_rate: float = 0.8,
  semantic_rate: float = 0.4,
) -> SkillLibrary:
  """Generates a library (see the module docstring); deterministic in ``seed``.

  Args:
    seed: numpy seed.
    n_skills: total skills ``n`` (>= 20).
    n_workflows: latent workflows (default ``n_skills // 12``).
    reuse, decoy_rate, tag_rate, validator_rate, semantic_rate: probabilities in
      [0, 1].

  Returns:
    :class:`SkillLibrary` (edges padded to ``4 * n_skills`` with ``emask``, so
    that libraries of one size share compiled programs).
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n_skills = V.check_int(n_skills, "n_skills", min_value=20, max_value=4000)
  n_workflows = n_skills // 12 if n_workflows is None else n_workflows
  n_workflows = V.check_int(
    n_workflows, "n_workflows", min_value=1, max_value=n_skills // 10
  )
  for name, v in (
    ("reuse", reuse),
    ("decoy_rate", decoy_rate),
    ("tag_rate", tag_rate),
    ("validator_rate", validator_rate),
    ("semantic_rate", semantic_rate),
  ):
    V.check_float(v, name, min_value=0.0, max_value=1.0)
  rng = np.random.default_rng(seed)
  r = len(REQUIREMENTS)
  texts, kind, cost, tags, decoy = [], [], [], [], []
  edges = []  # (src, dst, type)
  used = set()

  def add(name, purpose, k, c, tag, is_decoy=False):
    texts.append(
      SkillText(
        name, purpose, f"# {name}\n{purpose}.\nRun `{name}` on the input."
      )
    )
    kind.append(k)
    cost.append(int(c))
    tags.append(tag)
    decoy.append(is_decoy)
    return len(texts) - 1

  def new_triple(obj=None, tool=None):
    for _ in range(1000):
      v = VERBS[rng.integers(len(VERBS))]
      o = (
        obj
        if obj is not None and rng.random() < 0.7
        else OBJECTS[rng.integers(len(OBJECTS))]
      )
      t = (
        tool
        if tool is not None and rng.random() < 0.5
        else TOOLS[rng.integers(len(TOOLS))]
      )
      if (v, o, t) not in used:
        used.add((v, o, t))
        return v, o, t
    raise RuntimeError("skill vocabulary exhausted; lower n_skills")

  def phrase(tag):
    return "" if tag < 0 else f", ensuring {REQUIREMENTS[tag]}"

  workflows, decoys_of, procedures = [], {}, []
  for _ in range(n_workflows):
    obj = OBJECTS[rng.integers(len(OBJECTS))]
    tool = TOOLS[rng.integers(len(TOOLS))]
    steps = []
    for _ in range(int(rng.integers(3, 7))):
      if procedures and rng.random() < reuse:
        cand = [p for p in procedures if p not in steps]
        if cand:
          steps.append(int(cand[rng.integers(len(cand))]))
          continue
      v, o, t = new_triple(obj, tool)
      tag = int(rng.integers(r)) if rng.random() < tag_rate else -1
      s = add(
        f"{v}-{_slug(o)}-{_slug(t)}",
        f"{v.capitalize()} the {o} {t}{phrase(tag)}",
        G.PROCEDURE,
        rng.integers(80, 401),
        tag,
      )
      procedures.append(s)
      steps.append(s)
      if 0 <= tag < NUM_CHECKABLE and rng.random() < validator_rate:
        val = add(
          f"check-{_slug(REQUIREMENTS[tag])}-{_slug(o)}",
          f"Validate that the {o} has {REQUIREMENTS[tag]}",
          G.VALIDATOR,
          rng.integers(60, 151),
          tag,
        )
        edges.append((val, s, G.VALIDATES))
      if rng.random() < decoy_rate:
        d = add(
          f"quick-{v}-{_slug(o)}-{_slug(t)}",
          f"Quickly {v} the {o} {t}{phrase(tag)}",
          G.PROCEDURE,
          rng.integers(80, 401),
          tag,
          True,
        )
        what = REQUIREMENTS[tag] if tag >= 0 else "the output"
        note = add(
          f"pitfall-quick-{v}-{_slug(o)}",
          f"Pitfall: the quick {v} of the {o} breaks {what}",
          G.NOTE,
          rng.integers(20, 41),
          -1,
        )
        edges.append((d, s, G.ALTERNATIVE))
        edges.append((note, d, G.CONFLICTS))
        decoys_of.setdefault(s, []).append(d)
    for i in range(1, len(steps)):
      parent = i - 1 if rng.random() < 0.7 else int(rng.integers(i))
      edges.append((steps[parent], steps[i], G.DEPENDENCY))
      edges.append((steps[i - 1], steps[i], G.WORKFLOW))
    workflows.append(steps)
  if len(texts) > n_skills:
    raise ValueError(
      f"n_workflows={n_workflows} made {len(texts)} skills > "
      f"n_skills={n_skills}; lower it"
    )
  n_real = len(texts)
  while len(texts) < n_skills:
    v, o, t = new_triple()
    tag = int(rng.integers(r)) if rng.random() < tag_rate else -1
    add(
      f"{v}-{_slug(o)}-{_slug(t)}",
      f"{v.capitalize()} the {o} {t}{phrase(tag)}",
      G.PROCEDURE,
      rng.integers(80, 401),
      tag,
    )
  n = len(texts)
  for s in range(n_real, n):  # distractors link into the library
    if rng.random() < semantic_rate:
      edges.append((s, int(rng.integers(n)), G.SEMANTIC))
  for s in procedures:
    if rng.random() < semantic_rate:
      edges.append(
        (s, int(rng.integers(n_real, n)) if n > n_real else s, G.SEMANTIC)
      )
  edges = [e for e in edges if e[0] != e[1]]
  # a fixed edge capacity: every library of one size has the same shapes
  cap = 4 * n_skills
  if len(edges) > cap:
    raise ValueError(
      f"{len(edges)} edges exceed the capacity 4 * n_skills = {cap}"
    )
  emask = np.arange(cap) < len(edges)
  e = np.zeros((cap, 3), np.int32)
  e[: len(edges)] = np.asarray(edges, np.int32).reshape(-1, 3)
  req = np.zeros((n, r), bool)
  tg = np.asarray(tags)
  req[np.nonzero(tg >= 0)[0], tg[tg >= 0]] = True
  graph = G.skill_graph(
    e[:, 0],
    e[:, 1],
    e[:, 2],
    req,
    np.asarray(kind),
    np.asarray(cost),
    emask=emask,
  )
  return SkillLibrary(graph, texts, np.asarray(decoy), workflows, decoys_of)


def make_tasks(
  seed: int,
  lib: SkillLibrary,
  *,
  n: int,
  visible_per_task: tuple[int, int] = (2, 4),
) -> TaskSet:
  """Samples ``n`` tasks from the library's workflows (see the module
  docstring).

  Args:
    seed: numpy seed.
    lib: the :class:`SkillLibrary`.
    n: number of tasks (>= 1).
    visible_per_task: inclusive range of visible requirements per task.

  Returns:
    :class:`TaskSet`.
  """
  seed = V.check_int(seed, "seed", min_value=0)
  n = V.check_int(n, "n", min_value=1)
  if not isinstance(lib, SkillLibrary):
    raise TypeError(f"lib must be a SkillLibrary, got {type(lib).__name__}")
  lo, hi = visible_per_task
  lo = V.check_int(lo, "visible_per_task[0]", min_value=1)
  hi = V.check_int(hi, "visible_per_task[1]", min_value=lo)
  rng = np.random.default_rng(seed)
  req = np.asarray(lib.graph.req)
  kind = np.asarray(lib.graph.kind)
  g = G.numpy_graph(lib.graph)
  has_val = np.zeros(req.shape[1], bool)
  vmask = (g["etype"] == G.VALIDATES) & g["emask"]
  step_tag_val = {}  # step -> tags with a validator attached to it
  for v, s in zip(g["src"][vmask], g["dst"][vmask]):
    if kind[v] == G.VALIDATOR:
      step_tag_val.setdefault(int(s), set()).update(
        np.nonzero(req[v])[0].tolist()
      )
  del has_val
  eligible = [
    i
    for i, w in enumerate(lib.workflows)
    if len({*np.nonzero(req[w])[1]}) >= lo
  ]
  if not eligible:
    raise ValueError(
      f"no workflow has {lo} distinct requirement tags; raise tag_rate"
    )
  r = req.shape[1]
  lmax = max(len(w) for w in lib.workflows)
  pmax = max(
    [sum(len(lib.decoys_of.get(s, [])) for s in w) for w in lib.workflows] + [1]
  )
  out = dict(
    visible=np.zeros((n, r), bool),
    required=np.full((n, lmax), -1, np.int32),
    entry=np.zeros(n, np.int32),
    check_tags=np.zeros((n, r), bool),
    pitfalls=np.full((n, pmax), -1, np.int32),
    workflow=np.zeros(n, np.int32),
  )
  texts = []
  for i in range(n):
    w = eligible[int(rng.integers(len(eligible)))]
    steps = lib.workflows[w]
    wtags = sorted({*np.nonzero(req[steps])[1]})
    k = int(rng.integers(lo, min(hi, len(wtags)) + 1))
    vis = sorted(rng.choice(wtags, size=k, replace=False).tolist())
    out["visible"][i, vis] = True
    out["required"][i, : len(steps)] = steps
    out["entry"][i] = steps[0]
    val_tags = set().union(*[step_tag_val.get(s, set()) for s in steps])
    for t in vis:
      if t < NUM_CHECKABLE and t in val_tags:
        out["check_tags"][i, t] = True
    pits = [d for s in steps for d in lib.decoys_of.get(s, [])]
    out["pitfalls"][i, : len(pits)] = pits
    out["workflow"][i] = w
    first = (
      lib.texts[steps[0]]
      .purpose.split(" the ", 1)[1]
      .split(" with")[0]
      .split(" via")[0]
    )
    goal = lib.texts[steps[-1]].purpose.split(",")[0]
    goal = goal[0].lower() + goal[1:]
    reqs = "; ".join(REQUIREMENTS[t] for t in vis)
    texts.append(
      f"Starting from the {first.split(',')[0]}, I need to {goal}. "
      f"Requirements: {reqs}."
    )
  return TaskSet(texts=texts, **out)
