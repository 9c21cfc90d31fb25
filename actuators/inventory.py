"""The node power inventory: which node sleeps and wakes how, and which nodes must never sleep.

One YAML file (ansible renders it from the host vars: ``ansible/README.md``)::

    pdu: snmp://private@192.0.2.2          # switches outlets (write community or a v3 user)
    meter: snmp://public@192.0.2.2         # reads them (default: pdu)
    wol: {address: 192.0.2.255, port: 9}   # where magic packets go (default 255.255.255.255:9)
    ssh: {identity: ~/.ssh/eams_ed25519, known_hosts: ~/.ssh/known_hosts}
    kubeconfig: /etc/rancher/k3s/k3s.yaml  # default: in-cluster account, else $KUBECONFIG
    grace_s: 60                            # a soft-off may take this long before outlet-off
    nodes:
      mini1: {method: wol, mac: "02:ea:a5:00:00:01", outlet: 1, ssh: root@192.0.2.11,
              k3s_server: true, pdu_owner: true}
      mini2: {method: outlet, outlet: 2, ssh: root@192.0.2.12}
      mini3: {method: ssh, mac: "02:ea:a5:00:00:03", outlet: 3, ssh: root@192.0.2.13}

The methods (``eams power suspend`` puts a node into its method's sleep state), one module each
in :mod:`eams.actuators.methods`, whose table :data:`~eams.actuators.methods.METHODS` says which
exist and which fields each needs:

======  ==========================================  ==========================  ================
method  sleeps by                                   asleep                      wakes by
======  ==========================================  ==========================  ================
wol     ``systemctl suspend`` over SSH              suspended (P_suspend)       magic packet
ssh     ``systemctl poweroff`` over SSH             soft-off (P_off)            magic packet
outlet  ``systemctl poweroff``, then outlet off     off (0 W)                   outlet on (boots)
======  ==========================================  ==========================  ================

``ssh`` is for a node whose NIC wakes from soft-off (S5) but that cannot suspend; ``outlet``
for one that wakes by neither (its firmware powers on when power returns). A node's outlet is
the PDU outlet it is plugged into (needed by ``outlet``; for the others, it is what ``eams
calibrate power-states`` reads). Relative paths are relative to the inventory file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eams.actuators.errors import InventoryError
from eams.actuators.methods import METHODS, known_method
from eams.meter.errors import BadMacAddress
from eams.meter.url import parse_meter_url
from eams.meter.wol import DEFAULT_ADDRESS, DEFAULT_PORT, format_mac, parse_nic_mac
from eams.ssh import SshError, SshTarget
from eams.validation import describe_validation_error
from eams.yamlfile import read_yaml

DEFAULT_GRACE_S = 60.0
"""How long a node may take to shut down before its outlet is cut (s), like Ironic's
``soft_power_off_timeout`` (600 s there, for servers; mini-PCs shut down in seconds)."""
AGENT_METRICS_PORT = 9101
"""The agent's Prometheus port (``agent/README.md``): a node is back once it answers there."""
SLEEP_ROLES = {"k3s_server": "the k3s server", "pdu_owner": "the PDU's owner"}
"""Roles that forbid sleeping (DESIGN.md §5b): the cluster's control plane, and the node that
reads the PDU for every node."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _mac(value: str) -> str:
    try:
        return format_mac(parse_nic_mac(value))
    except BadMacAddress as exc:
        raise ValueError(str(exc)) from None


class NodeEntry(_Strict):
    """One node of the inventory (see the module docstring for the methods).

    Attributes
    ----------
    method : str
        A name of :data:`~eams.actuators.methods.METHODS` (``wol``, ``ssh``, ``outlet``).
    mac : str or None
        ``aa:bb:cc:dd:ee:ff``; required by wol and ssh.
    outlet : int or None
        The PDU outlet the node is plugged into (1-based); required by outlet.
    ssh : str or None
        ``USER@HOST[:PORT]`` for ``systemctl suspend`` / ``poweroff``; required by every method.
    wol_address : str or None
        Where this node's magic packets go (default: the inventory's ``wol.address``).
    agent_url : str or None
        The node's agent metrics URL, polled to tell the node is back (default
        ``http://SSH_HOST:9101/metrics``).
    k3s_server, pdu_owner : bool
        Roles that forbid sleeping.
    """

    method: str
    mac: str | None = None
    outlet: Annotated[int, Field(ge=1)] | None = None
    ssh: str | None = None
    wol_address: str | None = None
    agent_url: str | None = None
    k3s_server: bool = False
    pdu_owner: bool = False

    _known_method = field_validator("method")(known_method)

    _check_mac = field_validator("mac")(lambda v: None if v is None else _mac(v))

    @field_validator("ssh")
    @classmethod
    def _check_ssh(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SshTarget.parse(value)  # the one parser the SSH actions use: port 1-65535 too
            except SshError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _method_needs(self) -> NodeEntry:
        missing = [n for n in METHODS[self.method].requires if getattr(self, n) is None]
        if missing:
            raise ValueError(f"method {self.method} needs {' and '.join(missing)}")
        return self

    @property
    def ssh_host(self) -> str | None:
        """The host part of :attr:`ssh`."""
        return SshTarget.parse(self.ssh).host if self.ssh else None

    def never_sleeps(self) -> list[str]:
        """The roles of this node that forbid sleeping, in words (empty: it may sleep)."""
        return [words for role, words in SLEEP_ROLES.items() if getattr(self, role)]


class WolDefaults(_Strict):
    """Where magic packets go: ``address`` (broadcast or unicast) and UDP ``port``."""

    address: str = DEFAULT_ADDRESS
    port: Annotated[int, Field(ge=1, le=65535)] = DEFAULT_PORT


class SshDefaults(_Strict):
    """SSH client settings: the private key and known_hosts (host keys must be known)."""

    identity: Path | None = None
    known_hosts: Path | None = None


class PowerInventory(_Strict):
    """The whole inventory (see the module docstring).

    Attributes
    ----------
    pdu : str or None
        Meter URL that may switch outlets; required when a node has method outlet.
    meter : str or None
        Meter URL that reads outlets (default: ``pdu``).
    wol : WolDefaults
    ssh : SshDefaults
    kubeconfig : Path or None
    grace_s : float
        How long a soft-off may take before the outlet is cut (s).
    nodes : dict of str to NodeEntry
    source : str
        Where it was read from (for messages).
    """

    pdu: str | None = None
    meter: str | None = None
    wol: WolDefaults = Field(default_factory=WolDefaults)
    ssh: SshDefaults = Field(default_factory=SshDefaults)
    kubeconfig: Path | None = None
    grace_s: Annotated[float, Field(gt=0)] = DEFAULT_GRACE_S
    nodes: Annotated[dict[str, NodeEntry], Field(min_length=1)]
    source: str = "<inventory>"

    @field_validator("pdu", "meter")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None:
            parse_meter_url(value)  # BadMeterUrl is a ValueError: pydantic reports its text
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PowerInventory:
        problems = []
        for label, values in (
            ("outlet", {n: e.outlet for n, e in self.nodes.items() if e.outlet is not None}),
            ("mac", {n: e.mac for n, e in self.nodes.items() if e.mac is not None}),
        ):
            for value, count in Counter(values.values()).items():
                if count > 1:
                    shared = sorted(n for n, v in values.items() if v == value)
                    problems.append(f"{label} {value} is given to {', '.join(shared)}")
        for name, method in METHODS.items():
            for field in method.requires_inventory:
                needing = sorted(n for n, e in self.nodes.items() if e.method == name)
                if needing and getattr(self, field) is None:
                    problems.append(
                        f"{field} is required by the {name} method of {', '.join(needing)}"
                    )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def meter_url(self) -> str | None:
        """The URL that reads outlets: ``meter``, else ``pdu``."""
        return self.meter or self.pdu

    def node(self, name: str) -> NodeEntry:
        """The entry of node ``name``.

        Raises
        ------
        InventoryError
            If the inventory has no such node (the message lists those it has).
        """
        try:
            return self.nodes[name]
        except KeyError:
            raise InventoryError(
                f"{self.source}: no node {name!r}; it has {', '.join(sorted(self.nodes))}"
            ) from None

    def agent_url(self, name: str) -> str | None:
        """Where node ``name``'s agent answers (its ``agent_url``, else the metrics port on its
        SSH host)."""
        entry = self.node(name)
        if entry.agent_url:
            return entry.agent_url
        host = entry.ssh_host
        if host is None:
            return None
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{AGENT_METRICS_PORT}/metrics"


def parse_inventory(data: object, base_dir: Path, source: str) -> PowerInventory:
    """Validate an inventory already read from YAML.

    Raises
    ------
    InventoryError
        Naming ``source`` and every bad field by its path (``nodes.mini2: method outlet needs
        outlet``).
    """
    if not isinstance(data, dict):
        raise InventoryError(f"{source}: expected a mapping with nodes:, got {type(data).__name__}")
    try:
        inventory = PowerInventory.model_validate({**data, "source": source})
    except ValidationError as exc:
        raise InventoryError(f"{source}: {describe_validation_error(exc)}") from None
    ssh = inventory.ssh.model_copy(
        update={
            "identity": _resolve(inventory.ssh.identity, base_dir),
            "known_hosts": _resolve(inventory.ssh.known_hosts, base_dir),
        }
    )
    kubeconfig = _resolve(inventory.kubeconfig, base_dir)
    return inventory.model_copy(update={"ssh": ssh, "kubeconfig": kubeconfig})


def _resolve(path: Path | None, base_dir: Path) -> Path | None:
    if path is None:
        return None
    path = path.expanduser()
    return path if path.is_absolute() else base_dir / path


def load_inventory(path: str | Path) -> PowerInventory:
    """Read and validate the power inventory at ``path``.

    Raises
    ------
    InventoryError
        Unreadable, not YAML, or any bad field (all named in one line).
    """
    path = Path(path)
    if not path.exists():  # most often the default path on a machine ansible did not set up
        raise InventoryError(
            f"{path}: cannot read: no such file (the power inventory: give yours with "
            "--inventory FILE or EAMS_POWER_INVENTORY)"
        )
    return parse_inventory(read_yaml(path, InventoryError), path.parent, str(path))
