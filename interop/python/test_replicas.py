"""Three replicas of one Iceberg lake, read by clients that fetch a result's
endpoints from the locations the server lists on them.

interop/run.sh starts the replicas (`quiver serve --lake ... --lake-part-mb
0.02 --advertise ADDR --peers OTHER,OTHER --token-key KEY`, one user and
password) over a lake of MESSAGES events whose id is their sequence number
0..MESSAGES-1, and passes them in QUIVER_REPLICAS (their Flight addresses,
comma-separated), QUIVER_REPLICA_PIDS (their process ids, in the same order)
and QUIVER_REPLICA_MESSAGES. A plain scan of lake.quiver.events comes back
as several endpoints, each listing all three replicas, endpoint i first
replica i mod 3.

What the clients do with locations:
- ADBC's Flight SQL driver (Go) fetches each endpoint from its locations in
  order: it opens a client per location (cached on the connection),
  authenticates it like the connection, and on any error of that location
  (no connection, DoGet refused) goes on to the next one; only when every
  location failed does the query fail, with all their errors. So a dead
  replica costs the endpoints it comes first on a refused connection each.
- pyarrow.flight does nothing with locations: a FlightClient talks to the
  one server it was made for, and do_get on it runs the ticket there. An
  application that wants the replicas, or failover, connects to the
  locations itself, as the tests below do.

The last tests kill replica 2 (SIGKILL) and keep it dead; run.sh starts it
again before the Java suite.
"""

import os
import signal
import socket
import time

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from conftest import connect_adbc
from test_flight import statement_query

SCAN = "SELECT * FROM lake.quiver.events"
MIN_ENDPOINTS = 4


def _replica_env(name):
    value = os.environ.get(name, "")
    if not value:
        pytest.skip(
            f"{name} is not set: the replicas run only under `make interop` "
            "(interop/run.sh), and only when the replicas' lake was made"
        )
    return value


@pytest.fixture(scope="module")
def replicas():
    """The replicas' Flight addresses, HOST:PORT, in start order."""
    return _replica_env("QUIVER_REPLICAS").split(",")


@pytest.fixture(scope="module")
def replica_pids(replicas):
    pids = [int(p) for p in _replica_env("QUIVER_REPLICA_PIDS").split(",")]
    assert len(pids) == len(replicas)
    return pids


@pytest.fixture(scope="module")
def messages(replicas):
    return int(_replica_env("QUIVER_REPLICA_MESSAGES"))


@pytest.fixture(scope="module")
def conn0(replicas, creds):
    """An ADBC connection to replica 0, kept for the whole module: it
    caches its clients of the other replicas, also across a kill."""
    conn = connect_adbc(f"grpc://{replicas[0]}", creds)
    yield conn
    conn.close()


def location(addr):
    return f"grpc+tcp://{addr}"


def assert_every_message_once(table, messages):
    """table holds each of the lake's messages exactly once."""
    ids = table.column("id").to_pylist()
    unique = set(ids)
    want = set(range(messages))
    assert not want - unique, f"{len(want - unique)} ids missing, e.g. {sorted(want - unique)[:10]}"
    assert not unique - want, f"unexpected ids, e.g. {sorted(unique - want)[:10]}"
    assert len(ids) == messages, f"{len(ids) - len(unique)} rows duplicated"
    # The Kafka position is a second key, independent of the payload.
    positions = set(zip(table.column("_kafka_partition").to_pylist(), table.column("_offset").to_pylist()))
    assert len(positions) == messages


# --- ADBC -------------------------------------------------------------------


def test_adbc_counts_agree_with_the_lake(conn0, messages):
    with conn0.cursor() as cur:
        # An aggregate is not split: one endpoint, run by replica 0.
        cur.execute("SELECT count(*), count(DISTINCT id), count(DISTINCT (_kafka_partition, _offset)), "
                    "min(id), max(id) FROM lake.quiver.events")
        assert cur.fetchone() == (messages, messages, messages, 0, messages - 1)


def test_adbc_reads_the_split_scan_exactly_once(conn0, messages):
    with conn0.cursor() as cur:
        cur.execute(SCAN)
        assert_every_message_once(cur.fetch_arrow_table(), messages)


def test_adbc_partitions_are_the_endpoints_and_add_up_to_the_table(conn0, replicas, token0, messages):
    with conn0.cursor() as cur:
        partitions, schema = cur.adbc_execute_partitions(SCAN)
        assert len(partitions) >= MIN_ENDPOINTS, f"{len(partitions)} partitions"
        # One partition per endpoint of the FlightInfo.
        assert len(partitions) == len(flight_info(replicas[0], token0).endpoints)
        tables = []
        for p in partitions:
            cur.adbc_read_partition(p)
            tables.append(cur.fetch_arrow_table())
    assert all(t.schema.equals(schema) for t in tables)
    assert_every_message_once(pa.concat_tables(tables), messages)
    # Each partition is a different part of the table, not all of it.
    assert max(t.num_rows for t in tables) < messages


# --- pyarrow.flight ---------------------------------------------------------


