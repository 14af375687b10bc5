"""The Docker route cannot be built here (no Docker engine): validate what can be validated."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_compose_parses_and_every_path_exists():
    compose = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert "zenoh-router" in services
    robots = [name for name in services if name != "zenoh-router"]
    assert robots, "at least one robot service"
    for name, service in services.items():
        build = service["build"]
        assert (REPO / build["context"] / build["dockerfile"]).is_file()
        for volume in service.get("volumes", []):
            host = volume.split(":")[0]
            assert (REPO / host).exists(), f"{name}: volume {host} missing"
        for arg in service["command"]:
            match = re.fullmatch(r"/ws/(.+)", arg)
            if match:
                assert (REPO / match.group(1)).exists(), f"{name}: {arg} missing in the repo"
        if name != "zenoh-router":
            assert "zenoh-router" in service["depends_on"]
            assert (REPO / "config" / "robots" / f"{name}.yaml").is_file(), f"{name}: no robot config"


def test_dockerfile_copies_existing_paths_from_ros_jazzy():
    text = (REPO / "docker" / "Dockerfile").read_text()
    assert re.search(r"^FROM ros:jazzy", text, re.M)
    assert "rmw-zenoh" in text
    for src in re.findall(r"^COPY\s+(\S+)\s+\S+", text, re.M):
        assert (REPO / src).exists(), f"COPY source {src} missing"


_PIP_NOISE = {"-q", "--quiet", "--no-cache-dir", "--upgrade", "-U"}


def _pip_installs(commands: list[str]) -> set[tuple[str, ...]]:
    """(options..., requirement) of every ``pip install`` among shell commands, without options
    that do not change what is installed; ``pip install --upgrade pip`` is left out."""
    import shlex

    out = set()
    for cmd in commands:
        for part in re.split(r"&&|;", cmd):
            words = shlex.split(part.replace("$(PIP)", "pip"))
            if len(words) < 2 or not re.fullmatch(r"(.*/)?pip3?", words[0]) or words[1] != "install":
                continue
            args = [w for w in words[2:] if w not in _PIP_NOISE]
            if args == ["pip"]:
                continue
            opts = tuple(a for a in args if a.startswith("-") and a != "-r")
            targets = [a for a in args if not a.startswith("-")]
            assert targets, f"pip install without a target: {part.strip()}"
            for t in targets:
                out.add((*opts, t))
    return out


def test_dockerfile_installs_what_the_makefile_installs():
    """The image gets every third-party package (and model asset wheel) the Makefile's
    ``$(VENV)/.deps`` step installs, with the same --no-deps choices."""
    mk = (REPO / "Makefile").read_text()
    recipe = re.search(r"^\$\(VENV\)/\.deps:.*\n((?:\t.*\n)+)", mk, re.M)
    assert recipe, "Makefile has no $(VENV)/.deps rule"
    make_cmds = [ln.strip() for ln in recipe.group(1).splitlines() if not ln.strip().startswith("#")]
    docker = (REPO / "docker" / "Dockerfile").read_text().replace("\\\n", " ")
    docker_cmds = [m.group(1) for m in re.finditer(r"^RUN\s+(.*)$", docker, re.M)]
    make_pip, docker_pip = _pip_installs(make_cmds), _pip_installs(docker_cmds)
    assert ("--require-hashes", "--no-deps", "requirements-assets.lock") in make_pip
    assert ("--require-hashes", "--no-deps", "requirements.lock") in make_pip   # the lock is complete
    # both name the lock files as file arguments of -r: compare by file name
    assert {t[-1] for t in make_pip} == {t[-1] for t in docker_pip}, (make_pip, docker_pip)
    assert make_pip == docker_pip


def test_dockerfile_sets_the_transport_and_pins_no_cpu():
    text = (REPO / "docker" / "Dockerfile").read_text()
    assert re.search(r"HRI_TRANSPORT=rclpy\b", text), "the image must choose the transport explicitly"
    setup = (REPO / "cpp" / "setup.py").read_text()
    assert re.findall(r"-march=[^'\"]*", setup) == ["-march={MARCH}"], "only the HRI_CORE_MARCH opt-in sets -march"
    code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    assert "HRI_CORE_MARCH" not in code and "-march" not in code, "the image builds the portable core"
