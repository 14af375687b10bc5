"""The rmw_zenoh wire format as pure functions (no zenoh import, no I/O).

Everything a ROS 2 machine running ``RMW_IMPLEMENTATION=rmw_zenoh_cpp`` looks at, byte for
byte, as rmw_zenoh specifies it (its ``docs/design.md``, checked against rmw_zenoh's
``liveliness_utils.cpp``, ``attachment_helpers.cpp``, ``qos.cpp``, ``type_support.cpp``):

* data key expression ``<domain>/<fqn without outer slashes>/<pkg>::msg::dds_::<Name>_/RIHS01_<hex>``
  (services: ``<pkg>::srv::dds_::<Name>_`` and the *service* type hash; Humble:
  ``TypeHashNotSupported`` instead of the hash);
* liveliness tokens ``@ros2_lv/<domain>/<zid>/<nid>/<id>/<NN|MP|MS|SS|SC>/<enclave>/<ns>/<node>
  [/<mangled topic>/<dds type>/<hash>/<qos>]`` with ``/`` mangled to ``%``;
* the QoS string ``rel:dur:hist,depth:dl_s,dl_ns:ls_s,ls_ns:liv,liv_s,liv_ns`` where a field equal
  to rmw_zenoh's default (RELIABLE, VOLATILE, KEEP_LAST, depth 42, infinite durations, AUTOMATIC)
  is left empty;
* the 33-byte attachment ``<q seq> <q source_timestamp_ns> 0x10 <16-byte gid>``;
* RIHS01 type hashes of messages *and services* computed from their definitions
  (``sha256(json(type_description))``, rosidl's algorithm).

The numeric constants below are protocol constants of rmw_zenoh / ROS 2 (enum values, sizes,
defaults baked into the peer implementation), not tunables, so they are not configuration.
"""
from __future__ import annotations

import hashlib
import json
import re
import struct
from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable, Mapping, NamedTuple

from hri_runtime.qos import DURABILITY, HISTORY, LIVELINESS, RELIABILITY, QoSProfile, qos_profile

# --------------------------------------------------------------------------------------------
# protocol constants (rmw_zenoh / rmw / rosidl; never configuration)
ADMIN_SPACE = "@ros2_lv"
PROBE_SPACE = "@ros2_lv_probe"                 # outside ADMIN_SPACE: no graph sees it
SLASH_REPLACEMENT = "%"
HASH_NOT_SUPPORTED = "TypeHashNotSupported"   # Humble's hash segment (rmw_zenoh PR #388)
RIHS01_PREFIX = "RIHS01_"
GID_SIZE = 16                                  # bytes, rmw_zenoh GIDs (also on Humble)
ATTACHMENT_SIZE = 33                           # bytes: 8 seq + 8 timestamp + 1 LEB128 len + 16 gid
_ATTACHMENT = struct.Struct("<qqB16s")
CDR_LE_HEADER = b"\x00\x01\x00\x00"           # CDR little endian (fastcdr DDS_CDR)
CDR_BE_HEADER = b"\x00\x00\x00\x00"           # CDR big endian (accepted on receive)
CDR_HEADER_SIZE = 4

# RMW_DURATION_INFINITE as (sec, nsec): what rmw_zenoh's "best available" makes of a default 0
DURATION_INFINITE = (9223372036, 854775807)
RMW_ZENOH_DEFAULT_DEPTH = 42                   # rmw_zenoh qos.cpp default depth (elided)


class WireError(ValueError):
    """Input that does not follow the wire format. ``cause`` is a short stable counter key."""

    def __init__(self, cause: str, message: str):
        super().__init__(message)
        self.cause = cause


class AttachmentError(WireError):
    pass


class TokenError(WireError):
    pass


class TypeHashError(WireError):
    pass


class EntityKind(str, Enum):
    NODE = "NN"
    PUBLISHER = "MP"
    SUBSCRIPTION = "MS"
    SERVICE = "SS"
    CLIENT = "SC"


# --------------------------------------------------------------------------------------------
# names and keys
_TYPE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)/(msg|srv|action)/([A-Za-z][A-Za-z0-9_]*)$")
_DDS_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)::(msg|srv|action)::dds_::([A-Za-z][A-Za-z0-9_]*)_$")


def split_type_name(type_name: str) -> tuple[str, str, str]:
    """``"std_msgs/msg/String"`` -> ``("std_msgs", "msg", "String")``; WireError otherwise."""
    m = _TYPE_RE.match(type_name or "")
    if not m:
        raise WireError("bad_type_name",
                        f"{type_name!r} is not a ROS 2 interface name like 'pkg/msg/Name'")
    return m.group(1), m.group(2), m.group(3)


