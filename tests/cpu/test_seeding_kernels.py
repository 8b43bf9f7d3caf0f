"""A donor's programs re-targeted to other shapes (search/seeding.py) compile and match the numpy reference."""
from ansorc import workloads as W
from ansorc.ir.schedule.canonical import rename_steps
from ansorc.ir.schedule.steps import steps_to_json
from ansorc.search.annotate import sample
from ansorc.search.seeding import retarget
from ansorc.search.task import HardwareParams, SearchTask
from tests.cpu.helpers import check_kernel

HW = HardwareParams(num_cores=2)


def _check(src_tensors, dst_tensors, n=3, seed=1):
    src, dst = SearchTask(src_tensors, "native", hw=HW), SearchTask(dst_tensors, "native", hw=HW)
    for st in sample(src, n, seed=seed):
        new = retarget(dst.dag, rename_steps(src.dag, steps_to_json(st.steps), to_canonical=True))
        assert new is not None
        check_kernel(dst_tensors, list(new.steps))


def test_matmul_relu_programs_re_targeted_to_uneven_shapes():
    _check(W.matmul_relu(64, 64, 64), W.matmul_relu(48, 96, 40))
    _check(W.matmul_relu(64, 64, 64), W.matmul_relu(13, 30, 17), seed=2)


def test_conv_programs_re_targeted_to_another_stride_and_size():
    c2d = W.WORKLOADS["C2D"][0]
    _check(c2d(1, 14, 14, 16, 16, 3, 1, 1), c2d(1, 28, 28, 32, 24, 3, 2, 1))
