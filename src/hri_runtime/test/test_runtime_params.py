"""rcl parameter services (what `ros2 param` calls) and `hri param`, on the in-process bus."""
import pytest

from hri_runtime import msgs
from hri_runtime.inproc import InprocContext, ThreadedInprocContext
from hri_runtime.node import Node
from hri_runtime.parameter_service import from_value_msg, register_interfaces, to_value_msg
from hri_runtime.cli.topic import param_main


def make(ctx):
    n = Node("ctl", context=ctx, namespace="arm", parameters={"gains.kp": 3.0})
    n.applied = []
    n.declare_parameter("rate_hz", 25.0, {"range": (1.0, 100.0), "description": "loop rate"},
                        on_set=lambda v: n.applied.append(("rate_hz", v)))
    n.declare_parameter("gains.kp", 1.0)                              # startup only: read-only
    n.declare_parameter("mode", "track", {"values": ["track", "hold"]},
                        on_set=lambda v: n.applied.append(("mode", v)))
    return n


@pytest.fixture
def graph():
    """An in-process bus with parameter services: the node ``/arm/ctl`` and a client node."""
    register_interfaces()
    ctx = InprocContext()
    ctx.parameter_services_enabled = True
    n = make(ctx)
    return ctx, n, Node("cli", context=ctx, start_parameter_services=False)


def test_services_get_set_list_describe_and_events(graph):
    ctx, n, c = graph
    events = []
    c.create_subscription("rcl_interfaces/msg/ParameterEvent", "/parameter_events", events.append, qos=100)

    def call(short, **fields):
        srv = {"get_parameters": "GetParameters", "set_parameters": "SetParameters",
               "list_parameters": "ListParameters", "describe_parameters": "DescribeParameters",
               "get_parameter_types": "GetParameterTypes"}[short]
        cli = c.create_client(f"rcl_interfaces/srv/{srv}", f"/arm/ctl/{short}")
        return cli.call(msgs.new(f"rcl_interfaces/srv/{srv}_Request", **fields), timeout_s=1.0)

    assert call("list_parameters").result.names == ["gains.kp", "mode", "rate_hz", "use_sim_time"]
    assert call("list_parameters").result.prefixes == ["gains"]
    vals = call("get_parameters", names=["rate_hz", "gains.kp", "nope"]).values
    assert [from_value_msg(v) for v in vals] == [25.0, 3.0, None]
    assert list(call("get_parameter_types", names=["rate_hz", "mode", "use_sim_time"]).types) == [3, 4, 1]
    par = lambda name, v: msgs.new("rcl_interfaces/msg/Parameter", name=name, value=to_value_msg(v))  # noqa: E731
    res = call("set_parameters", parameters=[par("rate_hz", 50.0), par("rate_hz", 500.0), par("mode", "fly")]).results
    assert [r.successful for r in res] == [True, False, False]
    assert "out of range" in res[1].reason and "not one of" in res[2].reason
    assert n.get_parameter("rate_hz").value == 50.0
    d = call("describe_parameters", names=["rate_hz"]).descriptors[0]
    assert d.type == 3 and d.description == "loop rate"
    assert (d.floating_point_range[0].from_value, d.floating_point_range[0].to_value) == (1.0, 100.0)
    ctx.spin_for(0.0)
    changed = [(p.name, from_value_msg(p.value)) for e in events for p in e.changed_parameters]
    assert changed == [("rate_hz", 50.0)] and all(e.node == "/arm/ctl" for e in events)


def test_hri_param_cli(capsys):
    ctx = ThreadedInprocContext()
    make(ctx)
    assert param_main(["get", "/arm/ctl", "gains.kp"], context=ctx) == 0
    assert capsys.readouterr().out.strip() == "Value is: 3.0"
    ctx = ThreadedInprocContext()
    n = make(ctx)
    assert param_main(["set", "arm/ctl", "rate_hz", "75"], context=ctx) == 0      # int -> double
    assert "successful" in capsys.readouterr().out and n.get_parameter("rate_hz").value == 75.0
    ctx = ThreadedInprocContext()
    make(ctx)
    assert param_main(["set", "/arm/ctl", "rate_hz", "7000"], context=ctx) == 1
    assert "out of range" in capsys.readouterr().out
    ctx = ThreadedInprocContext()
    n = make(ctx)
    assert param_main(["set", "/arm/ctl", "gains.kp", "9.0"], context=ctx) == 1   # startup parameter
    out = capsys.readouterr().out
    assert "read-only" in out and n.get_parameter("gains.kp").value == 3.0
    ctx = ThreadedInprocContext()
    make(ctx)
    assert param_main(["list", "/arm/ctl"], context=ctx) == 0
    assert capsys.readouterr().out.split() == ["gains.kp", "mode", "rate_hz", "use_sim_time"]
    assert param_main(["--timeout", "0.2", "get", "/nobody", "x"],
                      context=ThreadedInprocContext()) == 1


def test_set_parameters_atomically_rolls_back_what_the_node_applied(graph):
    ctx, n, c = graph
    cli = c.create_client("rcl_interfaces/srv/SetParametersAtomically", "/arm/ctl/set_parameters_atomically")
    par = lambda name, v: msgs.new("rcl_interfaces/msg/Parameter", name=name, value=to_value_msg(v))  # noqa: E731
    r = cli.call(msgs.new("rcl_interfaces/srv/SetParametersAtomically_Request",
                          parameters=[par("rate_hz", 50.0), par("gains.kp", 9.0)]), timeout_s=1.0).result
    assert not r.successful and "read-only" in r.reason
    assert n.get_parameter("rate_hz").value == 25.0
    assert n.applied == [("rate_hz", 50.0), ("rate_hz", 25.0)]          # applied, then rolled back


def test_record_parameter_stores_what_another_input_applied(graph):
    """``record_parameter``: the value a node applied by another input (a topic, a service)
    becomes the parameter's value without its applier running again, announced on
    /parameter_events; only for a settable parameter and only a value that fits the declaration."""
    from hri_runtime.parameter import ParameterError

    ctx, n, c = graph
    events = []
    c.create_subscription("rcl_interfaces/msg/ParameterEvent", "/parameter_events", events.append, qos=100)
    n.record_parameter("rate_hz", 40)
    assert n.get_parameter("rate_hz").value == 40.0 and n.applied == []
    n.record_parameter("rate_hz", 40.0)                   # the same value: no event
    for name, value in (("rate_hz", 500.0), ("mode", "fly"), ("gains.kp", 2.0)):
        with pytest.raises(ParameterError):
            n.record_parameter(name, value)
    assert n.get_parameter("rate_hz").value == 40.0 and n.get_parameter("gains.kp").value == 3.0
    ctx.spin_for(0.0)
    assert [(p.name, from_value_msg(p.value)) for e in events for p in e.changed_parameters] == [("rate_hz", 40.0)]
