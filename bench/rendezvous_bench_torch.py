#!/usr/bin/python3
"""torch's TCPStore under tutti-rendezvous-bench's workload (bench/rendezvous_bench.cc),
for scripts/bench-rendezvous-vs-torch.sh: the server in a process of its own, N
simulated ranks as Python threads (one TCPStore client each) across P client
processes, consecutive ranks in one process, all released together once every thread
is up. Prints the same kind of RESULT line as tutti-rendezvous-bench, with impl=torch.

Run:   /usr/bin/python3 bench/rendezvous_bench_torch.py [-n RANKS] [-p PROCESSES] [--ranks-per-node K]
Needs python3-torch (Debian's 1.13). TCPStore has no authentication, so it compares
with tutti-rendezvous-bench --no-secret as well as with the default.

What each simulated rank does, against the steps of bench/simulated_rank.h:
  1. connect: TCPStore(host, port, None, False, timeout) as a client.
  2. meeting: SET who/<rank> (identity and node name); ADD arrived, and the rank that
     makes it N SETs all_arrived; WAIT all_arrived; rank 0 then GETs every who/<r>
     (TCPStore 1.13 has no multi_get: N round trips, where tutti sends one MULTI_GET)
     and SETs every place/<r> (N round trips, as tutti's rank 0 does); each rank GETs
     its place/<rank>. Left out, with no counterpart here: tutti's claim of a rank
     (ADD claim, SET who, COMPARE_SET world_size, which catch two processes claiming
     one rank and ranks disagreeing on the size) and its watch during the meeting.
  3. UCX card: SET ucx/<rank>, as many bytes as tutti's.
  4. shared memory per simulated node: the node's first rank SETs name, WAITs every
     mapped/<r> of its node and GETs them (tutti: one MULTI_GET), SETs verdict; the
     others GET name, SET mapped/<r>, GET verdict.
  5. failure detector: left out; TCPStore has none (tutti's MEMBER, HEARTBEAT, one
     parked GET per rank and a heartbeat a second).
  6. peers' cards: GET ucx/<peer> for rank +- 1 and rank ^ 2^k, one after another
     (tutti asks for them all at once, asynchronously).
  7. leave: SET left/<rank>; ADD left, and the rank that makes it N SETs all_left.
Its requests_per_rank counts the store calls the clients make, and reply_bytes_per_rank
the value bytes that GET returned, since TCPStore keeps no such counts: a call may be
more than one request on the wire, and replies have framing besides the value.
Threads here hold Python's lock between calls, so the times measure what a Python
program gets, not TCPStore's C++ server alone; its server's memory includes the
interpreter and libtorch, hence the per-rank figure subtracts what it held at start.
"""
import argparse
import datetime
import json
import os
import select
import subprocess
import sys
import threading
import time

TIMEOUT = datetime.timedelta(seconds=120)
CARD_BYTES = 200


