"""Parser: precedence, keywords, round trips, error messages."""

import dataclasses

import numpy as np
import pytest

from jaxpapers import logstop as L
from jaxpapers.logstop._formula import (
  Always,
  And,
  Atom,
  Const,
  Eventually,
  Implies,
  Next,
  Not,
  Or,
  Until,
)
from tests.logstop import _oracles

a, b, c = Atom("a"), Atom("b"), Atom("c")


@pytest.mark.parametrize(
  "text,expected",
  [
    ("a U b U c", Until(a, Until(b, c))),
    ("!a & b", And(Not(a), b)),
    ("a -> b -> c", Implies(a, Implies(b, c))),
    ("a | b & c", Or(a, And(b, c))),
    ("a & b | c", Or(And(a, b), c)),
    ("a & b U c", And(a, Until(b, c))),
    ("F a U b", Until(Eventually(a), b)),
    ("G F a", Always(Eventually(a))),
    ("X X c", Next(Next(c))),
    ("Always (a)", Always(a)),
    ("a Until b", Until(a, b)),
    ("eventually a and not b", And(Eventually(a), Not(b))),
    ("NEXT a OR b", Or(Next(a), b)),
    ("~a || b && c", Or(Not(a), And(b, c))),
    ("a & b & c", And(And(a, b), c)),
    ("True -> FALSE", Implies(Const(True), Const(False))),
    (
      'F("traffic light" & X stop)',
      Eventually(And(Atom("traffic light"), Next(Atom("stop")))),
    ),
    # lower-case single letters are atoms
    ("x U u", Until(Atom("x"), Atom("u"))),
    (
      "G(person -> F car)",
      Always(Implies(Atom("person"), Eventually(Atom("car")))),
    ),
  ],
)
def test_parse_precedence(text, expected):
  assert L.parse(text) == expected


def test_canonical_round_trip_random():
  rng = np.random.default_rng(0)
  for _ in range(200):
    f = _oracles.random_formula(rng, 4)
    assert L.parse(str(f)) == f
    assert hash(L.parse(str(f))) == hash(f)


def test_round_trip_quoted_names():
  f = And(Atom("traffic light"), Or(Atom("X"), Atom("not")))
  assert str(f) == '("traffic light" & ("X" | "not"))'
  assert L.parse(str(f)) == f


def test_formula_is_hashable_and_immutable():
  f = L.parse("a U b")
  assert {f: 1}[L.parse("a  U  b")] == 1
  with pytest.raises(dataclasses.FrozenInstanceError):
    f.left = Atom("z")


@pytest.mark.parametrize(
  "text,column,expected",
  [
    ("a U", 4, "expected a formula"),
    ("(a & b", 7, "')' to close the '(' at column 1"),
    ("a b", 3, "binary operator"),
    ("a & & b", 5, "expected a formula"),
    ("a $ b", 3, "expected a proposition"),
    ('"abc', 1, "closing"),
    ("", 1, "expected a formula"),
  ],
)
def test_parse_errors_name_position_and_expectation(text, column, expected):
  with pytest.raises(ValueError) as err:
    L.parse(text)
  msg = str(err.value)
  assert f"column {column}" in msg
  assert expected in msg


def test_parse_type_error():
  with pytest.raises(TypeError):
    L.parse(3)


def test_atoms_and_size():
  f = L.parse("G(a -> F b) & c")
  assert L.atoms(f) == ("a", "b", "c")
  assert L.size(f) == 7
