"""Zenoh backend of hri_runtime, wire compatible with ROS 2's ``rmw_zenoh_cpp``.

A ROS 2 machine with ``RMW_IMPLEMENTATION=rmw_zenoh_cpp`` connected to the same Zenoh router
sees every node, publisher, subscription, service and client created here (``ros2 node list``,
``ros2 topic echo``) because the bytes are rmw_zenoh's (see ``hri_runtime.impl.wire`` and
docs/ros2-interop.md "Wire"):

* one Zenoh session per context (``mode: client`` of the router by default; ``peer`` as rmw_zenoh),
  ``timestamping`` on (TRANSIENT_LOCAL caches), multicast scouting off;
* a publisher puts CDR bytes (4-byte header) on ``<domain>/<topic>/<pkg>::msg::dds_::<T>_/RIHS01_<hash>``
  with the 33-byte attachment (sequence number from 1, source timestamp in ns, 16-byte GID);
  TRANSIENT_LOCAL publishers are ``zenoh.ext`` AdvancedPublishers with ``cache.max_samples=depth``,
  ``publisher_detection`` and, when RELIABLE, a sporadic heartbeat;
* a subscription listens on its exact key, as rmw_zenoh's: samples without a valid attachment or
  without a CDR header are dropped, counted per cause (``drops``) and logged once per cause and
  interval – never raised into Zenoh's threads; a publisher of another type or type hash on the
  topic (seen in the graph) is counted once (``type_mismatch`` / ``hash_mismatch``) and logged;
  TRANSIENT_LOCAL subscriptions are AdvancedSubscribers (``detect_late_publishers``, history = depth);
* services are queryables declared ``complete=True``; the reply carries the request's sequence
  number and client GID with a fresh timestamp; clients ``get`` with target ALL_COMPLETE and
  consolidation NONE;
* liveliness tokens ``@ros2_lv/...`` for every node and endpoint; the context keeps a graph
  cache from ``@ros2_lv/<domain>/**`` (``graph()``, ``get_subscription_count()``,
  ``service_is_ready()``).

The per-message path is C (``hri_runtime._cdr``, src/zenoh_hot_path.cpp): a publisher's
``publish`` is a ``Putter`` (the node layer's serialize, then the declared publisher's ``put`` with
the attachment written in C), a subscription's Zenoh callback a ``SampleGate`` (byte tests, then
``deliver``, the executor's C ``Delivery``; the full checks in Python only for a sample that fails
them).

Zenoh callbacks validate and hand the bytes to ``deliver`` / ``on_request`` / ``on_response``,
which queue work for the context's executor thread (``context.ThreadedContext``). With
``runtime.zenoh.inline_callbacks`` (default true) a subscription's ``deliver`` runs the node
callback directly on the Zenoh thread when the executor is idle, under the executor's lock:
callbacks of a context stay mutually exclusive and ordered per subscription, as ROS 2's default
callback group guarantees (see ``hri_runtime.context`` "Threads"); no user exception ever
reaches Zenoh (``ThreadedContext`` logs and counts it).

``start_router(endpoints)`` opens a session in router mode (what ``hri launch`` starts when no
router answers on ``runtime.zenoh.router_listen_endpoints``; it stands in for ``rmw_zenohd``).
"""
from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from hri_runtime import _cdr
from hri_runtime.impl import wire
import hri_runtime.config.tree as cfgmod
from hri_runtime.context import Graph, GraphEndpoint, ThreadedContext, TransportUnavailableError
from hri_runtime.qos import QoSProfile, qos_profile
from hri_runtime.parameters_gen import RuntimeZenohParams

log = logging.getLogger("hri.runtime.zenoh")

__all__ = ["ZenohParams", "ZenohContext", "start_router", "router_answers", "session_config",
           "DropStats"]


_ZENOH = None


def _zenoh():
    global _ZENOH
    if _ZENOH is None:
        try:
            import zenoh
            import zenoh.ext  # noqa: F401  (AdvancedPublisher/Subscriber, TRANSIENT_LOCAL)
        except ImportError as e:  # pragma: no cover - eclipse-zenoh is a hard dependency
            raise TransportUnavailableError(
                "HRI_TRANSPORT=zenoh needs eclipse-zenoh>=1.4,<2 (pip install eclipse-zenoh)") from e
        _ZENOH = zenoh
    return _ZENOH


# --------------------------------------------------------------------------------------------
# parameters
ENDPOINT_KEYS = ("connect_endpoints", "listen_endpoints", "router_listen_endpoints", "router_connect_endpoints")


