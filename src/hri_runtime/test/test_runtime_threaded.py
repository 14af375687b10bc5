"""The threaded executor every network backend uses (ThreadedContext), on the in-process bus:
callbacks on the executor thread, blocking call() from another thread, deadlock guard,
user-callback errors counted without stopping the executor. Waits are bounded by generous
timeouts; nothing asserts on wall-clock durations."""
import threading

import pytest

from hri_runtime import msgs
from hri_runtime.inproc import ThreadedInprocContext
from hri_runtime.node import Node

WAIT_S = 10.0


@pytest.fixture
def ctx():
    c = ThreadedInprocContext()
    yield c
    c.shutdown()


def wait(pred, timeout_s=WAIT_S):
    ev = threading.Event()
    while not pred():
        if ev.wait(0.005) or timeout_s <= 0:
            break
        timeout_s -= 0.005
    return pred()


def test_callbacks_run_on_the_executor_thread(ctx):
    n = Node("n", context=ctx)
    threads, got = set(), []

    def on_msg(m):
        threads.add(threading.get_ident())
        got.append(m.data)

    n.create_subscription("std_msgs/msg/String", "chatter", on_msg, qos=100)
    n.create_timer(0.01, lambda: threads.add(threading.get_ident()))
    pub = n.create_publisher("std_msgs/msg/String", "chatter")
    bg = ctx.spin_in_background()
    for i in range(20):
        pub.publish(msgs.new("std_msgs/msg/String", data=str(i)))
    assert wait(lambda: len(got) == 20)
    assert got == [str(i) for i in range(20)]
    assert threads == {bg.ident}


def test_blocking_call_from_main_thread_and_deadlock_guard(ctx):
    s = Node("s", context=ctx)
    s.create_service("std_srvs/srv/SetBool", "set",
                     lambda req, resp: msgs.new("std_srvs/srv/SetBool_Response", success=req.data, message="ok"))
    c = Node("c", context=ctx)
    cli = c.create_client("std_srvs/srv/SetBool", "/set")
    assert cli.wait_for_service(WAIT_S)
    # nobody spins yet: call() spins on this thread
    assert cli.call(msgs.new("std_srvs/srv/SetBool_Request", data=True), timeout_s=WAIT_S).success
    ctx.spin_in_background()
    assert cli.call(msgs.new("std_srvs/srv/SetBool_Request", data=False), timeout_s=WAIT_S).message == "ok"
    errors = []

    def inside():
        try:
            cli.call(msgs.new("std_srvs/srv/SetBool_Request"), timeout_s=1.0)
        except RuntimeError as e:
            errors.append(str(e))

    c.create_timer(0.01, inside)
    assert wait(lambda: errors)
    assert "deadlock" in errors[0]


def test_callback_errors_are_counted_and_the_executor_survives(ctx):
    n = Node("n", context=ctx)
    ok = []
    n.create_subscription("std_msgs/msg/String", "x", lambda m: 1 / 0 if m.data == "bad" else ok.append(m.data))
    pub = n.create_publisher("std_msgs/msg/String", "x")
    ctx.spin_in_background()
    for d in ("bad", "good", "bad", "fine"):
        pub.publish(msgs.new("std_msgs/msg/String", data=d))
    assert wait(lambda: len(ok) == 2)
    assert ok == ["good", "fine"] and ctx.callback_errors == 2
