"""The ports the tests and benchmarks start servers on."""

import socket
from pathlib import Path

from libs.stack.servers import free_port


def test_free_ports_are_outside_the_kernels_ephemeral_range_and_never_handed_out_twice():
    """Never one the kernel may hand to a socket bound to port 0 before its server binds
    it; a run of consecutive ports (a cluster's nodes) free whole; no two picks overlap."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # what an aiohttp test server or an ops server does
        runs = [(first, 3) for first in (free_port(3) for _ in range(50))]
        singles = [(free_port(), 1) for _ in range(100)]
        ports = [first + i for first, n in runs + singles for i in range(n)]
        assert taken.getsockname()[1] not in ports
    assert [p for p in ports if low <= p <= high] == []
    assert len(set(ports)) == len(ports)
    for port in ports[:12]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