def endpoint_list(value) -> tuple[str, ...]:
    """An endpoint list as a tuple; one comma-separated string ('tcp/a:1,tcp/b:2', as an
    environment override gives it) is split."""
    if isinstance(value, str):
        value = [p.strip() for p in value.split(",") if p.strip()]
    return tuple(str(p) for p in value)


@dataclass(frozen=True)
class ZenohParams(RuntimeZenohParams):
    """``runtime.zenoh`` and ``runtime.domain_id``, typed from their declaration in
    ``src/hri_runtime/parameters.yaml`` and checked against it (mode, bounds, lists, the TLS and
    access-control sub-sections); endpoint lists also take one comma-separated string."""

    domain_id: int = 0

    def __post_init__(self):
        for key in ENDPOINT_KEYS:
            object.__setattr__(self, key, endpoint_list(getattr(self, key)))
        super().__post_init__()
        cfgmod.validate_section("runtime.domain_id", self.domain_id)

    @classmethod
    def from_config(cls, cfg: dict) -> "ZenohParams":
        """From a whole robot config (its ``runtime`` section) or the ``runtime`` section itself."""
        sec = cfg.get("runtime", cfg)
        zen = {k: list(endpoint_list(v)) if k in ENDPOINT_KEYS else v for k, v in sec["zenoh"].items()}
        return replace(super().from_config(zen), domain_id=sec["domain_id"])

    @classmethod
    def defaults(cls, config_root: str | Path | None = None) -> "ZenohParams":
        """The ``runtime`` section of the declared defaults (environment expanded: ROS_DOMAIN_ID),
        for contexts created without a robot config (``HRI_TRANSPORT=zenoh`` default context)."""
        root = Path(config_root) if config_root else cfgmod.find_config_root()
        path = cfgmod.load_declarations(root).files["runtime"]
        sec = cfgmod.expand_env(cfgmod.declared_defaults(root)["runtime"], str(path), ("runtime",))
        return cls.from_config(sec)

    def with_(self, **kw) -> "ZenohParams":
        """A copy with ``kw`` replaced; ``tls`` / ``access_control`` given as dicts replace only
        the keys they name."""
        for key in ("tls", "access_control"):
            if isinstance(kw.get(key), dict):
                kw[key] = replace(getattr(self, key), **kw[key])
        return replace(self, **kw)


def session_config(params: ZenohParams, mode: str | None = None,
                   listen: tuple[str, ...] | None = None, cfg: dict | None = None) -> dict:
    """The Zenoh session configuration (as a dict of ``insert_json5`` paths -> values).

    client: connect to ``connect_endpoints``; peer: also listen on ``listen_endpoints``
    (loopback by default); router: listen on ``router_listen_endpoints``, with the access-control
    rules generated from ``cfg`` (a merged robot config; default: the declared defaults)."""
    mode = mode or params.mode
    out: dict[str, Any] = {
        "mode": mode,
        "scouting/multicast/enabled": params.multicast_scouting,
        "timestamping/enabled": True,
    }
    out.update(tls_config(params.tls))
    if mode == "router":
        out["listen/endpoints"] = list(listen if listen is not None else params.router_listen_endpoints)
        if params.router_connect_endpoints:
            out["connect/endpoints"] = list(params.router_connect_endpoints)
        acl = access_control_config(params.access_control, params.domain_id, cfg)
        if acl is not None:
            out["access_control"] = acl
    else:
        out["connect/endpoints"] = list(params.connect_endpoints)
        if mode == "peer":
            out["listen/endpoints"] = list(listen if listen is not None else params.listen_endpoints)
    return out


def tls_config(tls) -> dict:
    """Zenoh's ``transport/link/tls`` keys for ``runtime.zenoh.tls``: the same certificate and
    key for listening and connecting (one identity per side), the CA for both directions;
    with ``enable_mtls`` a listener refuses a peer without a certificate of that CA. Empty
    when no CA is configured (plain tcp only)."""
    if tls is None or not tls.root_ca_certificate:
        return {}
    base = "transport/link/tls/"
    out: dict[str, Any] = {base + "root_ca_certificate": str(tls.root_ca_certificate),
                           base + "enable_mtls": bool(tls.enable_mtls),
                           base + "verify_name_on_connect": bool(tls.verify_name_on_connect)}
    for side in ("listen", "connect"):
        if tls.certificate:
            out[f"{base}{side}_certificate"] = str(tls.certificate)
        if tls.private_key:
            out[f"{base}{side}_private_key"] = str(tls.private_key)
    return out


