"""ADBC Flight SQL through its DB-API: statements, parameters, Arrow results,
metadata, bulk ingest in every mode, transactions, errors and TLS."""

import datetime as dt
import os
import time
from decimal import Decimal

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa
import pytest

import typed


def scalar(conn, sql, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone()[0]


def table_exists(conn, name):
    return scalar(conn, "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", (name,)) == 1


# --- statements -------------------------------------------------------------


def test_ddl_runs_at_once_without_a_fetch(adbc_conn, connect, table_name):
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER, name VARCHAR)")
        # No fetch: a second connection must already see the table.
    other = connect()
    assert table_exists(other, table_name)
    with adbc_conn.cursor() as cur:
        cur.execute(f"ALTER TABLE {table_name} ADD COLUMN extra DOUBLE")
    schema = other.adbc_get_table_schema(table_name)
    assert schema.names == ["id", "name", "extra"]
    with adbc_conn.cursor() as cur:
        cur.execute(f"DROP TABLE {table_name}")
    assert not table_exists(other, table_name)


def test_dml_reports_rows_changed(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER, name VARCHAR)")
        cases = [
            (f"INSERT INTO {table_name} VALUES (1, 'a'), (2, 'b'), (3, 'c')", 3),
            (f"UPDATE {table_name} SET name = 'z' WHERE id >= 2", 2),
            (f"DELETE FROM {table_name} WHERE id = 1", 1),
            (f"DELETE FROM {table_name} WHERE id = 99", 0),
        ]
        for sql, want in cases:
            cur.execute(sql)
            assert cur.rowcount == want, sql
        cur.execute(f"SELECT id, name FROM {table_name} ORDER BY id")
        assert cur.fetchall() == [(2, "z"), (3, "z")]


def test_multi_statement_script_returns_the_last_result(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE {table_name} (x INTEGER); "
            f"INSERT INTO {table_name} VALUES (1), (2); "
            f"SELECT sum(x) AS s FROM {table_name}"
        )
        assert cur.fetchall() == [(3,)]


