"""The GPU worker's loop on the fake device (fake_cuda.py): a worker command for runner tests without a GPU.
With ANSORC_FAKE_CUDA_FAIL_START set, the device cannot be opened (as on a machine without a GPU)."""
import os
import socket
import sys

from fake_cuda import FakeCudaError, FakeDevice

from ansorc.targets.cuda.measure_worker import serve


def make_device():
    if os.environ.get("ANSORC_FAKE_CUDA_FAIL_START"):
        raise FakeCudaError(100, "CUDA_ERROR_NO_DEVICE", "cuInit")
    return FakeDevice()


if __name__ == "__main__":
    sys.exit(serve(socket.socket(fileno=int(sys.argv[1])), make_device))
