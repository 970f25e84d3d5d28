"""The CEL subset used by CRD validation rules: literals, operators, macros, functions, errors and Python agreement."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.schema import cel
from grove_sim.schema.cel import CelError, CelType, UInt

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

OBJ: dict[str, Any] = {
    "name": "prefill-0",
    "replicas": 3,
    "ratio": 0.5,
    "labels": {"app": "grove", "tier": "gpu"},
    "cliques": [{"name": "a", "size": 2}, {"name": "b", "size": 3}],
    "empty": [],
    "flag": True,
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("1 + 2 * 3 - 4", 3, id="precedence"),
        pytest.param("(1 + 2) * 3", 9, id="parens"),
        pytest.param("-7 / 2", -3, id="int-div-truncates"),
        pytest.param("-7 % 2", -1, id="mod-sign-of-dividend"),
        pytest.param("7 % -2", 1, id="mod-negative-divisor"),
        pytest.param("1.5 * 2.0", 3.0, id="double"),
        pytest.param("3u + 4u", UInt(7), id="uint"),
        pytest.param("0x1F", 31, id="hex"),
        pytest.param("-9223372036854775808", INT64_MIN, id="int64-min-literal"),
        pytest.param("'a' + \"b\" + '''c'''", "abc", id="string-concat"),
        pytest.param(r"r'\d+' == '\\d+'", True, id="raw-string"),
        pytest.param(r"'\u00e9\x41\101\n'", "\u00e9AA\n", id="escapes"),
        pytest.param("[1, 2] + [3]", [1, 2, 3], id="list-concat"),
        pytest.param("{'a': 1, 'b': 2}['b']", 2, id="map-literal-index"),
        pytest.param("1 == 1.0 && 1u == 1 && 2 > 1.5", True, id="cross-numeric-equality"),
        pytest.param("true == 1", False, id="bool-never-equals-int"),
        pytest.param("[1, [2]] == [1, [2]] && {'a': [1]} == {'a': [1]}", True, id="deep-equality"),
        pytest.param("null == null && self.name != null", True, id="null"),
        pytest.param("self.replicas > 2 ? 'big' : 'small'", "big", id="ternary"),
        pytest.param("'gpu' in self.labels.map(k, self.labels[k])", True, id="in-list"),
        pytest.param("'app' in self.labels && !('x' in self.labels)", True, id="in-map"),
        pytest.param("has(self.labels.app) && !has(self.labels.zone)", True, id="has"),
        pytest.param("size(self.cliques) + self.cliques.size() + size('héllo')", 9, id="size"),
        pytest.param("self.cliques.all(c, c.size > 1)", True, id="all"),
        pytest.param("self.cliques.exists(c, c.name == 'b')", True, id="exists"),
        pytest.param("self.cliques.exists_one(c, c.size > 1)", False, id="exists-one"),
        pytest.param("self.cliques.map(c, c.size * 2)", [4, 6], id="map"),
        pytest.param("self.cliques.map(c, c.size > 2, c.name)", ["b"], id="map-with-filter"),
        pytest.param("self.cliques.filter(c, c.size < 3).map(c, c.name)", ["a"], id="filter"),
        pytest.param("self.labels.all(k, k.size() > 2)", True, id="map-macro-over-keys"),
        pytest.param("self.empty.all(x, false) && !self.empty.exists(x, true)", True, id="empty-macros"),
        pytest.param("self.name.startsWith('pre') && self.name.endsWith('-0')", True, id="starts-ends"),
        pytest.param("self.name.contains('fill') && self.name.matches('^[a-z]+-[0-9]$')", True, id="contains-matches"),
        pytest.param("'AbC'.lowerAscii() + 'AbC'.upperAscii()", "abcABC", id="ascii-case"),
        pytest.param("int('42') + int(3.9) + int(-3.9)", 42, id="int-conversions"),
        pytest.param("string(12) + string(1.5) + string(true) + string(2u)", "121.5true2", id="string-conversions"),
        pytest.param("double(3) / 2.0", 1.5, id="double-conversion"),
        pytest.param("type(1) == int && type('') == string && type(self.labels) == map", True, id="type"),
        pytest.param("' a '.trim() + 'a,b'.split(',').join('+')", "aa+b", id="string-extensions"),
        pytest.param("[3, 1, 2].sum() + [3, 1, 2].min() + [3, 1, 2].max()", 10, id="list-extensions"),
        pytest.param("[1, 2, 2].isSorted() && !([2, 1].isSorted())", True, id="is-sorted"),
        pytest.param("self.ratio < 1 && self.flag", True, id="double-vs-int-compare"),
        pytest.param("'abc' < 'abd' && false < true", True, id="string-bool-ordering"),
        pytest.param("self.cliques[1].name", "b", id="index-then-select"),
    ],
)
def test_evaluates(expr: str, expected: Any) -> None:
    """Each supported construct evaluates to the CEL result."""
    result = cel.compile(expr).evaluate({"self": OBJ})
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        pytest.param("self.missing", "no such key: missing", id="missing-field"),
        pytest.param("self.labels['zone']", "no such key: zone", id="missing-map-key"),
        pytest.param("self.cliques[5]", "index out of bounds: 5", id="index-out-of-bounds"),
        pytest.param("1 / 0", "division by zero", id="div-zero"),
        pytest.param("1 % 0", "modulus by zero", id="mod-zero"),
        pytest.param("9223372036854775807 + 1", "integer overflow", id="overflow"),
        pytest.param("-9223372036854775808 / -1", "integer overflow", id="div-overflow"),
        pytest.param("1 + 1.0", "no such overload", id="mixed-arith"),
        pytest.param("'a' + 1", "no such overload", id="string-plus-int"),
        pytest.param("!1", "no such overload", id="not-int"),
        pytest.param("1 ? 2 : 3", "no such overload", id="ternary-non-bool"),
        pytest.param("unknown", "undeclared reference to 'unknown'", id="undeclared"),
        pytest.param("int('x')", "cannot convert", id="bad-int-conversion"),
        pytest.param("self.name.nope()", "no such overload", id="unknown-method"),
        pytest.param("self.missing || false", "no such key: missing", id="or-error-not-absorbed"),
        pytest.param("self.cliques.all(c, c.nope > 0)", "no such key: nope", id="all-error"),
        pytest.param("self.replicas.x", "does not support field selection", id="select-on-int"),
    ],
)
def test_evaluation_errors(expr: str, message: str) -> None:
    """Runtime errors raise CelError with cel-go's wording."""
    program = cel.compile(expr)
    with pytest.raises(CelError, match=message):
        program.evaluate({"self": OBJ})


