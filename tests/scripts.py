"""Load a script of the checkout (bench/, tools/) as a module, for tests of what it computes."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(relpath: str):
    path = ROOT / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # as an import would: its functions then pickle (a worker pool's jobs)
    spec.loader.exec_module(module)
    return module