def dds_type_name(type_name: str) -> str:
    """ROS type -> DDS type name of rmw_zenoh's keys: ``pkg/msg/Name`` -> ``pkg::msg::dds_::Name_``.

    Services use the service name (rmw_zenoh strips ``Request_`` from the request type):
    ``example_interfaces/srv/AddTwoInts`` -> ``example_interfaces::srv::dds_::AddTwoInts_``.
    """
    pkg, kind, name = split_type_name(type_name)
    return f"{pkg}::{kind}::dds_::{name}_"


def ros_type_name(dds_name: str) -> str:
    """Inverse of :func:`dds_type_name` (for graphs discovered on the wire)."""
    m = _DDS_RE.match(dds_name or "")
    if not m:
        raise WireError("bad_dds_type", f"{dds_name!r} is not a DDS type name like 'pkg::msg::dds_::Name_'")
    return f"{m.group(1)}/{m.group(2)}/{m.group(3)}"


def strip_slashes(name: str) -> str:
    """Remove one leading and one trailing ``/`` (rmw_zenoh ``strip_slashes``)."""
    if name.startswith("/"):
        name = name[1:]
    if name.endswith("/"):
        name = name[:-1]
    return name


def topic_keyexpr(domain_id: int, fqn: str, type_name: str, type_hash: str) -> str:
    """Data key expression of a topic or service.

    ``topic_keyexpr(0, "/chatter", "std_msgs/msg/String", "RIHS01_df66...")`` ->
    ``0/chatter/std_msgs::msg::dds_::String_/RIHS01_df66...``. Inner slashes are kept.
    ``type_hash`` is the full ``RIHS01_<hex>`` string or ``TypeHashNotSupported`` (Humble).
    """
    if not isinstance(domain_id, int) or isinstance(domain_id, bool) or domain_id < 0:
        raise WireError("bad_domain", f"domain id must be an int >= 0, got {domain_id!r}")
    if not fqn.startswith("/"):
        raise WireError("bad_name", f"{fqn!r} is not a fully qualified name (must start with '/')")
    return f"{domain_id}/{strip_slashes(fqn)}/{dds_type_name(type_name)}/{type_hash}"


def mangle_name(name: str) -> str:
    """``/`` -> ``%`` (rmw_zenoh ``mangle_name``): ``/robot1`` -> ``%robot1``, ``/`` -> ``%``."""
    return name.replace("/", SLASH_REPLACEMENT)


def demangle_name(name: str) -> str:
    return name.replace(SLASH_REPLACEMENT, "/")


# --------------------------------------------------------------------------------------------
# QoS
def _dur_to_sec_nsec(value_s: float | None) -> tuple[int, int]:
    """Seconds -> (sec, nsec). None, 0 (rmw's "default") and +inf are infinite after rmw_zenoh's
    best-available adaptation."""
    if value_s is None or value_s == 0 or value_s == float("inf"):
        return DURATION_INFINITE
    if not (value_s > 0) or value_s != value_s:
        raise WireError("bad_qos", f"duration must be > 0 s, None or inf, got {value_s!r}")
    total_ns = int(round(value_s * 1e9))
    return total_ns // 1_000_000_000, total_ns % 1_000_000_000


def best_available(qos: QoSProfile) -> QoSProfile:
    """rmw_zenoh's adaptation before encoding: system defaults -> rmw_zenoh defaults,
    depth 0 -> 42 (durations: None/0 are encoded as infinite by :func:`qos_to_keyexpr`)."""
    rel = "reliable" if qos.reliability in ("system_default", "best_available") else qos.reliability
    dur = "volatile" if qos.durability in ("system_default", "best_available") else qos.durability
    hist = "keep_last" if qos.history == "system_default" else qos.history
    liv = "automatic" if qos.liveliness in ("system_default", "best_available") else qos.liveliness
    depth = RMW_ZENOH_DEFAULT_DEPTH if qos.depth == 0 else qos.depth
    return replace(qos, reliability=rel, durability=dur, history=hist, liveliness=liv,
                   depth=depth)


