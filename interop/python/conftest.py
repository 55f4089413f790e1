"""Fixtures for quiver's Python interop suite.

interop/run.sh starts the server and passes it here through the environment:
QUIVER_FLIGHT and QUIVER_MYSQL (HOST:PORT), QUIVER_USER, QUIVER_PASSWORD, and
QUIVER_TLS_FLIGHT with QUIVER_TLS_CA for a second, TLS-only server.
"""

import os
import uuid

import adbc_driver_flightsql.dbapi as flight_sql
import pymysql
import pytest

import typed


def _env(name):
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(
            f"{name} is not set: run this suite through `make interop` "
            "(interop/run.sh), which starts quiver and exports it"
        )
    return value


@pytest.fixture(scope="session")
def creds():
    return _env("QUIVER_USER"), _env("QUIVER_PASSWORD")


@pytest.fixture(scope="session")
def flight_addr():
    return _env("QUIVER_FLIGHT")


@pytest.fixture(scope="session")
def flight_uri(flight_addr):
    return f"grpc://{flight_addr}"


@pytest.fixture(scope="session")
def mysql_addr():
    addr = os.environ.get("QUIVER_MYSQL", "")
    if not addr:
        pytest.fail(
            "QUIVER_MYSQL is empty: `quiver serve --mysql 127.0.0.1:0` did not "
            "announce 'quiver: mysql listening on ADDR', so the MySQL-protocol "
            "endpoint is not live in this build"
        )
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def connect_adbc(flight_uri, creds, autocommit=True):
    user, password = creds
    return flight_sql.connect(
        flight_uri,
        db_kwargs={"username": user, "password": password},
        autocommit=autocommit,
    )


@pytest.fixture
def adbc_conn(flight_uri, creds):
    """An ADBC DB-API connection with autocommit on."""
    conn = connect_adbc(flight_uri, creds)
    yield conn
    conn.close()


@pytest.fixture
def connect(flight_uri, creds):
    """Opens more ADBC connections; closes them after the test."""
    conns = []

    def open_conn(autocommit=True):
        c = connect_adbc(flight_uri, creds, autocommit=autocommit)
        conns.append(c)
        return c

    yield open_conn
    for c in conns:
        c.close()


def connect_mysql(mysql_addr, creds, **kwargs):
    host, port = mysql_addr
    user, password = creds
    return pymysql.connect(
        host=host, port=port, user=user, password=password, database="main",
        connect_timeout=10, read_timeout=60, **kwargs,
    )


@pytest.fixture
def mysql_conn(mysql_addr, creds):
    conn = connect_mysql(mysql_addr, creds, autocommit=True)
    yield conn
    conn.close()


@pytest.fixture
def table_name(adbc_conn):
    """A fresh table name, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with adbc_conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {name}")


@pytest.fixture(scope="session")
def typed_table(flight_uri, creds):
    """The table of every common type (typed.py), created once."""
    conn = connect_adbc(flight_uri, creds)
    with conn.cursor() as cur:
        for sql in typed.create_sql():
            cur.execute(sql)
    conn.close()
    return typed.TABLE


@pytest.fixture(scope="session")
def text_forms(flight_uri, creds, typed_table):
    """DuckDB's VARCHAR cast of the typed columns that MySQL sends as text,
    read over Flight: what a MySQL client must receive for them."""
    names = [c.name for c in typed.COLUMNS if c.mysql is typed.TEXT]
    conn = connect_adbc(flight_uri, creds)
    with conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(f'{n}::VARCHAR AS {n}' for n in names)} FROM {typed_table} ORDER BY id")
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    conn.close()
    return rows
