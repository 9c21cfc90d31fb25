"""The power manager's configuration file (``eams power manage --config FILE``), YAML::

    policy:                      # PolicyConfig (scheduler/power/policy.py), every key optional
      idle_before_sleep_s: 300
      min_awake: 2
      reserve_cores: 4
    manager:                     # ManagerConfig (scheduler/power/manager.py)
      agent_silent_s: 5
      restart_agent_after_s: 60

Unknown keys and bad values are refused, each named by its path (``policy.min_awake: Input
should be greater than or equal to 0``). No file: every default.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eams.scheduler.power.errors import ManagerConfigError
from eams.scheduler.power.manager import ManagerConfig
from eams.scheduler.power.policy import PolicyConfig
from eams.validation import describe_validation_error


class ManageConfig(BaseModel):
    """The file's two sections (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    manager: ManagerConfig = Field(default_factory=ManagerConfig)


def load_config(path: str | Path | None) -> ManageConfig:
    """Read and validate the configuration at ``path`` (``None``: the defaults).

    Raises
    ------
    ManagerConfigError
        Unreadable, not YAML, not a mapping, or any bad field (all named in one line).
    """
    if path is None:
        return ManageConfig()
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ManagerConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ManagerConfigError(f"{path}: not YAML: {' '.join(str(exc).split())}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ManagerConfigError(f"{path}: expected a mapping, got {type(data).__name__}")
    try:
        return ManageConfig.model_validate(data)
    except ValidationError as exc:
        raise ManagerConfigError(f"{path}: {describe_validation_error(exc)}") from None
