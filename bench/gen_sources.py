"""Candidate sources from the real generator, for bench/measure_throughput.py --sources bench.gen_sources:gmm1024"""
from __future__ import annotations

from ansorc import workloads
from ansorc.codegen.c import codegen_c
from ansorc.ir.lower import lower
from ansorc.search.annotate import sample
from ansorc.search.task import SearchTask


def gmm1024(count: int = 64, seed: int = 0):
    """`count` random programs of GMM 1024 (the sampler's space), rendered for the native target."""
    task = SearchTask(workloads.matmul(1024, 1024, 1024))
    return [codegen_c(lower(s, f"cand_{k}"), task.target) for k, s in enumerate(sample(task, count, seed=seed))]
