"""Compressed Arrow with stock clients. Results: ADBC asks with a call
header or a session option, or gets the default of a server started with
--compression zstd; pyarrow.flight asks with a call header; each reads
LZ4_FRAME or ZSTD bodies unchanged. Ingest: pyarrow.flight sends a
ZSTD- or LZ4-compressed DoPut of CommandStatementIngest. The server's
/metrics proves the bodies really went compressed."""

import base64
import os
import re
import urllib.request

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pyarrow.flight as flight
import pytest

import typed
from test_flight import _bytes_field, _varint, fetch, flight_sql_command, statement_query

HEADER = "x-quiver-compression"

# Compressible rows, enough for several batches.
ROWS = 300_000
SQL = f"SELECT range AS id, 'row ' || (range % 1000) AS s, (range % 7)::DOUBLE AS d FROM range({ROWS}) ORDER BY id"


def env(name):
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run this suite through `make interop`")
    return value


def result_batches(http_env="QUIVER_HTTP"):
    """quiver_flight_result_batches_total by codec, from a server's /metrics,
    which asks the servers' user to log in."""
    req = urllib.request.Request(f"http://{env(http_env)}/metrics")
    login = base64.b64encode(f"{env('QUIVER_USER')}:{env('QUIVER_PASSWORD')}".encode()).decode()
    req.add_header("Authorization", f"Basic {login}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    return {m[1]: float(m[2]) for m in re.finditer(
        r'^quiver_flight_result_batches_total\{codec="(\w+)"\} (\S+)$', text, re.M)}


class Sent:
    """The result batches a server sent with each codec inside a with block."""

    def __init__(self, http_env="QUIVER_HTTP"):
        self.http_env = http_env

    def __enter__(self):
        self.before = result_batches(self.http_env)
        return self

    def __exit__(self, *exc):
        after = result_batches(self.http_env)
        self.by_codec = {c: after.get(c, 0) - self.before.get(c, 0) for c in ("none", "lz4", "zstd")}
        return False


def expected_rows():
    ids = pa.array(range(ROWS), pa.int64())
    return ids, [f"row {i % 1000}" for i in range(0, ROWS, 997)]


def check_rows(table):
    ids, sample = expected_rows()
    assert table.num_rows == ROWS
    assert table.column("id").combine_chunks().equals(ids)
    assert table.column("s").to_pylist()[::997] == sample
    assert pa.compute.sum(table.column("d")).as_py() == sum(i % 7 for i in range(ROWS))


def connect_with(flight_uri, creds, **extra):
    user, password = creds
    return flight_sql.connect(flight_uri, db_kwargs={"username": user, "password": password, **extra}, autocommit=True)


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_adbc_call_header(flight_uri, creds, typed_table, codec):
    conn = connect_with(flight_uri, creds, **{f"adbc.flight.sql.rpc.call_header.{HEADER}": codec})
    try:
        with Sent() as sent, conn.cursor() as cur:
            cur.execute(SQL)
            check_rows(cur.fetch_arrow_table())
        assert sent.by_codec[codec] >= 2, sent.by_codec
        assert sent.by_codec["none"] == 0, sent.by_codec
        # Every type, in a batch too small to shrink much: whatever the
        # server sends compressed or raw must read back the same.
        with conn.cursor() as cur:
            cur.execute(typed.select_sql())
            table = cur.fetch_arrow_table()
        for col in typed.COLUMNS:
            assert table.column(col.name).to_pylist() == list(col.py), col.name
    finally:
        conn.close()


def test_adbc_session_option(flight_uri, creds):
    # A Flight session lives in a cookie, which ADBC keeps only with its
    # cookie middleware on.
    conn = connect_with(flight_uri, creds, **{"adbc.flight.sql.rpc.with_cookie_middleware": "true"})
    try:
        conn.adbc_connection.set_options(**{"adbc.flight.sql.session.option.compression": "zstd"})
        with Sent() as sent, conn.cursor() as cur:
            cur.execute(SQL)
            check_rows(cur.fetch_arrow_table())
        assert sent.by_codec["zstd"] >= 2, sent.by_codec
        assert sent.by_codec["none"] == 0, sent.by_codec

        # Erasing it goes back to the server default, none.
        conn.adbc_connection.set_options(**{"adbc.flight.sql.session.optionerase.compression": ""})
        with Sent() as sent, conn.cursor() as cur:
            cur.execute(SQL)
            check_rows(cur.fetch_arrow_table())
        assert sent.by_codec["zstd"] == 0 and sent.by_codec["none"] >= 2, sent.by_codec
    finally:
        conn.close()


