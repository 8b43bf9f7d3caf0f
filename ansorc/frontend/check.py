"""Program-level checks and assembly: size parameters and -D overrides, declarations, duplicate and cyclic
definitions, then each definition lowered to te in dependency order.
"""
from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field

from ..ir.program import te
from . import nodes as n
from .consts import INT32_MAX, TENSOR_DTYPES, check_name, eval_size
from .errors import TeError
from .indices import analyze
from .lower import Lowering


@dataclass(frozen=True)
class Program:
    """A checked expression file as te tensors. `tensors` (inputs, then outputs) is the kernel argument order."""
    inputs: list
    outputs: list
    params: dict                      # every size parameter -> its value after -D overrides
    text: str
    filename: str = "<string>"
    intermediates: list = field(default_factory=list)  # computed tensors that are not outputs

    @property
    def tensors(self) -> list:
        return list(self.inputs) + list(self.outputs)


@dataclass
class _TensorEntry:
    name: str
    decl: n.Decl | None = None          # input/output/tensor declaration
    definition: n.Definition | None = None
    shape: tuple | None = None          # from the declaration, until lowered
    dtype: str | None = None
    te: te.Tensor | None = None
    is_input: bool = False


def build_program(module: n.Module, text: str, filename: str, defines: dict | None) -> Program:
    return _Builder(filename, defines).build(module, text)


