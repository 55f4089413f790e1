"""Seed table 2: pd.read_sql(sql, adbc_conn) against pd.read_sql(sql,
pymysql_conn), both against the same quiver.

`quiver-bench pandas` runs this with .venv's Python after it has started a
server and generated the tables, and turns the JSON it prints into the
report. It can also run by hand against a running server:

    .venv/bin/python interop/python/bench_pandas.py --flight 127.0.0.1:31337 \\
        --mysql 127.0.0.1:9030 --case id:1000000:"SELECT id FROM num LIMIT 1000000"

Each case is timed as the seed did: the whole pd.read_sql call (fetch and
DataFrame conversion), on an open connection. A contender whose frame
would not fit in the machine's available memory is not run; the output
says what it would need. The two contenders alternate
(a warm-up of each, then ADBC, PyMySQL, ADBC, PyMySQL, …), and every run's
seconds are reported; the caller takes the medians.
"""

import argparse
import gc
import json
import sys
import time
import warnings
from importlib import metadata

import adbc_driver_flightsql.dbapi as flight_sql
import pandas as pd
import pyarrow as pa
import pymysql


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flight", required=True, help="HOST:PORT of quiver's Flight SQL port")
    p.add_argument("--mysql", required=True, help="HOST:PORT of quiver's MySQL port")
    p.add_argument("--user", default="", help="user (empty: a server without authentication)")
    p.add_argument("--password", default="")
    p.add_argument("--case", action="append", default=[], metavar="NAME:ROWS:SQL",
                   help="a workload to time; repeat for more")
    p.add_argument("--reps", type=int, default=5, help="alternated runs per contender")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs of each contender first")
    args = p.parse_args(argv)
    if not args.case:
        p.error("give at least one --case NAME:ROWS:SQL")
    cases = []
    for c in args.case:
        name, rows, sql = c.split(":", 2)
        cases.append({"workload": name, "rows": int(rows), "sql": sql})
    args.cases = cases
    return args


def connect_adbc(args):
    db_kwargs = {}
    if args.user:
        db_kwargs = {"username": args.user, "password": args.password}
    return flight_sql.connect(f"grpc://{args.flight}", db_kwargs=db_kwargs, autocommit=True)


def connect_mysql(args):
    host, port = args.mysql.rsplit(":", 1)
    return pymysql.connect(host=host, port=int(port), user=args.user or "bench", password=args.password,
                           database="main", autocommit=True)


def timed(conn, sql):
    """Seconds for one pd.read_sql, and the frame's shape."""
    gc.collect()
    start = time.perf_counter()
    df = pd.read_sql(sql, conn)
    secs = time.perf_counter() - start
    shape = df.shape
    del df
    return secs, shape


def mem_available():
    """MemAvailable in bytes, from /proc/meminfo (0 when unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def estimate_bytes(adbc_conn, sql, rows):
    """About the peak memory each contender's pd.read_sql needs for rows
    rows of sql, from a 1,000-row sample of the result fetched over ADBC.

    ADBC holds the Arrow table and the DataFrame made from it. PyMySQL
    holds a list of row tuples of Python objects and the DataFrame built
    from them. A string cell becomes a Python str (49 bytes and its
    characters) behind an 8-byte pointer in the frame; an integer is 8
    bytes in a frame and a 32-byte int object in a tuple.
    """
    with adbc_conn.cursor() as cur:
        cur.execute(f"SELECT * FROM ({sql}) AS sample LIMIT 1000")
        sample = cur.fetch_arrow_table()
    n = max(sample.num_rows, 1)
    arrow_row = sample.nbytes / n
    frame_row = tuple_row = 0.0
    for col in sample.columns:
        if col.type in (pa.string(), pa.large_string(), pa.binary()):
            chars = sum(len(v) for v in col.to_pylist() if v is not None) / n
            frame_row += 8 + 49 + chars
            tuple_row += 8 + 49 + chars
        else:
            frame_row += 8
            tuple_row += 8 + 32
    tuple_row += 48  # the tuple and its slot in the list
    return {"adbc": int(rows * (arrow_row + frame_row)), "pymysql": int(rows * (tuple_row + frame_row))}


def run_case(case, contenders, reps, warmup, adbc_conn):
    out = {"workload": case["workload"], "rows": case["rows"], "seconds": {}, "shape": {}, "skipped": {}}
    # A result the client cannot hold is reported, not run into the OOM
    # killer: the seed's pandas on 100M num20 ran out of memory.
    need = estimate_bytes(adbc_conn, case["sql"], case["rows"])
    avail = mem_available()
    runnable = []
    for name, conn in contenders:
        out["seconds"][name] = []
        if avail and need[name] > 0.8 * avail:
            out["skipped"][name] = f"needs about {need[name] / 2**30:.0f} GB; {avail / 2**30:.0f} GB available"
        else:
            runnable.append((name, conn))
    contenders = runnable
    for _ in range(warmup):
        for name, conn in contenders:
            timed(conn, case["sql"])
    for _ in range(reps):
        for name, conn in contenders:
            secs, shape = timed(conn, case["sql"])
            out["seconds"][name].append(secs)
            out["shape"][name] = list(shape)
    shapes = {tuple(s) for s in out["shape"].values()}
    if contenders and (len(shapes) != 1 or next(iter(shapes))[0] != case["rows"]):
        raise SystemExit(f"{case['workload']}: frames differ or miss rows: {out['shape']}")
    return out


def main(argv):
    args = parse_args(argv)
    warnings.filterwarnings("ignore", message="pandas only supports SQLAlchemy")
    adbc_conn = connect_adbc(args)
    mysql_conn = connect_mysql(args)
    contenders = [("adbc", adbc_conn), ("pymysql", mysql_conn)]
    results = []
    try:
        for case in args.cases:
            print(f"bench_pandas: {case['workload']} {case['rows']:,} rows", file=sys.stderr, flush=True)
            results.append(run_case(case, contenders, args.reps, args.warmup, adbc_conn))
    finally:
        adbc_conn.close()
        mysql_conn.close()
    versions = {name: metadata.version(dist) for name, dist in [
        ("pandas", "pandas"), ("pyarrow", "pyarrow"),
        ("adbc_driver_flightsql", "adbc-driver-flightsql"), ("pymysql", "PyMySQL")]}
    versions["python"] = sys.version.split()[0]
    json.dump({
        "versions": versions,
        "reps": args.reps,
        "cases": results,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
