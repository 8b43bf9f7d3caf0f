"""`ansorc train-cost-model LOGS... -o PATH [--target-family F]` and the --cost-model option of compile / tune.

    ansorc train-cost-model data/records/corpus.jsonl.gz -o ansorc/data/cost_model_avx2.txt.gz \\
        --target-family avx2 --hold-out          # how the shipped models are made (docs/cost-model.md)
"""
from __future__ import annotations

from .cli_checks import CliError, check_log


def add_parsers(sub) -> None:
    """The train-cost-model subcommand (compile and tune get --cost-model from add_cost_model_option)."""
    t = sub.add_parser("train-cost-model", help="train a pretrained cost model on tuning logs")
    t.add_argument("logs", nargs="+", help="tuning logs (JSON lines, .gz too) of known workloads")
    t.add_argument("-o", "--output", required=True, help="the model file to write (.txt.gz)")
    t.add_argument("--target-family", choices=("avx2", "avx512", "neon", "cuda"),
                   help="train on the records of this family (default: the logs' most common)")
    t.add_argument("--rounds", type=int, default=None, help="boosting rounds (default 200)")
    t.add_argument("--hold-out", action="store_true",
                   help="leave out the held-out workloads (ansorc/cost_model_data.py), as the shipped models do")
    t.add_argument("--json", action="store_true", help="print the model's header as JSON")


def add_cost_model_option(sp) -> None:
    sp.add_argument("--cost-model", dest="cost_model", default="pretrained", metavar="none|pretrained|PATH",
                    help="the tuner's cost model start: none (cold), pretrained (the shipped model of the target "
                         "family, when it exists and matches; default) or a model file (train-cost-model)")


def check_cost_model(value: str) -> str:
    """--cost-model's value, an explicit path checked now: one line and exit 2 when it cannot be read."""
    from .search.pretrain import PretrainedModelError, read_header
    if value in ("none", "pretrained"):
        return value
    try:
        read_header(value)
    except PretrainedModelError as e:
        raise CliError(f"--cost-model {e}") from None
    return value


def cmd_train(args) -> dict:
    from .cost_model_data import train_cost_model
    from .search.pretrain import PretrainedModelError
    for path in args.logs:
        check_log(path, must_exist=True)
    if args.rounds is not None and args.rounds < 1:
        raise CliError("--rounds must be >= 1")
    try:
        head = train_cost_model(args.logs, args.output, args.target_family, hold_out=args.hold_out,
                                rounds=args.rounds)
    except PretrainedModelError as e:
        raise CliError(str(e)) from None
    return {"model": args.output, **head}


def print_train(result: dict) -> None:
    print(f"wrote {result['model']}: {result['family']} cost model, {result['trained_on']} "
          f"(features {result['feature_hash']})")


__all__ = ["add_parsers", "add_cost_model_option", "check_cost_model", "cmd_train", "print_train"]
