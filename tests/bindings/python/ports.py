"""Free loopback ports for the tests' own rendezvous (gloo's, torch's store, torchrun's),
chosen below Linux's ephemeral range (32768 and up), as torchrun's 29500 is. A port that
the kernel handed out for port 0 lies in that range, where any process binding port 0
meanwhile (UCX's listeners, every outgoing connection) can take it before the test
binds it again: CI saw EADDRINUSE that way."""
import random
import socket


def bindable(port):
    """Whether port is free on 127.0.0.1 now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port(count=1):
    """A port P in 20000..32000 with P .. P + count - 1 free."""
    for _ in range(200):
        port = random.randrange(20000, 32000)
        if all(bindable(port + i) for i in range(count)):
            return port
    raise RuntimeError(f"no {count} free consecutive ports in 20000..32000")
