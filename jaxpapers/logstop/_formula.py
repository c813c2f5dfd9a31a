"""Linear temporal logic formulas: an immutable AST and a parser.

Formulas are frozen, hashable dataclasses, so a formula can be passed as a
static argument to `jax.jit` and each `(formula, T, window)` compiles once.

Grammar (a reconstruction; the LogSTOP reference accepts forms such as
``Always (a)`` and ``a Until b``, which this grammar includes), loosest first::

  formula  := implies
  implies  := or ( '->' implies )?                 # right-associative
  or       := and ( ('|' | '||' | 'or') and )*
  and      := until ( ('&' | '&&' | 'and') until )*
  until    := unary ( ('U' | 'until') until )?     # right-associative
  unary    := ('!' | '~' | 'not' | 'X' | 'next' | 'F' | 'eventually'
               | 'G' | 'always') unary | primary
  primary  := '(' formula ')' | 'true' | 'false' | IDENT | '"' name '"'

Word keywords are case-insensitive; the single-letter operators ``X F G U`` are
reserved only in upper case (so ``x`` and ``u`` are ordinary propositions).
Identifiers are read whole (longest match), so a letter operator must be
separated from its operand by a space or parenthesis: ``Fa`` is the proposition
named ``Fa``, not ``F a``; write ``F a`` or ``F(a)``. `atoms` lists the
proposition names a formula uses, which shows such a reading.

References:
  A. Khare, H. Okamoto, B. Hoxha, G. Fainekos, R. Alur. LogSTOP: Temporal Scores
  over Prediction Sequences for Matching and Retrieval. arXiv:2510.06512.
"""

from __future__ import annotations

import dataclasses
import functools
import re

__all__ = [
  "Formula",
  "Atom",
  "Const",
  "Not",
  "And",
  "Or",
  "Implies",
  "Next",
  "Until",
  "Always",
  "Eventually",
  "parse",
  "atoms",
  "size",
  "as_formula",
]

_WORD_KEYWORDS = {
  "not": "NOT",
  "and": "AND",
  "or": "OR",
  "next": "X",
  "eventually": "F",
  "always": "G",
  "until": "U",
  "true": "TRUE",
  "false": "FALSE",
}
_LETTER_KEYWORDS = {"X": "X", "F": "F", "G": "G", "U": "U"}
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _needs_quotes(name: str) -> bool:
  return (
    not _IDENT_RE.fullmatch(name)
    or name.lower() in _WORD_KEYWORDS
    or name in _LETTER_KEYWORDS
  )


class _Base:
  """Shared behaviour of formula nodes."""

  __slots__ = ()

  def __str__(self) -> str:
    return _to_str(self)


@dataclasses.dataclass(frozen=True)
class Atom(_Base):
  """An atomic proposition, scored by a local predictor p_name[t] in [0, 1].

  Attributes:
    name: the proposition's name, a key of the `props` mapping (non-empty, no
      ``"``).
  """

  name: str

  def __post_init__(self):
    if not isinstance(self.name, str) or not self.name:
      raise ValueError(
        f"Atom name must be a non-empty string, got {self.name!r}"
      )
    if '"' in self.name:
      raise ValueError(f"Atom name must not contain '\"', got {self.name!r}")


@dataclasses.dataclass(frozen=True)
class Const(_Base):
  """The constants `true` (log-score 0) and `false` (log-score -inf).

  Attributes:
    value: True for `true`, False for `false`.
  """

  value: bool

  def __post_init__(self):
    if not isinstance(self.value, bool):
      raise TypeError(f"Const value must be a bool, got {self.value!r}")


def _check_children(node):
  for f in dataclasses.fields(node):
    v = getattr(node, f.name)
    if not isinstance(v, _FORMULA_TYPES):
      raise TypeError(
        f"{type(node).__name__}.{f.name} must be a Formula node (use parse() "
        f"for strings), got {type(v).__name__}"
      )


class _Op(_Base):
  __slots__ = ()

  def __post_init__(self):
    _check_children(self)


@dataclasses.dataclass(frozen=True)
class Not(_Op):
  """Negation ``!arg``: holds where `arg` does not.

  Attributes:
    arg: the negated formula.
  """

  arg: Formula


@dataclasses.dataclass(frozen=True)
class And(_Op):
  """Conjunction ``left & right``.

  Attributes:
    left: the first operand.
    right: the second operand.
  """

  left: Formula
  right: Formula


@dataclasses.dataclass(frozen=True)
class Or(_Op):
  """Disjunction ``left | right``.

  Attributes:
    left: the first operand.
    right: the second operand.
  """

  left: Formula
  right: Formula


