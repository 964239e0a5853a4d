#!/usr/bin/python3
"""torch's TCPStore under tutti-store-bench's workload (bench/store_bench.cc), for
scripts/bench-store-vs-torch.sh: the server in a process of its own, CLIENTS threads
here with one TCPStore client each, making set, get and add in turn, CALLS in all.
Prints the same RESULT line as tutti-store-bench.

Run:   /usr/bin/python3 bench/store_bench_torch.py [-c CLIENTS] [-n CALLS] [-v VALUE_BYTES]
Needs python3-torch (Debian). TCPStore has no authentication, so it compares with
tutti-store-bench --no-secret as well as with the default.
"""
import argparse
import datetime
import subprocess
import sys
import threading
import time


def status_kib(field, pid="self"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def serve():
    """The server's process: prints its port and RSS, serves until stdin closes, then
    prints its VmHWM."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=60), wait_for_workers=False)
    print(store.port, status_kib("VmRSS"), flush=True)
    sys.stdin.read()
    print(status_kib("VmHWM"), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-c", type=int, default=64, dest="clients")
    parser.add_argument("-n", type=int, default=100000, dest="calls")
    parser.add_argument("-v", type=int, default=32, dest="value_bytes")
    parser.add_argument("--serve", action="store_true")
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0

    from torch.distributed import TCPStore

    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        port, start_kib = (int(x) for x in server.stdout.readline().split())
        print(f"torch TCPStore bench: {args.clients} clients, {args.calls} calls (set/get/add in turn), "
              f"{args.value_bytes}-byte values")
        timeout = datetime.timedelta(seconds=60)
        connect_start = time.perf_counter()
        clients = [TCPStore("127.0.0.1", port, None, False, timeout) for _ in range(args.clients)]
        print(f"connect            {args.clients} clients in {(time.perf_counter() - connect_start) * 1000:.1f} ms")
        value = b"v" * args.value_bytes
        wrong = [0]
        barrier = threading.Barrier(args.clients + 1)

        def work(c):
            client = clients[c]
            barrier.wait()
            step = 0
            for _ in range(c, args.calls, args.clients):
                kind = step % 3
                if kind == 0:
                    client.set(f"t{c}/k{step % 16}", value)
                elif kind == 1:
                    if client.get(f"t{c}/k{(step - 1) % 16}") != value:
                        wrong[0] += 1
                else:
                    client.add("counter", 1)
                step += 1

        threads = [threading.Thread(target=work, args=(c,)) for c in range(args.clients)]
        for t in threads:
            t.start()
        barrier.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
        del clients
        server.stdin.close()
        hwm_kib = int(server.stdout.readline())
    finally:
        if server.poll() is None:
            if not server.stdin.closed:
                server.stdin.close()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    rate = args.calls / seconds
    print(f"calls              {args.calls} in {seconds:.2f} s: {rate:.0f} calls/s")
    print(f"server memory      peak (VmHWM) {hwm_kib / 1024:.1f} MiB; {start_kib / 1024:.1f} MiB before the clients "
          "came (the Python interpreter and libtorch)")
    print(f"RESULT impl=torch clients={args.clients} calls={args.calls} seconds={seconds:.3f} calls_per_s={rate:.0f} "
          f"server_hwm_kib={hwm_kib} server_start_kib={start_kib} wrong={wrong[0]}")
    return 0 if wrong[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
