"""The C text of one kernel in a generated file, for tests that look inside it."""


def body_of(code: str, entry: str) -> str:
    """From the kernel's first outlined parallel loop body (codegen/parallel.py: `struct ENTRY_par0_ctx`, placed
    before the function) or its function `int ENTRY(`, whichever comes first, to the end of the file."""
    starts = [i for i in (code.find(f"struct {entry}_par0_ctx"), code.find(f"int {entry}(")) if i >= 0]
    return code[min(starts):]