def test_executescript(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.executescript(
            f"CREATE TABLE {table_name} (x INTEGER); INSERT INTO {table_name} VALUES (1), (2), (3);"
            f"UPDATE {table_name} SET x = x * 10"
        )
        cur.execute(f"SELECT sum(x) FROM {table_name}")
        assert cur.fetchone() == (60,)


@pytest.mark.parametrize(
    "sql, params, want",
    [
        ("SELECT ? + 1", (41,), 42),
        ("SELECT ?::VARCHAR || '!'", ("it's",), "it's!"),
        ("SELECT ? AS v", (None,), None),
        ("SELECT ?::DOUBLE * 2", (1.25,), 2.5),
        ("SELECT ?::DECIMAL(10,3)", (Decimal("-12.345"),), Decimal("-12.345")),
        ("SELECT ?::BLOB", (b"\x00\x01\xff",), b"\x00\x01\xff"),
        ("SELECT ?::DATE + 1", (dt.date(2024, 2, 28),), dt.date(2024, 2, 29)),
        ("SELECT ?::BOOLEAN", (True,), True),
        ("SELECT ?::TIMESTAMP", (dt.datetime(2024, 1, 2, 3, 4, 5, 6),), dt.datetime(2024, 1, 2, 3, 4, 5, 6)),
        ("SELECT ? AS untyped", ("no cast",), "no cast"),
    ],
)
def test_query_parameters(adbc_conn, sql, params, want):
    assert scalar(adbc_conn, sql, params) == want


def test_query_with_several_parameters_and_names(adbc_conn, typed_table):
    with adbc_conn.cursor() as cur:
        cur.execute(
            f"SELECT id, c_varchar FROM {typed_table} WHERE id BETWEEN ? AND ? AND c_int > ? ORDER BY id",
            (1, 3, -3_000_000_000),
        )
        assert [d[0] for d in cur.description] == ["id", "c_varchar"]
        assert cur.fetchall() == [(1, typed.BY_NAME["c_varchar"].py[0]), (2, "")]


def test_insert_parameters_one_row_and_many(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER, name VARCHAR, ts TIMESTAMP, amount DECIMAL(9,2))")
        cur.execute(
            f"INSERT INTO {table_name} VALUES (?, ?, ?, ?)",
            (1, "one", dt.datetime(2024, 5, 6, 7, 8, 9), Decimal("10.50")),
        )
        assert cur.rowcount == 1
        rows = [(i, f"n{i}", None, Decimal(i) / 4) for i in range(2, 202)]
        cur.executemany(f"INSERT INTO {table_name} VALUES (?, ?, ?, ?)", rows)
        assert cur.rowcount == 200
        cur.execute(f"SELECT count(*), sum(amount), max(name) FROM {table_name}")
        assert cur.fetchone() == (201, Decimal("10.50") + sum(Decimal(i) / 4 for i in range(2, 202)), "one")
        cur.execute(f"SELECT id, name, ts, amount FROM {table_name} WHERE id IN (?, ?) ORDER BY id", (1, 7))
        assert cur.fetchall() == [
            (1, "one", dt.datetime(2024, 5, 6, 7, 8, 9), Decimal("10.50")),
            (7, "n7", None, Decimal("1.75")),
        ]


def test_prepared_statement_reused(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} AS SELECT range AS id FROM range(10)")
        sql = f"SELECT count(*) FROM {table_name} WHERE id < ?"
        for bound, want in [(3, 3), (7, 7), (0, 0)]:
            cur.execute(sql, (bound,))  # same SQL: ADBC keeps the prepared statement
            assert cur.fetchone() == (want,)


# --- Arrow results ----------------------------------------------------------


def test_fetch_arrow_table_types_and_values(adbc_conn, typed_table):
    with adbc_conn.cursor() as cur:
        cur.execute(typed.select_sql())
        table = cur.fetch_arrow_table()
    assert table.num_rows == typed.NROWS
    for col in typed.COLUMNS:
        field = table.schema.field(col.name)
        assert typed.type_matches(field.type, col.arrow), f"{col.name}: got {field.type}, want {col.arrow}"
        assert table.column(col.name).to_pylist() == list(col.py), col.name


def test_fetch_arrow_large_result_in_batches(adbc_conn):
    n = 1_000_000
    with adbc_conn.cursor() as cur:
        cur.execute(f"SELECT range AS id, 'v' || (range % 7) AS s FROM range({n})")
        reader = cur.fetch_record_batch()
        rows, total, batches = 0, 0, 0
        for batch in reader:
            batches += 1
            rows += batch.num_rows
            total += pa.compute.sum(batch.column(0)).as_py()
    assert rows == n
    assert total == n * (n - 1) // 2
    assert batches > 1


@pytest.mark.parametrize(
    "columns, rows",
    [
        # 20 short strings (the str20 workload) and 40 BIGINTs: 64K-row
        # batches of either pass 16 MiB, ADBC's default message limit.
        (", ".join(f"'val_' || (range * {k} % 100000) AS s{k}" for k in range(1, 21)), 300_000),
        (", ".join(f"range * {k} AS c{k}" for k in range(1, 41)), 300_000),
        # Rows of 3,000 bytes: one DuckDB chunk of them is 6 MB, so a batch
        # cut only between chunks reached 18.5 MB. Rows of 6 MB: a chunk
        # of five made one 30 MB message.
        ("rpad(range::VARCHAR, 3000, 'x') AS s", 40_000),
        ("repeat('x', 6000000) || range AS s", 5),
    ],
    ids=["str20", "bigint40", "3000-byte rows", "6 MB rows"],
)
def test_wide_results_fit_adbc_message_limit(adbc_conn, columns, rows):
    with adbc_conn.cursor() as cur:
        cur.execute(f"SELECT range AS id, {columns} FROM range({rows})")
        table = cur.fetch_arrow_table()
    assert table.column("id").to_pylist() == list(range(rows))


def test_result_schema_without_running(adbc_conn, typed_table):
    with adbc_conn.cursor() as cur:
        schema = cur.adbc_execute_schema(typed.select_sql())
    assert schema.names == typed.NAMES
    for col in typed.COLUMNS:
        assert typed.type_matches(schema.field(col.name).type, col.arrow), col.name


# --- metadata ---------------------------------------------------------------


def test_get_info(adbc_conn):
    info = adbc_conn.adbc_get_info()
    assert info["vendor_name"]
    assert info["driver_name"] == "ADBC Flight SQL Driver - Go"


def test_get_objects_catalogs_schemas_tables_columns(adbc_conn, typed_table):
    catalogs = adbc_conn.adbc_get_objects(depth="catalogs").read_all().to_pylist()
    assert "memory" in [c["catalog_name"] for c in catalogs] or len(catalogs) >= 1

    objs = adbc_conn.adbc_get_objects(depth="all", table_name_filter=typed_table).read_all().to_pylist()
    found = [
        (cat["catalog_name"], sch["db_schema_name"], tbl)
        for cat in objs
        for sch in cat["catalog_db_schemas"] or []
        for tbl in sch["db_schema_tables"] or []
        if tbl["table_name"] == typed_table
    ]
    assert len(found) == 1, found
    _, schema_name, tbl = found[0]
    assert schema_name == "main"
    assert tbl["table_type"] in ("BASE TABLE", "TABLE")
    cols = sorted(tbl["table_columns"], key=lambda c: c["ordinal_position"])
    assert [c["column_name"] for c in cols] == ["id"] + typed.NAMES
    assert [c["ordinal_position"] for c in cols] == list(range(1, len(cols) + 1))

    # Filters narrow: a table pattern, a schema that does not exist.
    pattern = typed_table[:-2] + "%"
    objs = adbc_conn.adbc_get_objects(depth="tables", table_name_filter=pattern).read_all().to_pylist()
    names = [t["table_name"] for c in objs for s in c["catalog_db_schemas"] or [] for t in s["db_schema_tables"] or []]
    assert typed_table in names
    objs = adbc_conn.adbc_get_objects(depth="tables", db_schema_filter="no_such_schema").read_all().to_pylist()
    assert all(not c["catalog_db_schemas"] for c in objs)


def test_get_table_types(adbc_conn):
    types = adbc_conn.adbc_get_table_types()
    assert "BASE TABLE" in types or "TABLE" in types
    assert "VIEW" in types


def test_get_table_schema(adbc_conn, typed_table):
    schema = adbc_conn.adbc_get_table_schema(typed_table)
    assert schema.names == ["id"] + typed.NAMES
    for col in typed.COLUMNS:
        assert typed.type_matches(schema.field(col.name).type, col.arrow), col.name
    schema = adbc_conn.adbc_get_table_schema(typed_table, db_schema_filter="main")
    assert schema.names[0] == "id"
    with pytest.raises(flight_sql.Error):
        adbc_conn.adbc_get_table_schema("no_such_table_here")


# --- bulk ingest ------------------------------------------------------------

INGEST_SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("name", pa.string()),
    ("price", pa.decimal128(10, 2)),
    ("at", pa.timestamp("us", tz="UTC")),
    ("day", pa.date32()),
    ("ok", pa.bool_()),
    ("tags", pa.list_(pa.string())),
])


