"""connect(): a ray:// client whose set-up the head fails ("Initialization failure from server", a busy client
server) is tried again, up to CLIENT_INIT_ATTEMPTS times; other failures are one ClusterError line at once."""
import pytest

from ansorc.measure import ray_backend
from ansorc.measure.ray_backend import ClusterError, connect


class FakeRay:
    def __init__(self, failures: list):
        self.failures, self.calls = list(failures), 0

    def is_initialized(self):
        return False

    def init(self, **kwargs):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)


@pytest.fixture
def fake(monkeypatch):
    def install(failures):
        ray = FakeRay(failures)
        monkeypatch.setattr(ray_backend, "_ray", lambda: ray)
        monkeypatch.setattr(ray_backend, "_check_reachable", lambda address: None)
        monkeypatch.setattr(ray_backend, "client_available", lambda: True)
        monkeypatch.setattr(ray_backend.time, "sleep", lambda s: None)
        return ray
    return install


def test_an_initialization_failure_is_tried_again(fake):
    ray = fake([ConnectionError("Initialization failure from server:\n")] * 2)
    assert connect("ray://127.0.0.1:10001") is True and ray.calls == 3


def test_initialization_failures_give_up_after_the_last_attempt(fake):
    ray = fake([ConnectionError("Initialization failure from server:\n")] * ray_backend.CLIENT_INIT_ATTEMPTS)
    with pytest.raises(ClusterError, match=r"^cannot connect to the Ray cluster at 'ray://h:1': Initialization"):
        connect("ray://h:1")
    assert ray.calls == ray_backend.CLIENT_INIT_ATTEMPTS


def test_other_failures_are_not_retried(fake):
    ray = fake([ConnectionError("version mismatch: client 2.9, server 2.10")])
    with pytest.raises(ClusterError, match="version mismatch"):
        connect("ray://h:1")
    assert ray.calls == 1