@pytest.fixture(scope="module")
def token0(replicas, creds):
    """The authorization header of replica 0's Basic-auth handshake."""
    client = flight.FlightClient(f"grpc://{replicas[0]}")
    try:
        header = client.authenticate_basic_token(*creds)
    finally:
        client.close()
    assert header[0] == b"authorization" and header[1].startswith(b"Bearer ")
    return header


def call(header, timeout=60):
    return flight.FlightCallOptions(headers=[header], timeout=timeout)


def flight_info(addr, header, sql=SCAN):
    client = flight.FlightClient(f"grpc://{addr}")
    try:
        return client.get_flight_info(flight.FlightDescriptor.for_command(statement_query(sql)), call(header))
    finally:
        client.close()


def do_get(uri, ticket, header, timeout=60):
    client = flight.FlightClient(uri)
    try:
        return client.do_get(ticket, call(header, timeout)).read_all()
    finally:
        client.close()


def test_pyarrow_endpoints_list_every_replica_rotated(replicas, token0):
    info = flight_info(replicas[0], token0)
    n = len(replicas)
    assert len(info.endpoints) >= MIN_ENDPOINTS
    for i, ep in enumerate(info.endpoints):
        got = [loc.uri.decode() for loc in ep.locations]
        want = [location(replicas[(i + k) % n]) for k in range(n)]
        assert got == want, f"endpoint {i}"


def test_pyarrow_fetches_each_endpoint_from_its_first_location(replicas, token0, messages):
    """Replica 0's token works at the other replicas (one --token-key), and
    a ticket runs anywhere; the fetches spread over all three."""
    info = flight_info(replicas[0], token0)
    tables, firsts = [], set()
    for ep in info.endpoints:
        first = ep.locations[0].uri.decode()
        firsts.add(first)
        tables.append(do_get(first, ep.ticket, token0))
    assert firsts == {location(a) for a in replicas}
    assert all(t.schema.equals(info.schema) for t in tables)
    assert_every_message_once(pa.concat_tables(tables), messages)


def test_pyarrow_any_replica_runs_any_ticket(replicas, token0):
    info = flight_info(replicas[0], token0)
    ep = info.endpoints[0]
    want = do_get(location(replicas[0]), ep.ticket, token0)
    for addr in replicas[1:]:
        assert do_get(location(addr), ep.ticket, token0).equals(want), addr


def test_a_replica_token_is_good_only_with_the_shared_key(replicas, flight_addr, token0):
    # The plain server of the suite has the same user but its own key.
    with pytest.raises(flight.FlightUnauthenticatedError):
        flight_info(flight_addr, token0, "SELECT 1")


# --- a dead replica ---------------------------------------------------------
# These tests run last: they kill replica 2 and leave it dead.


@pytest.fixture(scope="module")
def dead(replicas, replica_pids):
    """Kills replica 2 with SIGKILL and waits until its port refuses
    connections. Returns its address."""
    addr = replicas[2]
    try:
        os.kill(replica_pids[2], signal.SIGKILL)
    except ProcessLookupError:
        pass  # killed before, in this run
    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except OSError:
            return addr
        if time.monotonic() > deadline:
            pytest.fail(f"replica 2 ({addr}) still accepts connections 10 s after SIGKILL")
        time.sleep(0.05)


def test_pyarrow_does_not_fail_over_by_itself(dead, replicas, token0):
    """do_get at a dead location just fails; the application has to try
    the next one."""
    info = flight_info(replicas[0], token0)
    ep = next(ep for ep in info.endpoints if ep.locations[0].uri.decode() == location(dead))
    with pytest.raises(flight.FlightUnavailableError):
        do_get(location(dead), ep.ticket, token0, timeout=10)


def test_pyarrow_failover_by_hand_reads_exactly_once(dead, replicas, token0, messages):
    info = flight_info(replicas[0], token0)
    tables, failed_over = [], 0
    for ep in info.endpoints:
        errors = []
        for loc in ep.locations:
            try:
                tables.append(do_get(loc.uri.decode(), ep.ticket, token0, timeout=10))
                break
            except flight.FlightUnavailableError as e:
                errors.append(e)
        else:
            pytest.fail(f"every location of an endpoint failed: {errors}")
        failed_over += bool(errors)
    # Replica 2 is first on every third endpoint.
    assert failed_over == len(info.endpoints[2::3])
    assert_every_message_once(pa.concat_tables(tables), messages)


def test_adbc_fails_over_to_the_next_location(dead, conn0, replicas, creds, messages):
    """ADBC's Go driver tries an endpoint's locations in order: the query
    succeeds with replica 2 dead, on the connection that has a client of
    replica 2 cached and on a fresh one."""
    fresh = connect_adbc(f"grpc://{replicas[0]}", creds)
    try:
        for conn in (conn0, fresh):
            with conn.cursor() as cur:
                cur.execute(SCAN)
                assert_every_message_once(cur.fetch_arrow_table(), messages)
                partitions, _ = cur.adbc_execute_partitions(SCAN)
                tables = []
                for p in partitions:
                    cur.adbc_read_partition(p)
                    tables.append(cur.fetch_arrow_table())
                assert_every_message_once(pa.concat_tables(tables), messages)
    finally:
        fresh.close()
