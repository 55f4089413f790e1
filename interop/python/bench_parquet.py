"""Seed 000, aspect 3: a Flight SQL result written to Parquet with ADBC and
PyArrow, batch by batch.

`quiver-bench parquet` runs this with .venv's Python after it has started a
server and generated the tables, and keeps it up between runs so that it
alternates with the other writers on a warm interpreter. Each line on stdin
is one run,

    pyarrow<TAB>CODEC<TAB>PATH<TAB>SQL

with CODEC `uncompressed` or `snappy`; each answer on stdout is one JSON
line, {"seconds": S, "rows": N} or {"error": "..."}. The first line it
prints gives the versions. By hand:

    printf 'pyarrow\\tsnappy\\t/tmp/x.parquet\\tSELECT * FROM num\\n' |
        .venv/bin/python interop/python/bench_parquet.py --flight 127.0.0.1:31337

A run is timed as the seed did: execute, then every batch of the stream
into one pq.ParquetWriter (a row group per batch), until the file is
closed.
"""

import argparse
import gc
import json
import sys
import time
from importlib import metadata

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow.parquet as pq

CODECS = {"uncompressed": "none", "snappy": "snappy"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flight", required=True, help="HOST:PORT of quiver's Flight SQL port")
    p.add_argument("--user", default="", help="user (empty: a server without authentication)")
    p.add_argument("--password", default="")
    return p.parse_args(argv)


def write(conn, codec, path, sql):
    """Writes sql's result to path; returns seconds and rows."""
    gc.collect()
    start = time.perf_counter()
    rows = 0
    with conn.cursor() as cur:
        cur.execute(sql)
        reader = cur.fetch_record_batch()
        with pq.ParquetWriter(path, reader.schema, compression=CODECS[codec]) as w:
            for batch in reader:
                w.write_batch(batch)
                rows += batch.num_rows
    return time.perf_counter() - start, rows


def main(argv):
    args = parse_args(argv)
    db_kwargs = {}
    if args.user:
        db_kwargs = {"username": args.user, "password": args.password}
    conn = flight_sql.connect(f"grpc://{args.flight}", db_kwargs=db_kwargs, autocommit=True)
    versions = {name: metadata.version(dist) for name, dist in [
        ("pyarrow", "pyarrow"), ("adbc_driver_flightsql", "adbc-driver-flightsql")]}
    versions["python"] = sys.version.split()[0]
    print(json.dumps({"versions": versions}), flush=True)
    try:
        for line in sys.stdin:
            parts = line.rstrip("\n").split("\t", 3)
            try:
                if len(parts) != 4:
                    raise ValueError(f"want CONTENDER<TAB>CODEC<TAB>PATH<TAB>SQL, got {line!r}")
                contender, codec, path, sql = parts
                if contender != "pyarrow":
                    raise ValueError(f"unknown contender {contender!r} (have pyarrow)")
                if codec not in CODECS:
                    raise ValueError(f"unknown codec {codec!r} (have {', '.join(CODECS)})")
                secs, rows = write(conn, codec, path, sql)
                answer = {"seconds": secs, "rows": rows}
            except Exception as e:  # the caller reports it and stops
                answer = {"error": f"{type(e).__name__}: {e}"}
            print(json.dumps(answer), flush=True)
    finally:
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1:])
