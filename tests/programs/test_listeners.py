"""Both programs' health and metrics listeners honour controller-runtime's bind-address flags.

``host:port`` binds that host, port 0 any free port (logged once bound), ``0`` no listener; a port that cannot be
bound is one line on stderr and exit code 2.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import aiohttp
import pytest

from grove_sim.testing import SimCluster

from ._proc import PROGRAMS, clean_env, run_to_exit, running

pytestmark = pytest.mark.slow


@pytest.fixture
def env(cluster: SimCluster, tmp_path: Path) -> dict[str, str]:
    """Configuration through $KUBECONFIG, as a user would set it."""
    config = tmp_path / "kubeconfig"
    shutil.copyfile(cluster.kubeconfig, config)
    return clean_env(tmp_path, KUBECONFIG=str(config))


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_any_free_port_on_the_given_host(program: str, env: dict[str, str]) -> None:
    """Port 0 binds a free port on the given host (127.0.0.2 here, so the host is shown to be honoured); the
    logged port serves probes there, metrics on their own listener, and neither on the other's."""
    args = ("--no-leader-elect", "--health-probe-bind-address", "127.0.0.2:0", "--metrics-bind-address", "127.0.0.1:0")
    async with running(program, *args, env=env) as proc:
        probes = await proc.event("listening", serves="probes")
        metrics = await proc.event("listening", serves="metrics")
        assert probes["address"] == f"127.0.0.2:{probes['port']}"
        assert metrics["address"] == f"127.0.0.1:{metrics['port']}"
        assert min(probes["port"], metrics["port"]) > 0
        await proc.event("caches synced")
        assert await _get(f"http://127.0.0.2:{probes['port']}/readyz") == (200, "ok\n")
        assert (await _get(f"http://127.0.0.2:{probes['port']}/metrics"))[0] == 404
        status, text = await _get(f"http://127.0.0.1:{metrics['port']}/metrics")
        assert status == 200
        assert "grove_" in text
        assert (await _get(f"http://127.0.0.1:{metrics['port']}/healthz"))[0] == 404
        with pytest.raises(aiohttp.ClientConnectionError):
            await _get(f"http://127.0.0.1:{probes['port']}/readyz")


@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_zero_disables_and_port_flags_bind_loopback(program: str, env: dict[str, str]) -> None:
    """``--metrics-bind-address 0`` opens no metrics listener; ``--health-port 0`` is 127.0.0.1 with a free port."""
    async with running(
        program, "--no-leader-elect", "--health-port", "0", "--metrics-bind-address", "0", env=env
    ) as proc:
        await proc.event("caches synced")
        listening = proc.events("listening")
        assert [(e["serves"], e["address"]) for e in listening] == [("probes", f"127.0.0.1:{listening[0]['port']}")]


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("flag", ["--health-probe-bind-address", "--metrics-bind-address"])
async def test_taken_port_is_one_line_and_exit_2(program: str, flag: str, env: dict[str, str], taken: int) -> None:
    """A listener address in use ends the program with one line naming it, exit code 2, no traceback."""
    other = "--metrics-bind-address" if flag.startswith("--health") else "--health-probe-bind-address"
    code, lines = await run_to_exit(
        program, "--no-leader-elect", flag, f"127.0.0.1:{taken}", other, "0", "--log-level", "ERROR", env=env
    )
    serves = "probes" if flag.startswith("--health") else "metrics"
    assert code == 2
    assert lines == [f"{program}: cannot listen on 127.0.0.1:{taken} for {serves}: Address already in use"]


@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_bad_address_is_a_usage_error(program: str, env: dict[str, str]) -> None:
    """An address that is not host:port, :port or 0 is refused before anything starts (argparse, exit 2)."""
    code, lines = await run_to_exit(program, "--metrics-bind-address", "localhost", env=env)
    assert code == 2
    assert lines[-1] == f"{program}: error: argument --metrics-bind-address: 'localhost' is not host:port, :port or 0"
