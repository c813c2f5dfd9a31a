"""The Coq parser, premise ground truth and the informalisation proxy on files
written here."""

import logging
import pathlib

import numpy as np
import pytest

import jaxpapers.leansearch as L

SRC = """(* a plain comment (* nested *) with Lemma fake : False. inside *)
(** Docs of the first lemma:
    spread over two lines. *)
Lemma base : forall n : nat,
  n = n.
Proof. intros n. reflexivity. Qed.

Notation "x .+1" := (S x) (at level 2).
Notation "'IF' c 'then' a" := (c a) (at level 200).

Module Outer.
  Section S1.
    Variable A : Type.
    Section S2.
      (** Inner lemma, two sections deep. *)
      Theorem inner : forall x : A, x = x.
      Proof. intro x. apply base. Qed.
    End S2.
  End S1.
  Module Inner.
    Definition twice (n : nat) := n + n.
  End Inner.
  Module Alias := Inner.
  Lemma uses_both : forall n, Inner.twice n = n + n.
  Proof.
    intros.
    - unfold Inner.twice. rewrite base. apply inner.
  Defined.
End Outer.

Lemma after : True.
Proof. exact I. Admitted.
"""


@pytest.fixture(scope="module")
def decls(tmp_path_factory):
  root = tmp_path_factory.mktemp("coq") / "theories"
  (root / "Sub").mkdir(parents=True)
  (root / "Sub" / "A.v").write_text(SRC)
  (root / "B.v").write_text(
    "(** B doc here. *)\nLemma base : True.\nProof. trivial. Qed.\n"
  )
  return L.parse_coq_tree(root)


def test_parser_names_kinds_docs_and_nesting(decls):
  by = {d.full_name: d for d in decls}
  assert list(by) == [
    "Coq.B.base",
    "Coq.Sub.A.base",
    "Coq.Sub.A.Outer.inner",
    "Coq.Sub.A.Outer.Inner.twice",
    "Coq.Sub.A.Outer.uses_both",
    "Coq.Sub.A.after",
  ]
  first = by["Coq.Sub.A.base"]
  assert (
    first.kind == "Lemma"
    and first.statement == "Lemma base : forall n : nat, n = n"
  )
  assert first.doc == "Docs of the first lemma: spread over two lines."
  assert first.proof == "Proof . intros n . reflexivity"
  inner = by["Coq.Sub.A.Outer.inner"]
  assert inner.sections == ("Outer", "S1", "S2") and inner.kind == "Theorem"
  assert inner.doc == "Inner lemma, two sections deep."
  twice = by["Coq.Sub.A.Outer.Inner.twice"]
  assert twice.proof == "n + n" and twice.doc == ""
  assert by["Coq.Sub.A.after"].sections == ()  # every scope closed again
  assert "unfold Inner.twice" in by["Coq.Sub.A.Outer.uses_both"].proof
  assert [d.index for d in decls if d.file == "Sub/A.v"] == [0, 1, 2, 3, 4]


def test_premise_groups_aliases_and_leakage(decls):
  idx = {d.full_name: i for i, d in enumerate(decls)}
  qs = {decls[q.decl].name: q for q in L.premise_queries(decls, min_premises=1)}
  ub = qs["uses_both"]
  assert ub.names == ("twice", "base", "inner")
  # 'base' has two aliases (B.v and A.v), both earlier than uses_both.
  assert set(ub.groups[1]) == {idx["Coq.B.base"], idx["Coq.Sub.A.base"]}
  # A proof never lists the theorem itself or later declarations of its file.
  assert qs["inner"].groups == ((idx["Coq.B.base"], idx["Coq.Sub.A.base"]),)
  assert "after" not in qs  # 'exact I': I is not a corpus name
  assert set(qs) == {"inner", "uses_both"}
  assert "uses_both" not in {
    decls[q.decl].name for q in L.premise_queries(decls, min_premises=4)
  }


def test_dependency_levels_dag_and_cycle():
  # 0 <- 1 <- 2, 3 alone, 4 <-> 5 a cycle, 6 depends on the cycle.
  deps = [[], [0], [1, 0], [], [5], [4], [4]]
  assert L.dependency_levels(deps) == [0, 1, 2, 0, 3, 3, 3]


