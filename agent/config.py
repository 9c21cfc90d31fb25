"""The agent's YAML configuration, checked once and completely (pydantic v2).

Example (every key; ``meter`` and ``outlets`` only on the node that owns the PDU link)::

    node: node-a                    # Kubernetes node name of this machine
    power_cap_w: 65                 # P_cap (W), > 0
    calibration: calibration/node-a.json   # optional; must be node-a's (relative to this file)
    sample_period_s: 1.0
    sinks:                          # any number, written in parallel, each with its own spool
      - {type: influx_v2, url: http://influx:8086, bucket: eams, org: lab, token_env: INFLUX_TOKEN}
      - {type: influx_v1, url: http://influx:8086, database: eams, username: eams,
         password_env: INFLUX_PASSWORD}
      - {type: extender, url: http://extender:8888}
      - {type: jsonl, path: /var/lib/eams-agent/samples.jsonl}
    spool: {dir: /var/lib/eams-agent/spool, max_points: 1000000, policy: drop_oldest}
    metrics: {host: 0.0.0.0, port: 9101}
    meter: {url: "snmp://public@pdu:161", stale_after_s: 5}
    outlets: {1: node-a, 2: node-b, 3: {node: node-c, power_cap_w: 80}}

A bad file raises :class:`~eams.agent.errors.ConfigError` listing every bad field by its path
(``sinks[1].url: ...``). Relative paths (calibration, spool dir, JSONL file) are relative to
the configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    SecretStr,
    ValidationError,
    model_validator,
)

from eams.agent.errors import ConfigError
from eams.calibrate.errors import CalibrationFileError
from eams.meter.errors import BadMeterUrl
from eams.meter.url import parse_meter_url
from eams.validation import describe_validation_error

if TYPE_CHECKING:
    from eams.calibrate.calfile import Calibration


def _http_url(value: str) -> str:
    url = urlsplit(value)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"expected an http(s):// URL with a host, got {value!r}")
    return value.rstrip("/")


def _meter_url(value: str) -> str:
    try:
        parse_meter_url(value)
    except BadMeterUrl as exc:
        raise ValueError(str(exc)) from None
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]
NodeName = Annotated[
    str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][-.A-Za-z0-9]*$")
]


class _Strict(BaseModel):
    # allow_inf_nan=False: ``.inf`` is valid YAML for a float, and an infinite power cap
    # would publish a headroom of 1 whatever the power.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _from_env(variable: str) -> str:
    value = os.environ.get(variable)
    if not value:
        raise ValueError(f"environment variable {variable} is not set")
    return value


def _env_is_set(variable: str | None) -> str | None:
    if variable is not None:
        _from_env(variable)
    return variable


#: The name of an environment variable that must be set (checked when the file is loaded, so
#: the error names the key: ``sinks[0].token_env``).
EnvVariable = Annotated[str | None, AfterValidator(_env_is_set)]


class _SinkBase(_Strict):
    name: str | None = Field(None, description="unique sink name; names its spool file")
    batch_size: PositiveInt = Field(5000, description="records per request (live and replay)")
    # At most 10 s: on SIGTERM a sink may need an in-flight and a last write (2 × timeout_s)
    # within systemd's TimeoutStopSec (30 s in eams-agent.service); beyond it, SIGKILL would
    # lose the records held in memory.
    timeout_s: float = Field(5.0, gt=0, le=10, description="per request (s)")
    max_backoff_s: PositiveFloat = Field(30.0, description="longest wait between retries (s)")


class InfluxV2SinkConfig(_SinkBase):
    """InfluxDB v2 API (``/api/v2/write``) through influxdb-client; token or its env variable."""

    type: Literal["influx_v2"]
    url: HttpUrl
    bucket: str = Field(min_length=1)
    org: str = Field(min_length=1)
    token: SecretStr | None = None
    token_env: EnvVariable = None

    @model_validator(mode="after")
    def _one_token(self) -> InfluxV2SinkConfig:
        if (self.token is None) == (self.token_env is None):
            raise ValueError("give exactly one of token, token_env")
        return self

    def token_value(self) -> str:
        """The token, from the file or from ``$token_env``."""
        return self.token.get_secret_value() if self.token else _from_env(str(self.token_env))


class InfluxV1SinkConfig(_SinkBase):
    """InfluxDB v1 API (``/write``; also 2.x/3.x compatibility endpoints), optional basic auth."""

    type: Literal["influx_v1"]
    url: HttpUrl
    database: str = Field(min_length=1)
    retention_policy: str | None = None
    username: str | None = None
    username_env: EnvVariable = None
    password: SecretStr | None = None
    password_env: EnvVariable = None

    @model_validator(mode="after")
    def _credentials(self) -> InfluxV1SinkConfig:
        if self.username is not None and self.username_env is not None:
            raise ValueError("give at most one of username, username_env")
        if self.password is not None and self.password_env is not None:
            raise ValueError("give at most one of password, password_env")
        has_user = self.username is not None or self.username_env is not None
        has_password = self.password is not None or self.password_env is not None
        if has_user != has_password:
            raise ValueError("give both a username and a password, or neither")
        return self

    def credentials(self) -> tuple[str, str] | None:
        """``(username, password)`` resolved from the file or the environment, or ``None``."""
        if self.username is None and self.username_env is None:
            return None
        user = self.username if self.username is not None else _from_env(str(self.username_env))
        if self.password is not None:
            return user, self.password.get_secret_value()
        return user, _from_env(str(self.password_env))


class ExtenderSinkConfig(_SinkBase):
    """The scheduler extender's ingest endpoint: ``POST {url}/telemetry``."""

    type: Literal["extender"]
    url: HttpUrl


