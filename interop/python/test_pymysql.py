"""PyMySQL and the mysql CLI against quiver's MySQL-protocol port: login,
queries on every common type, %s parameters, DML, errors."""

import datetime as dt
import os
import shutil
import subprocess
from decimal import Decimal

import pymysql
import pytest

import typed
from conftest import connect_mysql


def test_connect_ping_and_server_info(mysql_conn):
    mysql_conn.ping(reconnect=False)
    assert mysql_conn.get_server_info()  # e.g. "8.0.33-quiver"
    with mysql_conn.cursor() as cur:
        cur.execute("SELECT 1 + 1 AS two, 'x' AS s")
        assert cur.fetchall() == ((2, "x"),)
        assert [d[0] for d in cur.description] == ["two", "s"]


def test_every_type(mysql_conn, typed_table, text_forms):
    with mysql_conn.cursor() as cur:
        cur.execute(typed.select_sql())
        rows = cur.fetchall()
        names = [d[0] for d in cur.description]
    assert names == typed.NAMES
    want = typed.expected("mysql", text_forms)
    assert len(rows) == len(want)
    for r, (got, exp) in enumerate(zip(rows, want)):
        for name, value in zip(names, got):
            assert value == exp[name], f"row {r + 1}, {name}: got {value!r}, want {exp[name]!r}"
            if exp[name] is not None:
                assert type(value) is type(exp[name]), f"row {r + 1}, {name}: got {type(value)}"


def test_dict_cursor_and_streaming_cursor(mysql_addr, creds):
    conn = connect_mysql(mysql_addr, creds, cursorclass=pymysql.cursors.SSDictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT range AS id, 'v' || range AS s FROM range(200000)")
            n = 0
            for row in cur:
                assert row["s"] == f"v{row['id']}"
                n += 1
        assert n == 200_000
    finally:
        conn.close()


@pytest.mark.parametrize(
    "sql, params, want",
    [
        ("SELECT %s + 1", (41,), 42),
        ("SELECT %s", ("it's a \"quote\" and a \\ backslash",), "it's a \"quote\" and a \\ backslash"),
        ("SELECT %s IS NULL", (None,), True),
        ("SELECT CAST(%s AS DECIMAL(10,3))", (Decimal("-12.345"),), Decimal("-12.345")),
        ("SELECT CAST(%s AS DATE)", (dt.date(2024, 2, 29),), dt.date(2024, 2, 29)),
        ("SELECT CAST(%s AS TIMESTAMP)", (dt.datetime(2024, 1, 2, 3, 4, 5, 6),), dt.datetime(2024, 1, 2, 3, 4, 5, 6)),
        ("SELECT %s * 2", (1.25,), 2.5),
        ("SELECT %(a)s || %(b)s", {"a": "x", "b": "y"}, "xy"),
    ],
)
def test_parameters(mysql_conn, sql, params, want):
    with mysql_conn.cursor() as cur:
        cur.execute(sql, params)
        got = cur.fetchone()[0]
    if isinstance(want, bool):
        got = bool(got)
    assert got == want


def test_dml_and_executemany(mysql_conn, table_name):
    with mysql_conn.cursor() as cur:
        assert cur.execute(f"CREATE TABLE {table_name} (id INTEGER, name VARCHAR, amount DECIMAL(9,2))") == 0
        assert cur.execute(f"INSERT INTO {table_name} VALUES (%s, %s, %s)", (1, "one", Decimal("1.50"))) == 1
        rows = [(i, f"n'{i}", Decimal(i) / 2) for i in range(2, 52)]
        assert cur.executemany(f"INSERT INTO {table_name} VALUES (%s, %s, %s)", rows) == 50
        assert cur.execute(f"UPDATE {table_name} SET name = %s WHERE id > %s", ("big", 40)) == 11
        assert cur.execute(f"DELETE FROM {table_name} WHERE id = %s", (2,)) == 1
        cur.execute(f"SELECT id, name, amount FROM {table_name} WHERE id IN (1, 3, 51) ORDER BY id")
        assert cur.fetchall() == ((1, "one", Decimal("1.50")), (3, "n'3", Decimal("1.50")), (51, "big", Decimal("25.50")))


def test_transactions(mysql_addr, creds, table_name, adbc_conn):
    with adbc_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (id INTEGER)")
    conn = connect_mysql(mysql_addr, creds, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {table_name} VALUES (1)")
        conn.rollback()
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {table_name} VALUES (2)")
        conn.commit()
    finally:
        conn.close()
    with adbc_conn.cursor() as cur:
        cur.execute(f"SELECT list(id) FROM {table_name}")
        assert cur.fetchone() == ([2],)


def test_use_database_and_show(mysql_conn, typed_table):
    with mysql_conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        assert "main" in [r[0] for r in cur.fetchall()]
        mysql_conn.select_db("main")
        cur.execute("SELECT DATABASE()")
        assert cur.fetchone()[0] == "main"
        cur.execute("SHOW TABLES")
        assert typed_table in [r[0] for r in cur.fetchall()]


@pytest.mark.parametrize(
    "sql, error, errno",
    [
        ("SELEC 1", pymysql.err.ProgrammingError, 1064),  # ER_PARSE_ERROR
        ("SELECT * FROM no_such_table_xyz", pymysql.err.ProgrammingError, 1146),  # ER_NO_SUCH_TABLE
        ("SELECT no_such_column FROM range(1)", pymysql.err.OperationalError, 1054),  # ER_BAD_FIELD_ERROR
    ],
)
def test_errors(mysql_conn, sql, error, errno):
    with mysql_conn.cursor() as cur:
        with pytest.raises(error) as info:
            cur.execute(sql)
        assert info.value.args[0] == errno, info.value.args
        cur.execute("SELECT 42")  # the connection goes on
        assert cur.fetchone() == (42,)


def test_wrong_password(mysql_addr, creds):
    host, port = mysql_addr
    with pytest.raises(pymysql.err.OperationalError) as info:
        pymysql.connect(host=host, port=port, user=creds[0], password="wrong", connect_timeout=10)
    assert info.value.args[0] == 1045  # ER_ACCESS_DENIED_ERROR


def test_mysql_cli_quick(mysql_addr, creds, typed_table):
    mysql = shutil.which("mysql")
    if mysql is None:
        pytest.fail("the mysql CLI is missing: interop/run.sh installs mariadb-client")
    host, port = mysql_addr
    env = dict(os.environ, MYSQL_PWD=creds[1])
    out = subprocess.run(
        [mysql, "--quick", "--batch", "--skip-column-names", "-h", host, "-P", str(port), "-u", creds[0], "main",
         "-e", f"SELECT id, c_int, c_varchar, c_date FROM {typed_table} ORDER BY id"],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "1\t123456789\théllo, wörld ✓ 🎉 it's\t2024-02-29",
        "2\t-2147483648\t\t1900-01-01",
        "3\tNULL\tNULL\tNULL",
    ]
