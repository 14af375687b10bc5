"""rcl parameter services of a node, so ``ros2 param`` (and ``hri param``) work on our nodes.

Per node, as rclpy creates them (rcl_interfaces/srv/*):
``~/get_parameters``, ``~/set_parameters``, ``~/set_parameters_atomically``,
``~/list_parameters``, ``~/describe_parameters``, ``~/get_parameter_types``; and
``/parameter_events`` (rcl_interfaces/msg/ParameterEvent) on declare and on every accepted set.
Values convert between python and rcl_interfaces/ParameterValue by their parameter type
(``params.TYPES``); a set goes through ``Node.set_parameters`` (types, ranges, read-only,
callbacks), so a remote set is checked exactly like a local one.
"""
from __future__ import annotations

from typing import Any

from hri_runtime import msgs
from hri_runtime.parameter import Parameter, ParameterDescriptor, param_type_of

__all__ = ["register_interfaces", "to_value_msg", "from_value_msg", "ParameterServices",
           "TYPE_IDS", "SERVICES", "ACCESS"]

_SRVS = {
    "rcl_interfaces/srv/GetParameters": "string[] names\n---\nrcl_interfaces/ParameterValue[] values\n",
    "rcl_interfaces/srv/SetParameters":
        "rcl_interfaces/Parameter[] parameters\n---\nrcl_interfaces/SetParametersResult[] results\n",
    "rcl_interfaces/srv/SetParametersAtomically":
        "rcl_interfaces/Parameter[] parameters\n---\nrcl_interfaces/SetParametersResult result\n",
    "rcl_interfaces/srv/ListParameters":
        "uint64 DEPTH_RECURSIVE=0\nstring[] prefixes\nuint64 depth\n---\nrcl_interfaces/ListParametersResult result\n",
    "rcl_interfaces/srv/DescribeParameters":
        "string[] names\n---\nrcl_interfaces/ParameterDescriptor[] descriptors\n",
    "rcl_interfaces/srv/GetParameterTypes": "string[] names\n---\nuint8[] types\n",
}

SERVICES = {
    "get_parameters": "rcl_interfaces/srv/GetParameters",
    "set_parameters": "rcl_interfaces/srv/SetParameters",
    "set_parameters_atomically": "rcl_interfaces/srv/SetParametersAtomically",
    "list_parameters": "rcl_interfaces/srv/ListParameters",
    "describe_parameters": "rcl_interfaces/srv/DescribeParameters",
    "get_parameter_types": "rcl_interfaces/srv/GetParameterTypes",
}

# the access class of each (hri_runtime.security.access): reads for every identity, sets for operators
ACCESS = {short: "parameter" if short.startswith("set_") else "read_only_service" for short in SERVICES}

TYPE_IDS = {"": 0, "bool": 1, "integer": 2, "double": 3, "string": 4, "byte_array": 5,
            "bool_array": 6, "integer_array": 7, "double_array": 8, "string_array": 9}
_FIELDS = {1: "bool_value", 2: "integer_value", 3: "double_value", 4: "string_value",
           5: "byte_array_value", 6: "bool_array_value", 7: "integer_array_value",
           8: "double_array_value", 9: "string_array_value"}


def register_interfaces() -> None:
    """Add the rcl_interfaces services to the type store (idempotent)."""
    for name, text in _SRVS.items():
        try:
            msgs.srv_types(name)
        except msgs.UnknownTypeError:
            msgs.register_srv(name, text)


def to_value_msg(value: Any, type_name: str | None = None):
    """rcl_interfaces/ParameterValue of a python value (None -> NOT_SET)."""
    if value is None:
        return msgs.new("rcl_interfaces/msg/ParameterValue", type=0)
    t = type_name or param_type_of(value)
    tid = TYPE_IDS[t]
    v = list(value) if isinstance(value, (list, tuple)) else value
    return msgs.new("rcl_interfaces/msg/ParameterValue", type=tid, **{_FIELDS[tid]: v})


def from_value_msg(m) -> Any:
    if m.type == 0:
        return None
    v = getattr(m, _FIELDS[m.type])
    return v.tolist() if hasattr(v, "tolist") else (list(v) if isinstance(v, list) else v)


