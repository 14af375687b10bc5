"""``foxglove``: the live Foxglove bridge as an hri_runtime node.

Subscribes every topic of ``console.foxglove.topics`` **raw** (the CDR bytes the runtime carries,
never deserialized) and forwards each sample to :class:`hri_console.foxglove_bridge.FoxgloveBridge`
with the node clock as log time (sim time under ``use_sim_time``). A topic whose type differs
from the configured one does not match (as in ROS), so a wrong config shows as a silent channel,
never as garbage in Foxglove.

Parameters: ``robot``, ``robot_id`` and every key of ``console.foxglove`` (declared in
hri_console's parameters.yaml, the robot config's value as default): ``console.foxglove.host``,
``console.foxglove.port`` (0 = any free port), … Topics in ``console.foxglove.latched_topics``
(``/robot_description``, ``/tf_static``) are subscribed TRANSIENT_LOCAL and re-sent to each new
Foxglove subscription; Foxglove's fetchAsset requests for the URDF's meshes are answered from the
model wheels (:func:`mesh_asset`).
"""
from __future__ import annotations

import sys
from typing import Optional

from hri_runtime.node import Node, run_node
from hri_runtime.parameter_library.typed import declare_config
from hri_runtime.qos import QOS_LATCHED

from hri_console.foxglove_bridge import FoxgloveBridge
from hri_console.parameters_gen import ConsoleFoxgloveParams

#: ``console.foxglove`` (declared in parameters.yaml)
FoxgloveParams = ConsoleFoxgloveParams


def mesh_asset(uri: str) -> Optional[bytes]:
    """Foxglove's fetchAsset: the URDF's ``package://hri_sim/meshes/...`` files from the model
    wheels (``hri_sim.models.mesh_file_for_uri``), so the 3D panel shows the robot without ROS."""
    from hri_sim.models import mesh_file_for_uri

    path = mesh_file_for_uri(uri)
    return path.read_bytes() if path is not None else None


class FoxgloveNode(Node):
    def __init__(self, cfg: Optional[dict] = None, **kw):
        super().__init__("foxglove", **kw)
        self.cfg = declare_config(self, ("console.foxglove",), cfg=cfg)
        fg = FoxgloveParams.from_tree(self.cfg)
        topics = {self.resolve_topic_name(t): ty for t, ty in fg.topics.items()}
        latched = {self.resolve_topic_name(t) for t in fg.latched_topics}
        self.bridge = FoxgloveBridge(topics.items(), host=fg.host, port=fg.port, latched=latched,
                                     assets=mesh_asset)
        self.forwarded: dict[str, int] = {t: 0 for t in topics}
        for topic, type_name in topics.items():
            try:
                self.create_subscription(type_name, topic, self._forwarder(topic), raw=True,
                                         qos=QOS_LATCHED if topic in latched else 10)
            except ValueError as exc:   # rclpy without the type's package (e.g. tf2_msgs): a silent channel
                self.get_logger().warning(f"{topic} not forwarded: {exc}")
        self.get_logger().info(f"foxglove bridge ws://{fg.host}:{self.bridge.port}/ "
                               f"({len(topics)} channels)")

    @property
    def port(self) -> int:
        return self.bridge.port

    def _forwarder(self, topic: str):
        def forward(data: bytes) -> None:
            self.bridge.publish(topic, data, log_time_ns=self.get_clock().now().nanoseconds)
            self.forwarded[topic] += 1
        return forward

    def destroy_node(self) -> None:
        self.bridge.stop()
        super().destroy_node()


def main(argv=None) -> int:
    return run_node(FoxgloveNode, argv)


if __name__ == "__main__":
    sys.exit(main())