class _Builder:
    def __init__(self, filename: str, defines: dict | None):
        self.filename = filename
        if defines is not None and not isinstance(defines, dict):
            raise TeError(f"defines is a {type(defines).__name__} (expected a dict of name -> integer, as "
                          "parse_defines returns)", filename)
        self.defines = dict(defines or {})
        self.params: dict[str, int] = {}
        self.first_seen: dict[str, n.Node] = {}   # name -> where it was first declared or defined
        self.tensors: dict[str, _TensorEntry] = {}
        self.output_order: list[str] = []
        self.inputs: list = []

    def fail(self, message: str, at: n.Node | None = None) -> TeError:
        return TeError(message, self.filename, at.line if at else 1, at.col if at else 1)

    # ------------------------------------------------------------------ pass 1: declarations, in file order
    def build(self, module: n.Module, text: str) -> Program:
        for st in module.statements:
            if isinstance(st, n.ParamStmt):
                for item in st.items:
                    self.param(item)
            elif isinstance(st, n.Decl):
                self.declaration(st)
            else:
                self.definition(st)
        unknown = [k for k in self.defines if k not in self.params]
        if unknown:
            known = ", ".join(self.params) or "none"
            raise self.fail(f"-D {unknown[0]}={self.defines[unknown[0]]}: no size parameter named "
                            f"'{unknown[0]}' (expected one of: {known})")
        for e in self.tensors.values():
            if not e.is_input and e.definition is None:
                raise self.fail(f"{e.name} is declared but never defined (expected '{e.name}[...] = ...')", e.decl)
        if not self.output_order:
            raise self.fail("no output (expected at least one tensor marked 'output')")
        order = self.dependency_order()
        # names generated for lifted reductions must not collide with any name of the file
        self.taken = set(self.params) | set(self.tensors) | {
            x.id for t in self.tensors.values() if t.definition for x in n.walk(t.definition.value)
            if isinstance(x, n.Name)}
        # the te tensors built so far, kept up to date (rebuilding these maps for each tensor was quadratic)
        self.built = {k: v.te for k, v in self.tensors.items() if v.te is not None}
        self.shapes = {k: t.shape for k, t in self.built.items()}
        self.names = set(self.tensors)
        lifted = []
        for name in order:
            lifted += self.lower(self.tensors[name])
        outputs = [self.tensors[x].te for x in self.output_order]
        intermediates = [self.tensors[x].te for x in order if x not in self.output_order] + lifted
        return Program(self.inputs, outputs, dict(self.params), text, self.filename, intermediates)

    def claim(self, name: str, what: str, at: n.Node) -> None:
        check_name(name, what, self.filename, at.line, at.col)
        prev = self.first_seen.get(name)
        if prev is not None:
            raise self.fail(f"duplicate definition of '{name}' (first at {prev.line}:{prev.col}; expected a new "
                            "name)", at)
        self.first_seen[name] = at

    def param(self, item: n.ParamItem) -> None:
        self.claim(item.name, "a size parameter", item)
        if item.name in self.defines:
            for x in n.walk(item.value):  # the default is not evaluated, but must still make sense
                if isinstance(x, n.Name) and x.id not in self.params:
                    raise self.fail(f"undeclared size parameter '{x.id}' (expected a name declared earlier with "
                                    f"'param {x.id} = ...')", x)
            raw = self.defines[item.name]
            try:
                if isinstance(raw, bool):
                    raise TypeError
                value = int(raw) if isinstance(raw, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,10}\s*", raw) \
                    else operator.index(raw)
            except (TypeError, ValueError):
                raise self.fail(f"non-integer size: -D {item.name}={raw} (expected an integer)", item) from None
            if abs(value) > INT32_MAX:
                raise self.fail(f"-D {item.name}={value} is too large (expected at most {INT32_MAX})", item)
        else:
            value = eval_size(item.value, self.params, self.filename, f"size parameter {item.name}")
        self.params[item.name] = value

    def declaration(self, d: n.Decl) -> None:
        entry = self.tensors.get(d.name)
        if d.kind == "input" or entry is None or entry.decl is not None:
            self.claim(d.name, "a tensor", d)
        if d.dtype not in TENSOR_DTYPES:
            raise TeError(f"unknown dtype '{d.dtype}' (expected one of {', '.join(TENSOR_DTYPES)})", self.filename,
                          d.dtype_line, d.dtype_col)
        shape = []
        for dim in d.dims:
            size = eval_size(dim, self.params, self.filename, f"a dimension of {d.name}")
            if size <= 0:
                raise self.fail(f"dimension of {d.name} is {size} (expected a positive size)", dim)
            shape.append(size)
        if math.prod(shape) > INT32_MAX:
            raise self.fail(f"{d.name} has {math.prod(shape)} elements (expected at most {INT32_MAX})", d)
        entry = self.tensors.setdefault(d.name, _TensorEntry(d.name))
        entry.decl, entry.shape, entry.dtype = d, tuple(shape), d.dtype
        if d.kind == "input":
            entry.is_input = True
            entry.te = te.placeholder(entry.shape, d.dtype, d.name)
            self.inputs.append(entry.te)
        elif d.kind == "output" and d.name not in self.output_order:
            self.output_order.append(d.name)

    def definition(self, d: n.Definition) -> None:
        entry = self.tensors.get(d.name)
        if entry is None or entry.is_input or entry.definition is not None:
            self.claim(d.name, "a tensor", d)  # new name, or a duplicate error
        entry = self.tensors.setdefault(d.name, _TensorEntry(d.name))
        entry.definition = d
        if d.is_output and d.name not in self.output_order:
            self.output_order.append(d.name)

    # ------------------------------------------------------------------ pass 2: dependencies
    def dependency_order(self) -> list:
        """Definitions in an order where each comes after what it reads; a cycle or dead tensor is an error."""
        deps: dict[str, list] = {}
        for name, e in self.tensors.items():
            if e.definition is None:
                continue
            seen: dict[str, n.TensorRef] = {}
            for ref in (x for x in n.walk(e.definition.value) if isinstance(x, n.TensorRef)):
                target = self.tensors.get(ref.tensor)
                if target is None:
                    what = "a size parameter, not a tensor" if ref.tensor in self.params else "not declared"
                    raise self.fail(f"unknown tensor '{ref.tensor}': {what} (expected a declared input or a "
                                    "defined tensor)", ref)
                if not target.is_input:
                    seen.setdefault(ref.tensor, ref)
            deps[name] = list(seen.items())
        order: list[str] = []
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        for root in deps:
            if root in state:
                continue
            path, stack = [root], [iter(deps[root])]
            state[root] = 1
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    state[path[-1]] = 2
                    order.append(path.pop())
                    stack.pop()
                    continue
                dep, ref = step
                if state.get(dep) == 1:
                    cycle = " -> ".join(path[path.index(dep):] + [dep])
                    raise self.fail(f"cyclic definition: {cycle} (expected each tensor to be computed from inputs "
                                    "and other tensors, never from itself)", ref)
                if dep not in state:
                    state[dep] = 1
                    path.append(dep)
                    stack.append(iter(deps[dep]))
        used = set(self.output_order)
        for name in reversed(order):  # consumers come after producers, so one backward sweep finds all
            if name in used:
                used.update(dep for dep, _ in deps[name])
        for name in order:
            if name not in used:
                raise self.fail(f"{name} is computed but never used (expected it to be read by an output, or "
                                "marked 'output')", self.tensors[name].definition)
        return order

    # ------------------------------------------------------------------ pass 3: lowering
    def lower(self, e: _TensorEntry) -> list:
        d = e.definition
        info = analyze(d, self.params, self.shapes, self.names, e.shape, self.filename)
        lowering = Lowering(d, info, self.params, self.built, self.taken, self.filename)
        e.te = lowering.compute(e.dtype)
        self.built[e.name], self.shapes[e.name] = e.te, e.te.shape
        return lowering.lifted

