"""Meter URLs: the one way an operator names a meter (CLI contract of issue 2).

- ``snmp://[COMMUNITY@]HOST[:PORT]`` — SNMP v2c, community ``public`` and port 161 by default.
- ``snmpv3://USER@HOST[:PORT]?auth=SHA&priv=AES[&context=NAME]`` — SNMP v3 authPriv (empty
  context unless ``context`` is given); the keys come from the environment
  (``EAMS_SNMP_AUTH_KEY``, ``EAMS_SNMP_PRIV_KEY``), never from the URL, so a URL can be logged
  and stored in a calibration file.
- ``serial://DEVICE?protocol=sdm120|sdm630|wattsup&baudrate=9600&unit=1`` — a serial meter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from eams.meter.errors import BadMeterUrl

AUTH_KEY_ENV = "EAMS_SNMP_AUTH_KEY"
PRIV_KEY_ENV = "EAMS_SNMP_PRIV_KEY"

SNMP_AUTH_PROTOCOLS = ("MD5", "SHA", "SHA224", "SHA256", "SHA384", "SHA512")
SNMP_PRIV_PROTOCOLS = ("DES", "AES", "AES192", "AES256")
SERIAL_PROTOCOLS = ("sdm120", "sdm630", "wattsup")
_DEFAULT_BAUD = {"sdm120": 9600, "sdm630": 9600, "wattsup": 115200}


@dataclass(frozen=True, slots=True)
class MeterUrl:
    """A parsed meter URL.

    Attributes
    ----------
    scheme : {"snmp", "snmpv3", "serial"}
    host : str
        SNMP host, or the serial device path for ``serial``.
    port : int or None
        UDP port for SNMP (161 by default); ``None`` for serial.
    community : str or None
        v2c community.
    user : str or None
        v3 user name.
    options : dict of str to str
        Query options (``auth``, ``priv``, ``protocol``, ``baudrate``, ``unit``...).
    """

    scheme: str
    host: str
    port: int | None = None
    community: str | None = None
    user: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    def redacted(self) -> str:
        """The URL as text with no secret in it (v2c community shown as ``***``)."""
        query = "&".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        suffix = f"?{query}" if query else ""
        if self.scheme == "serial":
            return f"serial://{self.host}{suffix}"
        who = "***@" if self.scheme == "snmp" else f"{self.user}@"
        host = f"[{self.host}]" if ":" in self.host else self.host  # IPv6 literal (RFC 3986)
        return f"{self.scheme}://{who}{host}:{self.port}{suffix}"

    def snmp_keys(self) -> tuple[str, str]:
        """Return the SNMPv3 (auth key, priv key) from the environment.

        Raises
        ------
        BadMeterUrl
            If either environment variable is unset or shorter than 8 characters (RFC 3414
            requires at least 8).
        """
        keys = []
        for env in (AUTH_KEY_ENV, PRIV_KEY_ENV):
            value = os.environ.get(env, "")
            if len(value) < 8:
                raise BadMeterUrl(
                    f"{self.redacted()}: SNMPv3 needs {env} set to a key of at least 8 characters"
                )
            keys.append(value)
        return keys[0], keys[1]


def _port(text: str | None, default: int, url: str) -> int:
    if text is None:
        return default
    try:
        port = int(text)
    except ValueError:
        raise BadMeterUrl(f"{url!r}: port {text!r} is not a number") from None
    if not 0 < port < 65536:
        raise BadMeterUrl(f"{url!r}: port {port} is outside 1-65535")
    return port


def _split_host(netloc: str, url: str) -> tuple[str | None, str, str | None]:
    userinfo, _, hostport = netloc.rpartition("@")
    if hostport.startswith("["):  # IPv6 literal
        host, _, rest = hostport[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
    else:
        host, _, port_text = hostport.partition(":")
        port = port_text or None
    if not host:
        raise BadMeterUrl(f"{url!r}: no host")
    return (unquote(userinfo) if userinfo else None), host, port


def _one_value_options(query: str, url: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for key, values in parse_qs(query, keep_blank_values=True).items():
        if len(values) != 1 or not values[0]:
            raise BadMeterUrl(f"{url!r}: option {key!r} must have exactly one non-empty value")
        options[key] = values[0]
    return options


def _check_choice(options: dict[str, str], key: str, choices: tuple[str, ...], url: str) -> None:
    value = options.get(key)
    if value is not None and value.upper() not in (c.upper() for c in choices):
        raise BadMeterUrl(f"{url!r}: {key}={value!r} is not one of {', '.join(choices)}")


def _check_known(options: dict[str, str], allowed: set[str], url: str) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise BadMeterUrl(
            f"{url!r}: unknown option(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(allowed)) or 'none'}"
        )


def parse_meter_url(url: str) -> MeterUrl:
    """Parse and check a meter URL.

    Parameters
    ----------
    url : str
        One of the forms in this module's docstring.

    Returns
    -------
    MeterUrl

    Raises
    ------
    BadMeterUrl
        Naming the part that is wrong: scheme, host, port, or an option and its allowed values.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        raise BadMeterUrl(f"{url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme in ("snmp", "snmpv3") and (parts.path.strip("/") or parts.fragment):
        raise BadMeterUrl(f"{url!r}: an SNMP URL has no path or fragment (HOST[:PORT] only)")
    options = _one_value_options(parts.query, url)
    if scheme == "snmp":
        _check_known(options, set(), url)
        community, host, port = _split_host(parts.netloc, url)
        return MeterUrl("snmp", host, _port(port, 161, url), community=community or "public")
    if scheme == "snmpv3":
        _check_known(options, {"auth", "priv", "context"}, url)
        user, host, port = _split_host(parts.netloc, url)
        if not user:
            raise BadMeterUrl(f"{url!r}: snmpv3 needs a user, as snmpv3://USER@HOST")
        options.setdefault("auth", "SHA")
        options.setdefault("priv", "AES")
        _check_choice(options, "auth", SNMP_AUTH_PROTOCOLS, url)
        _check_choice(options, "priv", SNMP_PRIV_PROTOCOLS, url)
        options = {k: v if k == "context" else v.upper() for k, v in options.items()}
        return MeterUrl("snmpv3", host, _port(port, 161, url), user=user, options=options)
    if scheme == "serial":
        _check_known(options, {"protocol", "baudrate", "unit"}, url)
        device = parts.netloc + parts.path
        if not device:
            raise BadMeterUrl(f"{url!r}: no serial device, as serial:///dev/ttyUSB0?protocol=...")
        protocol = options.get("protocol", "").lower()
        if protocol not in SERIAL_PROTOCOLS:
            raise BadMeterUrl(
                f"{url!r}: protocol={protocol or '(missing)'} is not one of "
                f"{', '.join(SERIAL_PROTOCOLS)}"
            )
        options["protocol"] = protocol
        options.setdefault("baudrate", str(_DEFAULT_BAUD[protocol]))
        options.setdefault("unit", "1")
        # unit: Modbus serial slave addresses are 1-247 (MODBUS over Serial Line V1.02 §2.2)
        for key, low, high in (("baudrate", 1, 4_000_000), ("unit", 1, 247)):
            text = options[key]
            if not (text.isdigit() and low <= int(text) <= high):
                raise BadMeterUrl(f"{url!r}: {key}={text!r} is not a whole number in {low}-{high}")
        return MeterUrl("serial", device, options=options)
    raise BadMeterUrl(
        f"{url!r}: unknown scheme {parts.scheme!r}; use snmp://, snmpv3:// or serial://"
    )
