"""Pod addresses on the loopback network: distinct, never grove-sim's own 127.0.0.1, no .0/.255 host parts."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from grove_sim.controllers.containers import LoopbackAddresses


@given(st.integers(min_value=0, max_value=254 * 256 * 254 - 1), st.integers(min_value=1, max_value=600))
def test_addresses_are_distinct_loopback_hosts(start: int, count: int) -> None:
    addresses = LoopbackAddresses(start)
    seen = [addresses.next() for _ in range(count)]
    assert len(set(seen)) == count
    for text in seen:
        address = ipaddress.ip_address(text)
        assert address.is_loopback
        assert text != "127.0.0.1"
        assert text.split(".")[1] not in ("0", "255")
        assert text.split(".")[3] not in ("0", "255")