def test_adbc_asking_nothing_gets_none(adbc_conn):
    with Sent() as sent, adbc_conn.cursor() as cur:
        cur.execute(SQL)
        check_rows(cur.fetch_arrow_table())
    assert sent.by_codec["none"] >= 2 and sent.by_codec["lz4"] == 0 and sent.by_codec["zstd"] == 0, sent.by_codec


def test_adbc_asking_nothing_gets_the_server_default(creds):
    # This server runs with --compression zstd.
    conn = connect_with(f"grpc://{env('QUIVER_ZSTD_FLIGHT')}", creds)
    try:
        with Sent("QUIVER_ZSTD_HTTP") as sent, conn.cursor() as cur:
            cur.execute(SQL)
            check_rows(cur.fetch_arrow_table())
        assert sent.by_codec["zstd"] >= 2 and sent.by_codec["none"] == 0, sent.by_codec

        # A header still overrides the server default.
        conn.adbc_connection.set_options(**{f"adbc.flight.sql.rpc.call_header.{HEADER}": "none"})
        with Sent("QUIVER_ZSTD_HTTP") as sent, conn.cursor() as cur:
            cur.execute(SQL)
            check_rows(cur.fetch_arrow_table())
        assert sent.by_codec["none"] >= 2 and sent.by_codec["zstd"] == 0, sent.by_codec
    finally:
        conn.close()


def test_adbc_unknown_codec_is_a_clear_error(flight_uri, creds):
    conn = connect_with(flight_uri, creds, **{f"adbc.flight.sql.rpc.call_header.{HEADER}": "gzip"})
    try:
        with conn.cursor() as cur, pytest.raises(Exception, match='unknown compression "gzip"'):
            cur.execute("SELECT 1")
            cur.fetchall()
    finally:
        conn.close()


def test_adbc_bad_session_option_is_refused(adbc_conn):
    with pytest.raises(Exception, match="compression"):
        adbc_conn.adbc_connection.set_options(**{"adbc.flight.sql.session.option.compression": "gzip"})


@pytest.fixture
def client(flight_addr):
    c = flight.FlightClient(f"grpc://{flight_addr}")
    yield c
    c.close()


@pytest.fixture
def auth(client, creds):
    return client.authenticate_basic_token(*creds)


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_pyarrow_flight_call_header(client, auth, codec):
    options = flight.FlightCallOptions(headers=[auth, (HEADER.encode(), codec.encode())])
    with Sent() as sent:
        _, table = fetch(client, options, SQL)
    check_rows(table)
    assert sent.by_codec[codec] >= 2 and sent.by_codec["none"] == 0, sent.by_codec


def statement_ingest(table, create=True):
    """CommandStatementIngest: table_definition_options {if_not_exist = 1
    (CREATE) or 0 (FAIL), if_exists = 2 (APPEND)}, table = 2."""
    opts = _varint(1 << 3) + _varint(1 if create else 0) + _varint(2 << 3) + _varint(2)
    return flight_sql_command("CommandStatementIngest", _bytes_field(1, opts) + _bytes_field(2, table.encode()))


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_pyarrow_compressed_do_put_ingest(client, auth, adbc_conn, table_name, codec):
    n = 200_000
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([f"value {i % 500}" for i in range(n)]),
    })
    descriptor = flight.FlightDescriptor.for_command(statement_ingest(table_name))
    options = flight.FlightCallOptions(headers=[auth], write_options=pa.ipc.IpcWriteOptions(compression=codec))
    writer, reader = client.do_put(descriptor, data.schema, options)
    writer.write_table(data, max_chunksize=50_000)
    writer.done_writing()
    result = reader.read()
    writer.close()
    # DoPutUpdateResult { int64 record_count = 1; }
    assert result is not None and result.to_pybytes() == _varint(1 << 3) + _varint(n)
    with adbc_conn.cursor() as cur:
        cur.execute(f"SELECT count(*), sum(id), count(DISTINCT s) FROM {table_name}")
        assert cur.fetchone() == (n, n * (n - 1) // 2, 500)
