"""``eams.validation``: one line naming every pydantic error with its path."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eams.validation import describe_validation_error


class _Sink(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["http"]
    url: str

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith("http"):
            raise ValueError(f"expected an http(s):// URL, got {value!r}")
        return value


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["file"]
    path: str


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    power_cap_w: Annotated[float, Field(gt=0)]
    sinks: list[Annotated[_Sink | _File, Field(discriminator="type")]] = []


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Config.model_validate(data)
    return caught.value


def test_every_error_is_listed_with_its_path_in_pydantic_order() -> None:
    exc = _error(
        {
            "power_cap_w": -1,
            "sinks": [{"type": "file", "path": "a"}, {"type": "http", "url": "ftp://x"}],
            "colour": "red",
        }
    )
    assert exc.error_count() == 3
    assert describe_validation_error(exc, hide=("http", "file")) == (
        "power_cap_w: Input should be greater than 0; "
        "sinks[1].url: expected an http(s):// URL, got 'ftp://x'; "
        "colour: Extra inputs are not permitted"
    )


def test_without_hide_the_union_tag_stays_in_the_path() -> None:
    exc = _error({"power_cap_w": 1, "sinks": [{"type": "http", "url": "ftp://x"}]})
    assert describe_validation_error(exc).startswith("sinks[0].http.url: expected")


def test_template_dotted_indexes_root_and_top() -> None:
    exc = _error({"power_cap_w": 1, "sinks": [{"type": "file"}]})
    assert (
        describe_validation_error(exc, template="field '{path}': {message}", dotted_index=True)
        == "field 'sinks.0.file.path': Field required"
    )
    assert describe_validation_error(exc, root="items[3]", hide=("file",)) == (
        "items[3].sinks[0].path: Field required"
    )
    assert describe_validation_error(exc, hide=("file",)) == "sinks[0].path: Field required"
    whole = _error([1, 2])
    assert describe_validation_error(whole, top="body").startswith("body: Input should be")
    assert describe_validation_error(whole).startswith("(top level): Input should be")
