"""The Quack side of `quiver-bench peers`: quiver against DuckDB's own
client/server protocol, Python on both sides.

    python quack_bench.py serve --db PATH --token T [--setup SQL]...
        Serves a DuckDB database over Quack on a free loopback port; prints
        "listening on HOST:PORT" once it serves, and stops on SIGTERM.

    python quack_bench.py run --quiver ADDR --user U --password P
                              --quack ADDR --token T [options]
        Times each call against quiver (ADBC, Flight SQL) and Quack
        (DuckDB's ATTACH 'quack:...'), alternated, and prints JSON.

    python quack_bench.py insert-worker --target quiver|quack ...
        One client process of the concurrent inserts: connects, prints
        "ready", waits for a line on stdin, inserts for --window seconds,
        and prints how many rows it inserted.

The extensions are loaded from their PyPI wheels' files: nothing is
downloaded at run time.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

import duckdb
import duckdb_extension_httpfs
import duckdb_extension_quack

QUACK_ALIAS = "remote"


def extension_path(module, name):
    return os.path.join(os.path.dirname(module.__file__), "extensions",
                        "v" + duckdb.__version__, name + ".duckdb_extension")


def duckdb_with_quack(path=":memory:"):
    con = duckdb.connect(path)
    # Quack's HTTP transport is httpfs's, on the server too.
    con.load_extension(extension_path(duckdb_extension_httpfs, "httpfs"))
    con.load_extension(extension_path(duckdb_extension_quack, "quack"))
    return con


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(args):
    con = duckdb_with_quack(args.db)
    for sql in args.setup:
        con.execute(sql)
    # quack_serve takes no port 0: pick a free one, and try again should
    # another process take it first.
    for attempt in range(5):
        port = free_port()
        try:
            con.execute("CALL quack_serve(?, token = ?)", [f"quack:127.0.0.1:{port}", args.token])
            break
        except duckdb.Error:
            if attempt == 4:
                raise
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    print(f"listening on 127.0.0.1:{port}", flush=True)
    while not stop:
        signal.pause()
    con.execute("CALL quack_stop(?)", [f"quack:127.0.0.1:{port}"])


def connect_quiver(args):
    import adbc_driver_flightsql.dbapi as flight_sql
    return flight_sql.connect(f"grpc://{args.quiver}",
                              db_kwargs={"username": args.user, "password": args.password},
                              autocommit=True)


def connect_quack(args):
    con = duckdb_with_quack()
    con.execute(f"ATTACH 'quack:{args.quack}' AS {QUACK_ALIAS} (TOKEN '{args.token}')")
    return con


class Quiver:
    """quiver through ADBC: a cursor per call, as an application would."""

    name = "quiver"

    def __init__(self, args):
        self.conn = connect_quiver(args)

    def table(self, sql):
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetch_arrow_table()

    def rows(self, sql, params):
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def execute(self, sql, params):
        with self.conn.cursor() as cur:
            cur.execute(sql, params)

    def close(self):
        self.conn.close()


class Quack:
    """DuckDB attached to the Quack server: the tables are remote.<name>."""

    name = "quack"

    def __init__(self, args):
        self.con = connect_quack(args)
        self.con.execute(f"USE {QUACK_ALIAS}")

    def table(self, sql):
        return self.con.execute(sql).to_arrow_table()

    def rows(self, sql, params):
        return self.con.execute(sql, params).fetchall()

    def execute(self, sql, params):
        self.con.execute(sql, params)

    def close(self):
        self.con.close()


def progress(msg):
    # stdout carries the JSON; a long run says where it is on stderr.
    print(f"quack_bench: {msg}", file=sys.stderr, flush=True)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run_fetches(clients, cases, reps, warmup):
    out = []
    for name, rows, sql in cases:
        secs = {c.name: [] for c in clients}
        for i in range(warmup + reps):
            for c in clients:
                dt, table = timed(lambda: c.table(sql))
                if table.num_rows != rows:
                    raise SystemExit(f"{c.name} {name}: got {table.num_rows} rows, want {rows}")
                del table
                if i >= warmup:
                    secs[c.name].append(dt)
                progress(f"fetch {name} {c.name}: {dt:.2f} s{' (warm-up)' if i < warmup else ''}")
        out.append({"workload": name, "rows": rows, "seconds": secs})
    return out


def run_points(clients, sql, keys, reps, warmup):
    """Latencies in seconds of one point query each, in blocks per client."""
    lat = {c.name: [] for c in clients}
    n = len(keys)
    for c in clients:
        for k in keys[:warmup]:
            c.rows(sql, (k,))
    for r in range(reps):
        for c in clients:
            for k in keys[r * n // reps:(r + 1) * n // reps]:
                dt, got = timed(lambda: c.rows(sql, (k,)))
                if len(got) != 1:
                    raise SystemExit(f"{c.name} point query id = {k}: got {len(got)} rows, want 1")
                lat[c.name].append(dt)
            progress(f"point queries {c.name}: {len(lat[c.name])} done")
    return lat


def run_inserts(args, targets, clients, reps):
    """Rows per second of each target's insert workers, alternated."""
    out = []
    for n in clients:
        rates = {t: [] for t in targets}
        for _ in range(reps):
            for t in targets:
                rates[t].append(insert_round(args, t, n) / args.insert_window)
                progress(f"inserts {t}, {n} clients: {rates[t][-1]:.0f} /s")
        out.append({"clients": n, "rows_per_s": rates})
    return out


