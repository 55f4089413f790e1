"""The low-level pyarrow.flight client: Basic auth for a bearer token, then
GetFlightInfo of a hand-built Flight SQL CommandStatementQuery and DoGet of
its ticket."""

import pyarrow as pa
import pyarrow.flight as flight
import pytest

import typed

SQL_TYPE_PREFIX = "type.googleapis.com/arrow.flight.protocol.sql."


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(number, value: bytes):
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def flight_sql_command(message, fields: bytes):
    """google.protobuf.Any{type_url, value} wrapping a Flight SQL command."""
    return _bytes_field(1, (SQL_TYPE_PREFIX + message).encode()) + _bytes_field(2, fields)


def statement_query(sql):
    # CommandStatementQuery { string query = 1; optional bytes transaction_id = 2; }
    return flight_sql_command("CommandStatementQuery", _bytes_field(1, sql.encode()))


@pytest.fixture
def client(flight_addr, creds):
    c = flight.FlightClient(f"grpc://{flight_addr}")
    yield c
    c.close()


@pytest.fixture
def options(client, creds):
    header = client.authenticate_basic_token(*creds)
    assert header[0] == b"authorization"
    assert header[1].startswith(b"Bearer ")
    return flight.FlightCallOptions(headers=[header])


def fetch(client, options, sql):
    info = client.get_flight_info(flight.FlightDescriptor.for_command(statement_query(sql)), options)
    tables = [client.do_get(ep.ticket, options).read_all() for ep in info.endpoints]
    return info, pa.concat_tables(tables)


def test_get_flight_info_and_do_get(client, options, typed_table):
    info, table = fetch(client, options, typed.select_sql())
    assert len(info.endpoints) >= 1
    assert info.schema.names == typed.NAMES
    assert table.schema.equals(info.schema)
    for col in typed.COLUMNS:
        assert table.column(col.name).to_pylist() == list(col.py), col.name


def test_ticket_can_be_fetched_twice(client, options):
    info = client.get_flight_info(flight.FlightDescriptor.for_command(statement_query("SELECT 7 AS x")), options)
    ticket = info.endpoints[0].ticket
    for _ in range(2):
        assert client.do_get(ticket, options).read_all().to_pydict() == {"x": [7]}


def test_large_result_streams(client, options):
    n = 2_000_000
    _, table = fetch(client, options, f"SELECT range AS id, range::DOUBLE AS d FROM range({n})")
    assert table.num_rows == n
    assert pa.compute.sum(table.column("id")).as_py() == n * (n - 1) // 2


def test_ddl_through_get_flight_info_runs_without_do_get(client, options, adbc_conn, table_name):
    client.get_flight_info(
        flight.FlightDescriptor.for_command(statement_query(f"CREATE TABLE {table_name} (x INTEGER)")), options)
    with adbc_conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {table_name}")
        assert cur.fetchone() == (0,)


def test_no_token_no_data(client):
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.get_flight_info(flight.FlightDescriptor.for_command(statement_query("SELECT 1")))


def test_bad_password(client, creds):
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.authenticate_basic_token(creds[0], "not the password")


def test_bad_sql_is_invalid_argument(client, options):
    # pyarrow raises ArrowInvalid for gRPC's INVALID_ARGUMENT.
    with pytest.raises(pa.ArrowInvalid) as info:
        client.get_flight_info(flight.FlightDescriptor.for_command(statement_query("SELEC 1")), options)
    assert "syntax error" in str(info.value)


def test_malformed_command_is_refused(client, options):
    with pytest.raises(pa.ArrowInvalid) as info:  # INVALID_ARGUMENT
        client.get_flight_info(flight.FlightDescriptor.for_command(b"\x0a\x03abc"), options)
    assert "abc" in str(info.value) or "command" in str(info.value).lower()


def test_list_actions(client, options):
    names = {a.type for a in client.list_actions(options)}
    assert {"CreatePreparedStatement", "ClosePreparedStatement"} <= names
