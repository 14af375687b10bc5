"""hri_core's hand-written parameter classes match their declared sections: the maths core may
not import the runtime (docs/configuration.md "Parameters of the maths core"), so PIDParams and
IkParams write the keys of ``pid_tuning.pid`` / ``kinematics.ik`` a second time; this keeps the
two lists equal and every declared default accepted."""
import dataclasses

import pytest

from hri_core.kinematics import IkParams
from hri_core.pid import PIDParams
from hri_runtime.config import is_leaf_spec, load_declarations, load_robot_config


@pytest.mark.parametrize("cls, section", [(PIDParams, "pid_tuning.pid"), (IkParams, "kinematics.ik")])
def test_core_params_have_exactly_the_declared_keys(cls, section):
    spec = load_declarations().spec(section)
    declared = {k for k, v in spec.items() if is_leaf_spec(v)}
    fields = {f.name for f in dataclasses.fields(cls)}
    assert fields == declared, (f"{cls.__name__} vs {section}: missing in the class {sorted(declared - fields)}, "
                                f"not declared {sorted(fields - declared)}")
    for robot in ("fr3", "tino"):                    # every robot's values are accepted
        node = load_robot_config(robot)
        for part in section.split("."):
            node = node[part]
        cls.from_config(node)