@pytest.mark.parametrize(
    "expr",
    ["1 +", "(1", "'abc", "self.", "a.all(1, true)", "has(self)", "1 2", "9223372036854775808", "{1: }", "let", "#"],
)
def test_syntax_errors(expr: str) -> None:
    """Malformed expressions fail at compile time, as a CRD with such a rule would be rejected."""
    with pytest.raises(CelError):
        cel.compile(expr)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("self.missing || true", True, id="error-or-true"),
        pytest.param("true || self.missing", True, id="true-or-error"),
        pytest.param("self.missing && false", False, id="error-and-false"),
        pytest.param("false && self.missing", False, id="false-and-error"),
        pytest.param("self.cliques.exists(c, c.nope == 1 || c.name == 'a')", True, id="exists-absorbs"),
        pytest.param("self.cliques.all(c, c.name == 'zz' && c.nope == 1)", False, id="all-absorbs"),
    ],
)
def test_error_absorption(expr: str, expected: bool) -> None:
    """A decisive operand of && / || (and of all/exists) wins over an error on the other side."""
    assert cel.compile(expr).evaluate({"self": OBJ}) is expected


def test_references_mark_transition_rules() -> None:
    """Free identifiers are reported (macro variables excluded) so callers can spot ``oldSelf`` rules."""
    assert cel.compile("self == oldSelf").references == frozenset({"self", "oldSelf"})
    assert cel.compile("self.all(x, x > 0)").references == frozenset({"self"})


def test_type_values() -> None:
    """type() yields comparable type values and uint literals keep their type."""
    assert cel.compile("type(1u)").evaluate({}) == CelType("uint")
    assert isinstance(cel.compile("1u + 2u").evaluate({}), UInt)


# ---------------------------------------------------------------------------------------------------------------------
# Property: integer arithmetic and boolean logic agree with Python (with Go's truncating division)


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


class _Overflow(Exception):
    pass


