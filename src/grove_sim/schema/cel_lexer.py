"""Tokeniser for the CEL subset: literals (with CEL's quoting, raw/bytes prefixes and escapes), names, operators.

Split from :mod:`grove_sim.schema.cel` so the parser module stays about grammar. Integer literals are range-checked
by the parser, which knows whether a unary minus precedes them (``-9223372036854775808`` is valid, its positive is not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from grove_sim.schema import cel_ops as ops
from grove_sim.schema.cel_ops import CelError, UInt

__all__ = ["Tok", "tokenize"]

_TOKEN_RE: Final = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<str>[rRbB]{0,2}(?:'''|\"\"\"|'|"))
  | (?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[-+*/%!<>?:.,\[\](){}])
    """,
    re.VERBOSE,
)
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPES.update({c: c for c in "\\'\"`?"})


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # "num" | "str" | "ident" | "op" | "eof"
    text: str
    value: Any
    pos: int


def _decode_string(body: str, raw: bool, pos: int) -> str:
    if raw:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in ("x", "X", "u", "U"):
            width = {"x": 2, "X": 2, "u": 4, "U": 8}[nxt]
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise CelError(f"Syntax error: invalid escape sequence at {pos + i}")
            out.append(chr(int(digits, 16)))
            i += 2 + width
        elif nxt.isdigit():
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not all(c in "01234567" for c in digits):
                raise CelError(f"Syntax error: invalid octal escape at {pos + i}")
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise CelError(f"Syntax error: invalid escape sequence at {pos + i}")
    return "".join(out)


def tokenize(text: str) -> list[Tok]:
    tokens: list[Tok] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            raise CelError(f"Syntax error: token recognition error at: '{text[pos]}' (position {pos})")
        kind = match.lastgroup or ""
        lexeme = match.group()
        if kind == "str":
            prefix = lexeme.rstrip("'\"")
            quote = lexeme[len(prefix) :]
            raw = "r" in prefix.lower()
            end = _string_end(text, pos + len(lexeme), quote, raw)
            if end < 0:
                raise CelError(f"Syntax error: unterminated string literal at position {pos}")
            body = text[pos + len(lexeme) : end]
            value: Any = _decode_string(body, raw, pos)
            if "b" in prefix.lower():
                value = value.encode("utf-8")
            tokens.append(Tok("str", text[pos : end + len(quote)], value, pos))
            pos = end + len(quote)
            continue
        if kind == "num":
            tokens.append(Tok("num", lexeme, _number(lexeme, pos), pos))
        elif kind == "ident":
            tokens.append(Tok("ident", lexeme, None, pos))
        elif kind == "op":
            tokens.append(Tok("op", lexeme, None, pos))
        pos = match.end()
    tokens.append(Tok("eof", "", None, len(text)))
    return tokens


def _string_end(text: str, start: int, quote: str, raw: bool) -> int:
    """Index of the closing quote of a string literal whose body starts at ``start``, or -1."""
    i = start
    while i < len(text):
        if text.startswith(quote, i):
            return i
        if len(quote) == 1 and text[i] == "\n":
            return -1
        i += 2 if text[i] == "\\" and not raw else 1
    return -1


def _number(lexeme: str, pos: int) -> Any:
    unsigned = lexeme[-1] in "uU"
    body = lexeme[:-1] if unsigned else lexeme
    if body[:2].lower() == "0x":
        value: Any = int(body, 16)
    elif any(c in body for c in ".eE"):
        if unsigned:
            raise CelError(f"Syntax error: invalid uint literal at position {pos}")
        return float(body)
    else:
        value = int(body)
    if unsigned:
        if value > ops.UINT_MAX:
            raise CelError(f"Syntax error: uint literal out of range at position {pos}")
        return UInt(value)
    return value  # range-checked by the parser, which knows whether a minus sign precedes it
