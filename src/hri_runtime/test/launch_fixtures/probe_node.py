"""Test node for the launcher tests (started as a process by hri launch): appends one JSON line
per start to the file given by parameter ``out`` (pid, name, namespace, parameters, remapped
topic), exits with ``exit_code`` after ``exit_after_s`` seconds (0 = run until SIGINT/SIGTERM),
and appends a 'stopped' line when it stops."""
import json
import os
import sys

from hri_runtime.node import Node, run_node


class Probe(Node):
    def __init__(self, **kw):
        super().__init__("probe", **kw)
        self.out = self.declare_parameter("out", "").value
        after = self.declare_parameter("exit_after_s", 0.0).value
        self.code = self.declare_parameter("exit_code", 0).value
        extra = self.declare_parameter("extra", "").value
        gain = self.declare_parameter("gain", 0.0).value
        pub = self.create_publisher("std_msgs/msg/String", "chatter")
        hz = self.declare_parameter("publish_hz", 0.0).value
        if hz > 0:
            from hri_runtime import msgs

            self.k = 0

            def tick():
                self.k += 1
                pub.publish(msgs.new("std_msgs/msg/String", data=f"probe {self.k}"))

            self.create_timer(1.0 / hz, tick)
        self.write(event="start", pid=os.getpid(), name=self.get_name(), ns=self.get_namespace(),
                   topic=pub.topic_name, extra=extra, gain=gain,
                   transport=os.environ.get("HRI_TRANSPORT"))
        print(f"probe {self.get_name()} up", flush=True)
        if after > 0:
            self.create_timer(after, self.stop)

    def write(self, **rec):
        with open(self.out, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def stop(self):
        print(f"probe {self.get_name()} exiting with {self.code}", flush=True)
        self.context.shutdown()


if __name__ == "__main__":
    holder = {}

    def make(**kw):
        holder["n"] = Probe(**kw)
        return holder["n"]

    rc = run_node(make)
    n = holder.get("n")
    if n is not None:
        n.write(event="stopped", pid=os.getpid(), name=n.get_name())
        rc = rc or n.code
    sys.exit(rc)
