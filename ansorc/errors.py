"""The errors ansorc raises for a user's mistake or a failed compile, under one base: `except ansorc.AnsorcError`.

This module imports nothing from ansorc, so every layer (ir included) may raise these. Each layer keeps its own
subclasses next to the code that raises them (ScheduleError in ir/schedule/state.py, BuildError in api.py, ...); a
subclass also derives from the builtin class it was raised as before, so existing `except ValueError` clauses
keep working.
"""
from __future__ import annotations


class AnsorcError(Exception):
    """Base of every error ansorc raises for bad input or a failed compile; its message is one line."""


class ExpressionError(AnsorcError, TypeError, ValueError, IndexError):
    """A tensor expression (or a workload's parameters) is malformed: arity, dtype, shape, axis or index.
    Before this class existed these were TypeError, ValueError or IndexError; it derives from all three."""


class ArgumentError(AnsorcError, TypeError, ValueError):
    """A kernel was called with the wrong number of arrays, or an array of the wrong dtype, shape or layout."""


class UnknownNameError(AnsorcError, KeyError):
    """A name (workload, ...) that ansorc does not know; a KeyError whose message is not quoted."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


__all__ = ["AnsorcError", "ExpressionError", "ArgumentError", "UnknownNameError"]
