"""Access classes of every topic and service a node subscribes to or serves, and the per-role
allow-lists of Zenoh access control generated from them (docs/deployment.md "Roles").

One source: a topic or service name declared in a package's ``parameters.yaml`` carries its class
in ``access:`` next to its default (``interaction.topics.reference: {default: /interaction/reference,
access: command}``); a key naming a node carries a mapping ``{suffix: class}`` of that node's
endpoints (``pid_tuning.live.robot_node``: ``set_gains: operator_service``); the runtime's own
endpoints (the rcl parameter services, ``/clock``, ``/rosout``, ``/parameter_events``) are classed
where the runtime declares them (``param_services.ACCESS``, :data:`RUNTIME_TOPICS`).

A class says what a message on the topic, or a call of the service, can do to whoever receives
it, so it names who may send it (:data:`CLASSES`). An identity may put on a topic or call a
service only when its role is listed for the class: everything not listed (an unclassified name,
a new node's input) is denied to every remote identity. Only this machine's own nodes (the
router's loopback listener, ``trust_local_tcp``) have every right.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from hri_runtime.security.classes import CLASSES, AccessClass, check_access_declaration  # noqa: F401 (re-exported)

__all__ = ["ROLES", "CLASSES", "TOPIC_CLASSES", "SERVICE_CLASSES", "Endpoint", "endpoints", "classify",
           "role_rights", "role_key_exprs", "topic_key_expr", "service_key_expr", "roles_markdown"]

ROLES = ("operator", "robot", "observer")


TOPIC_CLASSES = tuple(n for n, c in CLASSES.items() if c.kind == "topic")
SERVICE_CLASSES = tuple(n for n, c in CLASSES.items() if c.kind == "service")

# the runtime's own topics (hri_runtime.node): the sim clock of use_sim_time, the log, parameter events
RUNTIME_TOPICS = {"/clock": "feedback", "/rosout": "state", "/parameter_events": "state"}


@dataclass(frozen=True)
class Endpoint:
    """A topic or service name (``/**/x``: the service ``x`` of every node) with its class and
    where it is declared."""

    name: str
    cls: str
    source: str

    @property
    def kind(self) -> str:
        return CLASSES[self.cls].kind

    @property
    def actuating(self) -> bool:
        return CLASSES[self.cls].actuating


def _runtime_endpoints() -> list[Endpoint]:
    from hri_runtime.parameter_service import ACCESS

    out = [Endpoint(n, c, "hri_runtime.security.access.RUNTIME_TOPICS") for n, c in RUNTIME_TOPICS.items()]
    out += [Endpoint(f"/**/{short}", c, "hri_runtime.parameter_service.ACCESS") for short, c in ACCESS.items()]
    return out


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
                if not isinstance(sub, str) or not sub.startswith("/"):
                    raise cfgmod.ConfigError(None, dotted, sub, "an absolute ROS name (/...) for a key with access:")
                if isinstance(access, str):
                    out.append(Endpoint(sub, access, dotted))
                else:
                    out.extend(Endpoint(f"{sub.rstrip('/')}/{suffix}", c, dotted) for suffix, c in access.items())
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
    return sorted(seen.values(), key=lambda e: (e.kind, e.name))


def classify(name: str, kind: str, eps: Iterable[Endpoint]) -> Endpoint | None:
    """The endpoint classing a resolved topic/service ``name`` (exact, or ``/**/<last part>``), or None."""
    for e in eps:
        if e.kind != kind:
            continue
        if e.name == name or (e.name.startswith("/**/") and name.rsplit("/", 1)[-1] == e.name[4:]
                              and name.count("/") >= 2):
            return e
    return None


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
             "liveliness_query": GRAPH_SPACE + adv_space(d)}
        if role != "observer":          # serves (its nodes' services and caches) and appears in the graph
            m.update({"declare_queryable": data_space(d) + adv_space(d),
                      "reply": data_space(d) + adv_space(d),
                      "liveliness_token": GRAPH_SPACE + adv_space(d)})
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
    lines += ["", "Every role may also subscribe to any topic, see the graph (`@ros2_lv/**` liveliness "
              "subscriptions and queries) and read TRANSIENT_LOCAL caches; the operator and the robot "
              "identities may serve services and appear in the graph, an observer may not. Anything "
              "not in the table (an unclassified name) is denied to every remote identity."]
    return "\n".join(lines) + "\n"