@dataclasses.dataclass(frozen=True)
class Implies(_Op):
  """Implication ``left -> right`` (``!left | right``).

  Attributes:
    left: the premise.
    right: the conclusion.
  """

  left: Formula
  right: Formula


@dataclasses.dataclass(frozen=True)
class Next(_Op):
  """Strong next ``X arg``: `arg` holds at the next position, which must exist.

  Attributes:
    arg: the formula at the next position.
  """

  arg: Formula


@dataclasses.dataclass(frozen=True)
class Until(_Op):
  """Until ``left U right``: `right` holds at some position and `left` at every
  one before it.

  Attributes:
    left: the formula that holds until then.
    right: the formula that eventually holds.
  """

  left: Formula
  right: Formula


@dataclasses.dataclass(frozen=True)
class Always(_Op):
  """Always ``G arg``: `arg` holds at every remaining position.

  Attributes:
    arg: the formula that always holds.
  """

  arg: Formula


@dataclasses.dataclass(frozen=True)
class Eventually(_Op):
  """Eventually ``F arg``: `arg` holds at some remaining position.

  Attributes:
    arg: the formula that eventually holds.
  """

  arg: Formula


Formula = (
  Atom | Const | Not | And | Or | Implies | Next | Until | Always | Eventually
)
_FORMULA_TYPES = (
  Atom,
  Const,
  Not,
  And,
  Or,
  Implies,
  Next,
  Until,
  Always,
  Eventually,
)

_UNARY_SYMBOL = {Not: "!", Next: "X", Always: "G", Eventually: "F"}
_BINARY_SYMBOL = {And: "&", Or: "|", Implies: "->", Until: "U"}


def _to_str(f) -> str:
  """Fully parenthesised canonical form; `parse(str(f)) == f`."""
  if isinstance(f, Atom):
    return f'"{f.name}"' if _needs_quotes(f.name) else f.name
  if isinstance(f, Const):
    return "true" if f.value else "false"
  if type(f) in _UNARY_SYMBOL:
    return f"({_UNARY_SYMBOL[type(f)]} {_to_str(f.arg)})"
  if type(f) in _BINARY_SYMBOL:
    return f"({_to_str(f.left)} {_BINARY_SYMBOL[type(f)]} {_to_str(f.right)})"
  raise TypeError(f"Not a formula: {f!r}")


def children(f) -> tuple:
  if isinstance(f, (Atom, Const)):
    return ()
  if type(f) in _UNARY_SYMBOL:
    return (f.arg,)
  return (f.left, f.right)


def atoms(formula: str | Formula) -> tuple[str, ...]:
  """Sorted names of the atomic propositions occurring in `formula`.

  Args:
    formula: formula string or `Formula`.

  Returns:
    The distinct proposition names, sorted.
  """
  out = set()
  stack = [as_formula(formula)]
  while stack:
    f = stack.pop()
    if isinstance(f, Atom):
      out.add(f.name)
    stack.extend(children(f))
  return tuple(sorted(out))


def size(formula: str | Formula) -> int:
  """Number of nodes of the formula tree, |phi|.

  Args:
    formula: formula string or `Formula`.

  Returns:
    The number of nodes (atoms, constants and operators).
  """
  f = as_formula(formula)
  return 1 + sum(size(c) for c in children(f))


# ------------------------------------------------------------------------ lexer


@dataclasses.dataclass(frozen=True)
class _Token:
  kind: str  # IDENT, NAME (quoted), op kinds, LPAREN, RPAREN, EOF
  text: str
  pos: int  # 0-based offset


_SYMBOLS = [
  ("->", "IMPLIES"),
  ("&&", "AND"),
  ("||", "OR"),
  ("!", "NOT"),
  ("~", "NOT"),
  ("&", "AND"),
  ("|", "OR"),
  ("(", "LPAREN"),
  (")", "RPAREN"),
]


def _error(text: str, pos: int, expected: str, found: str) -> ValueError:
  caret = " " * pos + "^"
  return ValueError(
    f"Cannot parse formula at column {pos + 1}: expected {expected}, found "
    f"{found}.\n  {text}\n  {caret}"
  )


