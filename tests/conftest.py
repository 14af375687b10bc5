"""Fixtures shared by the test folders below."""
import pytest


def pytest_collection_modifyitems(session, config, items):
    """A test module may order its own tests: ``order_items(items) -> items`` (e.g. tests that
    share an expensive stack run one after the other). Stable; the module's slice only."""
    start = 0
    while start < len(items):
        mod = getattr(items[start], "module", None)
        end = start
        while end < len(items) and getattr(items[end], "module", None) is mod:
            end += 1
        order = getattr(mod, "order_items", None)
        if callable(order):
            items[start:end] = order(items[start:end])
        start = end

#: the key ring of the authenticated headset-link tests (docs/protocols.md "Authentication")
VR_KEYS = {1: bytes(range(32)), 2: bytes(range(100, 132))}


@pytest.fixture(autouse=True)
def _no_vr_auth_from_the_shell(monkeypatch):
    """A developer's exported HRI_VR_AUTH / HRI_VR_KEY_FILE must not change what the tests run
    (subprocesses inherit os.environ too); tests that want a key use ``vr_keys``."""
    monkeypatch.delenv("HRI_VR_AUTH", raising=False)
    monkeypatch.delenv("HRI_VR_KEY_FILE", raising=False)


@pytest.fixture
def vr_keys(tmp_path, monkeypatch):
    """HRI_VR_AUTH=required and HRI_VR_KEY_FILE = a key ring with the ids of ``VR_KEYS`` (the
    documented way to give the nodes and emulators a key: the repository's config holds none)."""
    f = tmp_path / "vr.keys"
    f.write_text("".join(f"{k}: {v.hex()}\n" for k, v in VR_KEYS.items()))
    monkeypatch.setenv("HRI_VR_AUTH", "required")
    monkeypatch.setenv("HRI_VR_KEY_FILE", str(f))
    return VR_KEYS


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def zenoh_router():
    """A real Zenoh router on a free loopback port for the module's tests; yields its endpoint."""
    from hri_runtime.impl.zenoh_backend import start_router

    ep = f"tcp/127.0.0.1:{free_tcp_port()}"
    r = start_router([ep])
    yield ep
    r.close()
