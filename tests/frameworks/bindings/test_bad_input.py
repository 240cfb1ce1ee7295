"""Mistakes raise at once, with a message naming the argument and the value; nothing reaches the
library. Library refusals raise braid.BraidError with the ncclResult_t code and its text."""

import numpy as np
import pytest

import braid
from braid import errors


@pytest.fixture(scope="module")
def comm():
    (c,) = braid.Communicator.init_all(1)
    yield c
    c.destroy()


@pytest.fixture(scope="module")
def pair():
    comms = braid.Communicator.init_all(2)
    yield comms
    for c in comms:
        c.destroy()


def test_type_without_nccl_equivalent(comm):
    with pytest.raises(TypeError, match=r"all_reduce: send has element format 'h'"):
        comm.all_reduce(np.zeros(4, np.int16))
    with pytest.raises(TypeError, match=r"all_reduce: send .*format '\?'"):
        comm.all_reduce(np.zeros(4, bool))


def test_send_and_recv_types_differ(comm):
    with pytest.raises(TypeError, match=r"recv holds float64 but send holds float32"):
        comm.all_reduce(np.zeros(4, np.float32), np.zeros(4, np.float64))


def test_read_only_output(comm):
    out = np.zeros(4, np.float32)
    out.setflags(write=False)
    with pytest.raises(ValueError, match=r"all_reduce: recv is read-only"):
        comm.all_reduce(np.zeros(4, np.float32), out)
    with pytest.raises(ValueError, match=r"broadcast: recv is read-only"):
        comm.broadcast(np.zeros(4, np.float32), out)
    with pytest.raises(ValueError, match=r"recv: buffer is read-only"):
        comm.recv(out, 0)


def test_too_short_and_too_long_buffers(comm, pair):
    with pytest.raises(ValueError, match=r"recv has 4 elements, expected 5 \(the count of send\)"):
        comm.all_reduce(np.zeros(5, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"recv has 6 elements, expected 5"):
        comm.all_reduce(np.zeros(5, np.float32), np.zeros(6, np.float32))
    with pytest.raises(ValueError, match=r"all_gather: recv has 5 elements, expected 10 "
                                         r"\(2 ranks x 5 elements\)"):
        pair[0].all_gather(np.zeros(5, np.float32), np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"reduce_scatter: send has 5 elements, not a multiple"):
        pair[0].reduce_scatter(np.zeros(5, np.float32))


def test_bad_op_and_dtype_names(comm):
    with pytest.raises(ValueError, match=r"op='mean' is not a reduction \(one of sum, prod"):
        comm.all_reduce(np.zeros(3, np.float32), op="mean")
    with pytest.raises(TypeError, match=r"op must be an op name .* got int"):
        comm.all_reduce(np.zeros(3, np.float32), op=3)
    with pytest.raises(ValueError, match=r"dtype='complex64' is not a type Braid reduces"):
        comm.all_reduce(np.zeros(3, np.complex64), dtype="complex64")
    with pytest.raises(TypeError, match=r"2-byte elements but dtype=float32 needs 4"):
        comm.all_reduce(np.zeros(3, np.uint16), dtype="float32")
    # The enums are accepted wherever names are.
    x = np.ones(3, np.float32)
    comm.all_reduce(x, op=braid.ReduceOp.MAX, dtype=braid.DataType.float32)


def test_not_an_array_and_not_contiguous(comm):
    with pytest.raises(TypeError, match=r"all_reduce: send must support the buffer protocol .* "
                                        r"got list"):
        comm.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match=r"all_reduce: send must be C-contiguous"):
        comm.all_reduce(np.zeros((4, 4), np.float32)[:, 1])
    with pytest.raises(TypeError, match=r"broadcast: send \(on the root\) is None"):
        comm.broadcast(None, np.zeros(3, np.float32), root=0)


def test_ranks_out_of_range(pair):
    with pytest.raises(ValueError, match=r"reduce: root=2 is outside \[0, size=2\)"):
        pair[0].reduce(np.zeros(3, np.float32), root=2)
    with pytest.raises(ValueError, match=r"send: peer=-1 is outside \[0, size=2\)"):
        pair[0].send(np.zeros(3, np.float32), -1)
    with pytest.raises(ValueError, match=r"rank=3 must be in \[0, nranks=2\)"):
        braid.Communicator(2, braid.get_unique_id(), 3)
    with pytest.raises(ValueError, match=r"unique_id must be 128 bytes .* got 5"):
        braid.Communicator(2, b"short", 0)


def test_library_refusal_is_a_braid_error(comm):
    # A NULL buffer with a non-zero count passes the bindings (raw addresses are the caller's
    # responsibility) and is refused by the library: BraidError with its code and text.
    with pytest.raises(braid.BraidError) as info:
        comm.all_reduce_ptr(0, 0, 4, "float32", "sum")
    assert isinstance(info.value, RuntimeError)
    assert info.value.code == errors.INVALID_ARGUMENT
    assert info.value.code_name == "ncclInvalidArgument"
    assert "ncclAllReduce" in info.value.text and "NULL" in info.value.text
    with pytest.raises(ValueError, match=r"all_reduce_ptr: count=-1 is negative"):
        comm.all_reduce_ptr(0, 0, -1, "float32", "sum")
    with pytest.raises(ValueError, match=r"dtype='float128'"):
        comm.all_reduce_ptr(0, 0, 1, "float128", "sum")


def test_use_after_destroy():
    (c,) = braid.Communicator.init_all(1)
    c.destroy()
    c.destroy()  # a second destroy does nothing
    with pytest.raises(ValueError, match=r"communicator was destroyed or aborted"):
        c.all_reduce(np.zeros(3, np.float32))