def _descriptor_msg(name: str, p: Parameter, d: ParameterDescriptor):
    kw: dict[str, Any] = dict(name=name, type=TYPE_IDS.get(p.type or "", 0), description=d.description,
                              read_only=d.read_only, dynamic_typing=d.dynamic_typing)
    extra = []
    if d.gt is not None:
        extra.append(f"> {d.gt}")
    if d.lt is not None:
        extra.append(f"< {d.lt}")
    if d.values is not None:
        extra.append(f"one of {list(d.values)}")
    kw["additional_constraints"] = ", ".join(extra)
    if d.range is not None and d.range[0] is not None and d.range[1] is not None:
        step = d.range[2] if len(d.range) > 2 else 0
        if p.type in ("integer", "integer_array"):
            kw["integer_range"] = [msgs.new("rcl_interfaces/msg/IntegerRange", from_value=int(d.range[0]),
                                            to_value=int(d.range[1]), step=int(step or 0))]
        else:
            kw["floating_point_range"] = [msgs.new("rcl_interfaces/msg/FloatingPointRange",
                                                   from_value=float(d.range[0]), to_value=float(d.range[1]),
                                                   step=float(step or 0))]
    return msgs.new("rcl_interfaces/msg/ParameterDescriptor", **kw)


class ParameterServices:
    """The six parameter services + /parameter_events of one node."""

    def __init__(self, node):
        register_interfaces()
        self.node = node
        self.events = node.create_publisher("rcl_interfaces/msg/ParameterEvent", "/parameter_events",
                                            qos=1000)
        for short, srv in SERVICES.items():
            node.create_service(srv, f"~/{short}", getattr(self, "_" + short))

    def event(self, new: list[Parameter] = (), changed: list[Parameter] = ()) -> None:
        conv = [[msgs.new("rcl_interfaces/msg/Parameter", name=p.name, value=to_value_msg(p.value, p.type or None))
                 for p in ps] for ps in (new, changed)]
        self.events.publish(msgs.new("rcl_interfaces/msg/ParameterEvent",
                                     stamp=self.node.get_clock().now().to_msg(),
                                     node=self.node.get_fully_qualified_name(),
                                     new_parameters=conv[0], changed_parameters=conv[1]))

    # ---- services
    def _get_parameters(self, req, resp):
        resp.values = [to_value_msg(self.node._params[n].value, self.node._params[n].type or None)
                       if n in self.node._params else to_value_msg(None) for n in req.names]
        return resp

    def _set_one(self, p):
        return self.node.set_parameter(p.name, from_value_msg(p.value))

    def _set_parameters(self, req, resp):
        out = []
        for p in req.parameters:
            r = self._set_one(p)
            out.append(msgs.new("rcl_interfaces/msg/SetParametersResult", successful=r.successful, reason=r.reason))
        resp.results = out
        return resp

    def _set_parameters_atomically(self, req, resp):
        node = self.node
        before = {n: (p.value, p.type) for n, p in node._params.items()}
        for p in req.parameters:
            r = self._set_one(p)
            if not r.successful:
                for n, (v, t) in before.items():   # roll back
                    if node._params[n].value is not v and n in node._param_appliers:
                        try:                       # the node applied the new value: re-apply the old
                            node._param_appliers[n](v)
                        except (ValueError, TypeError, OSError):
                            pass
                    node._params[n] = Parameter(n, v, t)
                resp.result = msgs.new("rcl_interfaces/msg/SetParametersResult", successful=False,
                                       reason=r.reason)
                return resp
        resp.result = msgs.new("rcl_interfaces/msg/SetParametersResult", successful=True)
        return resp

    def _list_parameters(self, req, resp):
        names = sorted(self.node._params)
        prefixes = list(req.prefixes)
        depth = int(req.depth)
        if prefixes:
            names = [n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes)]
        if depth:
            names = [n for n in names if n.count(".") < depth]
        pre = sorted({n.rsplit(".", 1)[0] for n in names if "." in n})
        resp.result = msgs.new("rcl_interfaces/msg/ListParametersResult", names=names, prefixes=pre)
        return resp

    def _describe_parameters(self, req, resp):
        out = []
        for n in req.names:
            if n in self.node._params:
                out.append(_descriptor_msg(n, self.node._params[n], self.node._descriptors[n]))
            else:
                out.append(msgs.new("rcl_interfaces/msg/ParameterDescriptor", name=n))
        resp.descriptors = out
        return resp

    def _get_parameter_types(self, req, resp):
        resp.types = [TYPE_IDS.get(self.node._params[n].type or "", 0) if n in self.node._params else 0
                      for n in req.names]
        return resp