def qos_to_keyexpr(qos: QoSProfile | int | Mapping) -> str:
    """QoS string of a liveliness token (rmw_zenoh ``qos_to_keyexpr``), defaults elided.

    Default rclpy QoS depth 10 -> ``::,10:,:,:,,``; TRANSIENT_LOCAL depth 1000 lifespan 10 s
    (``/rosout``) -> ``:1:,1000:,:10,0:,,``.
    """
    try:
        q = best_available(qos_profile(qos, system_default_depth=True))
    except ValueError as e:
        raise WireError("bad_qos", str(e)) from None

    def opt(v: int, default: int) -> str:
        return "" if v == default else str(v)

    rel = opt(RELIABILITY[q.reliability], RELIABILITY["reliable"])
    dur = opt(DURABILITY[q.durability], DURABILITY["volatile"])
    hist = opt(HISTORY[q.history], HISTORY["keep_last"])
    depth = opt(q.depth, RMW_ZENOH_DEFAULT_DEPTH)
    dl = _dur_to_sec_nsec(q.deadline_s)
    ls = _dur_to_sec_nsec(q.lifespan_s)
    lv = _dur_to_sec_nsec(q.liveliness_lease_s)
    liv = opt(LIVELINESS[q.liveliness], LIVELINESS["automatic"])
    inf_s, inf_ns = DURATION_INFINITE
    return (f"{rel}:{dur}:{hist},{depth}:"
            f"{opt(dl[0], inf_s)},{opt(dl[1], inf_ns)}:"
            f"{opt(ls[0], inf_s)},{opt(ls[1], inf_ns)}:"
            f"{liv},{opt(lv[0], inf_s)},{opt(lv[1], inf_ns)}")


def keyexpr_to_qos(text: str) -> QoSProfile:
    """Parse a token's QoS string (rmw_zenoh ``keyexpr_to_qos``); TokenError if invalid."""
    parts = text.split(":")
    if len(parts) < 6:
        raise TokenError("bad_qos", f"invalid qos keyexpr {text!r}: fewer than 6 ':' parts")
    hist = parts[2].split(",")
    dl = parts[3].split(",")
    ls = parts[4].split(",")
    lv = parts[5].split(",")
    if len(hist) < 2 or len(dl) < 2 or len(ls) < 2 or len(lv) < 3:
        raise TokenError("bad_qos", f"invalid qos keyexpr {text!r}: missing ',' components")

    def enum(s: str, table: dict, default: str) -> str:
        if s == "":
            return default
        for k, v in table.items():
            if str(v) == s:
                return k
        raise TokenError("bad_qos", f"invalid qos keyexpr {text!r}: unknown value {s!r}")

    def num(s: str, default: int) -> int:
        if s == "":
            return default
        if not s.isdigit():
            raise TokenError("bad_qos", f"invalid qos keyexpr {text!r}: {s!r} is not a number")
        return int(s)

    def dur(sec: str, nsec: str) -> float | None:
        pair = (num(sec, DURATION_INFINITE[0]), num(nsec, DURATION_INFINITE[1]))
        return None if pair == DURATION_INFINITE else pair[0] + pair[1] * 1e-9

    return QoSProfile(
        reliability=enum(parts[0], RELIABILITY, "reliable"),
        durability=enum(parts[1], DURABILITY, "volatile"),
        history=enum(hist[0], HISTORY, "keep_last"),
        depth=num(hist[1], RMW_ZENOH_DEFAULT_DEPTH),
        deadline_s=dur(dl[0], dl[1]),
        lifespan_s=dur(ls[0], ls[1]),
        liveliness=enum(lv[0], LIVELINESS, "automatic"),
        liveliness_lease_s=dur(lv[1], lv[2]),
    )


# --------------------------------------------------------------------------------------------
# liveliness tokens
def node_token(domain_id: int, zid: str, nid: int, namespace: str, node_name: str,
               enclave: str = "/") -> str:
    """``@ros2_lv/<domain>/<zid>/<nid>/<nid>/NN/<enclave>/<ns>/<node>`` (ns ``/`` -> ``%``)."""
    _check_token_parts(zid, namespace, node_name, enclave)
    return "/".join([ADMIN_SPACE, str(domain_id), zid, str(nid), str(nid), EntityKind.NODE.value,
                     mangle_name(enclave), mangle_name(namespace), mangle_name(node_name)])


