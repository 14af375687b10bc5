"""Authenticated headset datagrams: ONE framing for both VR links (docs/protocols.md "Authentication").

Used by the pulse command packet (``UnityCodec``, hri_pulse) and the arm's controller-pose packet
(``ControllerPoseCodec``, hri_arm_teleop) through :class:`hri_pulse.core.link.LinkReceiver`, and
by the senders (``hri vr-emulate``, ``hri arm-emulate``; the C# ``PacketAuth`` of clients/unity).

Datagram = packet (its own layout, unchanged) + 28-byte trailer ``'<BBHQ16s'``:
auth_version (2), key_id (0..255), reserved (0), session (u64: the sender's session number, the
Unix time in ms at which the sender started), tag = HMAC-SHA256(key, packet + trailer bytes
0..11)[:16]. The tag is checked in constant time before any field of the packet is trusted.

Replay window (receiver), per key id: (session, sequence) of the newest authentic packet; a packet
is fresh only when its session is newer, or its session is the same and its sequence (the
packet's own counter) is higher. Anything else -- a captured datagram sent again, an old
session -- is dropped as ``replayed``, whatever the link state (a disconnection does not reopen
the window; only a restart of the receiver does). A restarted sender starts a new session (a
later start time), which is fresh; the link then re-bases its sequence tracker at once.

Keys: ``pulse.auth.key_file`` (hex digits; see :func:`read_keys`), never a value in the
repository's config: its default is the environment variable ``HRI_VR_KEY_FILE``
(``pulse.auth.mode`` defaults to ``HRI_VR_AUTH``, else off).
"""
from __future__ import annotations

import hmac
import os
import struct
import threading
import time
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from hri_runtime.security.bind import check_bind
from hri_runtime.parameter_library.typed import params_type

from hri_pulse.core.codec import PacketRejected

AUTH_VERSION = 2
TRAILER = struct.Struct("<BBHQ16s")        # auth_version, key_id, reserved, session, tag
_HEAD = struct.Struct("<BBHQ")             # the signed part of the trailer
TRAILER_BYTES = TRAILER.size               # 28
HEAD_BYTES = _HEAD.size                    # 12
TAG_BYTES = 16
MIN_KEY_BYTES = 16
MAX_KEY_FILE_BYTES = 64 * 1024
SESSION_MAX = (1 << 64) - 1

#: rejection causes of the authentication layer, in the order they are checked (``replayed``
#: after the packet's own checks: it needs the packet's sequence number)
CAUSES = ("bad_size", "bad_auth_version", "bad_key_id", "bad_tag", "replayed")

AuthParams = params_type("pulse.auth")


# ----------------------------------------------------------------------------- keys
def read_keys(path: str, key_id: int) -> Dict[int, bytes]:
    """The keys of a key file: either hex digits only (whitespace ignored) -- one key, its id
    ``key_id`` -- or one ``<key id>: <hex>`` per line (a key ring for rotation; ``#`` starts a
    comment). ValueError naming the file when it cannot be read or a key is malformed or shorter
    than :data:`MIN_KEY_BYTES`."""
    path = os.path.expanduser(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_KEY_FILE_BYTES + 1)
        if len(raw) > MAX_KEY_FILE_BYTES:
            raise ValueError(f"larger than {MAX_KEY_FILE_BYTES} bytes")
        lines = [ln.split("#", 1)[0].strip() for ln in raw.decode("ascii").splitlines()]
        lines = [ln for ln in lines if ln]
        if any(":" in ln for ln in lines):
            keys = {}
            for ln in lines:
                kid, sep, hexkey = ln.partition(":")
                kid = int(kid)
                if not sep or not 0 <= kid <= 255 or kid in keys:
                    raise ValueError(f"line {ln[:20]!r}: expected '<key id 0..255, once>: <hex>'")
                keys[kid] = bytes.fromhex("".join(hexkey.split()))
        else:
            keys = {int(key_id): bytes.fromhex("".join("".join(lines).split()))}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"pulse.auth.key_file {path}: not a readable hex key ({exc})") from None
    for kid, key in keys.items():
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"pulse.auth.key_file {path}: key {kid} has {len(key)} bytes, "
                             f"at least {MIN_KEY_BYTES} needed")
    return keys


def keys_from_params(params: AuthParams) -> Optional[Dict[int, bytes]]:
    """``pulse.auth``: None when ``mode`` is ``off``; else the keys of ``key_file`` (ValueError
    when it is empty or unreadable)."""
    if params.mode == "off":
        return None
    if not params.key_file:
        raise ValueError("pulse.auth.mode is required but pulse.auth.key_file is empty "
                         "(set it, or HRI_VR_KEY_FILE)")
    return read_keys(params.key_file, params.key_id)


def check_receiver_bind(name: str, host: str, params: AuthParams) -> None:
    """A headset receiver bound off loopback needs authentication: StartupRefused (one line,
    exit 2) when ``host`` is not loopback and ``pulse.auth.mode`` is off."""
    check_bind(name, host, params.mode != "off",
               "headset packets must be authenticated there (pulse.auth.mode required, "
               "key in pulse.auth.key_file; or HRI_VR_AUTH=required HRI_VR_KEY_FILE=<file>)")