def ingest_batch(start, n):
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"item {i}" if i % 5 else None for i in ids], pa.string()),
        "price": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
        "at": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 365) for i in ids], pa.date32()),
        "ok": pa.array([i % 2 == 0 for i in ids], pa.bool_()),
        "tags": pa.array([[f"t{i % 3}", "x"] if i % 4 else [] for i in ids], pa.list_(pa.string())),
    }, schema=INGEST_SCHEMA)


def read_back(conn, name):
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {name} ORDER BY id")
        return cur.fetch_arrow_table()


def test_ingest_create_then_read_back_equal(adbc_conn, table_name):
    data = ingest_batch(0, 5000)
    with adbc_conn.cursor() as cur:
        assert cur.adbc_ingest(table_name, data, mode="create") == 5000
    got = read_back(adbc_conn, table_name)
    assert got.schema.names == INGEST_SCHEMA.names
    for name in INGEST_SCHEMA.names:
        assert typed.type_matches(got.schema.field(name).type, INGEST_SCHEMA.field(name).type), name
        assert got.column(name).to_pylist() == data.column(name).to_pylist(), name


def test_ingest_create_refuses_an_existing_table(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.adbc_ingest(table_name, ingest_batch(0, 10), mode="create")
        with pytest.raises(flight_sql.Error):
            cur.adbc_ingest(table_name, ingest_batch(10, 10), mode="create")
    assert scalar(adbc_conn, f"SELECT count(*) FROM {table_name}") == 10


def test_ingest_append(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        with pytest.raises(flight_sql.Error):
            cur.adbc_ingest(table_name, ingest_batch(0, 10), mode="append")  # no table yet
        cur.adbc_ingest(table_name, ingest_batch(0, 10), mode="create")
        assert cur.adbc_ingest(table_name, ingest_batch(10, 15), mode="append") == 15
    assert read_back(adbc_conn, table_name).column("id").to_pylist() == list(range(25))


def test_ingest_append_follows_the_target_schema(adbc_conn, table_name):
    """Appending int32 data to a BIGINT/DOUBLE table converts it to the
    table's types instead of failing or changing the table."""
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id BIGINT, v DOUBLE, note VARCHAR)")
        data = pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([1, 2], pa.int32()),
                         "note": pa.array(["a", None])})
        assert cur.adbc_ingest(table_name, data, mode="append") == 2
    schema = adbc_conn.adbc_get_table_schema(table_name)
    assert [schema.field(n).type for n in schema.names] == [pa.int64(), pa.float64(), pa.string()]
    assert read_back(adbc_conn, table_name).to_pylist() == [
        {"id": 1, "v": 1.0, "note": "a"}, {"id": 2, "v": 2.0, "note": None}]


