"""The Dockerfile builds the image the manifests run (no container engine here, so its text is checked): the
programs it installs and checks are console scripts of pyproject.toml, its entry point is grove-initc (the
operator's init container passes arguments only), each Deployment's command is one of its programs, and it runs
as the non-root user the manifests ask for."""

from __future__ import annotations

import json
import re
import shlex
import tomllib

from . import _manifests as m

DOCKERFILE = (m.ROOT / "Dockerfile").read_text()


def _scripts() -> dict[str, str]:
    project = tomllib.loads((m.ROOT / "pyproject.toml").read_text())["project"]
    return dict(project["scripts"])


def _instructions(name: str) -> list[str]:
    """The arguments of every ``name`` instruction (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(None, 1)[1] for line in text.splitlines() if line.split(None, 1)[:1] == [name]]


def _programs() -> list[str]:
    (value,) = [arg.split("=", 1)[1] for arg in _instructions("ARG") if arg.startswith("PROGRAMS=")]
    return shlex.split(value)[0].split()


def test_programs_are_the_three_console_scripts() -> None:
    scripts = _scripts()
    programs = _programs()
    assert programs == ["grove-operator", "grove-scheduler", "grove-initc"]
    assert set(programs) <= scripts.keys()
    assert scripts["grove-initc"] == "grove_operator.initc.cli:main"
    assert any('for program in $PROGRAMS; do "$program" --help' in run for run in _instructions("RUN"))


def test_entry_point_is_grove_initc_and_deployments_name_their_program() -> None:
    (entry,) = _instructions("ENTRYPOINT")
    assert json.loads(entry) == ["grove-initc"]
    for name in ("grove-operator", "grove-scheduler"):
        deployment = m.one(m.overlay("production"), "Deployment", name)
        assert m.container(deployment)["command"] == [name]
        assert name in _programs()


def test_multi_stage_slim_and_non_root_as_the_manifests_run_it() -> None:
    stages = _instructions("FROM")
    assert len(stages) == 2
    assert stages[0].endswith(" AS build")
    (base,) = [a.split("=", 1)[1] for a in _instructions("ARG") if a.startswith("PYTHON_IMAGE=")]
    assert "slim" in base
    (user,) = _instructions("USER")
    uid = int(user.split(":")[0])
    assert uid != 0
    for name in ("grove-operator", "grove-scheduler"):
        pod = m.one(m.overlay("production"), "Deployment", name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == uid