class JsonlSinkConfig(_SinkBase):
    """A local file, one :meth:`TelemetrySample.to_json` object per line."""

    type: Literal["jsonl"]
    path: Path


SinkConfig = Annotated[
    InfluxV2SinkConfig | InfluxV1SinkConfig | ExtenderSinkConfig | JsonlSinkConfig,
    Field(discriminator="type"),
]
SINK_TYPES = ("influx_v2", "influx_v1", "extender", "jsonl")


class SpoolConfig(_Strict):
    """Bounded on-disk spool, one SQLite file per sink in ``dir``.

    ``policy`` says what happens when a spool is full (there is no default: choose):
    ``drop_oldest`` deletes the oldest points to make room, ``drop_newest`` refuses the new ones.
    Either way the dropped points are counted (``eams_agent_dropped_points_total``).
    """

    dir: Path
    max_points: PositiveInt | None = None
    max_bytes: PositiveInt | None = None
    policy: Literal["drop_oldest", "drop_newest"]

    @model_validator(mode="after")
    def _bounded(self) -> SpoolConfig:
        if self.max_points is None and self.max_bytes is None:
            raise ValueError("give max_points or max_bytes (or both): the spool must be bounded")
        return self


class MetricsConfig(_Strict):
    """Where the Prometheus ``/metrics`` endpoint listens (port 0 = any free port)."""

    host: str = "0.0.0.0"
    port: int = Field(9101, ge=0, le=65535)


class MeterConfig(_Strict):
    """The PDU link, on the one node that owns it (a URL for :func:`eams.meter.open_meter`)."""

    url: Annotated[str, AfterValidator(_meter_url)]
    driver: str | None = None
    timeout_s: PositiveFloat = 1.0
    retries: int = Field(1, ge=0, le=5)
    stale_after_s: PositiveFloat = Field(
        5.0, description="a reading older than this is not used: power is modelled instead"
    )


class OutletNode(_Strict):
    """A node on a PDU outlet, with its own power cap (else the top-level ``power_cap_w``)."""

    node: NodeName
    power_cap_w: PositiveFloat | None = None


