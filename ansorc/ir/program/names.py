"""Turning user and stage names into safe, unique C identifiers (nothing a user writes reaches C verbatim)."""
from __future__ import annotations

import re

from .c_reserved import reserved_reason

C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert
_Thread_local asm bool true false NULL main""".split())


def c_ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or s[0].isdigit():
        s = "t_" + s
    if s in C_KEYWORDS or reserved_reason(s):  # also what would shadow the C library (expf, int32_t, memset)
        s = "u_" + s
    return s


def is_c_ident(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)) and name not in C_KEYWORDS


def fresh_name(base: str, taken: set) -> str:
    """`base`, or `base` with a number appended, that is not in `taken` (and is added to it): a register named
    like a loop variable (a stage's reduce axis r1 and its register r1) would be shadowed by it in C."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


class NameTable:
    """Hands out distinct identifiers for distinct keys."""

    def __init__(self, reserved=()):
        self.used = set(reserved)
        self.map: dict = {}

    def get(self, key, hint: str | None = None) -> str:
        if key in self.map:
            return self.map[key]
        base = c_ident(hint if hint is not None else str(key))
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        self.map[key] = name
        return name