def endpoint_token(domain_id: int, zid: str, nid: int, eid: int, kind: EntityKind | str,
                   namespace: str, node_name: str, topic_fqn: str, type_name: str,
                   type_hash: str, qos: QoSProfile | int | Mapping, enclave: str = "/") -> str:
    """Token of a publisher (MP), subscription (MS), service (SS) or client (SC).

    ``topic_fqn`` is mangled whole (``/chatter`` -> ``%chatter``); ``type_name`` is the ROS name
    (``std_msgs/msg/String``), written as its DDS name; ``type_hash`` the RIHS01 string.
    """
    kind = EntityKind(kind)
    if kind is EntityKind.NODE:
        raise TokenError("bad_kind", "use node_token() for nodes")
    _check_token_parts(zid, namespace, node_name, enclave)
    if not topic_fqn.startswith("/"):
        raise TokenError("bad_name", f"{topic_fqn!r} is not a fully qualified name")
    return "/".join([ADMIN_SPACE, str(domain_id), zid, str(nid), str(eid), kind.value,
                     mangle_name(enclave), mangle_name(namespace), mangle_name(node_name),
                     mangle_name(topic_fqn), mangle_name(dds_type_name(type_name)),
                     mangle_name(type_hash), qos_to_keyexpr(qos)])


def _check_token_parts(zid: str, namespace: str, node_name: str, enclave: str) -> None:
    if not zid or not re.fullmatch(r"[0-9a-f]+", zid):
        raise TokenError("bad_zid", f"zid must be lower-case hex, got {zid!r}")
    if not namespace.startswith("/"):
        raise TokenError("bad_name", f"namespace {namespace!r} must start with '/'")
    if not node_name or "/" in node_name:
        raise TokenError("bad_name", f"node name {node_name!r} must be non-empty without '/'")
    if not enclave:
        raise TokenError("bad_name", "enclave must not be empty (use '/')")


@dataclass(frozen=True)
class LivelinessEntity:
    """A parsed ``@ros2_lv`` token (one ROS graph entity)."""

    domain_id: int
    zid: str
    nid: str
    eid: str
    kind: EntityKind
    enclave: str
    namespace: str
    node_name: str
    topic: str | None = None          # fully qualified, demangled
    dds_type: str | None = None
    type_hash: str | None = None
    qos: QoSProfile | None = None

    @property
    def node_fqn(self) -> str:
        return ("" if self.namespace == "/" else self.namespace) + "/" + self.node_name

    @property
    def type_name(self) -> str | None:
        """ROS type name (``std_msgs/msg/String``), or the raw DDS name if not a ROS type."""
        if self.dds_type is None:
            return None
        try:
            return ros_type_name(self.dds_type)
        except WireError:
            return self.dds_type


def parse_token(keyexpr: str) -> LivelinessEntity:
    """Parse a liveliness token as rmw_zenoh's ``Entity::make(keyexpr)`` does; TokenError if
    rmw_zenoh would reject it."""
    parts = str(keyexpr).split("/")
    if len(parts) < 9:
        raise TokenError("bad_token", f"liveliness token with {len(parts)}/9 parts: {keyexpr!r}")
    if any(p == "" for p in parts):
        raise TokenError("bad_token", f"liveliness token with empty parts: {keyexpr!r}")
    if parts[0] != ADMIN_SPACE:
        raise TokenError("bad_token", f"liveliness token outside {ADMIN_SPACE}: {keyexpr!r}")
    try:
        kind = EntityKind(parts[5])
    except ValueError:
        raise TokenError("bad_token", f"liveliness token with invalid entity {parts[5]!r}") from None
    if not parts[1].isdigit():
        raise TokenError("bad_token", f"liveliness token with invalid domain {parts[1]!r}")
    common = dict(domain_id=int(parts[1]), zid=parts[2], nid=parts[3], eid=parts[4], kind=kind,
                  enclave=demangle_name(parts[6]), namespace=demangle_name(parts[7]),
                  node_name=demangle_name(parts[8]))
    if kind is EntityKind.NODE:
        return LivelinessEntity(**common)
    if len(parts) < 13:
        raise TokenError("bad_token", f"endpoint token without topic/type/hash/qos: {keyexpr!r}")
    return LivelinessEntity(**common, topic=demangle_name(parts[9]),
                            dds_type=demangle_name(parts[10]),
                            type_hash=demangle_name(parts[11]), qos=keyexpr_to_qos(parts[12]))


def liveliness_selector(domain_id: int | None = None) -> str:
    """Key expression matching every token (of one domain)."""
    return f"{ADMIN_SPACE}/**" if domain_id is None else f"{ADMIN_SPACE}/{domain_id}/**"


def gid_from_token(token: str) -> bytes:
    """16-byte entity GID. rmw_zenoh uses XXH3-128 of the token; any unique 16 bytes are valid
    for peers (they only compare GIDs), so this uses BLAKE2b-128 of the token string (unique
    because the token holds the session zid and the entity id)."""
    return hashlib.blake2b(token.encode(), digest_size=GID_SIZE).digest()