_ACL_ALL_MESSAGES = ["put", "delete", "declare_subscriber", "query", "reply", "declare_queryable",
                     "liveliness_token", "declare_liveliness_subscriber", "liveliness_query"]


def access_control_config(acl, domain_id: int, cfg: dict | None = None) -> dict | None:
    """Zenoh's ``access_control`` block for ``runtime.zenoh.access_control`` (None: disabled).

    Default deny, allow-lists per role (``hri_runtime.security.access``): what an identity (certificate
    common name) may send is generated from the access classes of the topics and services
    declared in ``cfg`` (a merged robot config; default: the declared defaults), e.g. an observer
    may put on ``/safety/stop_request`` and call parameter reads, nothing else. An identity in no
    list gets nothing; a name without a class is allowed to no remote identity. What the router
    sends to an identity (egress) is not limited: every role may read. ``trust_local_tcp``: plain
    tcp links (the router's loopback listener: this machine's nodes) get every message. Key
    expressions follow rmw_zenoh: a topic ``/ee_command`` is ``<domain>/ee_command/<type>/<hash>``."""
    if acl is None or not acl.enabled:
        return None
    from hri_runtime.security import access

    d = int(domain_id)
    per_role = access.role_key_exprs(access.endpoints(cfg), d)
    everything = ["**", *access.GRAPH_SPACE, *access.adv_space(d)]
    rules = [{"id": "everything", "messages": _ACL_ALL_MESSAGES, "flows": ["ingress", "egress"],
              "permission": "allow", "key_exprs": everything},
             {"id": "read", "messages": _ACL_ALL_MESSAGES, "flows": ["egress"], "permission": "allow",
              "key_exprs": everything}]
    subjects, policies = [], []
    for role, names in (("operator", acl.operator_common_names), ("robot", acl.robot_common_names),
                        ("observer", acl.observer_common_names)):
        names = [str(n) for n in names or []]
        if not names:
            continue
        ids = ["read"]
        for message, key_exprs in per_role[role].items():
            rid = f"{role}_{message}"
            rules.append({"id": rid, "messages": [message], "flows": ["ingress"], "permission": "allow",
                          "key_exprs": key_exprs})
            ids.append(rid)
        subjects.append({"id": f"{role}s", "cert_common_names": names})
        policies.append({"id": f"{role}s", "rules": ids, "subjects": [f"{role}s"]})
    if acl.trust_local_tcp:
        subjects.append({"id": "this_machine", "link_protocols": ["tcp"]})
        policies.append({"id": "this_machine", "rules": ["everything"], "subjects": ["this_machine"]})
    return {"enabled": True, "default_permission": "deny", "rules": rules, "subjects": subjects,
            "policies": policies}


def _open(conf: dict):
    zenoh = _zenoh()
    c = zenoh.Config()
    for k, v in conf.items():
        c.insert_json5(k, json.dumps(v))
    return zenoh.open(c)


def start_router(endpoints: list[str] | tuple[str, ...] | str | None = None,
                 params: ZenohParams | None = None, cfg: dict | None = None):
    """Open a Zenoh session in router mode listening on ``endpoints`` (default
    ``runtime.zenoh.router_listen_endpoints``, loopback ``tcp/127.0.0.1:7447``). Returns the
    session; ``close()`` it to stop the router. Raises TransportUnavailableError when the
    endpoint cannot be bound (e.g. a router already listens there: see :func:`router_answers`)."""
    params = params or ZenohParams.defaults()
    if isinstance(endpoints, str):
        endpoints = (endpoints,)
    conf = session_config(params, "router", tuple(endpoints) if endpoints else None, cfg)
    try:
        session = _open(conf)
    except Exception as e:  # zenoh.ZError: bind failure
        raise TransportUnavailableError(
            f"cannot start a Zenoh router on {conf['listen/endpoints']}: {e}") from e
    log.info("zenoh router %s listening on %s", session.zid(), conf["listen/endpoints"])
    return session


def router_answers(endpoint: str, timeout_s: float) -> bool:
    """True if something accepts TCP connections at a ``tcp/`` or ``tls/<host>:<port>`` endpoint."""
    proto, _, addr = endpoint.partition("/")
    if proto not in ("tcp", "tls") or ":" not in addr:
        return False
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


