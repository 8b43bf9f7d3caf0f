"""Iterative depth-first post-order: tensor graphs can be chains tens of thousands of ops long, far past
Python's recursion limit."""
from __future__ import annotations

from typing import Callable, Iterable


class CycleError(ValueError):
    pass


def postorder(roots: Iterable, kids: Callable, key: Callable = id) -> list:
    """Every node reachable from roots, each after all of its kids, in the order a recursive depth-first walk
    (roots and kids in the given order) would finish them. CycleError names the node found on its own path."""
    done, active, order = set(), set(), []
    for root in roots:
        if key(root) in done:
            continue
        active.add(key(root))
        stack = [(root, iter(kids(root)))]
        while stack:
            node, it = stack[-1]
            child = next(it, _END)
            if child is _END:
                stack.pop()
                active.discard(key(node))
                done.add(key(node))
                order.append(node)
            elif key(child) in active:
                raise CycleError(child)
            elif key(child) not in done:
                active.add(key(child))
                stack.append((child, iter(kids(child))))
    return order


_END = object()