# --------------------------------------------------------------------------------------------
# attachment
class Attachment(NamedTuple):
    sequence_number: int
    source_timestamp_ns: int
    gid: bytes


def pack_attachment(sequence_number: int, source_timestamp_ns: int, gid: bytes) -> bytes:
    """33 bytes: int64 LE seq, int64 LE ns since the Unix epoch, LEB128 length 0x10, 16-byte gid
    (what ``zenoh::ext::Serializer`` writes for ``(int64, int64, std::array<uint8_t,16>)``)."""
    if len(gid) != GID_SIZE:
        raise AttachmentError("bad_gid", f"gid must be {GID_SIZE} bytes, got {len(gid)}")
    return _ATTACHMENT.pack(sequence_number, source_timestamp_ns, GID_SIZE, bytes(gid))


class MessageInfo(NamedTuple):
    """What a subscription learns about one sample besides its payload (rmw_message_info_t's
    fields that the wire carries): from the attachment, plus the key it arrived on."""
    sequence_number: int
    source_timestamp_ns: int
    publisher_gid: bytes
    key: str


def message_info(data: bytes | None, key: str) -> MessageInfo:
    """The MessageInfo of a sample from its attachment bytes and key (what the Zenoh backend
    hands a subscription as ``meta``); AttachmentError as :func:`unpack_attachment`."""
    att = unpack_attachment(data)
    return MessageInfo(att.sequence_number, att.source_timestamp_ns, att.gid, key)


def unpack_attachment(data: bytes | bytearray | memoryview | None) -> Attachment:
    """Inverse of :func:`pack_attachment`; AttachmentError(cause) on anything else."""
    if data is None:
        raise AttachmentError("no_attachment", "sample without attachment")
    data = bytes(data)
    if len(data) != ATTACHMENT_SIZE:
        raise AttachmentError("bad_attachment",
                              f"attachment of {len(data)} bytes, expected {ATTACHMENT_SIZE}")
    seq, ts, n, gid = _ATTACHMENT.unpack(data)
    if n != GID_SIZE:
        raise AttachmentError("bad_attachment", f"attachment gid length byte {n}, expected 16")
    return Attachment(seq, ts, gid)


# --------------------------------------------------------------------------------------------
# CDR payload framing (the codec itself is hri_runtime.msgs)
def check_cdr_payload(payload: bytes | bytearray | memoryview) -> str:
    """Return ``"le"``/``"be"`` for a payload with a CDR encapsulation header and a body;
    WireError("bad_cdr_header") otherwise (an empty message still carries one dummy byte)."""
    head = bytes(payload[:CDR_HEADER_SIZE])
    if len(payload) <= CDR_HEADER_SIZE:
        raise WireError("bad_cdr_header", f"payload of {len(payload)} bytes has no CDR body")
    if head == CDR_LE_HEADER:
        return "le"
    if head == CDR_BE_HEADER:
        return "be"
    raise WireError("bad_cdr_header", f"payload starts with {head.hex()}, not a CDR header")


# --------------------------------------------------------------------------------------------
# RIHS01 type hashes (rosidl_generator_type_description algorithm)
# type ids (type_description_interfaces/msg/FieldType)
_TID = {"int8": 2, "uint8": 3, "int16": 4, "uint16": 5, "int32": 6, "uint32": 7, "int64": 8,
        "uint64": 9, "float32": 10, "float64": 11, "float128": 12,
        # .msg "char" is an alias of uint8 in ROS 2 (rosidl_adapter MSG_TYPE_TO_IDL), so its
        # type id is 3, not FIELD_TYPE_CHAR (13) as rosbags' hash_rihs01 writes it
        "char": 3, "bool": 15, "byte": 16, "string": 17, "bounded_string": 21}
_TID_NESTED = 1
_ARRAY, _BOUNDED_SEQ, _UNBOUNDED_SEQ = 48, 96, 144


def _nodetype():
    from rosbags.typesys.base import Nodetype
    return Nodetype


