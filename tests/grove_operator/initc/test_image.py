"""Which image the operator writes into the grove-initc init container: `--initc-image`, then
`$GROVE_INIT_CONTAINER_IMAGE` (upstream's name), then `grove-initc`, tagged with the operator's version."""

from __future__ import annotations

import pytest

from grove_operator.cli import config_from_args, parse_args
from grove_operator.config import OPERATOR_VERSION, OperatorConfig

ENV = "GROVE_INIT_CONTAINER_IMAGE"


@pytest.mark.parametrize(
    ("flag", "env", "image"),
    [
        (None, {}, f"grove-initc:{OPERATOR_VERSION}"),
        (
            None,
            {ENV: "registry.example.com/grove/grove-initc"},
            f"registry.example.com/grove/grove-initc:{OPERATOR_VERSION}",
        ),
        ("localhost:5000/initc", {ENV: "ignored"}, f"localhost:5000/initc:{OPERATOR_VERSION}"),
        ("grove-initc:dev", {}, "grove-initc:dev"),
        ("reg/initc@sha256:abc", {}, "reg/initc@sha256:abc"),
    ],
)
def test_image_from_flag_then_environment_then_default(flag: str | None, env: dict[str, str], image: str) -> None:
    assert OperatorConfig.init_image(flag, env) == image


def test_the_flag_and_the_environment_reach_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "mirror.example.com/initc")
    assert config_from_args(parse_args([])).init_container_image == f"mirror.example.com/initc:{OPERATOR_VERSION}"
    flagged = parse_args(["--initc-image", "other/initc"])
    assert config_from_args(flagged).init_container_image == f"other/initc:{OPERATOR_VERSION}"
    monkeypatch.delenv(ENV)
    assert config_from_args(parse_args([])).init_container_image == f"grove-initc:{OPERATOR_VERSION}"
    assert OperatorConfig().init_container_image == f"grove-initc:{OPERATOR_VERSION}"
