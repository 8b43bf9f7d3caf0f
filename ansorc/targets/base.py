"""What every target kind shares: the `Target` base type and the `TargetPlugin` interface.

A leaf module (it imports nothing from ansorc), so that every layer may name a target. A kind's plug-in lives in
its own folder under ansorc/targets/ and is found through the registry (ansorc/targets/__init__.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar


@dataclass(frozen=True)
class Target:
    """A machine that kernels are generated, built and run for. Subclasses set `kind` (the plug-in's key)."""
    name: str                   # as asked for ("native", "avx2", "cuda:sm_80", ...): what logs record
    kind: ClassVar[str] = ""

    @classmethod
    def from_name(cls, name: "str | Target" = "native", cc: str | None = None) -> "Target":
        """The target `name` names, of whichever kind claims it (ansorc.targets.parse)."""
        from . import parse   # the registry imports this module: a late import, within the leaf package
        return parse(name, cc)

    @property
    def builds_on_node(self) -> bool:
        """Whether a measuring node (Ray) builds the programs itself, with tools that only it has."""
        return False

    @property
    def resource(self) -> str:
        """What a measuring node advertises to take this target's programs (ansorc-target-<resource>)."""
        return self.name

    def peak_flops_bound(self, itemsize_bytes: int = 4) -> float | None:
        """Operations a second no program can reach here (None: no bound known); logged timings above it are
        not believed (search/plausible.py)."""
        return None


@dataclass(frozen=True)
class Pass:
    """One step of a target's pass list: a named function from a program (ir.stmt.PrimFunc) to a new one."""
    name: str
    run: Callable[[Any], Any]


class TargetPlugin:
    """One target kind: parses its names and holds its pipeline stages. Every stage is imported when first
    used, so this object can be reached from any layer without the layers importing each other.

    Data: `kind`, `names` (for help and errors), `networks` (whole ONNX models compile for it), `constants`
    (kernels may keep copies made from constant inputs), `cold_weights` (network weights are timed evicted from
    the caches, as they run), `in_model_check` (a tuned network's programs are timed against the defaults inside
    the model, which runs here and profiles its kernels: net/in_model.py)."""
    kind: str = ""
    names: tuple = ()
    networks: bool = False
    constants: bool = False
    cold_weights: bool = False
    in_model_check: bool = False

    def parse(self, name: str, cc: str | None = None) -> Target | None:
        """The Target `name` names, or None when it is not one of this kind's names."""
        raise NotImplementedError

    def lower(self, state, name: str, options) -> Any:
        """A schedule (ir.state.State) as a loop nest (a PrimFunc): the pipeline's first stage."""
        raise NotImplementedError

    def passes(self, target: Target) -> tuple:
        """The kind's pass list, in order: Pass values (codegen.pipeline.compile_program runs them)."""
        raise NotImplementedError

    def emit(self, func, target: Target) -> Any:
        """The Source of a program whose passes have run: the renderer, the pipeline's last stage."""
        raise NotImplementedError

    def hardware_params(self, target: Target) -> Any:
        """The search's view of the machine (search.task.HardwareParams)."""
        raise NotImplementedError

    def policy(self, target: Target) -> Any:
        """The search space: sketch and init rules (search.policy.SearchPolicy)."""
        raise NotImplementedError

    def default_state(self, task) -> Any:
        """The untuned program of a SearchTask (a State), or None where none applies."""
        raise NotImplementedError

    def local_backend(self, target: Target, options) -> Any:
        """This machine's builder and runner for the target (a MeasureBackend); raises TargetUnavailableError
        when its programs cannot run here."""
        raise NotImplementedError

    def node_measure(self, target: Target, config, build_timeout: float) -> Any:
        """For targets that build on the measuring node: a callable (source, task, best_seconds, early_cut)
        -> MeasureResult that builds and times one program there."""
        raise NotImplementedError

    def compile(self, dag, trials: int, log, target: str, name: str, options) -> Any:
        """A loaded kernel: tuned for `trials` (options: a search.tuning.TuneOptions), else the best in `log`,
        else the default program."""
        raise NotImplementedError

    def network_program(self, dag, target: Target) -> Any:
        """The untuned program (a State) of one fused group of a network (networks = True)."""
        raise NotImplementedError

    def build_network(self, net, groups, schedules: dict, target: Target, name, tasks) -> Any:
        """The loaded library of a whole network: `schedules` maps each group's name to its State."""
        raise NotImplementedError

    def cli_compile(self, args, prog, name: str) -> dict:
        """`ansorc compile --target ...`: build and export; returns what the command prints."""
        raise NotImplementedError


__all__ = ["Target", "TargetPlugin", "Pass"]