def _check(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise _Overflow
    return value


Arith = tuple[str, Any]  # (expression text, thunk computing the reference value)

int_leaves = st.integers(min_value=-1000, max_value=1000).map(lambda n: (f"({n})" if n < 0 else str(n), lambda: n))


def _combine(op: str, left: Arith, right: Arith) -> Arith:
    def value() -> int:
        a, b = left[1](), right[1]()
        if op == "+":
            return _check(a + b)
        if op == "-":
            return _check(a - b)
        if op == "*":
            return _check(a * b)
        if b == 0:
            raise ZeroDivisionError
        return _check(_trunc_div(a, b)) if op == "/" else a - b * _trunc_div(a, b)

    return (f"({left[0]} {op} {right[0]})", value)


arith = st.recursive(
    int_leaves,
    lambda inner: st.builds(_combine, st.sampled_from(["+", "-", "*", "/", "%"]), inner, inner),
    max_leaves=10,
)


@given(arith)
def test_integer_arithmetic_agrees_with_python(case: Arith) -> None:
    """Random integer expressions give Python's result, or CelError exactly where Go would fail."""
    text, reference = case
    try:
        expected = reference()
    except (ZeroDivisionError, _Overflow):
        with pytest.raises(CelError):
            cel.compile(text).evaluate({})
        return
    assert cel.compile(text).evaluate({}) == expected


COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}

bool_leaves = st.one_of(
    st.booleans().map(lambda b: ("true" if b else "false", b)),
    st.tuples(st.integers(-5, 5), st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), st.integers(-5, 5)).map(
        lambda t: (f"{t[0]} {t[1]} {t[2]}", COMPARISONS[t[1]](t[0], t[2]))
    ),
)


def _bool_node(inner: st.SearchStrategy[tuple[str, bool]]) -> st.SearchStrategy[tuple[str, bool]]:
    return st.one_of(
        st.tuples(inner, inner).map(lambda p: (f"({p[0][0]} && {p[1][0]})", p[0][1] and p[1][1])),
        st.tuples(inner, inner).map(lambda p: (f"({p[0][0]} || {p[1][0]})", p[0][1] or p[1][1])),
        inner.map(lambda p: (f"!({p[0]})", not p[1])),
        st.tuples(inner, inner, inner).map(
            lambda p: (f"({p[0][0]} ? {p[1][0]} : {p[2][0]})", p[1][1] if p[0][1] else p[2][1])
        ),
    )


@given(st.recursive(bool_leaves, _bool_node, max_leaves=12))
def test_boolean_logic_agrees_with_python(case: tuple[str, bool]) -> None:
    """Random boolean expressions (comparisons, &&, ||, !, ?:) evaluate exactly as in Python."""
    text, expected = case
    assert cel.compile(text).evaluate({}) is expected


@given(st.lists(st.integers(-100, 100), max_size=8), st.integers(-100, 100))
def test_macros_agree_with_python(items: list[int], pivot: int) -> None:
    """all/exists/exists_one/filter/map over a list match their Python counterparts."""
    env = {"self": items, "p": pivot}

    def run(expr: str) -> Any:
        return cel.compile(expr).evaluate(env)

    assert run("self.all(x, x > p)") is all(x > pivot for x in items)
    assert run("self.exists(x, x > p)") is any(x > pivot for x in items)
    assert run("self.exists_one(x, x > p)") is (sum(x > pivot for x in items) == 1)
    assert run("self.filter(x, x > p)") == [x for x in items if x > pivot]
    assert run("self.map(x, x * 2 - p)") == [x * 2 - pivot for x in items]
    assert run("p in self") is (pivot in items)


@given(st.text(alphabet="self.ab[]()0123'\"+-*/%!<>=&|?:,{} \\", max_size=30))
def test_compile_never_crashes(text: str) -> None:
    """Arbitrary input either compiles or raises CelError, never another exception."""
    try:
        program = cel.compile(text)
    except CelError:
        return
    assert program.source == text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    max_leaves=6,
)
PROBES = [
    "self.a + self.b",
    "self.a < self.b",
    "self.a in self.b",
    "self.a[self.b]",
    "size(self.a) > 0",
    "self.a.all(x, x == self.b)",
    "self.a.map(x, x + 1)",
    "self.a.startsWith(self.b)",
    "int(self.a) * 2",
    "string(self.a) + 'x'",
    "has(self.a.b) || self.b == null",
    "self.a.join(',') == self.b",
    "self.a.substring(self.b)",
]


@given(json_values, json_values, st.sampled_from(PROBES))
def test_evaluation_only_raises_cel_errors(a: Any, b: Any, expr: str) -> None:
    """Whatever JSON a rule meets, evaluation returns a value or raises CelError, never another exception."""
    error: CelError | None = None
    try:
        cel.compile(expr).evaluate({"self": {"a": a, "b": b}})
    except CelError as exc:
        error = exc
    assert error is None or str(error)
