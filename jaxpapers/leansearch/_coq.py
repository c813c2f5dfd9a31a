"""The offline formal corpus: Coq ``.v`` sources parsed into declarations and
premise queries.

Project reconstruction (the paper indexes Mathlib with Lean tooling, which is
not available offline). The Coq standard library from Debian's ``libcoq-stdlib``
package stands in for it; :func:`fetch_coq_stdlib` documents and runs the
download (``apt-get download`` + ``dpkg -x`` into a cache folder, no root
install). The parser is a small state machine over sentences (comments, strings
and ``Module``/``Section`` nesting handled; no Coq elaboration), so names are
resolved by short name only, as the reference's metrics do.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
from collections.abc import Sequence

import numpy as np

from jaxpapers.core import validation as V
from jaxpapers.core.cache import cached_json

DECL_KINDS = (
  "Lemma",
  "Theorem",
  "Corollary",
  "Proposition",
  "Fact",
  "Remark",
  "Definition",
  "Fixpoint",
  "Inductive",
  "Record",
  "Instance",
)
PROP_KINDS = frozenset(
  {"Lemma", "Theorem", "Corollary", "Proposition", "Fact", "Remark"}
)
_PREFIX = (
  r"(?:#\[[^\]]*\]\s*)*(?:(?:Local|Global|Polymorphic|Program|Private)\s+)*"
)
_DECL_RE = re.compile(
  rf"^{_PREFIX}({'|'.join(DECL_KINDS)})\s+([A-Za-z_][\w']*)", re.S
)
_MODULE_RE = re.compile(
  r"^(?:Module(?:\s+Type)?|Section)\s+(?:(?:Import|Export)\s+)?([A-Za-z_][\w']*)"
)
_END_RE = re.compile(r"^End\s+([A-Za-z_][\w']*)\s*$")
_PROOF_END_RE = re.compile(r"^(Qed|Defined|Admitted|Abort|Save)\b")
_IDENT_RE = re.compile(r"[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*")
# Tactic and vernacular words that are never premises.
_NOT_PREMISES = frozenset(
  """Proof Qed Defined Admitted intros intro apply eapply exact rewrite erewrite destruct induction
  unfold fold simpl auto eauto trivial reflexivity symmetry transitivity split left right exists
  eexists assumption contradiction discriminate injection inversion subst case elim generalize
  dependent revert clear assert pose set replace change cut specialize omega lia ring field
  congruence tauto intuition firstorder constructor econstructor red compute cbv lazy vm_compute
  now try repeat do first solve idtac fail in as with at using by forall fun exists match end
  let if then else Type Prop Set rename move before after using_eqn pattern refine absurd exfalso
  decide equality info_auto Hint Resolve Opaque Transparent Local Global using""".split()
)


@dataclasses.dataclass(frozen=True)
class Declaration:
  """One parsed declaration.

  Attributes:
    name: the short name (``plus_comm``).
    full_name: logical file path + enclosing ``Module`` names + name.
    kind: the vernacular keyword (one of ``DECL_KINDS``).
    statement: the declaration sentence (comments removed, whitespace
      collapsed).
    doc: the preceding ``(** ... *)`` comment, or ``""``.
    module: the logical file path (``Coq.Arith.PeanoNat``).
    sections: the enclosing ``Module``/``Section`` names, outermost first.
    proof: the proof script between the statement and
      ``Qed``/``Defined``/``Admitted`` (for non-interactive definitions: the
      body after ``:=``).
    file: the file path relative to the parsed root.
    index: the position of the declaration within its file (0-based).
  """

  name: str
  full_name: str
  kind: str
  statement: str
  doc: str
  module: str
  sections: tuple[str, ...]
  proof: str
  file: str
  index: int

  @property
  def is_prop(self) -> bool:
    return self.kind in PROP_KINDS


@dataclasses.dataclass(frozen=True)
class PremiseQuery:
  """A theorem and the premise groups its proof uses (global premise retrieval).

  Attributes:
    decl: index of the theorem in the declaration list.
    groups: one tuple of declaration indices per used name (all aliases sharing
      the short name that are defined before the theorem); every group is an
      "original" group.
    names: the short name of each group.
  """

  decl: int
  groups: tuple[tuple[int, ...], ...]
  names: tuple[str, ...]


def _scan(text: str) -> tuple[list[tuple[str, str, int]], None]:
  """Splits Coq source into sentences; returns ``[(sentence, doc_before,
  offset)]``.

  Comments (nested) are dropped, a ``(** ... *)`` comment is remembered as the
  doc of the next sentence; strings are kept verbatim (a ``.`` inside a notation
  string does not end a sentence); a sentence ends at a ``.`` followed by
  whitespace or the end of the input.
  """
  out = []
  buf: list[str] = []
  doc = ""
  pending_doc = ""
  i, n = 0, len(text)
  start = 0
  while i < n:
    c = text[i]
    if text.startswith("(*", i):
      depth, j = 1, i + 2
      while j < n and depth:
        if text.startswith("(*", j):
          depth, j = depth + 1, j + 2
        elif text.startswith("*)", j):
          depth, j = depth - 1, j + 2
        else:
          j += 1
      body = text[i:j]
      if (
        body.startswith("(**") and not body.startswith("(***") and len(body) > 5
      ):
        pending_doc = " ".join(body[3:-2].strip("* \n\t").split())
      buf.append(" ")
      i = j
      continue
    if c == '"':
      j = i + 1
      while j < n:
        if text[j] == '"':
          if j + 1 < n and text[j + 1] == '"':  # "" escapes a quote
            j += 2
            continue
          break
        j += 1
      buf.append(text[i : j + 1])
      i = j + 1
      continue
    if not "".join(buf).strip():
      start = i
      doc = pending_doc
    if (
      c == "."
      and (i + 1 == n or text[i + 1].isspace())
      and not (buf and buf[-1] == ".")
    ):
      s = " ".join("".join(buf).split())
      if s:
        out.append((s, doc, start))
      buf, doc, pending_doc = [], "", ""
      i += 1
      continue
    # proof bullets: their own sentences
    if c in "-+*{}" and not "".join(buf).strip():
      out.append((c, "", i))
      i += 1
      continue
    buf.append(c)
    i += 1
  s = " ".join("".join(buf).split())
  if s:
    out.append((s, doc, start))
  return out, None


def _has_body(sentence: str) -> bool:
  """Whether a declaration sentence carries its body (``:=`` outside
  strings)."""
  return ":=" in re.sub(r'"[^"]*"', "", sentence)


def parse_coq_source(
  text: str, *, module: str = "Top", file: str = ""
) -> list[Declaration]:
  """Parses one ``.v`` file's text into declarations (host-side).

  Args:
    text: the source.
    module: the logical path of the file (prefix of every ``full_name``).
    file: the file path recorded in each declaration.

  Returns:
    The declarations in source order. ``Module X := Y.`` and ``Declare Module``
    do not open a scope; ``Module``, ``Module Type`` and ``Section`` do until
    the matching ``End``.
  """
  if not isinstance(text, str):
    raise TypeError(
      f"text must be a str (Coq source), got {type(text).__name__}"
    )
  sentences, _ = _scan(text)
  decls: list[Declaration] = []
  stack: list[tuple[str, bool]] = []  # (name, is_module)
  i = 0
  while i < len(sentences):
    s, doc, _ = sentences[i]
    i += 1
    m = _END_RE.match(s)
    if m:
      for j in range(len(stack) - 1, -1, -1):
        if stack[j][0] == m.group(1):
          del stack[j:]
          break
      continue
    m = _MODULE_RE.match(s)
    if m and not _has_body(s):
      stack.append((m.group(1), not s.startswith("Section")))
      continue
    m = _DECL_RE.match(s)
    if not m:
      continue
    kind, name = m.group(1), m.group(2)
    proof_parts = []
    interactive = not _has_body(s) or (
      kind == "Instance" and s.rstrip().endswith(":= {")
    )
    if interactive:
      while i < len(sentences):
        t = sentences[i][0]
        i += 1
        if _PROOF_END_RE.match(t):
          break
        if _DECL_RE.match(t) or _END_RE.match(t):  # no proof after all
          i -= 1
          break
        proof_parts.append(t)
      proof = " . ".join(proof_parts)
    else:
      proof = s.split(":=", 1)[1].strip()
    path = [module, *(n for n, is_mod in stack if is_mod), name]
    decls.append(
      Declaration(
        name=name,
        full_name=".".join(path),
        kind=kind,
        statement=s,
        doc=doc,
        module=module,
        sections=tuple(n for n, _ in stack),
        proof=proof,
        file=file,
        index=len(decls),
      )
    )
  return decls


def parse_coq_tree(
  root: str | os.PathLike, *, subdirs: Sequence[str] | None = None
) -> list[Declaration]:
  """Parses every ``.v`` file under ``root`` (host-side; sorted, deterministic
  order).

  Args:
    root: a folder; logical paths are ``Coq.<relative path>`` for the standard
      library layout (``.../theories``) and ``<relative path>`` otherwise.
    subdirs: restrict to these top-level subfolders (``("Init", "Arith")``), or
      all.

  Returns:
    ``list[Declaration]`` over all files, file by file in sorted path order.

  Raises:
    FileNotFoundError: ``root`` is not a folder or holds no ``.v`` file.
  """
  V.check_path(root, "root")
  root = pathlib.Path(root)
  if not root.is_dir():
    raise FileNotFoundError(
      f"root must be a folder of .v files, got {str(root)!r}"
    )
  files = sorted(root.rglob("*.v"))
  if subdirs is not None:
    keep = set(subdirs)
    files = [f for f in files if f.relative_to(root).parts[0] in keep]
  if not files:
    raise FileNotFoundError(
      f"root {str(root)!r} holds no .v files (subdirs={subdirs})"
    )
  prefix = "Coq." if root.name == "theories" else ""
  out: list[Declaration] = []
  for f in files:
    rel = f.relative_to(root)
    module = prefix + ".".join(rel.with_suffix("").parts)
    text = f.read_text(encoding="utf-8", errors="replace")
    out.extend(parse_coq_source(text, module=module, file=str(rel)))
  return out


def identifiers(text: str) -> list[str]:
  """Short names of the identifiers in ``text`` (qualified names reduced to the
  last part).

  Args:
    text: Coq source, e.g. a proof script; string literals are skipped.

  Returns:
    The identifiers in order of appearance, repeats kept (``Nat.add_comm`` ->
    ``add_comm``).
  """
  return [
    t.rsplit(".", 1)[-1]
    for t in _IDENT_RE.findall(re.sub(r'"[^"]*"', " ", text))
  ]


def _later(decls: Sequence[Declaration], i: int, j: int) -> bool:
  """Whether declaration j is i itself or comes after i in i's file (leakage,
  spec §3.4)."""
  return j == i or (
    decls[j].file == decls[i].file and decls[j].index >= decls[i].index
  )


def premise_queries(
  decls: Sequence[Declaration], *, min_premises: int = 2, max_premises: int = 10
) -> list[PremiseQuery]:
  """Global-premise-retrieval queries: theorems and the corpus names their
  proofs use.

  Each identifier of the proof script that resolves (by short name) to a corpus
  declaration available at that point (not the theorem itself, not later in its
  file) is one premise group; its aliases are all such declarations with that
  short name. Theorems whose number of groups lies in ``[min_premises,
  max_premises]`` are kept (host-side).

  Args:
    decls: the corpus, e.g. from :func:`parse_coq_tree`.
    min_premises: the fewest premise groups a kept theorem has (>= 1).
    max_premises: the most premise groups a kept theorem has (>=
      ``min_premises``).

  Returns:
    ``list[PremiseQuery]`` in declaration order.
  """
  min_premises = V.check_int(min_premises, "min_premises", min_value=1)
  max_premises = V.check_int(
    max_premises, "max_premises", min_value=min_premises
  )
  by_name: dict[str, list[int]] = {}
  for j, d in enumerate(decls):
    by_name.setdefault(d.name, []).append(j)
  out = []
  for i, d in enumerate(decls):
    if not d.is_prop or not d.proof:
      continue
    names, groups = [], []
    for t in dict.fromkeys(identifiers(d.proof)):
      if t in _NOT_PREMISES or t not in by_name:
        continue
      aliases = tuple(j for j in by_name[t] if not _later(decls, i, j))
      if aliases:
        names.append(t)
        groups.append(aliases)
    if min_premises <= len(groups) <= max_premises:
      out.append(PremiseQuery(decl=i, groups=tuple(groups), names=tuple(names)))
  return out


def pack_premise_groups(
  queries: Sequence[PremiseQuery], max_aliases: int = 8
) -> tuple[np.ndarray, np.ndarray]:
  """The premise groups of ``queries`` as the padded arrays the premise metrics
  read.

  The input of :func:`premise_group_recall` and :func:`covered_at_k` (host-side
  numpy).

  Args:
    queries: ``[Q]`` premise queries (:func:`premise_queries`), at least one.
    max_aliases: the most aliases kept per group (the first ones; >= 1).

  Returns:
    ``(group_alias, group_mask)``: int32 ``[Q, G, A]`` alias ids (``-1`` pads)
    and bool ``[Q, G]`` (True for a real group), with ``G`` the most groups of a
    query and ``A = min(max_aliases, the most aliases of a group)``.

  Example::

    alias, mask = pack_premise_groups(premise_queries(decls))
    recall = premise_group_recall(retrieved, alias, mask, k=10)
  """
  max_aliases = V.check_int(max_aliases, "max_aliases", min_value=1)
  if not queries or not any(q.groups for q in queries):
    raise ValueError(
      "queries must hold at least one premise query with a premise group"
    )
  n_groups = max(len(q.groups) for q in queries)
  n_alias = min(max_aliases, max(len(g) for q in queries for g in q.groups))
  alias = np.full((len(queries), n_groups, n_alias), -1, np.int32)
  mask = np.zeros((len(queries), n_groups), bool)
  for r, q in enumerate(queries):
    for g, grp in enumerate(q.groups):
      alias[r, g, : min(n_alias, len(grp))] = grp[:n_alias]
      mask[r, g] = True
  return alias, mask


COQ_PACKAGE = "libcoq-stdlib"
COQ_THEORIES = "usr/lib/ocaml/coq/theories"


def fetch_coq_stdlib(cache_dir: str | os.PathLike) -> pathlib.Path:
  """The Coq standard library sources, downloaded once into ``cache_dir``
  (host-side).

  Runs ``apt-get download libcoq-stdlib`` (Debian's package of Coq 8.16's
  standard library; needs the package registry, no root) and ``dpkg -x`` into
  ``cache_dir``; a later call reuses the unpacked tree. Equivalent shell
  commands::

    cd CACHE && apt-get download libcoq-stdlib && dpkg -x libcoq-stdlib_*.deb unpacked

  Args:
    cache_dir: the folder the package is downloaded and unpacked into (``~``
      expanded).

  Returns:
    ``<cache_dir>/unpacked/usr/lib/ocaml/coq/theories`` (583 ``.v`` files for
    8.16.1).

  Raises:
    FileNotFoundError: the tree is absent and ``apt-get``/``dpkg`` are
      unavailable or fail.
  """
  V.check_path(cache_dir, "cache_dir")
  cache = pathlib.Path(cache_dir).expanduser()
  theories = cache / "unpacked" / COQ_THEORIES
  if theories.is_dir():
    return theories
  cache.mkdir(parents=True, exist_ok=True)
  try:
    if not list(cache.glob(f"{COQ_PACKAGE}_*.deb")):
      subprocess.run(
        ["apt-get", "download", COQ_PACKAGE], cwd=cache, check=True
      )
    deb = sorted(cache.glob(f"{COQ_PACKAGE}_*.deb"))[-1]
    subprocess.run(
      ["dpkg", "-x", str(deb), str(cache / "unpacked")], check=True
    )
  except (OSError, subprocess.CalledProcessError, IndexError) as e:
    raise FileNotFoundError(
      "could not obtain the Coq standard library into "
      f"cache_dir={str(cache)!r}: run `apt-get download {COQ_PACKAGE} && dpkg "
      f"-x {COQ_PACKAGE}_*.deb unpacked` there ({e})"
    ) from e
  return theories


def load_coq_stdlib(
  cache_dir: str | os.PathLike | None = None, *, subdirs: Sequence[str] = ()
) -> list[Declaration]:
  """The Coq standard library's declarations, downloaded and parsed once
  (host-side).

  :func:`fetch_coq_stdlib` into ``<cache_dir>/coq``, then
  :func:`parse_coq_tree`, whose parse is cached as ``<cache_dir>/decls_<subdirs
  joined by +, or all>.json`` by :func:`jaxpapers.core.cached_json` (a later
  call reads it back; a corrupt file is named in a warning and parsed again).

  Args:
    cache_dir: the folder of the download and the parse; None:
      ``$XDG_CACHE_HOME/jaxpapers/leansearch`` (``~/.cache`` without the
      variable).
    subdirs: restrict to these top-level subfolders (``("Init", "Arith")``);
      empty: all.

  Returns:
    ``list[Declaration]`` as :func:`parse_coq_tree` returns them.
  """
  if cache_dir is None:
    base = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    cache_dir = pathlib.Path(base) / "jaxpapers" / "leansearch"
  cache = pathlib.Path(V.check_path(cache_dir, "cache_dir")).expanduser()
  root = fetch_coq_stdlib(cache / "coq")
  tag = "all" if not subdirs else "+".join(subdirs)
  records = cached_json(
    cache / f"decls_{tag}.json",
    lambda: [
      dataclasses.asdict(d)
      for d in parse_coq_tree(root, subdirs=subdirs or None)
    ],
  )
  return [
    Declaration(**{**r, "sections": tuple(r["sections"])}) for r in records
  ]