class AgentConfig(_Strict):
    """The whole agent configuration (see the module docstring for an example)."""

    node: NodeName
    power_cap_w: PositiveFloat
    calibration: Path | None = None
    # /proc/stat counts in 10 ms ticks (USER_HZ = 100): a shorter window measures nothing.
    sample_period_s: float = Field(1.0, ge=0.1)
    sinks: list[SinkConfig] = Field(default_factory=list)
    spool: SpoolConfig
    metrics: MetricsConfig = Field(default_factory=lambda: MetricsConfig.model_validate({}))
    meter: MeterConfig | None = None
    outlets: dict[Annotated[int, Field(ge=1)], NodeName | OutletNode] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> AgentConfig:
        if self.outlets and self.meter is None:
            raise ValueError("outlets need a meter (only the PDU-owner node maps outlets)")
        nodes = [o if isinstance(o, str) else o.node for o in self.outlets.values()]
        if len(set(nodes)) != len(nodes):
            raise ValueError("outlets: a node appears on two outlets")
        for outlet, entry in self.outlets.items():
            if (
                isinstance(entry, OutletNode)
                and entry.node == self.node
                and entry.power_cap_w not in (None, self.power_cap_w)
            ):
                raise ValueError(
                    f"outlets.{outlet}.power_cap_w: this node's own cap is power_cap_w "
                    f"({self.power_cap_w:g} W); give it once"
                )
        names = self.sink_names()
        if len(set(names)) != len(names):
            raise ValueError(f"sinks: names must be unique, got {names}")
        return self

    def sink_names(self) -> list[str]:
        """Each sink's name: its ``name``, else its type (with ``-<index>`` if the type repeats)."""
        types = [s.type for s in self.sinks]
        return [
            s.name or (s.type if types.count(s.type) == 1 else f"{s.type}-{i}")
            for i, s in enumerate(self.sinks)
        ]

    def outlet_nodes(self) -> dict[int, tuple[str, float]]:
        """Outlet number → (node name, power cap W), caps defaulting to ``power_cap_w``."""
        return {
            outlet: (o, self.power_cap_w)
            if isinstance(o, str)
            else (o.node, o.power_cap_w or self.power_cap_w)
            for outlet, o in self.outlets.items()
        }


def parse_config(data: object, base_dir: Path, source: str = "config") -> AgentConfig:
    """Validate parsed YAML and resolve relative paths against ``base_dir``.

    Raises
    ------
    ConfigError
        Listing every invalid field as ``path: reason`` (``sinks[1].url: ...``), or naming
        ``calibration`` when the file is unreadable or is another node's.
    """
    if not isinstance(data, dict):
        found = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"{source}: (top level): expected a mapping of settings, got {found}")
    try:
        config = AgentConfig.model_validate(data)
    except ValidationError as exc:
        problems = describe_validation_error(exc, hide=SINK_TYPES)
        raise ConfigError(f"{source}: {problems}") from None
    resolved = {
        "spool": config.spool.model_copy(update={"dir": base_dir / config.spool.dir}),
        "sinks": [
            s.model_copy(update={"path": base_dir / s.path})
            if isinstance(s, JsonlSinkConfig)
            else s
            for s in config.sinks
        ],
    }
    if config.calibration is not None:
        resolved["calibration"] = base_dir / config.calibration
    config = config.model_copy(update=resolved)
    load_node_calibration(config, source)
    return config


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    silently, so ``power_cap_w`` written twice would take whichever came later)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_config(path: Path) -> AgentConfig:
    """Read and validate a YAML configuration file.

    Raises
    ------
    ConfigError
        The file is unreadable, not YAML (names the line), or invalid (see :func:`parse_config`).
    """
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}:{where} not valid YAML: {problem}") from None
    return parse_config(data, path.resolve().parent, str(path))


def load_node_calibration(config: AgentConfig, source: str = "config") -> Calibration | None:
    """The calibration of ``config.node``, or ``None`` when none is configured.

    Raises
    ------
    ConfigError
        Naming ``calibration``: the file is unreadable, malformed, or belongs to another node.
    """
    if config.calibration is None:
        return None
    # Imported here: calfile imports calibrate.fit and with it scipy (~75 MB resident), which
    # a node without a calibration should not carry.
    from eams.calibrate.calfile import load_calibration

    try:
        return load_calibration(config.calibration, expect_node=config.node)
    except CalibrationFileError as exc:
        raise ConfigError(f"{source}: calibration: {exc}") from None
