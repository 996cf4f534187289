"""A tiny data-parallel "training" in pure Python (no framework): fits y = 3x + 1 by gradient descent.

It reads the environment a PyTorchJob's operator sets (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK):
every rank computes the gradient on its shard of the data, rank 0 averages the gradients over TCP
and sends the new weights back. Alone (no WORLD_SIZE) it trains on everything. The same file runs
unchanged as local processes (`gpupool --embedded seed --run local`) and on a real cluster.
"""
import json
import os
import socket
import time

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
steps = int(os.environ.get("STEPS", "30"))
data = [(x / 10.0, 3 * x / 10.0 + 1) for x in range(40)]
shard = data[rank::world]


def gradient(w, b):
    gw = sum(2 * (w * x + b - y) * x for x, y in shard) / len(shard)
    gb = sum(2 * (w * x + b - y) for x, y in shard) / len(shard)
    return gw, gb


def lines(conn):
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = conn.recv(4096)
            if not chunk:
                return
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        yield json.loads(line)


w, b = 0.0, 0.0
if world > 1:
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if rank == 0:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((addr, port))
        server.listen()
        peers = [server.accept()[0] for _ in range(world - 1)]
        readers = [lines(p) for p in peers]
    else:
        for _ in range(1200):
            try:
                conn = socket.create_connection((addr, port))
                break
            except OSError:
                time.sleep(0.05)
        reader = lines(conn)

for step in range(steps):
    gw, gb = gradient(w, b)
    if world > 1 and rank == 0:
        for r in readers:
            g = next(r)
            gw, gb = gw + g[0], gb + g[1]
        gw, gb = gw / world, gb / world
        w, b = w - 0.05 * gw, b - 0.05 * gb
        for p in peers:
            p.sendall((json.dumps([w, b]) + "\n").encode())
    elif world > 1:
        conn.sendall((json.dumps([gw, gb]) + "\n").encode())
        w, b = next(reader)
    else:
        w, b = w - 0.05 * gw, b - 0.05 * gb
    if rank == 0 and (step % 10 == 9 or step == steps - 1):
        loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
        print(f"step {step + 1}: loss {loss:.4f} w {w:.3f} b {b:.3f} (world size {world})", flush=True)

print(f"rank {rank} of {world}: done", flush=True)
