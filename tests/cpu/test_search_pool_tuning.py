"""A tuning run with the search's worker pool on (search/parallel.py; the other tests run without it): the
candidates it renders build, run and are logged as this process's would be."""
import ansorc.search.tuning as tuning
from ansorc import workloads
from ansorc.measure.record import RETIME_NOTE, load
from ansorc.search import parallel
from ansorc.search.evolution import SearchParams
from ansorc.search.tuner import tune
from ansorc.search.tuning import tune_options


def test_a_search_with_the_pool_builds_runs_and_logs_its_candidates(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSORC_SEARCH_WORKERS", "2")
    monkeypatch.setattr(parallel, "MIN_STATES", 8)   # the short search's rounds score a few dozen programs
    rendered = []    # each batch the pool rendered: its size

    def spy(task, states, names):
        out = parallel.render_states_parallel(task, states, names)
        rendered.append(len(out))
        return out
    monkeypatch.setattr(tuning, "render_states_parallel", spy)
    log = tmp_path / "log.jsonl"
    try:
        r = tune(workloads.matmul(48, 40, 32), trials=12, log=str(log),
                 options=tune_options(per_round=6, progress=False, runner_kwargs={"min_repeat_ms": 1, "repeat": 1},
                                      params=SearchParams(population=32, generations=2)))
        assert parallel._POOL is not None   # the pool did the work
    finally:
        parallel.close_pool()
    recs = [x for x in load(log) if x.note != RETIME_NOTE]
    assert rendered == [6, 6] and r.trials == 12
    assert len(recs) == 12 and all(x.ok for x in recs)    # every candidate built, ran and matched numpy