def insert_round(args, target, n):
    cmd = [sys.executable, os.path.abspath(__file__), "insert-worker", "--target", target,
           "--quiver", args.quiver, "--user", args.user, "--password", args.password,
           "--quack", args.quack, "--token", args.token,
           "--window", str(args.insert_window), "--sql", args.insert_sql]
    procs = []
    try:
        for i in range(n):
            procs.append(subprocess.Popen(cmd + ["--first-id", str((i + 1) * 1_000_000_000)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for p in procs:
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"{target} insert worker did not start")
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        total = 0
        for p in procs:
            out, _ = p.communicate(timeout=args.insert_window + 120)
            if p.returncode != 0:
                raise SystemExit(f"{target} insert worker exited {p.returncode}")
            total += int(out.strip())
        return total
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def insert_worker(args):
    client = Quiver(args) if args.target == "quiver" else Quack(args)
    # One untimed insert: the connection, and any plan the server keeps,
    # are warm when the window opens.
    client.execute(args.sql, (args.first_id - 1,))
    print("ready", flush=True)
    sys.stdin.readline()
    n, end = 0, time.monotonic() + args.window
    while time.monotonic() < end:
        client.execute(args.sql, (args.first_id + n,))
        n += 1
    client.close()
    print(n, flush=True)


def run(args):
    import adbc_driver_flightsql
    import pyarrow
    clients = [Quiver(args), Quack(args)]
    cases = []
    for c in args.fetch:
        name, rows, sql = c.split(":", 2)
        cases.append((name, int(rows), sql))
    result = {"versions": {"duckdb": duckdb.__version__, "pyarrow": pyarrow.__version__,
                           "adbc_driver_flightsql": adbc_driver_flightsql.__version__,
                           "python": sys.version.split()[0]}}
    result["fetch"] = run_fetches(clients, cases, args.reps, args.warmup)
    keys = [(i * 7919) % args.point_rows for i in range(args.points)]
    result["point"] = run_points(clients, args.point_sql, keys, args.reps, min(args.warmup * 20, len(keys)))
    for c in clients:
        c.close()
    result["insert"] = run_inserts(args, ["quiver", "quack"], args.insert_clients, args.reps)
    json.dump(result, sys.stdout)
    print()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--db", required=True)
    s.add_argument("--token", required=True)
    s.add_argument("--setup", action="append", default=[])
    for name in ("run", "insert-worker"):
        r = sub.add_parser(name)
        r.add_argument("--quiver", required=True)
        r.add_argument("--user", required=True)
        r.add_argument("--password", required=True)
        r.add_argument("--quack", required=True)
        r.add_argument("--token", required=True)
    r = sub.choices["run"]
    r.add_argument("--reps", type=int, default=3)
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--fetch", action="append", default=[], help="NAME:ROWS:SQL")
    r.add_argument("--point-sql", required=True)
    r.add_argument("--point-rows", type=int, required=True)
    r.add_argument("--points", type=int, default=1000)
    r.add_argument("--insert-sql", required=True)
    r.add_argument("--insert-window", type=float, default=10)
    r.add_argument("--insert-clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    w = sub.choices["insert-worker"]
    w.add_argument("--target", choices=["quiver", "quack"], required=True)
    w.add_argument("--window", type=float, required=True)
    w.add_argument("--sql", required=True)
    w.add_argument("--first-id", type=int, required=True)
    args = p.parse_args()
    {"serve": serve, "run": run, "insert-worker": insert_worker}[args.cmd](args)


if __name__ == "__main__":
    main()
