"""hri_runtime.provenance: commit, version and build of a result ([Chang 2026, chapter 11,
"Reproducibility Provenance"]); in this checkout, in a copy that is no checkout (an installed
package), without a git program; what the result writers put in their files."""
import importlib.metadata
import logging
import shutil
import subprocess
from pathlib import Path

from hri_runtime import provenance
from hri_runtime.inproc import InprocContext
from hri_runtime.node import Node, run_node
from hri_runtime.bag.recording import McapReader, McapWriter

SOURCE = Path(provenance.__file__).resolve()


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=SOURCE.parent, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_in_the_checkout_the_commit_is_head_and_the_build_is_the_extensions():
    from hri_core import _hri_core as ext            # the build compiled into the loaded extension
    p = provenance.provenance("hri_pulse")
    assert p["commit"].removesuffix("-dirty") == _head()
    assert p["version"] == importlib.metadata.version("hri_pulse")
    assert p["build"] == f"{ext.BUILD_FLAGS}; compiler {ext.COMPILER}; Eigen {ext.EIGEN_VERSION}"
    assert "-std=c++17" in ext.BUILD_FLAGS and ext.EIGEN_VERSION.startswith("3.")
    line = provenance.line("hri_pulse")
    assert line.startswith(f"hri_pulse {p['version']}, commit {p['commit']}, build ") and "\n" not in line
    assert provenance.metadata("hri_pulse") == {k: str(v) for k, v in p.items()}


def test_an_installed_copy_says_it_is_no_checkout(tmp_path):
    copy = tmp_path / "site-packages" / "hri_runtime" / "provenance.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(SOURCE, copy)
    assert provenance.git_commit(str(copy)) == "unknown (not a git checkout: installed package)"


def test_without_a_git_program_it_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))        # no git anywhere on PATH
    assert provenance.git_commit.__wrapped__(str(SOURCE)) == "unknown (git not installed)"


def test_an_unknown_package_has_no_version():
    assert provenance.provenance("hri_no_such_package")["version"] == "unknown (not installed)"


def test_mcap_files_carry_the_provenance_of_their_writer(tmp_path):
    with McapWriter(tmp_path / "a.mcap", library="hri_atomic_motion") as w:
        w.write("/x", b"\x00\x01\x00\x00", type_name="std_msgs/msg/Empty", t_s=1.0)
    meta = McapReader(tmp_path / "a.mcap").metadata()
    assert meta["provenance"] == provenance.metadata("hri_atomic_motion")
    assert meta["provenance"]["commit"].removesuffix("-dirty") == _head()
    with McapWriter(tmp_path / "b.mcap", library="hri record") as w:     # `hri record`: hri_runtime's
        pass
    assert McapReader(tmp_path / "b.mcap").metadata()["provenance"]["package"] == "hri_runtime"


class Quiet(Node):
    def __init__(self, **kw):
        super().__init__("quiet", **kw)
        self.create_timer(0.01, self.context.shutdown)


def test_every_node_process_logs_its_provenance_at_start_up(caplog):
    caplog.set_level(logging.INFO)
    assert run_node(Quiet, [], context=InprocContext()) == 0
    lines = [r.getMessage() for r in caplog.records if "started:" in r.getMessage()]
    assert len(lines) == 1 and lines[0].endswith("started: " + provenance.line(Quiet.__module__.split(".")[0]))