def status_kib(field, pid="self"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def cpu_seconds(pid="self"):
    """utime + stime, fields 14 and 15 of /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def raise_file_limit():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def serve():
    """The server's process: prints its port, RSS and CPU, serves until stdin closes,
    then prints its VmHWM and CPU."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, None, True, TIMEOUT, wait_for_workers=False)
    print(store.port, status_kib("VmRSS"), cpu_seconds(), flush=True)
    sys.stdin.read()
    print(status_kib("VmHWM"), cpu_seconds(), flush=True)


def peers_of(rank, size):
    peers = set()
    if size > 1:
        peers.update({(rank + 1) % size, (rank + size - 1) % size})
    bit = 1
    while bit < size:
        if rank ^ bit < size:
            peers.add(rank ^ bit)
        bit <<= 1
    peers.discard(rank)
    return sorted(peers)


def run_rank(port, rank, size, per_node, counts):
    """One rank's steps (see the docstring); returns (start, placed, done) in ns."""
    from torch.distributed import TCPStore

    calls = 0
    reply_bytes = 0
    start = time.monotonic_ns()
    store = TCPStore("127.0.0.1", port, None, False, TIMEOUT, wait_for_workers=False)
    node = rank // per_node

    def get(key):
        nonlocal calls, reply_bytes
        value = store.get(key)
        calls += 1
        reply_bytes += len(value)
        return value

    def call(fn, *args):
        nonlocal calls
        calls += 1
        return fn(*args)

    # 2. the meeting
    call(store.set, f"who/{rank}", f"sim-node-{node}:{100000 + rank}\nsim-node-{node}")
    if call(store.add, "arrived", 1) == size:
        call(store.set, "all_arrived", "")
    call(store.wait, ["all_arrived"])
    if rank == 0:
        nodes = {}
        local = []
        for r in range(size):
            name = get(f"who/{r}").split(b"\n")[1]
            members = nodes.setdefault(name, [])
            local.append((name, len(members)))
            members.append(r)
        node_rank = {name: i for i, name in enumerate(nodes)}
        for r, (name, local_rank) in enumerate(local):
            call(store.set, f"place/{r}", f"{local_rank} {len(nodes[name])} {node_rank[name]}")
    local_rank, local_size, _ = (int(x) for x in get(f"place/{rank}").split())
    placed = time.monotonic_ns()

    # 3. the UCX card
    call(store.set, f"ucx/{rank}", f"sim-node-{node}\n{100000 + rank}\n" + "a" * CARD_BYTES)

    # 4. shared memory on the node
    shm = f"shm/{node}/"
    if local_rank == 0:
        mapped = [f"{shm}mapped/{r}" for r in range(1, local_size)]
        call(store.set, shm + "name", f"/tutti-{os.getpid()}-4026531836-{rank}")
        if mapped:
            call(store.wait, mapped)
            for key in mapped:
                get(key)
        call(store.set, shm + "verdict", "")
    else:
        get(shm + "name")
        call(store.set, f"{shm}mapped/{local_rank}", "1")
        get(shm + "verdict")

    # 6. the peers' cards
    for peer in peers_of(rank, size):
        get(f"ucx/{peer}")

    # 7. leave
    call(store.set, f"left/{rank}", "")
    if call(store.add, "left", 1) == size:
        call(store.set, "all_left", "")
    del store
    done = time.monotonic_ns()
    counts.append((calls, reply_bytes))
    return start, placed, done


def client(args):
    """A client process: ranks [first, first + count) as threads; says "ready" once
    every thread is up, releases them on "go" (or EOF), then prints its outcome as JSON."""
    from torch.distributed import TCPStore  # noqa: F401 (imported once, before the threads)

    raise_file_limit()
    threading.stack_size(256 << 10)
    barrier = threading.Barrier(args.count + 1)
    times = []
    counts = []
    errors = []

    def body(rank):
        barrier.wait()
        try:
            times.append(run_rank(args.port, rank, args.ranks, args.ranks_per_node, counts))
        except Exception as e:  # reported, not raised: the others keep going
            errors.append(f"rank {rank}: {e}")

    threads = [threading.Thread(target=body, args=(args.first + i,)) for i in range(args.count)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    sys.stdin.readline()
    barrier.wait()
    for t in threads:
        t.join()
    outcome = {
        "ranks": args.count,
        "failed": len(errors),
        "first_error": errors[0] if errors else "",
        "first_start_ns": min((t[0] for t in times), default=0),
        "last_placed_ns": max((t[1] for t in times), default=0),
        "last_done_ns": max((t[2] for t in times), default=0),
        "calls": sum(c for c, _ in counts),
        "reply_bytes": sum(b for _, b in counts),
    }
    print(json.dumps(outcome), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=1000, dest="ranks")
    parser.add_argument("-p", type=int, default=16, dest="processes")
    parser.add_argument("--ranks-per-node", type=int, default=8)
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--client", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument("--first", type=int)
    parser.add_argument("--count", type=int)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    if args.client:
        client(args)
        return 0

    raise_file_limit()  # inherited by the server
    processes = min(args.processes, args.ranks)
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    clients = []
    try:
        port, start_kib, start_cpu = server.stdout.readline().split()
        port, start_kib, start_cpu = int(port), int(start_kib), float(start_cpu)
        print(f"torch TCPStore rendezvous bench: {args.ranks} ranks in {processes} processes, "
              f"{args.ranks_per_node} ranks per node", flush=True)
        first = 0
        for p in range(processes):
            count = args.ranks // processes + (1 if p < args.ranks % processes else 0)
            clients.append(subprocess.Popen(
                [sys.executable, __file__, "--client", "--port", str(port), "-n", str(args.ranks),
                 "--ranks-per-node", str(args.ranks_per_node), "--first", str(first), "--count", str(count)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            first += count
        for c in clients:
            c.stdout.readline()  # "ready"
        for c in clients:
            c.stdin.write("go\n")
            c.stdin.close()

        # Until every client reports: sample the server's descriptors meanwhile.
        outcomes = {}
        peak_fds = 0
        while len(outcomes) < len(clients):
            peak_fds = max(peak_fds, count_fds(server.pid))
            waiting = [c for c in clients if c.pid not in outcomes]
            readable, _, _ = select.select([c.stdout for c in waiting], [], [], 0.02)
            for c in waiting:
                if c.stdout in readable:
                    line = c.stdout.readline()
                    outcomes[c.pid] = json.loads(line) if line else {"ranks": 0, "failed": 1,
                                                                      "first_error": "a client process died"}
        for c in clients:
            c.wait()
        server.stdin.close()
        hwm_kib, end_cpu = server.stdout.readline().split()
        hwm_kib, store_cpu = int(hwm_kib), float(end_cpu) - start_cpu
    finally:
        for c in clients:
            if c.poll() is None:
                c.kill()
                c.wait()
        if server.poll() is None:
            if not server.stdin.closed:
                server.stdin.close()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    results = list(outcomes.values())
    failed = sum(r["failed"] for r in results)
    errors = [r["first_error"] for r in results if r.get("first_error")]
    first_start = min((r["first_start_ns"] for r in results if r.get("first_start_ns")), default=0)
    last_placed = max((r.get("last_placed_ns", 0) for r in results), default=0)
    last_done = max((r.get("last_done_ns", 0) for r in results), default=0)
    n = args.ranks
    placed_s = (last_placed - first_start) / 1e9
    done_s = (last_done - first_start) / 1e9
    kib_per_rank = (hwm_kib - start_kib) / n
    calls = sum(r.get("calls", 0) for r in results) / n
    reply_bytes = sum(r.get("reply_bytes", 0) for r in results) / n
    print(f"last rank placed   {placed_s:.3f} s after the first connect")
    print(f"last rank done     {done_s:.3f} s after the first connect")
    print(f"store CPU          {store_cpu:.2f} s (user + system of the server's process, from listening to the end)")
    print(f"store memory       peak (VmHWM) {hwm_kib / 1024:.1f} MiB, {start_kib / 1024:.1f} MiB before the ranks "
          f"came (the interpreter and libtorch): {kib_per_rank:.2f} KiB per rank")
    print(f"store fds          {peak_fds} at peak (sampled)")
    print(f"store traffic      {calls:.1f} calls and {reply_bytes:.0f} value bytes returned per rank (client side)")
    if failed:
        print(f"FAILED             {failed} ranks; first: {errors[0] if errors else '?'}")
    print(f"RESULT impl=torch n={n} processes={processes} seconds={done_s:.3f} placed_s={placed_s:.3f} "
          f"store_cpu_s={store_cpu:.3f} store_hwm_kib={hwm_kib} store_start_kib={start_kib} "
          f"store_kib_per_rank={kib_per_rank:.2f} store_fds={peak_fds} requests_per_rank={calls:.2f} "
          f"reply_bytes_per_rank={reply_bytes:.0f} secret=0 failed={failed}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
