"""Both programs find their cluster as kubectl does, and say in one line when they cannot start.

Order: ``--kubeconfig``, then ``$KUBECONFIG`` (first existing file of the list), then the in-cluster service
account, then ``~/.kube/config``. The in-cluster step needs the service-account files at their fixed path, so it is
checked on the resolver with a folder of our own; everything else through the real programs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grove_runtime.kubeconfig import KubeconfigError, own_namespace, resolve
from grove_sim.testing import SimCluster

from ._proc import PROGRAMS, clean_env, run_to_exit, running, write_kubeconfig

NO_LISTENERS = ("--no-leader-elect", "--health-probe-bind-address", "0", "--metrics-bind-address", "0")


@pytest.fixture
def configs(cluster: SimCluster, tmp_path: Path) -> dict[str, Path]:
    """A kubeconfig that reaches the cluster and one that reaches nothing (port 1 refuses connections)."""
    good = tmp_path / "good.kubeconfig"
    shutil.copyfile(cluster.kubeconfig, good)
    dead = write_kubeconfig(tmp_path / "dead.kubeconfig", "http://127.0.0.1:1")
    return {"good": good, "dead": dead}


def _home(tmp_path: Path, kubeconfig: Path | None) -> Path:
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True, exist_ok=True)
    if kubeconfig is not None:
        shutil.copyfile(kubeconfig, home / ".kube" / "config")
    return home


CASES = [
    # (flag, $KUBECONFIG entries, ~/.kube/config, expected source, expected file)
    pytest.param("good", ["dead"], "dead", "--kubeconfig", "good", id="flag-beats-env-and-home"),
    pytest.param(None, ["missing", "good", "dead"], "dead", "$KUBECONFIG", "good", id="env-first-existing-file"),
    pytest.param(None, [], "good", "~/.kube/config", "home", id="home-when-nothing-else"),
]


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize(("flag", "listed", "home_config", "source", "used"), CASES)
async def test_configuration_order(
    program: str,
    flag: str | None,
    listed: list[str],
    home_config: str,
    source: str,
    used: str,
    configs: dict[str, Path],
    tmp_path: Path,
) -> None:
    """The program reports the source kubectl would pick, and that source's cluster is the one it syncs from."""
    home = _home(tmp_path, configs[home_config])
    paths = {**configs, "missing": tmp_path / "missing.kubeconfig", "home": home / ".kube" / "config"}
    env = clean_env(home, KUBECONFIG=os.pathsep.join(str(paths[name]) for name in listed))
    # An in-cluster environment without the service account's files is not in-cluster: it must not win.
    env.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="1")
    args = ("--kubeconfig", str(paths[flag])) if flag else ()
    async with running(program, *args, *NO_LISTENERS, env=env) as proc:
        chosen = await proc.event("kubernetes configuration")
        assert (chosen["source"], chosen["path"]) == (source, str(paths[used]))
        await proc.event("caches synced")


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_no_configuration_is_one_line_and_exit_2(program: str, tmp_path: Path) -> None:
    """Nothing to connect to: one line on stderr naming what to do, exit code 2, no traceback."""
    env = clean_env(_home(tmp_path, None), KUBECONFIG=str(tmp_path / "nowhere"))
    code, lines = await run_to_exit(program, *NO_LISTENERS, env=env)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{program}: no Kubernetes configuration: $KUBECONFIG ({tmp_path / 'nowhere'})")
    assert "--kubeconfig" in lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_missing_or_malformed_kubeconfig_is_one_line_and_exit_2(program: str, tmp_path: Path) -> None:
    """An explicit file that does not exist, or is not a kubeconfig, is named in one line with exit code 2."""
    env = clean_env(_home(tmp_path, None))
    code, lines = await run_to_exit(program, "--kubeconfig", str(tmp_path / "absent"), *NO_LISTENERS, env=env)
    assert (code, lines) == (2, [f"{program}: --kubeconfig {tmp_path / 'absent'}: no such file"])
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    code, lines = await run_to_exit(program, "--kubeconfig", str(broken), *NO_LISTENERS, env=env)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{program}: --kubeconfig {broken}: ")


def _service_account(tmp_path: Path, namespace: str | None = "team-a") -> Path:
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    (folder / "token").write_text("t0ken")
    (folder / "ca.crt").write_text("")
    if namespace is not None:
        (folder / "namespace").write_text(f"{namespace}\n")
    return folder


def test_in_cluster_comes_after_kubeconfig_env_and_before_home(tmp_path: Path) -> None:
    """With a service account mounted and the service env set, in-cluster beats ~/.kube/config but not
    $KUBECONFIG; without the env it is not considered."""
    sa_dir = _service_account(tmp_path)
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("{}")
    listed = tmp_path / "listed"
    listed.write_text("{}")
    service = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "HOME": str(home)}
    assert resolve(env={**service, "KUBECONFIG": str(listed)}, sa_dir=sa_dir).kind == "$KUBECONFIG"
    assert resolve(env=service, sa_dir=sa_dir).kind == "in-cluster"
    assert resolve(env={"HOME": str(home)}, sa_dir=sa_dir).kind == "~/.kube/config"
    with pytest.raises(KubeconfigError, match="no Kubernetes configuration"):
        resolve(env={"HOME": str(tmp_path / "empty-home")}, sa_dir=sa_dir)


def test_lease_namespace_is_the_pods_own(tmp_path: Path) -> None:
    """$POD_NAMESPACE first, then the service account's namespace file, else grove-system."""
    sa_dir = _service_account(tmp_path)
    assert own_namespace({"POD_NAMESPACE": "ops"}, sa_dir=sa_dir) == "ops"
    assert own_namespace({}, sa_dir=sa_dir) == "team-a"
    assert own_namespace({}, sa_dir=tmp_path / "absent") == "grove-system"


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_lease_namespace_flag_and_default(program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both programs default their Lease to grove-system (or $POD_NAMESPACE) and take --lease-namespace."""
    from grove_operator import cli as operator_cli
    from grove_sched import cli as scheduler_cli

    def lease_namespace(argv: list[str]) -> str:
        if program == "grove-operator":
            return str(operator_cli.config_from_args(operator_cli.parse_args(argv)).lease.namespace)
        return scheduler_cli.parse_args(argv).lease.namespace

    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert lease_namespace([]) == "grove-system"
    assert lease_namespace(["--lease-namespace", "ops"]) == "ops"
    monkeypatch.setenv("POD_NAMESPACE", "team-b")
    assert lease_namespace([]) == "team-b"