def test_informalisation_hierarchical_vs_flat(decls):
  flat = L.informalize_proxy(decls, hierarchical=False)
  hier = L.informalize_proxy(decls, hierarchical=True)
  i = next(i for i, d in enumerate(decls) if d.name == "inner")
  assert flat[i] == "Inner lemma, two sections deep."
  # A Prop's dependencies are its type references only: 'base' is used in the
  # proof, not in the statement, so the hierarchical text adds nothing.
  assert hier[i] == flat[i]
  j = next(i for i, d in enumerate(decls) if d.name == "uses_both")
  # 'Inner.twice' in the statement resolves to the same file's definition;
  # without a doc comment its head is its informal name (name words + file
  # words).
  assert flat[j] == "" and hier[j] == "Uses: twice a"
  no_own = L.informalize_proxy(decls, own_doc=False)
  assert not no_own[i].startswith("Inner lemma")
  assert L.split_identifier("Nat.add_succ_rLemma") == [
    "nat",
    "add",
    "succ",
    "r",
    "lemma",
  ]
  assert "Coq.Sub.A.base" in L.doc_text(
    decls[1], "x"
  ) and "base sub a" not in L.doc_text(decls[1])


def test_statement_split():
  hyps, concl = L.split_statement(
    "Lemma f (n : nat) : forall m, n <= m -> (m -> n) -> S n <= S m"
  )
  assert hyps == ["n <= m", "(m -> n)"] and concl == "S n <= S m"
  assert np.array_equal(L.split_statement("Lemma t : True")[1], "True")


def test_pack_premise_groups_pads_and_truncates_aliases():
  qs = [
    L.PremiseQuery(decl=5, groups=((1, 2, 3), (4,)), names=("a", "b")),
    L.PremiseQuery(decl=6, groups=((0,),), names=("c",)),
  ]
  alias, mask = L.pack_premise_groups(qs, max_aliases=2)
  assert alias.dtype == np.int32 and mask.dtype == bool
  np.testing.assert_array_equal(alias, [[[1, 2], [4, -1]], [[0, -1], [-1, -1]]])
  np.testing.assert_array_equal(mask, [[True, True], [True, False]])
  # A = the longest group when it is shorter than max_aliases; the arrays feed
  # the metrics.
  alias, mask = L.pack_premise_groups(qs)
  assert alias.shape == (2, 2, 3)
  retrieved = np.array([[3, 9], [7, 8]], np.int32)
  np.testing.assert_allclose(
    L.premise_group_recall(retrieved, alias, mask, 2), [0.5, 0.0]
  )


def test_the_parse_cache_is_read_back_and_a_corrupt_one_parsed_again(
  tmp_path, monkeypatch, caplog
):
  """load_coq_stdlib's parse, cached under cache_dir through core's file cache:
  the second load reads it (no parse), a cut-off cache is named in a warning and
  parsed again."""
  from jaxpapers.leansearch import _coq

  fixture = (
    pathlib.Path(__file__).resolve().parents[2]
    / "experiments/leansearch/fixture"
  )
  monkeypatch.setattr(_coq, "fetch_coq_stdlib", lambda cache_dir: fixture)
  decls = L.load_coq_stdlib(tmp_path)
  assert decls == L.parse_coq_tree(fixture) and decls  # sections stay tuples
  real_parse = _coq.parse_coq_tree
  monkeypatch.setattr(
    _coq, "parse_coq_tree", lambda *a, **k: pytest.fail("parsed again")
  )
  assert L.load_coq_stdlib(tmp_path) == decls
  cache = tmp_path / "decls_all.json"
  cache.write_bytes(cache.read_bytes()[:-100])
  monkeypatch.setattr(_coq, "parse_coq_tree", real_parse)
  with caplog.at_level(logging.WARNING):
    assert L.load_coq_stdlib(tmp_path) == decls
  assert f"{cache} is corrupt" in caplog.text
  init = L.load_coq_stdlib(tmp_path, subdirs=("Toy",))  # its own cache file
  assert (tmp_path / "decls_Toy.json").exists() and len(init) <= len(decls)
