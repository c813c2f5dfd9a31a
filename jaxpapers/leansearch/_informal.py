"""Hierarchy informalisation (proxy) and the document template.

The reference informalises Mathlib declarations with an LLM, level by level over
the dependency DAG (Kahn levels; cycle members one level above the maximum),
each prompt holding the informal descriptions already generated for the
declaration's dependencies (capped). Here the LLM is replaced by a deterministic
proxy (project reconstruction): the informal name splits the identifier into
words; the informal description is the declaration's own doc comment plus the
first sentence of each dependency's description, taken in dependency level order
and capped at ``max_deps``. ``hierarchical=False`` drops the dependency context
(the ablation of the claim "hierarchy informalisation improves retrieval").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxpapers.core import validation as V
from jaxpapers.leansearch._coq import Declaration, identifiers

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SKIP_PREFIXES = ("_", "eq_", "match_", "proof_")


def split_identifier(name: str) -> list[str]:
  """Lower-case words of an identifier: split on ``_``, ``.``, ``'`` and
  camelCase.

  Example: ``split_identifier("Nat.add_succ_rLemma") == ["nat", "add", "succ",
  "r", "lemma"]``.

  Args:
    name: a (possibly qualified) identifier.

  Returns:
    Its words, lower-cased, in order.
  """
  words = []
  for part in re.split(r"[_.']+", name):
    words.extend(w.lower() for w in _CAMEL.findall(part))
  return words


def dependencies(
  decls: Sequence[Declaration], *, max_deps: int = 5
) -> list[list[int]]:
  """Type references (plus value references for non-Prop declarations) per
  declaration.

  A reference resolves by short name to the nearest earlier declaration of the
  same file, else to the first declaration with that name elsewhere.
  Compiler-internal names (starting with ``_``, ``eq_``, ``match_``, ``proof_``)
  and self-references are dropped; at most ``max_deps`` dependencies are kept,
  in order of first occurrence.

  Args:
    decls: the corpus.
    max_deps: cap on the dependencies kept per declaration (>= 0).

  Returns:
    ``deps[i]``: indices into ``decls`` of declaration ``i``'s dependencies (at
    most ``max_deps``, no repeats, never ``i``).
  """
  max_deps = V.check_int(max_deps, "max_deps", min_value=0)
  by_name: dict[str, list[int]] = {}
  for j, d in enumerate(decls):
    by_name.setdefault(d.name, []).append(j)
  out = []
  for i, d in enumerate(decls):
    text = d.statement if d.is_prop else d.statement + " " + d.proof
    deps: list[int] = []
    for t in dict.fromkeys(identifiers(text)):
      if t == d.name or t.startswith(_SKIP_PREFIXES) or t not in by_name:
        continue
      cands = by_name[t]
      same = [
        j for j in cands if decls[j].file == d.file and decls[j].index < d.index
      ]
      j = same[-1] if same else cands[0]
      if j != i:
        deps.append(j)
      if len(deps) >= max_deps:
        break
    out.append(deps)
  return out


def dependency_levels(deps: Sequence[Sequence[int]]) -> list[int]:
  """Kahn topological levels of the dependency DAG (leaves are level 0).

  Args:
    deps: ``deps[i]`` lists the nodes node ``i`` depends on.

  Returns:
    ``level[i] = 1 + max(level of its dependencies)`` (0 without dependencies);
    nodes on or behind a cycle get ``max level + 1`` (the reference's rule).
  """
  n = len(deps)
  for i, ds in enumerate(deps):
    for j in ds:
      if not (isinstance(j, int) and 0 <= j < n):
        raise ValueError(
          f"deps[{i}] must hold node indices in [0, {n}), got {j!r}"
        )
  indeg = [len(set(ds)) for ds in deps]
  users: list[list[int]] = [[] for _ in range(n)]
  for i, ds in enumerate(deps):
    for j in set(ds):
      users[j].append(i)
  level = [0] * n
  frontier = [i for i in range(n) if indeg[i] == 0]
  done = [False] * n
  while frontier:
    nxt = []
    for j in frontier:
      done[j] = True
      for i in users[j]:
        level[i] = max(level[i], level[j] + 1)
        indeg[i] -= 1
        if indeg[i] == 0:
          nxt.append(i)
    frontier = nxt
  top = max((level[i] for i in range(n) if done[i]), default=-1) + 1
  return [level[i] if done[i] else top for i in range(n)]


def _first_sentence(text: str) -> str:
  m = re.match(r"(.+?[.!?])(\s|$)", text)
  return (m.group(1) if m else text).strip()


def informal_name(decl: Declaration) -> str:
  """Words of the short name followed by the words of the file's last path
  component.

  Args:
    decl: a declaration.

  Returns:
    Space-joined lower-case words, e.g. ``"add comm peano nat"`` for
    ``add_comm`` in ``Coq.Arith.PeanoNat``.
  """
  return " ".join(
    split_identifier(decl.name)
    + split_identifier(decl.module.rsplit(".", 1)[-1])
  )


def informalize_proxy(
  decls: Sequence[Declaration],
  *,
  hierarchical: bool = True,
  max_deps: int = 5,
  own_doc: bool = True,
) -> list[str]:
  """Informal descriptions of all declarations, generated level by level (proxy,
  no LLM).

  ``description(d) = own(d) + " Uses: " + "; ".join(head(e) for e in deps(d))``
  with ``own(d)`` the doc comment (``own_doc=True``) and ``head(e)`` the first
  sentence of the dependency's doc comment, or its informal name when it has
  none; dependencies are taken in increasing Kahn level (the order the reference
  generates them in). ``hierarchical=False`` returns ``own(d)`` alone.

  Args:
    decls: the corpus.
    hierarchical: include the dependency context.
    max_deps: cap on the dependencies per declaration.
    own_doc: include the declaration's own doc comment (``False`` when that
      comment is the query of the single-query task).

  Returns:
    One string per declaration (possibly empty).
  """
  if not isinstance(hierarchical, bool):
    raise TypeError(f"hierarchical must be a bool, got {hierarchical!r}")
  max_deps = V.check_int(max_deps, "max_deps", min_value=0)
  own = [d.doc if own_doc else "" for d in decls]
  if not hierarchical or max_deps == 0:
    return own
  deps = dependencies(decls, max_deps=max_deps)
  level = dependency_levels(deps)
  heads = [_first_sentence(d.doc) if d.doc else informal_name(d) for d in decls]
  out = [""] * len(decls)
  for i in sorted(range(len(decls)), key=lambda i: level[i]):  # level by level
    ctx = [heads[j] for j in sorted(deps[i], key=lambda j: (level[j], j))]
    out[i] = (own[i] + (" Uses: " + "; ".join(ctx) if ctx else "")).strip()
  return out


def doc_text(decl: Declaration, informal: str = "") -> str:
  """The document template: kind, full name, module, statement, informal name
  and text.

  Args:
    decl: the declaration.
    informal: its informal description (e.g. from :func:`informalize_proxy`), or
      ``""``.

  Returns:
    ``"{kind} {full_name} in {module}: {statement} | {informal name} |
    {informal}"``, stripped of surrounding whitespace.
  """
  return (
    f"{decl.kind} {decl.full_name} in {decl.module}: {decl.statement} | "
    f"{informal_name(decl)} | {informal}"
  ).strip()
