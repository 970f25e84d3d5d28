"""Listener addresses as controller-runtime's bind-address flags spell them, and how endpoints share listeners."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from grove_runtime.health import Address, HealthServer, ListenError, parse_bind_address, plan_listeners


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8080", Address("127.0.0.1", 8080)),
        (":8081", Address("", 8081)),
        ("[::1]:0", Address("::1", 0)),
        ("10.1.2.3:0", Address("10.1.2.3", 0)),
        ("0", None),
    ],
)
def test_parse_bind_address(text: str, expected: Address | None) -> None:
    """host:port, :port (every interface), [v6]:port, and 0 for no listener."""
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize("text", ["", "8080", "localhost", "host:", "host:http", "1.2.3.4:65536", "::"])
def test_parse_bind_address_rejects(text: str) -> None:
    """Anything else is a ValueError naming the text."""
    with pytest.raises(ValueError, match="is not host:port"):
        parse_bind_address(text)


@given(host=st.sampled_from(["", "127.0.0.1", "::1", "10.0.0.7"]), port=st.integers(0, 65535))
def test_address_round_trips_through_its_text(host: str, port: int) -> None:
    """An address printed in logs parses back to itself."""
    assert parse_bind_address(str(Address(host, port))) == Address(host, port)


def test_plan_shares_one_listener_for_one_address() -> None:
    """The same address serves both; different addresses get one listener each; None opens none."""
    a, b = Address("127.0.0.1", 1), Address("127.0.0.1", 2)
    assert [(p.address, p.probes, p.metrics) for p in plan_listeners(a, a)] == [(a, True, True)]
    assert [(p.address, p.probes, p.metrics) for p in plan_listeners(a, b)] == [(a, True, False), (b, False, True)]
    assert [(p.address, p.probes, p.metrics) for p in plan_listeners(None, b)] == [(b, False, True)]
    assert plan_listeners(None, None) == []


async def test_taken_port_raises_listen_error() -> None:
    """Binding a port in use raises ListenError with the address and what it was for, in one line."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        server = HealthServer(CollectorRegistry(), host="127.0.0.1", port=port, metrics=False)
        with pytest.raises(ListenError) as caught:
            await server.start()
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{port} for probes: Address already in use"
