"""A small, safe interpreter for the CEL subset used by CRD ``x-kubernetes-validations`` rules.

The simulated API server must enforce the rules a CRD declares, exactly when a real apiserver would, without a Go
runtime. Expressions are tokenised, parsed by recursive descent and compiled once into a tree of Python closures
(no ``eval``/``exec``); :meth:`Program.evaluate` then only walks closures, which keeps validation cheap enough for
thousands of objects per second. Value semantics (overloads, overflow, equality) live in
:mod:`grove_sim.schema.cel_ops`.

Supported: identifiers, ``a.b``, ``a[i]``, ``has(a.b)``, ``size``, arithmetic, comparisons, ``in``, ``&&``/``||``
with CEL's commutative error absorption, ``!``, ``?:``, list/map literals, int/uint/double/string/bytes/bool/null
literals, the macros ``all``/``exists``/``exists_one``/``map``/``filter``, conversions and the common string and
list extension functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from grove_sim.schema import cel_ops as ops
from grove_sim.schema.cel_lexer import Tok, tokenize
from grove_sim.schema.cel_ops import CelError, CelType, UInt

__all__ = ["CelError", "CelType", "Program", "UInt", "compile"]

Env = dict[str, Any]
Fn = Callable[[Env], Any]

_KEYWORDS: Final = {"true": True, "false": False, "null": None}
_RESERVED: Final = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let"})


# ---------------------------------------------------------------------------------------------------------------------
# Parser: each production returns a compiled closure plus what ``has()`` and macros need to know about it.


@dataclass(frozen=True, slots=True)
class _Node:
    fn: Fn
    select: tuple[Fn, str] | None = None  # operand and field for ``has(a.b)``
    ident: str | None = None  # a bare identifier (macro variable position)


_MACROS: Final = frozenset({"all", "exists", "exists_one", "map", "filter"})
_REL_OPS: Final = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.i = 0
        self.bound: list[str] = []
        self.free: set[str] = set()

    # -- token helpers
    def peek(self, offset: int = 0) -> Tok:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def accept(self, text: str) -> bool:
        tok = self.tokens[self.i]
        if tok.kind == "op" and tok.text == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            tok = self.tokens[self.i]
            found = tok.text or "<EOF>"
            raise CelError(f"Syntax error: mismatched input '{found}' expecting '{text}' (position {tok.pos})")

    # -- grammar
    def parse(self) -> Fn:
        node = self.expr()
        if self.peek().kind != "eof":
            tok = self.peek()
            raise CelError(f"Syntax error: extraneous input '{tok.text}' (position {tok.pos})")
        return node.fn

    def expr(self) -> _Node:
        cond = self.or_expr()
        if not self.accept("?"):
            return cond
        then = self.or_expr()
        self.expect(":")
        other = self.expr()
        c, t, o = cond.fn, then.fn, other.fn

        def ternary(env: Env) -> Any:
            chosen = c(env)
            if type(chosen) is not bool:
                raise ops.no_overload("_?_:_", chosen)
            return t(env) if chosen else o(env)

        return _Node(ternary)

    def or_expr(self) -> _Node:
        node = self.and_expr()
        while self.accept("||"):
            node = _Node(_logical(node.fn, self.and_expr().fn, short=True))
        return node

    def and_expr(self) -> _Node:
        node = self.relation()
        while self.accept("&&"):
            node = _Node(_logical(node.fn, self.relation().fn, short=False))
        return node

    def relation(self) -> _Node:
        node = self.addition()
        while True:
            tok = self.peek()
            op = tok.text if tok.kind == "op" or (tok.kind == "ident" and tok.text == "in") else ""
            if op not in _REL_OPS:
                return node
            self.i += 1
            node = _Node(_relational(op, node.fn, self.addition().fn))

    def addition(self) -> _Node:
        node = self.multiplication()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = ops.add if self.tokens[self.i].text == "+" else ops.sub
            self.i += 1
            node = _Node(_binary(op, node.fn, self.multiplication().fn))
        return node

    def multiplication(self) -> _Node:
        node = self.unary()
        table = {"*": ops.mul, "/": ops.div, "%": ops.mod}
        while self.peek().kind == "op" and self.peek().text in table:
            op = table[self.tokens[self.i].text]
            self.i += 1
            node = _Node(_binary(op, node.fn, self.unary().fn))
        return node

    def unary(self) -> _Node:
        if self.accept("!"):
            inner = self.unary().fn

            def logical_not(env: Env) -> Any:
                value = inner(env)
                if type(value) is not bool:
                    raise ops.no_overload("!_", value)
                return not value

            return _Node(logical_not)
        if self.accept("-"):
            if self.peek().kind == "num" and type(self.peek().value) is int:
                tok = self.tokens[self.i]
                self.i += 1
                value = ops.check_int(-tok.value)
                return self.member_suffix(_Node(lambda env: value))
            inner = self.unary().fn
            return _Node(lambda env: ops.negate(inner(env)))
        return self.member()

    def member(self) -> _Node:
        return self.member_suffix(self.primary())

    def member_suffix(self, node: _Node) -> _Node:
        while True:
            if self.accept("."):
                name_tok = self.peek()
                if name_tok.kind != "ident":
                    raise CelError(f"Syntax error: expected field name (position {name_tok.pos})")
                self.i += 1
                node = self.method_call(node, name_tok.text) if self.accept("(") else _select(node.fn, name_tok.text)
            elif self.accept("["):
                key = self.expr().fn
                self.expect("]")
                node = _Node(_binary(ops.index, node.fn, key))
            else:
                return node

    def args(self) -> list[_Node]:
        items: list[_Node] = []
        if self.accept(")"):
            return items
        while True:
            items.append(self.expr())
            if self.accept(")"):
                return items
            self.expect(",")

    def method_call(self, target: _Node, name: str) -> _Node:
        if name in _MACROS:
            if self.peek().kind != "ident" or self.peek(1).text != ",":
                raise CelError(f"Syntax error: argument must be a simple name in macro '{name}'")
            return self.macro(target.fn, name)
        arg_fns = [a.fn for a in self.args()]
        target_fn = target.fn

        def method(env: Env) -> Any:
            return ops.call_method(name, target_fn(env), [a(env) for a in arg_fns])

        return _Node(method)

    def macro(self, target: Fn, name: str) -> _Node:
        var = self.tokens[self.i].text
        self.i += 2
        self.bound.append(var)
        try:
            bodies = [self.expr().fn]
            while self.accept(","):
                bodies.append(self.expr().fn)
            self.expect(")")
        finally:
            self.bound.pop()
        if len(bodies) > (2 if name == "map" else 1):
            raise CelError(f"Syntax error: wrong number of arguments to macro '{name}'")
        return _Node(_compile_macro(name, var, target, bodies))

    def primary(self) -> _Node:
        tok = self.peek()
        self.i += 1
        if tok.kind == "num":
            value = tok.value
            if type(value) is int and value > ops.INT_MAX:
                raise CelError(f"Syntax error: int literal out of range (position {tok.pos})")
            return _Node(lambda env: value)
        if tok.kind == "str":
            text = tok.value
            return _Node(lambda env: text)
        if tok.kind == "ident":
            return self.identifier(tok)
        if tok.kind == "op" and tok.text == "(":
            inner = self.expr()
            self.expect(")")
            return _Node(inner.fn)
        if tok.kind == "op" and tok.text == "[":
            return self.list_literal()
        if tok.kind == "op" and tok.text == "{":
            return self.map_literal()
        if tok.kind == "op" and tok.text == "." and self.peek().kind == "ident":
            return self.primary()  # leading-dot root-scoped identifier
        raise CelError(f"Syntax error: mismatched input '{tok.text or '<EOF>'}' (position {tok.pos})")

    def identifier(self, tok: Tok) -> _Node:
        name = tok.text
        if name in _KEYWORDS:
            constant = _KEYWORDS[name]
            return _Node(lambda env: constant)
        if name in _RESERVED:
            raise CelError(f"Syntax error: reserved identifier: {name} (position {tok.pos})")
        if self.accept("("):
            if name == "has":
                args = self.args()
                if len(args) != 1 or args[0].select is None:
                    raise CelError("invalid argument to has() macro")
                operand, field = args[0].select
                return _Node(lambda env: ops.has_field(operand(env), field))
            arg_fns = [a.fn for a in self.args()]
            return _Node(lambda env: ops.call_function(name, [a(env) for a in arg_fns]))
        if name not in self.bound:
            self.free.add(name)
        if name in ops.TYPE_NAMES:
            type_value = CelType(name)
            return _Node(lambda env: env.get(name, type_value), ident=name)

        def lookup(env: Env) -> Any:
            try:
                return env[name]
            except KeyError:
                raise CelError(f"undeclared reference to '{name}' (in container '')") from None

        return _Node(lookup, ident=name)

    def list_literal(self) -> _Node:
        items: list[Fn] = []
        while not self.accept("]"):
            items.append(self.expr().fn)
            if not self.accept(","):
                self.expect("]")
                break
        return _Node(lambda env: [item(env) for item in items])

    def map_literal(self) -> _Node:
        entries: list[tuple[Fn, Fn]] = []
        while not self.accept("}"):
            key = self.expr().fn
            self.expect(":")
            entries.append((key, self.expr().fn))
            if not self.accept(","):
                self.expect("}")
                break

        def build(env: Env) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for key_fn, value_fn in entries:
                key = key_fn(env)
                if key in out:
                    raise CelError(f"Failed with repeated key: {key}")
                out[key] = value_fn(env)
            return out

        return _Node(build)


def _select(operand: Fn, field: str) -> _Node:
    return _Node(lambda env: ops.select(operand(env), field), select=(operand, field))


def _binary(op: Callable[[Any, Any], Any], left: Fn, right: Fn) -> Fn:
    return lambda env: op(left(env), right(env))


def _relational(op: str, left: Fn, right: Fn) -> Fn:
    if op == "==":
        return lambda env: ops.cel_eq(left(env), right(env))
    if op == "!=":
        return lambda env: not ops.cel_eq(left(env), right(env))
    if op == "in":
        return lambda env: ops.contains_in(left(env), right(env))
    return lambda env: ops.compare(op, left(env), right(env))


def _logical(left: Fn, right: Fn, *, short: bool) -> Fn:
    """``||`` (short=True) and ``&&``: a decisive operand on either side wins over an error on the other."""

    def run(env: Env) -> Any:
        error: CelError | None = None
        try:
            value = left(env)
            if type(value) is not bool:
                raise ops.no_overload("_||_" if short else "_&&_", value)
            if value is short:
                return short
        except CelError as exc:
            error = exc
        value = right(env)
        if type(value) is not bool:
            raise ops.no_overload("_||_" if short else "_&&_", value)
        if value is short:
            return short
        if error is not None:
            raise error
        return not short

    return run


def _iter_range(target: Any, name: str) -> list[Any]:
    if isinstance(target, list):
        return target
    if isinstance(target, dict):
        return list(target)
    raise CelError(f"expression of type '{ops.type_name(target)}' cannot be range of a comprehension ({name})")


def _compile_macro(name: str, var: str, target: Fn, bodies: list[Fn]) -> Fn:
    predicate = bodies[0]

    def run(env: Env) -> Any:
        items = _iter_range(target(env), name)
        local = dict(env)
        if name in ("all", "exists"):
            decisive = name == "exists"
            error: CelError | None = None
            for item in items:
                local[var] = item
                try:
                    outcome = predicate(local)
                except CelError as exc:
                    error = exc
                    continue
                if type(outcome) is not bool:
                    raise ops.no_overload(name, outcome)
                if outcome is decisive:
                    return decisive
            if error is not None:
                raise error
            return not decisive
        if name == "exists_one":
            count = 0
            for item in items:
                local[var] = item
                outcome = predicate(local)
                if type(outcome) is not bool:
                    raise ops.no_overload(name, outcome)
                count += outcome
            return count == 1
        results: list[Any] = []
        for item in items:
            local[var] = item
            if name == "filter":
                keep = predicate(local)
                if type(keep) is not bool:
                    raise ops.no_overload(name, keep)
                if keep:
                    results.append(item)
            elif len(bodies) == 2:
                keep = predicate(local)
                if type(keep) is not bool:
                    raise ops.no_overload(name, keep)
                if keep:
                    results.append(bodies[1](local))
            else:
                results.append(predicate(local))
        return results

    return run


# ---------------------------------------------------------------------------------------------------------------------
# Public API


class Program:
    """A compiled CEL expression; cheap to evaluate many times with different variables."""

    __slots__ = ("_fn", "references", "source")

    def __init__(self, source: str, fn: Fn, references: frozenset[str]) -> None:
        self.source = source
        self._fn = fn
        #: Free identifiers the expression reads (macro variables excluded); ``"oldSelf" in references`` marks a
        #: transition rule.
        self.references = references

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """Evaluate with the given variables (e.g. ``{"self": ..., "oldSelf": ...}``); raises :class:`CelError`."""
        try:
            return self._fn(dict(variables))
        except RecursionError as exc:
            raise CelError("expression nesting too deep") from exc
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as exc:
            # Values of unexpected shapes (an unhashable map key, a bad argument type to an extension function)
            # must surface as rule errors, never as a server crash.
            raise CelError(f"no matching overload: {exc}") from exc

    def __repr__(self) -> str:
        return f"Program({self.source!r})"


def compile(expr: str) -> Program:
    """Parse and compile ``expr``; raises :class:`CelError` on syntax errors."""
    parser = _Parser(expr)
    try:
        fn = parser.parse()
    except RecursionError as exc:
        raise CelError("Syntax error: expression nesting too deep") from exc
    return Program(expr, fn, frozenset(parser.free))
