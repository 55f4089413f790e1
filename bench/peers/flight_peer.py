"""The C++ Flight peer of `quiver-bench peers`.

DuckDB's own Arrow export (a query's record batch reader) streamed by Arrow
C++ Flight through pyarrow.flight: the stack most DuckDB Flight servers are
built on. The ticket is the SQL text; each DoGet runs it on a cursor of its
own and hands the reader to RecordBatchStream, so the batches go from DuckDB
to gRPC without passing through Python.

    python flight_peer.py --db PATH [--setup SQL]... [--batch-rows N]

It prints "listening on HOST:PORT" once it serves, and stops on SIGTERM.
"""

import argparse
import collections
import threading

import duckdb
import pyarrow.flight as flight


class Peer(flight.FlightServerBase):
    def __init__(self, location, db, batch_rows):
        super().__init__(location)
        self._db = db
        self._batch_rows = batch_rows
        # A reader needs its cursor open until it is drained; the bench
        # fetches one stream at a time, so the last few cursors are kept.
        self._cursors = collections.deque(maxlen=8)
        self._lock = threading.Lock()

    def do_get(self, context, ticket):
        cur = self._db.cursor()
        with self._lock:
            self._cursors.append(cur)
        reader = cur.execute(ticket.ticket.decode()).fetch_record_batch(self._batch_rows)
        return flight.RecordBatchStream(reader)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--setup", action="append", default=[], help="SQL run once before serving")
    p.add_argument("--batch-rows", type=int, default=65536)
    args = p.parse_args()
    db = duckdb.connect(args.db)
    for sql in args.setup:
        db.execute(sql)
    server = Peer("grpc://127.0.0.1:0", db, args.batch_rows)
    print(f"listening on 127.0.0.1:{server.port}", flush=True)
    server.serve()


if __name__ == "__main__":
    main()