def test_ingest_replace(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER, other VARCHAR)")
        cur.execute(f"INSERT INTO {table_name} VALUES (1, 'old')")
        assert cur.adbc_ingest(table_name, ingest_batch(100, 20), mode="replace") == 20
    got = read_back(adbc_conn, table_name)
    assert got.schema.names == INGEST_SCHEMA.names
    assert got.column("id").to_pylist() == list(range(100, 120))


def test_ingest_create_append(adbc_conn, table_name):
    with adbc_conn.cursor() as cur:
        assert cur.adbc_ingest(table_name, ingest_batch(0, 7), mode="create_append") == 7
        assert cur.adbc_ingest(table_name, ingest_batch(7, 3), mode="create_append") == 3
    assert read_back(adbc_conn, table_name).column("id").to_pylist() == list(range(10))


def test_ingest_many_batches_from_a_reader(adbc_conn, table_name):
    batches = [b for i in range(20) for b in ingest_batch(i * 10_000, 10_000).to_batches()]
    reader = pa.RecordBatchReader.from_batches(INGEST_SCHEMA, batches)
    with adbc_conn.cursor() as cur:
        assert cur.adbc_ingest(table_name, reader, mode="create") == 200_000
    assert scalar(adbc_conn, f"SELECT count(DISTINCT id) FROM {table_name}") == 200_000


def test_ingest_with_autocommit_off(connect, table_name):
    """Ingest works on a connection in a transaction (a reported pain point
    of other servers). ADBC's Flight SQL driver (1.13) sends no transaction
    id with CommandStatementIngest, so the rows commit on their own; the
    server joins the transaction when a client names it (flightsql tests)."""
    conn = connect(autocommit=False)
    with conn.cursor() as cur:
        assert cur.adbc_ingest(table_name, ingest_batch(0, 10), mode="create") == 10
        cur.execute(f"SELECT count(*) FROM {table_name}")
        assert cur.fetchone() == (10,)
    conn.commit()
    assert scalar(connect(), f"SELECT count(*) FROM {table_name}") == 10


# --- transactions -----------------------------------------------------------


def test_transactions_commit_and_rollback(connect, table_name):
    setup = connect()
    with setup.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER)")
    txn = connect(autocommit=False)
    other = connect()

    with txn.cursor() as cur:
        cur.execute(f"INSERT INTO {table_name} VALUES (1), (2)")
        cur.execute(f"SELECT count(*) FROM {table_name}")
        assert cur.fetchone() == (2,)  # visible inside
    assert scalar(other, f"SELECT count(*) FROM {table_name}") == 0  # not outside
    txn.rollback()
    assert scalar(txn, f"SELECT count(*) FROM {table_name}") == 0
    txn.rollback()

    with txn.cursor() as cur:
        cur.execute(f"INSERT INTO {table_name} VALUES (?)", (3,))
        cur.executemany(f"INSERT INTO {table_name} VALUES (?)", [(4,), (5,)])
    txn.commit()
    assert scalar(other, f"SELECT list(id ORDER BY id) FROM {table_name}") == [3, 4, 5]


def test_toggle_autocommit(connect, table_name):
    conn = connect()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER)")
    conn.adbc_connection.set_autocommit(False)
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {table_name} VALUES (1)")
    conn.adbc_connection.rollback()
    conn.adbc_connection.set_autocommit(True)
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {table_name} VALUES (2)")
    assert scalar(connect(), f"SELECT list(id) FROM {table_name}") == [2]


