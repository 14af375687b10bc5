"""Access classes of every topic and service a node subscribes to or serves, and the per-role
allow-lists of Zenoh access control generated from them (docs/deployment.md "Roles").

One source: a topic or service name declared in a package's ``parameters.yaml`` carries its class
in ``access:`` next to its default (``interaction.topics.reference: {default: /interaction/reference,
access: command}``); a key naming a node carries a mapping ``{suffix: class}`` of that node's
endpoints (``pid_tuning.live.robot_node``: ``set_gains: operator_service``); the runtime's own
endpoints (the rcl parameter services, ``/clock``, ``/rosout``, ``/parameter_events``) are classed
where the runtime declares them (``param_services.ACCESS``, :data:`RUNTIME_TOPICS`).

Namespaces (docs/ros2-interop.md "Namespaces"): a node-owned name is declared relative
(``interaction/reference``) and resolves in the node's namespace (``/left/interaction/reference``),
so its endpoint is the pattern ``/**/interaction/reference``: the name under any namespace (the
root one included), as the Zenoh key expression ``<domain>/**/interaction/reference/*/*`` matches
it. An absolute declaration (``/tf``, ``/diagnostics``) is that name only. Two patterns that can
match one name must give it one class (``endpoints`` refuses them otherwise), since an allow-list
is the union of its key expressions.

A class says what a message on the topic, or a call of the service, can do to whoever receives
it, so it names who may send it (:data:`CLASSES`). An identity may put on a topic or call a
service only when its role is listed for the class: everything not listed (an unclassified name,
a new node's input) is denied to every remote identity. Only this machine's own nodes (the
router's loopback listener, ``trust_local_tcp``) have every right.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from hri_runtime.security.classes import CLASSES
from hri_runtime.impl import wire

__all__ = ["ROLES", "CLASSES", "TOPIC_CLASSES", "SERVICE_CLASSES", "Endpoint", "endpoints", "classify",
           "role_rights", "role_key_exprs", "topic_key_expr", "service_key_expr", "roles_markdown"]

ROLES = ("operator", "robot", "observer")


TOPIC_CLASSES = tuple(n for n, c in CLASSES.items() if c.kind == "topic")
SERVICE_CLASSES = tuple(n for n, c in CLASSES.items() if c.kind == "service")

# the runtime's own topics (hri_runtime.node): the sim clock of use_sim_time, the log, parameter events
RUNTIME_TOPICS = {"/clock": "feedback", "/rosout": "state", "/parameter_events": "state"}


ANY_NS = "/**/"      # the prefix of a pattern: the name that follows under any namespace


@dataclass(frozen=True)
class Endpoint:
    """A topic or service name with its class and where it is declared: absolute (``/tf``) or a
    pattern (``/**/x/y``: ``x/y`` under any namespace, e.g. a relative declaration or the
    service ``x`` of every node)."""

    name: str
    cls: str
    source: str

    @property
    def pattern(self) -> bool:
        return self.name.startswith(ANY_NS)

    def matches(self, name: str) -> bool:
        """Whether the resolved (absolute) ``name`` is this endpoint's: equal, or for a pattern
        ``/**/x`` the name ``/x`` or any name ending in ``/x`` (Zenoh's ``**``: zero or more
        chunks)."""
        if not self.pattern:
            return name == self.name
        tail = self.name[len(ANY_NS) - 1:]          # '/x/y'
        return name == tail or name.endswith(tail)

    def overlaps(self, other: "Endpoint") -> bool:
        """Whether some resolved name matches both (chunk-wise suffixes)."""
        if not self.pattern and not other.pattern:
            return self.name == other.name
        if not self.pattern:
            return other.matches(self.name)
        if not other.pattern:
            return self.matches(other.name)
        a, b = self.name[len(ANY_NS) - 1:], other.name[len(ANY_NS) - 1:]
        return a.endswith(b) or b.endswith(a)

    @property
    def kind(self) -> str:
        return CLASSES[self.cls].kind

    @property
    def actuating(self) -> bool:
        return CLASSES[self.cls].actuating


def _runtime_endpoints() -> list[Endpoint]:
    from hri_runtime.parameter_service import ACCESS

    out = [Endpoint(n, c, "hri_runtime.security.access.RUNTIME_TOPICS") for n, c in RUNTIME_TOPICS.items()]
    out += [Endpoint(f"{ANY_NS}{short}", c, "hri_runtime.parameter_service.ACCESS") for short, c in ACCESS.items()]
    return out


def endpoint_name(declared: str) -> str:
    """The endpoint of a declared name: an absolute one itself, a relative one ``/**/<name>``
    (it resolves in each node's namespace). A private name (``~/x``) or an invalid one: ValueError."""
    from hri_runtime.names import validate_topic_name

    validate_topic_name(declared)
    if declared.startswith("~"):
        raise ValueError("a relative or absolute ROS name (a private ~/ name belongs to one node)")
    return declared if declared.startswith("/") else ANY_NS + declared


def endpoints(cfg: dict | None = None, config_root=None) -> list[Endpoint]:
    """Every classed endpoint of a merged robot config (default: the declared defaults): the
    declared names with ``access`` resolved to their configured values, then the runtime's.
    One name classed twice differently is a ConfigError naming both keys."""
    import hri_runtime.config.tree as cfgmod

    decl = cfgmod.load_declarations(config_root)
    data = cfg if cfg is not None else cfgmod.declared_defaults(config_root)
    out: list[Endpoint] = []

    def walk(spec: dict, value: Any, path: tuple) -> None:
        for key, child in spec.items():
            if key == cfgmod.RULES_KEY:
                continue
            sub = value.get(key) if isinstance(value, dict) else None
            dotted = ".".join(path + (key,))
            if cfgmod.is_leaf_spec(child):
                access = child.get("access")
                if access is None or not sub:
                    continue
                try:
                    name = endpoint_name(sub) if isinstance(sub, str) else None
                except ValueError:
                    name = None
                if name is None:
                    raise cfgmod.ConfigError(None, dotted, sub, "a relative or absolute ROS name for a key with access:")
                if isinstance(access, str):
                    out.append(Endpoint(name, access, dotted))
                else:
                    out.extend(Endpoint(f"{name.rstrip('/')}/{suffix}", c, dotted) for suffix, c in access.items())
            else:
                walk(child, sub, path + (key,))

    walk(decl.schema, data, ())
    out += _runtime_endpoints()
    seen: dict[str, Endpoint] = {}
    for e in out:
        other = seen.setdefault(e.name, e)
        if other.cls != e.cls:
            raise cfgmod.ConfigError(None, e.source, e.cls,
                                     f"the class {other.cls} that {other.source} gives {e.name} (one name, one class)")
    eps = sorted(seen.values(), key=lambda e: (e.kind, e.name))
    for i, a in enumerate(eps):        # a name two declarations can match: one class (the allow-lists are unions)
        for b in eps[i + 1:]:
            if a.kind == b.kind and a.cls != b.cls and a.overlaps(b):
                raise cfgmod.ConfigError(None, b.source, b.cls,
                                         f"the class {a.cls} that {a.source} gives {a.name}, which matches the same "
                                         f"names as {b.name} under some namespace (one name, one class)")
    return eps


def classify(name: str, kind: str, eps: Iterable[Endpoint]) -> Endpoint | None:
    """The endpoint classing a resolved topic/service ``name`` (exact, else the longest matching
    pattern ``/**/...``), or None."""
    best = None
    for e in eps:
        if e.kind != kind or not e.matches(name):
            continue
        if not e.pattern:
            return e
        if best is None or len(e.name) > len(best.name):
            best = e
    return best


def role_rights(eps: Iterable[Endpoint]) -> dict[str, dict[str, list[Endpoint]]]:
    """Per role: the topics it may put on (``put``) and the services it may call (``call``)."""
    out = {r: {"put": [], "call": []} for r in ROLES}
    for e in eps:
        for r in CLASSES[e.cls].roles:
            out[r]["put" if e.kind == "topic" else "call"].append(e)
    return out


def _chunks(name: str, domain_id: int) -> str:
    inner = name.strip("/")
    return f"{int(domain_id)}/{inner}"


def topic_key_expr(name: str, domain_id: int) -> str:
    """rmw_zenoh's data key of a topic, any type: ``<domain>/<name>/<type>/<hash>``."""
    return _chunks(name, domain_id) + "/*/*"


service_key_expr = topic_key_expr     # a service's queryable has the same shape


# every key of the ROS data space, and the two verbatim-chunk spaces Zenoh's '**' does not match:
# the ROS graph's liveliness tokens and zenoh-ext's AdvancedPublisher/Subscriber (TRANSIENT_LOCAL)
def data_space(domain_id: int) -> list[str]:
    return [f"{int(domain_id)}/**"]


def adv_space(domain_id: int) -> list[str]:
    return [f"{int(domain_id)}/**/@adv/**"]


GRAPH_SPACE = ["@ros2_lv/**"]
# a one-shot graph query's barrier token (ZenohContext.discover): outside the graph, any role
PROBE_SPACE = [f"{wire.PROBE_SPACE}/**"]


def role_key_exprs(eps: Iterable[Endpoint], domain_id: int) -> dict[str, dict[str, list[str]]]:
    """Per role, per Zenoh message (ingress, i.e. what the identity sends), the key expressions
    it is allowed. Every role may subscribe to anything, see the graph and read TRANSIENT_LOCAL
    caches; a put / a query on a ROS topic or service only as its class allows; declaring
    services and liveliness tokens (appearing in the graph) only the robot and the operator."""
    rights = role_rights(eps)
    d = int(domain_id)
    out: dict[str, dict[str, list[str]]] = {}
    for role in ROLES:
        puts = [topic_key_expr(e.name, d) for e in rights[role]["put"]]
        calls = [service_key_expr(e.name, d) for e in rights[role]["call"]]
        m = {"put": puts, "delete": puts,
             "declare_subscriber": data_space(d) + adv_space(d),
             "query": calls + adv_space(d),
             "declare_liveliness_subscriber": GRAPH_SPACE + adv_space(d),
             "liveliness_query": GRAPH_SPACE + PROBE_SPACE + adv_space(d),
             "liveliness_token": PROBE_SPACE}
        if role != "observer":          # serves (its nodes' services and caches) and appears in the graph
            m.update({"declare_queryable": data_space(d) + adv_space(d),
                      "reply": data_space(d) + adv_space(d),
                      "liveliness_token": GRAPH_SPACE + adv_space(d) + PROBE_SPACE})
        out[role] = {k: list(dict.fromkeys(v)) for k, v in m.items() if v}
    return out


def roles_markdown(eps: Iterable[Endpoint]) -> str:
    """The per-role table of docs/deployment.md ("Roles"), generated from the classes."""
    eps = list(eps)
    lines = ["| class | kind | meaning | operator | robot | observer | names (declared in) |",
             "|---|---|---|---|---|---|---|"]
    for name, c in CLASSES.items():
        names = ", ".join(f"`{e.name}` ({e.source})" for e in eps if e.cls == name) or "—"
        marks = ["yes" if r in c.roles else "no" for r in ROLES]
        lines.append(f"| `{name}` | {c.kind} | {c.meaning} | " + " | ".join(marks) + f" | {names} |")
    lines += ["", "`/**/x`: the name `x` under any namespace, the root one included (a relative declaration, or "
              "a node's private service; docs/ros2-interop.md \"Namespaces\"): one class for every robot's stack.",
              "", "Every role may also subscribe to any topic, see the graph (`@ros2_lv/**` liveliness "
              "subscriptions and queries) and read TRANSIENT_LOCAL caches; the operator and the robot "
              "identities may serve services and appear in the graph, an observer may not. Anything "
              "not in the table (an unclassified name) is denied to every remote identity."]
    return "\n".join(lines) + "\n"