def _field_description(name: str, desc, lookup: Callable[[str], list]) -> tuple[dict, str | None]:
    Nodetype = _nodetype()
    increment = capacity = string_capacity = 0
    if desc[0] == Nodetype.ARRAY:
        increment, capacity = _ARRAY, desc[1][1]
        typ, rest = desc[1][0]
    elif desc[0] == Nodetype.SEQUENCE:
        count = desc[1][1]
        increment, capacity = (_BOUNDED_SEQ, count) if count else (_UNBOUNDED_SEQ, 0)
        typ, rest = desc[1][0]
    else:
        typ, rest = desc
    nested = ""
    if typ == Nodetype.NAME:
        tid, nested = increment + _TID_NESTED, rest
    elif rest[0] == "string" and rest[1]:
        tid, string_capacity = increment + _TID["bounded_string"], rest[1]
    else:
        if rest[0] not in _TID:
            raise TypeHashError("unsupported_type", f"field {name!r}: type {rest[0]!r} has no type id")
        tid = increment + _TID[rest[0]]
    return ({"name": name, "type": {"type_id": tid, "capacity": capacity,
                                    "string_capacity": string_capacity,
                                    "nested_type_name": nested}}, nested or None)


def _rihs01(root: str, lookup: Callable[[str], list]) -> str:
    """sha256 of ``{"type_description": ..., "referenced_type_descriptions": [sorted]}``,
    JSON with separators ``(', ', ': ')``; empty structs get ``structure_needs_at_least_one_member``."""
    Nodetype = _nodetype()
    cache: dict[str, dict] = {}

    def struct_of(typ: str) -> dict:
        if typ in cache:
            return cache[typ]
        fields = lookup(typ) or [("structure_needs_at_least_one_member",
                                  (Nodetype.BASE, ("uint8", 0)))]
        entry = {"type_name": typ, "fields": []}
        cache[typ] = entry
        for fname, fdesc in fields:
            fd, nested = _field_description(fname, fdesc, lookup)
            entry["fields"].append(fd)
            if nested:
                struct_of(nested)
        return entry

    top = struct_of(root)
    doc = {"type_description": top,
           "referenced_type_descriptions": [v for k, v in sorted(cache.items()) if k != root]}
    text = json.dumps(doc, separators=(", ", ": "))
    return RIHS01_PREFIX + hashlib.sha256(text.encode()).hexdigest()


def _store_lookup(typestore) -> Callable[[str], list]:
    def lookup(typ: str) -> list:
        try:
            return list(typestore.fielddefs[typ][1])
        except KeyError:
            raise TypeHashError("unknown_type", f"type {typ!r} is not in the type store") from None
    return lookup


def message_type_hash(type_name: str, typestore) -> str:
    """RIHS01 hash of a message type registered in a rosbags ``typestore``."""
    split_type_name(type_name)
    return _rihs01(type_name, _store_lookup(typestore))


def service_type_hash(srv_type: str, typestore) -> str:
    """RIHS01 hash of a service ``pkg/srv/Name`` (its ``_Request``/``_Response`` must be in the
    store, see ``hri_runtime.msgs.register_srv``).

    The service type is ``{request_message, response_message, event_message}``; ``Name_Event``
    is ``{info: service_msgs/msg/ServiceEventInfo, request: Name_Request[<=1],
    response: Name_Response[<=1]}``; ServiceEventInfo's ``client_gid`` is ``uint8[16]``.
    """
    pkg, kind, name = split_type_name(srv_type)
    if kind != "srv":
        raise TypeHashError("bad_type_name", f"{srv_type!r} is not a service type")
    Nodetype = _nodetype()
    base = _store_lookup(typestore)
    req, res, evt = f"{srv_type}_Request", f"{srv_type}_Response", f"{srv_type}_Event"
    synthetic = {
        srv_type: [("request_message", (Nodetype.NAME, req)),
                   ("response_message", (Nodetype.NAME, res)),
                   ("event_message", (Nodetype.NAME, evt))],
        evt: [("info", (Nodetype.NAME, "service_msgs/msg/ServiceEventInfo")),
              ("request", (Nodetype.SEQUENCE, ((Nodetype.NAME, req), 1))),
              ("response", (Nodetype.SEQUENCE, ((Nodetype.NAME, res), 1)))],
    }
    return _rihs01(srv_type, lambda t: synthetic[t] if t in synthetic else base(t))


def type_hash(type_name: str, typestore, *, humble: bool = False) -> str:
    """Hash segment of keys and tokens: RIHS01 of a message or service, or
    ``TypeHashNotSupported`` in Humble mode."""
    if humble:
        split_type_name(type_name)
        return HASH_NOT_SUPPORTED
    if split_type_name(type_name)[1] == "srv":
        return service_type_hash(type_name, typestore)
    return message_type_hash(type_name, typestore)