def test_closing_a_connection_rolls_its_transaction_back_at_once(connect, table_name):
    """ADBC's DB-API begins a transaction when autocommit is off, its
    default, and its close() sends nothing to end it: the server rolls it
    back as the connection goes. Before, the transaction stayed open for the
    server's idle timeout (30 minutes), its writes holding back every other
    writer of the same rows and every force checkpoint, behind which all
    other clients' statements queued."""
    other = connect()
    with other.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER, v INTEGER)")
        cur.execute(f"INSERT INTO {table_name} VALUES (1, 0)")
        cur.execute(f"CREATE SEQUENCE {table_name}_seq")
    conn = connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute(f"SELECT nextval('{table_name}_seq')")
        assert cur.fetchone() == (1,)
        cur.execute(f"UPDATE {table_name} SET v = 1 WHERE id = 1")
        cur.execute(f"INSERT INTO {table_name} VALUES (2, 0)")
    conn.close()

    # While the transaction is open, an update of its row conflicts; the
    # rollback follows the close within milliseconds, so ten seconds of
    # tries is a generous bound.
    deadline = time.monotonic() + 10
    while True:
        try:
            with other.cursor() as cur:
                cur.execute(f"UPDATE {table_name} SET v = 2 WHERE id = 1")
            break
        except adbc_driver_manager.Error as e:
            assert "Conflict" in str(e), e
            assert time.monotonic() < deadline, f"the closed connection's transaction still holds its row: {e}"
            time.sleep(0.05)
    # The row it inserted is gone with it.
    assert scalar(other, f"SELECT list(id ORDER BY id) FROM {table_name}") == [1]
    assert scalar(other, f"SELECT v FROM {table_name} WHERE id = 1") == 2
    with other.cursor() as cur:
        cur.execute(f"DROP SEQUENCE {table_name}_seq")


def test_ddl_inside_a_transaction_rolls_back(connect, table_name):
    conn = connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER)")
    conn.rollback()
    assert not table_exists(connect(), table_name)


# --- errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, error, text",
    [
        ("SELEC 1", flight_sql.ProgrammingError, "syntax error"),
        ("SELECT * FROM no_such_table_xyz", flight_sql.Error, "no_such_table_xyz"),
        ("SELECT no_such_column FROM range(1)", flight_sql.Error, "no_such_column"),
        ("SELECT 1 / 0::INTEGER + 'a'::INTEGER", flight_sql.Error, "a"),
    ],
)
def test_errors_are_clear_and_the_connection_survives(adbc_conn, sql, error, text):
    with adbc_conn.cursor() as cur:
        with pytest.raises(error) as info:
            cur.execute(sql)
            cur.fetchall()
        assert text in str(info.value)
    assert scalar(adbc_conn, "SELECT 42") == 42


def test_wrong_password_is_refused(flight_uri, creds):
    user, _ = creds
    with pytest.raises(flight_sql.Error) as info:
        conn = flight_sql.connect(flight_uri, db_kwargs={"username": user, "password": "wrong"})
        try:
            scalar(conn, "SELECT 1")
        finally:
            conn.close()
    assert "UNAUTHENTICATED" in str(info.value).upper()


# --- TLS --------------------------------------------------------------------


def test_tls_with_the_server_certificate(creds):
    addr = os.environ.get("QUIVER_TLS_FLIGHT")
    ca = os.environ.get("QUIVER_TLS_CA")
    if not addr or not ca:
        pytest.fail("QUIVER_TLS_FLIGHT and QUIVER_TLS_CA are not set: run through `make interop`")
    user, password = creds
    with open(ca) as f:
        pem = f.read()
    conn = flight_sql.connect(
        f"grpc+tls://{addr}",
        db_kwargs={
            "username": user,
            "password": password,
            adbc_driver_flightsql.DatabaseOptions.TLS_ROOT_CERTS.value: pem,
        },
        autocommit=True,
    )
    try:
        assert scalar(conn, "SELECT 'over tls'") == "over tls"
    finally:
        conn.close()
    # Plain gRPC against the TLS port fails.
    with pytest.raises(adbc_driver_manager.Error):
        plain = flight_sql.connect(f"grpc://{addr}", db_kwargs={"username": user, "password": password})
        try:
            scalar(plain, "SELECT 1")
        finally:
            plain.close()