# ----------------------------------------------------------------------------- sender
_session_lock = threading.Lock()
_last_session = 0


def new_session() -> int:
    """A session number for a sender starting now: the Unix time in ms, strictly above any
    number this process handed out before (so even two starts in the same ms differ)."""
    global _last_session
    with _session_lock:
        _last_session = max(time.time_ns() // 1_000_000, _last_session + 1)
        return _last_session


def tag(key: bytes, signed: bytes) -> bytes:
    """The first :data:`TAG_BYTES` of HMAC-SHA256(key, signed)."""
    return hmac.digest(key, signed, "sha256")[:TAG_BYTES]     # one-shot C path


@dataclass
class Sealer:
    """The sender's side: ``seal(packet)`` appends the trailer (``key_id``, ``session``)."""

    key: bytes
    key_id: int
    session: int

    def __post_init__(self):
        if len(self.key) < MIN_KEY_BYTES:
            raise ValueError(f"pulse.auth key: {len(self.key)} bytes, at least {MIN_KEY_BYTES} needed")
        if not (0 <= self.key_id <= 255 and 0 <= self.session <= SESSION_MAX):
            raise ValueError(f"key id {self.key_id} (0..255), session {self.session} (u64)")

    @classmethod
    def from_params(cls, params: AuthParams, session: Optional[int] = None) -> Optional["Sealer"]:
        """The sealer of ``pulse.auth`` (None when off): the key ``key_id`` of the key file, a
        :func:`new_session` unless ``session`` is given."""
        keys = keys_from_params(params)
        if keys is None:
            return None
        if params.key_id not in keys:
            raise ValueError(f"pulse.auth.key_file {params.key_file}: no key with pulse.auth.key_id "
                             f"{params.key_id} (ids {sorted(keys)})")
        return cls(keys[params.key_id], params.key_id, new_session() if session is None else session)

    def seal(self, packet: bytes, session: Optional[int] = None) -> bytes:
        """``packet`` + trailer; ``session`` overrides this sealer's (an emulated restart)."""
        head = packet + _HEAD.pack(AUTH_VERSION, self.key_id, 0, self.session if session is None else session)
        return head + tag(self.key, head)


# ----------------------------------------------------------------------------- receiver
class Authenticator:
    """The receiver's side for packets of ``body_size`` bytes: :meth:`open` checks the trailer and
    the tag, :meth:`admit` the replay window. ``windows``: key id -> (session, sequence) of the
    newest authentic packet."""

    causes = CAUSES

    def __init__(self, keys: Dict[int, bytes], body_size: int):
        if not keys:
            raise ValueError("pulse.auth: no key")
        for kid, key in keys.items():
            Sealer(key, kid, 0)                  # validates sizes and ids
        self.keys = dict(keys)
        self.body_size = int(body_size)
        self.size = self.body_size + TRAILER_BYTES
        self.windows: Dict[int, Tuple[int, int]] = {}

    @classmethod
    def from_params(cls, params: AuthParams, body_size: int) -> Optional["Authenticator"]:
        keys = keys_from_params(params)
        return None if keys is None else cls(keys, body_size)

    def open(self, data) -> Tuple[bytes, int, int]:
        """(packet, key id, session) of an authentic datagram, else PacketRejected (``bad_size``,
        ``bad_auth_version``, ``bad_key_id``: no key with that id, ``bad_tag``: forged, corrupted or
        another key)."""
        if len(data) != self.size:
            raise PacketRejected("bad_size", f"{len(data)} bytes, expected {self.size} (authenticated)")
        n = self.body_size
        version, key_id, reserved, session, presented = TRAILER.unpack_from(data, n)
        if version != AUTH_VERSION or reserved != 0:
            raise PacketRejected("bad_auth_version", f"auth version {version}, reserved {reserved}")
        key = self.keys.get(key_id)
        if key is None:
            raise PacketRejected("bad_key_id", f"key id {key_id}, known {sorted(self.keys)}")
        if not hmac.compare_digest(presented, tag(key, bytes(data[:n + HEAD_BYTES]))):
            raise PacketRejected("bad_tag", "authentication tag does not match")
        return bytes(data[:n]), key_id, session

    def admit(self, key_id: int, session: int, sequence: int) -> bool:
        """Advance the replay window of ``key_id`` with an authentic packet; True when it opens a
        new session after an earlier one (the caller re-bases its sequence tracker); raises
        PacketRejected ``replayed`` for an old session or a sequence not above the newest."""
        last = self.windows.get(key_id)
        if last is not None and (session, sequence) <= last:
            raise PacketRejected("replayed", f"key {key_id} session {session} sequence {sequence} not after "
                                             f"session {last[0]} sequence {last[1]}")
        self.windows[key_id] = (session, sequence)
        return last is not None and session != last[0]
