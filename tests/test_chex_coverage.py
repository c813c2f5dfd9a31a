"""Every paper's tests run its jitted functions under ``chex.variants``, with
and without jit.

A paper is a package ``jaxpapers/<paper>/`` with an experiment
``experiments/<paper>/``; the shared packages ``hypergraph``, ``lm`` and
``metrics`` are held to the same rule. A test counts when it is decorated
``@chex.variants(with_jit=True, without_jit=True)`` (both variants: a function
that only runs eagerly, or only under jit, is not checked) and compares with
``chex.assert_trees_all_close``.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ("hypergraph", "lm", "metrics")


def _papers() -> list[str]:
  packages = {
    p.name
    for p in (ROOT / "jaxpapers").iterdir()
    if (p / "__init__.py").exists()
  }
  experiments = {
    p.name for p in (ROOT / "experiments").iterdir() if (p / "main.py").exists()
  }
  return sorted(packages & experiments) + [s for s in SHARED if s in packages]


def _both_variants(decorator: ast.expr) -> bool:
  """Whether ``decorator`` is ``chex.variants(...)`` with ``with_jit`` and
  ``without_jit`` on."""
  if not (
    isinstance(decorator, ast.Call)
    and ast.unparse(decorator.func) == "chex.variants"
  ):
    return False
  on = {
    k.arg
    for k in decorator.keywords
    if isinstance(k.value, ast.Constant) and k.value.value is True
  }
  return {"with_jit", "without_jit"} <= on


def variant_tests(folder: pathlib.Path) -> list[str]:
  """``file::test`` of every test in ``folder`` run with and without jit that
  compares values.

  Args:
    folder: a ``tests/<paper>`` folder.

  Returns:
    The qualifying tests, sorted.
  """
  found = []
  for path in sorted(folder.glob("test_*.py")):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
      if not isinstance(node, ast.FunctionDef) or not node.name.startswith(
        "test"
      ):
        continue
      if not any(_both_variants(d) for d in node.decorator_list):
        continue
      if "chex.assert_trees_all_close" in ast.unparse(node):
        found.append(f"{path.name}::{node.name}")
  return found


def test_the_paper_list_is_complete():
  assert len(_papers()) >= 19 + len(SHARED), _papers()


@pytest.mark.parametrize("paper", _papers())
def test_each_paper_has_chex_variant_tests(paper):
  folder = ROOT / "tests" / paper
  assert folder.is_dir(), f"{paper} has no tests/{paper}/ folder"
  found = variant_tests(folder)
  assert found, (
    f"tests/{paper}/ has no test decorated @chex.variants(with_jit=True, "
    "without_jit=True) that compares with chex.assert_trees_all_close"
  )


def test_the_checker_rejects_a_jit_only_or_uncompared_test(tmp_path):
  (tmp_path / "test_x.py").write_text(
    "import chex\n"
    "class T(chex.TestCase):\n"
    "  @chex.variants(with_jit=True)\n"
    "  def test_jit_only(self):\n"
    "    chex.assert_trees_all_close(1, 1)\n"
    "  @chex.variants(with_jit=True, without_jit=True)\n"
    "  def test_no_compare(self):\n"
    "    pass\n"
  )
  assert variant_tests(tmp_path) == []
  (tmp_path / "test_y.py").write_text(
    "import chex\n"
    "class T(chex.TestCase):\n"
    "  @chex.variants(with_jit=True, without_jit=True)\n"
    "  def test_ok(self):\n"
    "    chex.assert_trees_all_close(self.variant(abs)(-1.0), 1.0)\n"
  )
  assert variant_tests(tmp_path) == ["test_y.py::test_ok"]