def _tokenize(text: str) -> list[_Token]:
  tokens = []
  i, n = 0, len(text)
  while i < n:
    c = text[i]
    if c.isspace():
      i += 1
      continue
    for sym, kind in _SYMBOLS:
      if text.startswith(sym, i):
        tokens.append(_Token(kind, sym, i))
        i += len(sym)
        break
    else:
      if c == '"':
        j = text.find('"', i + 1)
        if j < 0:
          raise _error(
            text, i, "a closing '\"' for the quoted proposition", "end of input"
          )
        if j == i + 1:
          raise _error(text, i, "a non-empty quoted proposition name", "'\"\"'")
        tokens.append(_Token("NAME", text[i + 1 : j], i))
        i = j + 1
        continue
      m = _IDENT_RE.match(text, i)
      if m is None:
        raise _error(
          text,
          i,
          "a proposition, constant, operator or parenthesis",
          f"character {c!r}",
        )
      word = m.group(0)
      if word in _LETTER_KEYWORDS:
        kind = _LETTER_KEYWORDS[word]
      else:
        kind = _WORD_KEYWORDS.get(word.lower(), "IDENT")
      tokens.append(_Token(kind, word, i))
      i = m.end()
  tokens.append(_Token("EOF", "", n))
  return tokens


_UNARY_KINDS = {"NOT": Not, "X": Next, "F": Eventually, "G": Always}
_PRIMARY_EXPECTED = (
  "a formula (a proposition, 'true', 'false', '(' or a unary operator !, X, "
  "F, G)"
)


class _Parser:
  def __init__(self, text: str):
    self.text = text
    self.tokens = _tokenize(text)
    self.i = 0

  def peek(self) -> _Token:
    return self.tokens[self.i]

  def advance(self) -> _Token:
    tok = self.tokens[self.i]
    self.i += 1
    return tok

  def found(self, tok: _Token) -> str:
    return "end of input" if tok.kind == "EOF" else repr(tok.text)

  def parse(self):
    f = self.implies()
    tok = self.peek()
    if tok.kind != "EOF":
      raise _error(
        self.text,
        tok.pos,
        "a binary operator (->, |, &, U) or end of input",
        self.found(tok),
      )
    return f

  def implies(self):
    left = self.or_()
    if self.peek().kind == "IMPLIES":
      self.advance()
      return Implies(left, self.implies())
    return left

  def or_(self):
    left = self.and_()
    while self.peek().kind == "OR":
      self.advance()
      left = Or(left, self.and_())
    return left

  def and_(self):
    left = self.until()
    while self.peek().kind == "AND":
      self.advance()
      left = And(left, self.until())
    return left

  def until(self):
    left = self.unary()
    if self.peek().kind == "U":
      self.advance()
      return Until(left, self.until())
    return left

  def unary(self):
    tok = self.peek()
    if tok.kind in _UNARY_KINDS:
      self.advance()
      return _UNARY_KINDS[tok.kind](self.unary())
    return self.primary()

  def primary(self):
    tok = self.advance()
    if tok.kind == "LPAREN":
      f = self.implies()
      close = self.peek()
      if close.kind != "RPAREN":
        raise _error(
          self.text,
          close.pos,
          f"')' to close the '(' at column {tok.pos + 1}",
          self.found(close),
        )
      self.advance()
      return f
    if tok.kind == "TRUE":
      return Const(True)
    if tok.kind == "FALSE":
      return Const(False)
    if tok.kind in ("IDENT", "NAME"):
      return Atom(tok.text)
    raise _error(self.text, tok.pos, _PRIMARY_EXPECTED, self.found(tok))


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str):
  return _Parser(text).parse()


def parse(formula: str) -> Formula:
  """Parses an LTL formula over named atomic propositions.

  Identifiers are read whole: ``"Fa"`` is the proposition ``Fa``; write
  ``"F a"`` for "eventually a" (see the grammar in the module docstring).

  Args:
    formula: e.g. ``"G(person -> F car)"``, ``"Always (a)"``, ``"a Until b"``,
      ``'F("traffic light" & X stop)'``. Operators: ``!``/``~``/``not``,
      ``&``/``and``, ``|``/``or``, ``->``, ``X``/``next``, ``F``/``eventually``,
      ``G``/``always``, ``U``/``until``, parentheses, ``true``/``false``.

  Returns:
    An immutable, hashable `Formula`; `str()` of it is a canonical fully
    parenthesised form that parses back to an equal formula. Parsing is cached.

  Raises:
    TypeError: if `formula` is not a string.
    ValueError: on a syntax error, naming the column and what was expected.
  """
  if not isinstance(formula, str):
    raise TypeError(f"formula must be a str, got {type(formula).__name__}")
  return _parse_cached(formula)


def as_formula(formula: str | Formula) -> Formula:
  """Returns `formula` parsed if it is a string, else checks it is a Formula.

  Args:
    formula: formula string (see `parse`) or `Formula`.

  Returns:
    The parsed `Formula`.

  Raises:
    TypeError: `formula` is neither.
  """
  if isinstance(formula, str):
    return parse(formula)
  if isinstance(formula, _FORMULA_TYPES):
    return formula
  raise TypeError(
    "formula must be a str or a jaxpapers.logstop Formula, "
    f"got {type(formula).__name__}"
  )
