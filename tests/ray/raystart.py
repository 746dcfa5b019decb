"""``ray start`` for the test cluster, with the node's address kept on 127.0.0.1.

Ray replaces a loopback ``--node-ip-address`` by the machine's outward address
(``ray._private.services.resolve_ip_for_localhost``); the tests keep every connection of the
cluster on the loopback interface, so that is undone here. Usage: ``python raystart.py start ARGS``.
"""

from __future__ import annotations

import sys

import ray._private.services as services
from ray.scripts.scripts import main

services.resolve_ip_for_localhost = lambda host: host

if __name__ == "__main__":
    sys.exit(main())
