"""The ports the tests and benchmarks start servers on."""

import socket
from pathlib import Path

from libs.stack.servers import free_port


def test_a_free_port_is_outside_the_kernels_ephemeral_range_and_free():
    """Never one the kernel may hand to a socket bound to port 0 before the server binds it,
    and a different one each time, bindable."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # what an aiohttp test server or an ops server does
        ports = [free_port() for _ in range(200)]
        assert taken.getsockname()[1] not in ports
    assert [p for p in ports if low <= p <= high] == []
    assert len(set(ports)) == len(ports)
    for port in ports[:10]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
