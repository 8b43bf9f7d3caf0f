"""The search's garbage-collection thresholds: raised inside the search, restored after it, set in workers."""
import gc

from ansorc.search import gcpolicy
from ansorc.search.parallel import _pool, close_pool, register


def test_the_search_raises_the_young_threshold_and_restores_the_callers():
    before = gc.get_threshold()
    try:
        gc.set_threshold(500, 7, 9)
        with gcpolicy.fewer_collections():
            assert gc.get_threshold() == (gcpolicy.SEARCH_GEN0, 7, 9)
        assert gc.get_threshold() == (500, 7, 9)
        gc.set_threshold(50_000, 7, 9)      # a caller's own higher threshold is never lowered
        with gcpolicy.fewer_collections():
            assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


def test_search_workers_run_with_the_search_thresholds(monkeypatch):
    from ansorc import workloads
    from ansorc.search.task import SearchTask
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "1")
    close_pool()
    key = register(SearchTask(workloads.matmul(8, 8, 8)))
    try:
        assert _pool(key).submit(gc.get_threshold).result(timeout=60)[0] == gcpolicy.SEARCH_GEN0
    finally:
        close_pool()