# --------------------------------------------------------------------------------------------
# drop accounting
class DropStats:
    """Dropped samples of one endpoint, counted per cause; each cause is logged at most once
    per ``interval_s`` (with the count so far)."""

    def __init__(self, where: str, interval_s: float):
        self.where = where
        self.interval_s = interval_s
        self.counts: Counter = Counter()
        self._last_log: dict[str, float] = {}
        self._lock = threading.Lock()

    def drop(self, cause: str, detail: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.counts[cause] += 1
            n = self.counts[cause]
            last = self._last_log.get(cause)
            due = last is None or now - last >= self.interval_s
            if due:
                self._last_log[cause] = now
        if due:
            log.warning("%s: dropped a sample (%s): %s [%d dropped for this cause]",
                        self.where, cause, detail, n)

    def drop_error(self, cause: str, e: BaseException) -> None:
        """Count an exception met while handling a sample: a WireError under its own cause,
        anything else under ``cause`` (e.g. "internal")."""
        if isinstance(e, wire.WireError):
            self.drop(e.cause, str(e))
        else:
            self.drop(cause, f"{type(e).__name__}: {e}")

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _reliability(zenoh, qos: QoSProfile):
    return zenoh.Reliability.BEST_EFFORT if qos.reliability == "best_effort" else zenoh.Reliability.RELIABLE


def _congestion(zenoh, qos: QoSProfile):
    # rmw_zenoh: KEEP_ALL + RELIABLE blocks, everything else drops under congestion
    if qos.history == "keep_all" and qos.reliability == "reliable":
        return zenoh.CongestionControl.BLOCK
    return zenoh.CongestionControl.DROP


def _depth(qos: QoSProfile) -> int:
    return int(qos.depth) if qos.history == "keep_last" else wire.RMW_ZENOH_DEFAULT_DEPTH


def _callback(fn, direct: bool):
    """A Zenoh callback handler. ``direct`` (``indirect=False``, the default) runs fn on Zenoh's
    network (tokio) thread; otherwise zenoh-python hands each sample to its own Python thread
    first (a longer round trip: docs/benchmarks.md, Transport)."""
    return _zenoh().handlers.Callback(fn, indirect=not direct)


def _undeclare(*entities) -> None:
    """Undeclare Zenoh entities (None skipped); one that is already gone (session closed) is fine."""
    for e in entities:
        if e is not None:
            try:
                e.undeclare()
            except Exception:  # noqa: BLE001 - session already closed
                pass


def _bytes(z) -> bytes | None:
    return None if z is None else z.to_bytes()


# --------------------------------------------------------------------------------------------
# entities
@dataclass
class _NodeEntity:
    nid: int
    namespace: str
    name: str
    token_key: str
    token: Any


class _Endpoint:
    kind: wire.EntityKind

    def __init__(self, ctx: "ZenohContext", node, name: str, type_name: str, qos: QoSProfile):
        self.ctx = ctx
        ne = ctx._node_entity(node)
        self.node_entity = ne
        self.name = name
        self.type_name = type_name
        self.qos = qos
        self.type_hash = ctx.type_hash(type_name)
        self.key = wire.topic_keyexpr(ctx.params.domain_id, name, type_name, self.type_hash)
        self.eid = ctx._next_id()
        self.token_key = wire.endpoint_token(
            ctx.params.domain_id, ctx.zid, ne.nid, self.eid, self.kind, ne.namespace, ne.name,
            name, type_name, self.type_hash, qos)
        self.gid = wire.gid_from_token(self.token_key)
        self.drops = DropStats(f"{self.kind.name.lower()} {name} [{type_name}]",
                               ctx.params.drop_log_interval_s)
        self._token = None
        self._destroyed = False

    def _declare_token(self) -> None:
        self._token = self.ctx.session.liveliness().declare_token(self.token_key)
        self.ctx._endpoints.add(self)

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        self.ctx._endpoints.discard(self)
        _undeclare(self._token, getattr(self, "_z", None))


class ZenohPublisher(_Endpoint):
    kind = wire.EntityKind.PUBLISHER

    def __init__(self, ctx, node, topic, type_name, qos):
        super().__init__(ctx, node, topic, type_name, qos)
        zenoh = _zenoh()
        common = dict(reliability=_reliability(zenoh, qos), congestion_control=_congestion(zenoh, qos))
        if qos.durability == "transient_local":
            miss = None
            if qos.reliability == "reliable":
                miss = zenoh.ext.MissDetectionConfig(
                    heartbeat=None, sporadic_heartbeat=ctx.params.transient_local_heartbeat_s)
            self._z = zenoh.ext.declare_advanced_publisher(
                ctx.session, self.key, cache=zenoh.ext.CacheConfig(max_samples=_depth(qos)),
                publisher_detection=True, sample_miss_detection=miss, **common)
        else:
            self._z = ctx.session.declare_publisher(self.key, **common)
        # publish(data: bytes) is the C Putter itself (no Python frame per message): the declared
        # publisher's put with the 33-byte attachment (sequence numbers from 1, per publisher)
        # written in C; raises RuntimeError once the publisher is destroyed
        self._putter = _cdr.Putter(self._z.put, self.gid, f"publisher on {topic} was destroyed")
        self.publish = self._putter
        self._declare_token()

    @property
    def published(self) -> int:
        return self._putter.published

    def publish_messages(self, serialize, type_name: str):
        """publish(msg or bytes) in one C call, ``serialize(msg, type_name)`` then put (the node
        layer's serializer: hri_runtime.publisher)."""
        self._putter.serialize_with(serialize, type_name)
        return self._putter

    def destroy(self) -> None:
        self._putter.close()
        super().destroy()

    def get_subscription_count(self) -> int:
        return self.ctx._count(wire.EntityKind.SUBSCRIPTION, self.name)


class ZenohSubscription(_Endpoint):
    kind = wire.EntityKind.SUBSCRIPTION

    def __init__(self, ctx, node, topic, type_name, qos, deliver):
        super().__init__(ctx, node, topic, type_name, qos)
        zenoh = _zenoh()
        self._dds_type = wire.dds_type_name(type_name)
        self._delete = zenoh.SampleKind.DELETE
        # The Zenoh callback is the C SampleGate (every sample): payload and attachment bytes and
        # the key; when the attachment and CDR header pass their byte tests it calls
        # deliver(payload, (attachment, key)) directly, anything else goes through _accept (full
        # checks, drops counted per cause). The attachment reaches the node as its 33 raw bytes
        # (``wire.message_info(*meta)`` unpacks it).
        # the exact key, as rmw_zenoh subscribes: a wildcard (to see other types and hashes on the
        # wire) made Zenoh match every sample against it (half the receive throughput);
        # publishers of another type or hash are seen in the graph instead (check_publisher)
        self.selector = self.key
        self._gate = _cdr.SampleGate(self.key, deliver, self._accept, self.drops.drop_error)
        self._mismatched: set[str] = set()      # tokens of publishers already counted
        callback = _callback(self._gate, ctx.params.direct_callbacks)
        if qos.durability == "transient_local":
            recovery = zenoh.ext.RecoveryConfig(heartbeat=True) if qos.reliability == "reliable" else None
            self._z = zenoh.ext.declare_advanced_subscriber(
                ctx.session, self.selector, callback,
                history=zenoh.ext.HistoryConfig(detect_late_publishers=True, max_samples=_depth(qos)),
                recovery=recovery, subscriber_detection=True)
        else:
            self._z = ctx.session.declare_subscriber(self.selector, callback)
        self._declare_token()
        with ctx._graph_lock:
            known = list(ctx._graph_tokens.items())
        for token, ent in known:
            if ent.kind is wire.EntityKind.PUBLISHER:
                self.check_publisher(token, ent)

    @property
    def received(self) -> int:
        return self._gate.received

    @property
    def _deliver(self):
        """deliver(payload, meta) of the node layer (replaceable, e.g. by tests)."""
        return self._gate.deliver

    @_deliver.setter
    def _deliver(self, fn) -> None:
        self._gate.deliver = fn

    def destroy(self) -> None:
        self._gate.close()
        super().destroy()

    def _accept(self, sample, key: str, att: bytes | None, payload: bytes) -> bool:
        """The full checks of a sample the gate's byte tests did not pass: False = dropped
        (counted per cause) or ignored (DELETE); True = valid (delivered)."""
        if sample.kind == self._delete or self._destroyed:
            return False
        try:
            wire.unpack_attachment(att)
            wire.check_cdr_payload(payload)
        except wire.WireError as e:
            self.drops.drop(e.cause, str(e))
            return False
        return True

    def check_publisher(self, token: str, ent: wire.LivelinessEntity) -> None:
        """A publisher in the graph on this topic with another type or type hash (its samples
        never reach this exact-key subscription): counted once per publisher as
        ``type_mismatch`` / ``hash_mismatch`` and logged."""
        if ent.topic != self.name or token in self._mismatched:
            return
        if ent.dds_type != self._dds_type:
            cause, detail = "type_mismatch", f"type {ent.dds_type}, expected {self._dds_type}"
        elif ent.type_hash != self.type_hash:
            cause, detail = "hash_mismatch", f"type hash {ent.type_hash}, expected {self.type_hash}"
        else:
            return
        self._mismatched.add(token)
        self.drops.drop(cause, f"publisher {ent.node_fqn} on {self.name} has {detail}: its samples are not received")


class ZenohService(_Endpoint):
    kind = wire.EntityKind.SERVICE

    def __init__(self, ctx, node, name, srv_type, qos, on_request):
        super().__init__(ctx, node, name, srv_type, qos)
        self._on_request = on_request
        self.requests = 0
        self._z = ctx.session.declare_queryable(self.key, _callback(self._on_query, ctx.params.direct_callbacks), complete=True)
        self._declare_token()

    def _on_query(self, query) -> None:
        """Zenoh thread: validate the request, queue it; the reply (request's sequence number
        and client GID, fresh timestamp) is sent when the node's handler responds."""
        try:
            att = wire.unpack_attachment(_bytes(query.attachment))
            payload = _bytes(query.payload)
            if payload is None:
                raise wire.WireError("no_payload", "request without payload")
            wire.check_cdr_payload(payload)
        except Exception as e:  # noqa: BLE001 - nothing may escape into zenoh's thread
            self.drops.drop_error("internal", e)
            self._finish(query, error=f"malformed request: {e}" if isinstance(e, wire.WireError)
                         else "internal error")
            return
        self.requests += 1
        done = threading.Event()

        def respond(response: bytes) -> None:
            if done.is_set():
                return
            done.set()
            try:
                query.reply(self.key, response, attachment=wire.pack_attachment(
                    att.sequence_number, time.time_ns(), att.gid))
            except Exception as e:  # noqa: BLE001 - client gone, session closed
                self.drops.drop_error("reply_failed", e)
            finally:
                self._finish(query)

        try:
            self._on_request(payload, respond)
        except Exception as e:  # noqa: BLE001
            self.drops.drop_error("deliver_failed", e)
            self._finish(query, error="internal error")

    @staticmethod
    def _finish(query, error: str | None = None) -> None:
        try:
            if error is not None:
                query.reply_err(error.encode())
        except Exception:  # noqa: BLE001
            pass
        try:
            query.drop()
        except Exception:  # noqa: BLE001
            pass


class ServiceCallError(RuntimeError):
    """A service call that got no valid reply (timeout, no server, error reply)."""


class ZenohClient(_Endpoint):
    kind = wire.EntityKind.CLIENT

    def __init__(self, ctx, node, name, srv_type, qos):
        super().__init__(ctx, node, name, srv_type, qos)
        self._lock = threading.Lock()
        self._seq = 0
        self._z = None
        self._declare_token()

    def call(self, data: bytes, on_response: Callable[[bytes], None],
             on_error: Callable[[BaseException], None]) -> int:
        """Send the request; exactly one of on_response(bytes) / on_error(exc) is called later
        (from a Zenoh thread; the Node layer queues it). Returns the sequence number."""
        zenoh = _zenoh()
        with self._lock:
            self._seq += 1
            seq = self._seq
        state = {"done": False}
        lock = threading.Lock()

        def finish(fn, arg) -> None:
            with lock:
                if state["done"]:
                    return
                state["done"] = True
            fn(arg)

        def on_reply(reply) -> None:
            try:
                sample = reply.ok
                if sample is None:
                    err = reply.err
                    msg = err.payload.to_bytes().decode(errors="replace") if err is not None else "?"
                    self.drops.drop("error_reply", msg)
                    finish(on_error, ServiceCallError(f"service {self.name} replied with an error: {msg}"))
                    return
                att = wire.unpack_attachment(_bytes(sample.attachment))
                if att.sequence_number != seq or att.gid != self.gid:
                    raise wire.WireError("foreign_reply",
                                         f"reply for seq {att.sequence_number}, expected {seq}")
                payload = sample.payload.to_bytes()
                wire.check_cdr_payload(payload)
            except Exception as e:  # noqa: BLE001 - nothing may escape into zenoh's thread
                self.drops.drop_error("internal", e)
                return
            finish(on_response, payload)

        def on_final() -> None:
            finish(on_error, ServiceCallError(
                f"no valid reply from service {self.name} [{self.type_name}] within "
                f"{self.ctx.params.service_timeout_s} s (is a server running?)"))

        try:
            self.ctx.session.get(
                self.key, zenoh.handlers.Callback(on_reply, on_final), payload=data,
                attachment=wire.pack_attachment(seq, time.time_ns(), self.gid),
                target=zenoh.QueryTarget.ALL_COMPLETE, consolidation=zenoh.ConsolidationMode.NONE,
                timeout=self.ctx.params.service_timeout_s)
        except Exception as e:  # noqa: BLE001
            finish(on_error, ServiceCallError(f"request to {self.name} failed: {e}"))
        return seq

    def service_is_ready(self) -> bool:
        return self.ctx._count(wire.EntityKind.SERVICE, self.name, self.type_name) > 0


# --------------------------------------------------------------------------------------------
# context
class ZenohContext(ThreadedContext):
    """rmw_zenoh-compatible backend (see module docstring). One Zenoh session per context."""

    kind = "zenoh"

    def __init__(self, params: ZenohParams | None = None, *, config: dict | None = None,
                 typestore=None, session=None):
        self.params = params or (ZenohParams.from_config(config) if config else ZenohParams.defaults())
        if typestore is None:
            from hri_runtime import msgs
            typestore = msgs.typestore()
        self.typestore = typestore
        self._ids = 0
        self._ids_lock = threading.Lock()
        self._node_entities: dict[int, _NodeEntity] = {}
        self._endpoints: set = set()
        self._hashes: dict[str, str] = {}
        self._graph_lock = threading.Lock()
        self._graph_tokens: dict[str, wire.LivelinessEntity] = {}
        self.graph_drops = DropStats("liveliness", self.params.drop_log_interval_s)
        self._own_session = session is None
        if session is None:
            conf = session_config(self.params)
            try:
                session = _open(conf)
            except Exception as e:  # noqa: BLE001 - zenoh.ZError
                raise TransportUnavailableError(
                    f"no Zenoh router reachable at {list(self.params.connect_endpoints)} ({e}); "
                    f"start one (`hri launch` does, or `ros2 run rmw_zenoh_cpp rmw_zenohd`) or set "
                    f"runtime.zenoh.connect_endpoints / HRI_ZENOH_CONNECT") from e
        self.session = session
        self.zid = str(session.zid())
        self._graph_sub = session.liveliness().declare_subscriber(
            wire.liveliness_selector(self.params.domain_id), self._on_token, history=True)
        self.inline_callbacks = self.params.inline_callbacks
        super().__init__()
        log.info("zenoh session %s (%s, domain %d, %s) connected to %s", self.zid,
                 self.params.mode, self.params.domain_id, "humble" if self.params.humble else "jazzy+",
                 list(self.params.connect_endpoints))

    # ---- ids, hashes
    def _next_id(self) -> int:
        with self._ids_lock:
            v = self._ids
            self._ids += 1
            return v

    def type_hash(self, type_name: str) -> str:
        h = self._hashes.get(type_name)
        if h is None:
            h = wire.type_hash(type_name, self.typestore, humble=self.params.humble)
            self._hashes[type_name] = h
        return h

    # ---- nodes
    def _node_entity(self, node) -> _NodeEntity:
        """The node's graph entity, its liveliness token declared on first use (``add_node`` or
        the node's first endpoint)."""
        return self._node_entities.get(id(node)) or self._declare_node(node)

    def _declare_node(self, node) -> _NodeEntity:
        ns = (node.get_namespace() if hasattr(node, "get_namespace") else "/") or "/"
        nid, name = self._next_id(), node.get_name()
        key = wire.node_token(self.params.domain_id, self.zid, nid, ns, name)
        ne = self._node_entities[id(node)] = _NodeEntity(
            nid, ns, name, key, self.session.liveliness().declare_token(key))
        return ne

    def add_node(self, node) -> None:
        self._node_entity(node)          # in the graph from now on, endpoints or not
        super().add_node(node)

    def remove_node(self, node) -> None:
        super().remove_node(node)
        ne = self._node_entities.pop(id(node), None)
        _undeclare(ne and ne.token)

    # ---- transport
    def create_publisher(self, node, topic, type_name, qos):
        return ZenohPublisher(self, node, topic, type_name, qos_profile(qos))

    def create_subscription(self, node, topic, type_name, qos, deliver):
        return ZenohSubscription(self, node, topic, type_name, qos_profile(qos), deliver)

    def create_service(self, node, name, srv_type, qos, on_request):
        return ZenohService(self, node, name, srv_type, qos_profile(qos), on_request)

    def create_client(self, node, name, srv_type, qos):
        return ZenohClient(self, node, name, srv_type, qos_profile(qos))

    # ---- graph (liveliness tokens of this domain, ours included)
    def _on_token(self, sample) -> None:
        key = str(sample.key_expr)
        try:
            if sample.kind == _zenoh().SampleKind.DELETE:
                with self._graph_lock:
                    self._graph_tokens.pop(key, None)
                return
            ent = wire.parse_token(key)
        except Exception as e:  # noqa: BLE001 - nothing may escape into zenoh's thread
            self.graph_drops.drop_error("internal", e)
            return
        with self._graph_lock:
            self._graph_tokens[key] = ent
        if ent.kind is wire.EntityKind.PUBLISHER:
            for ep in list(self._endpoints):
                if isinstance(ep, ZenohSubscription):
                    ep.check_publisher(key, ent)

    DISCOVER_QUERIES = 4

    def discover(self, timeout_s: float) -> Graph:
        """Query the router for every token of the domain now (a one-shot CLI such as
        ``hri node list`` cannot wait for the subscriber's history to trickle in), merge the
        answers into the graph cache and return ``graph()``.

        A query sent right after the session opened is answered before the router has taken
        the new session in (no or only some tokens, within a millisecond, twice in a row if
        asked twice). So the session first declares a probe token outside the ROS key space
        and asks for it until the router returns it: the router has then processed this
        session's declarations. Then queries repeat until two in a row return the same tokens
        (at most ``DISCOVER_QUERIES``), within ``timeout_s``."""
        start = time.monotonic()
        end = start + timeout_s
        # at most half the time: a router whose access rules deny the probe still gets queried
        self._wait_until_router_knows_us(start + timeout_s / 2)
        previous = None
        for _ in range(self.DISCOVER_QUERIES):
            left = end - time.monotonic()
            if left <= 0:
                break
            keys = set()
            for r in self.session.liveliness().get(wire.liveliness_selector(self.params.domain_id),
                                                   timeout=left):
                if r.ok is not None:
                    keys.add(str(r.ok.key_expr))
                    self._on_token(r.ok)
            if keys == previous:
                break
            previous = keys
        return self.graph()

    DISCOVER_PROBE_PERIOD_S = 0.005

    def _wait_until_router_knows_us(self, end: float) -> None:
        key = f"{wire.PROBE_SPACE}/{self.zid}/{self._next_id()}"
        token = self.session.liveliness().declare_token(key)
        try:
            while time.monotonic() < end:
                if any(r.ok is not None for r in self.session.liveliness().get(
                        key, timeout=max(0.0, end - time.monotonic()))):
                    return
                time.sleep(self.DISCOVER_PROBE_PERIOD_S)
        finally:
            _undeclare(token)

    def entities(self) -> list[wire.LivelinessEntity]:
        with self._graph_lock:
            return list(self._graph_tokens.values())

    def _count(self, kind: wire.EntityKind, name: str, type_name: str | None = None) -> int:
        dds = wire.dds_type_name(type_name) if type_name else None
        return sum(1 for e in self.entities()
                   if e.kind is kind and e.topic == name and (dds is None or e.dds_type == dds))

    def graph(self) -> Graph:
        g = Graph()
        with self._graph_lock:
            keys = {id(v): k for k, v in self._graph_tokens.items()}
        for e in sorted(self.entities(), key=lambda e: (e.node_fqn, e.kind.value, e.topic or "")):
            if e.kind is wire.EntityKind.NODE:
                if e.node_fqn not in g.nodes:
                    g.nodes.append(e.node_fqn)
                continue
            tn = e.type_name
            g.endpoints.append(GraphEndpoint(e.kind.name, e.topic, tn, e.node_fqn, e.qos,
                                             wire.gid_from_token(keys[id(e)]) if id(e) in keys else None,
                                             e.type_hash))
            if e.kind in (wire.EntityKind.PUBLISHER, wire.EntityKind.SUBSCRIPTION):
                g.topics.setdefault(e.topic, set()).add(tn)
                side = g.publishers if e.kind is wire.EntityKind.PUBLISHER else g.subscribers
                side.setdefault(e.topic, []).append(e.node_fqn)
            elif e.kind is wire.EntityKind.SERVICE:
                g.services.setdefault(e.topic, set()).add(tn)
        return g

    def drop_counts(self) -> dict[str, dict[str, int]]:
        """Per endpoint (``'<kind> <name> [<type>]'``) the dropped samples per cause."""
        out = {ep.drops.where: dict(ep.drops.counts) for ep in list(self._endpoints) if ep.drops.counts}
        if self.graph_drops.counts:
            out[self.graph_drops.where] = dict(self.graph_drops.counts)
        return out

    # ---- life cycle
    def close(self) -> None:
        if not self._shutdown.is_set():
            self.shutdown()
        for ep in list(self._endpoints):
            ep.destroy()
        _undeclare(*(ne.token for ne in self._node_entities.values()), self._graph_sub)
        self._node_entities.clear()
        if self._own_session and not self.session.is_closed():
            self.session.close()
