"""SQLAlchemy and pandas over the MySQL endpoint, with SQLAlchemy's own MySQL
dialect (mysql+pymysql): reflection reads SHOW CREATE TABLE and
INFORMATION_SCHEMA, so these tests check the catalog as MySQL tools read it.

The tables live in a schema of their own, `sqla` (a MySQL database): the
demo's shop (customers, products, orders) with a few rows, a table of every
DuckDB type that maps to MySQL, and a view.
"""

import datetime as dt
import urllib.parse
from decimal import Decimal

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql as my
from sqlalchemy.ext.automap import automap_base
from sqlalchemy.orm import Session

from conftest import connect_mysql

SCHEMA = "sqla"

SETUP = [
    f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE",
    f"CREATE SCHEMA {SCHEMA}",
    f"""CREATE TABLE {SCHEMA}.customers (
        customer_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, country VARCHAR NOT NULL, signed_up DATE NOT NULL)""",
    f"""CREATE TABLE {SCHEMA}.products (
        product_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, category VARCHAR NOT NULL, price DECIMAL(10,2) NOT NULL)""",
    f"""CREATE TABLE {SCHEMA}.orders (
        order_id BIGINT PRIMARY KEY,
        customer_id INTEGER NOT NULL REFERENCES {SCHEMA}.customers (customer_id),
        product_id INTEGER NOT NULL REFERENCES {SCHEMA}.products (product_id),
        quantity SMALLINT NOT NULL, status VARCHAR NOT NULL, ordered_at TIMESTAMPTZ NOT NULL, tags VARCHAR[])""",
    f"""INSERT INTO {SCHEMA}.customers VALUES (1, 'ada', 'GB', DATE '2020-01-02'), (2, 'linus', 'FI', DATE '2021-03-04')""",
    f"""INSERT INTO {SCHEMA}.products VALUES (1, 'book', 'books', 12.50), (2, 'game', 'games', 59.99),
        (3, 'rake', 'garden', 7.00)""",
    f"""INSERT INTO {SCHEMA}.orders VALUES
        (1, 1, 1, 2, 'paid', TIMESTAMPTZ '2024-01-01 10:00:00+00', ['gift']),
        (2, 2, 2, 1, 'new', TIMESTAMPTZ '2024-02-29 12:34:56.5+00', ['gift', 'express']),
        (3, 1, 3, 5, 'shipped', TIMESTAMPTZ '2024-03-01 00:00:00+00', NULL)""",
    f"""CREATE TABLE {SCHEMA}.every_type (
        id INTEGER PRIMARY KEY, c_bool BOOLEAN, c_tinyint TINYINT, c_smallint SMALLINT, c_int INTEGER NOT NULL DEFAULT 7,
        c_bigint BIGINT, c_utinyint UTINYINT, c_usmallint USMALLINT, c_uint UINTEGER, c_ubigint UBIGINT, c_hugeint HUGEINT,
        c_float FLOAT, c_double DOUBLE, c_decimal DECIMAL(18,4), c_varchar VARCHAR DEFAULT 'x', c_code VARCHAR UNIQUE,
        c_blob BLOB, c_date DATE, c_time TIME, c_timestamp TIMESTAMP, c_timestamp_ms TIMESTAMP_MS, c_timestamptz TIMESTAMPTZ,
        c_interval INTERVAL, c_uuid UUID, c_json JSON, c_list INTEGER[], c_array DOUBLE[2], c_struct STRUCT(a INTEGER, b VARCHAR),
        c_map MAP(VARCHAR, INTEGER), c_enum ENUM('red', 'green'))""",
    f"""INSERT INTO {SCHEMA}.every_type VALUES (1, true, -8, -16, 32, -64, 8, 16, 32, 18446744073709551615,
        -170141183460469231731687303715884105727, 1.5, 0.1, -123.4567, 'héllo', 'A1', '\\xDE\\xAD'::BLOB,
        DATE '2024-02-29', TIME '12:34:56.789', TIMESTAMP '2024-02-29 12:34:56.123456', TIMESTAMP_MS '2024-02-29 12:34:56.5',
        TIMESTAMPTZ '2024-02-29 12:34:56+00', INTERVAL 1 DAY, '6ba7b810-9dad-11d1-80b4-00c04fd430c8', '{{"k": [1, 2]}}',
        [1, NULL, 3], [1.5, 2.0], {{'a': 1, 'b': 'x y'}}, MAP {{'k': 1}}, 'green')""",
    f"CREATE VIEW {SCHEMA}.paid_orders AS SELECT order_id, status FROM {SCHEMA}.orders WHERE status = 'paid'",
]


@pytest.fixture(scope="module")
def engine(mysql_addr, creds):
    conn = connect_mysql(mysql_addr, creds, autocommit=True)
    with conn.cursor() as cur:
        for sql in SETUP:
            cur.execute(sql)
    conn.close()
    host, port = mysql_addr
    user, password = creds
    eng = sa.create_engine(
        f"mysql+pymysql://{urllib.parse.quote(user)}:{urllib.parse.quote(password)}@{host}:{port}/{SCHEMA}"
    )
    yield eng
    eng.dispose()


def test_table_and_view_names(engine):
    insp = sa.inspect(engine)
    assert sorted(insp.get_table_names()) == ["customers", "every_type", "orders", "products"]
    assert insp.get_view_names() == ["paid_orders"]
    assert insp.has_table("orders") and not insp.has_table("no_such_table")


def test_get_columns(engine):
    cols = {c["name"]: c for c in sa.inspect(engine).get_columns("orders")}
    assert list(cols) == ["order_id", "customer_id", "product_id", "quantity", "status", "ordered_at", "tags"]
    want = {
        "order_id": my.BIGINT, "customer_id": my.INTEGER, "product_id": my.INTEGER, "quantity": my.SMALLINT,
        "status": my.LONGTEXT, "ordered_at": my.TIMESTAMP, "tags": my.JSON,
    }
    for name, typ in want.items():
        assert type(cols[name]["type"]) is typ, (name, cols[name]["type"])
    assert cols["ordered_at"]["type"].fsp == 6
    assert [c["nullable"] for c in cols.values()] == [False] * 6 + [True]
    price = {c["name"]: c for c in sa.inspect(engine).get_columns("products")}["price"]["type"]
    assert isinstance(price, my.DECIMAL) and (price.precision, price.scale) == (10, 2)


def test_keys_and_indexes(engine):
    insp = sa.inspect(engine)
    assert insp.get_pk_constraint("orders")["constrained_columns"] == ["order_id"]
    fks = sorted(insp.get_foreign_keys("orders"), key=lambda fk: fk["constrained_columns"])
    assert [(fk["constrained_columns"], fk["referred_table"], fk["referred_columns"]) for fk in fks] == [
        (["customer_id"], "customers", ["customer_id"]),
        (["product_id"], "products", ["product_id"]),
    ]
    assert all(fk["referred_schema"] is None for fk in fks)
    # InnoDB's index for each foreign key, as on MySQL.
    assert sorted((ix["column_names"], ix["unique"]) for ix in insp.get_indexes("orders")) == [
        (["customer_id"], False), (["product_id"], False)]
    assert insp.get_indexes("products") == []
    uniques = insp.get_unique_constraints("every_type")
    assert [u["column_names"] for u in uniques] == [["c_code"]]


def test_every_type(engine):
    cols = {c["name"]: c for c in sa.inspect(engine).get_columns("every_type")}
    want = {
        "c_bool": (my.TINYINT, {"display_width": 1}), "c_tinyint": (my.TINYINT, {}), "c_smallint": (my.SMALLINT, {}),
        "c_int": (my.INTEGER, {}), "c_bigint": (my.BIGINT, {}), "c_utinyint": (my.TINYINT, {"unsigned": True}),
        "c_usmallint": (my.SMALLINT, {"unsigned": True}), "c_uint": (my.INTEGER, {"unsigned": True}),
        "c_ubigint": (my.BIGINT, {"unsigned": True}), "c_hugeint": (my.DECIMAL, {"precision": 38, "scale": 0}),
        "c_float": (my.FLOAT, {}), "c_double": (my.DOUBLE, {}), "c_decimal": (my.DECIMAL, {"precision": 18, "scale": 4}),
        "c_varchar": (my.LONGTEXT, {}), "c_code": (my.VARCHAR, {"length": 255}), "c_blob": (my.LONGBLOB, {}),
        "c_date": (my.DATE, {}), "c_time": (my.TIME, {"fsp": 6}), "c_timestamp": (my.DATETIME, {"fsp": 6}),
        "c_timestamp_ms": (my.DATETIME, {"fsp": 3}), "c_timestamptz": (my.TIMESTAMP, {"fsp": 6}),
        "c_interval": (my.LONGTEXT, {}), "c_uuid": (my.CHAR, {"length": 36}), "c_json": (my.JSON, {}),
        "c_list": (my.JSON, {}), "c_array": (my.JSON, {}), "c_struct": (my.JSON, {}), "c_map": (my.JSON, {}),
        "c_enum": (my.ENUM, {"enums": ["red", "green"]}),
    }
    for name, (typ, attrs) in want.items():
        got = cols[name]["type"]
        assert type(got) is typ, (name, got)
        for attr, value in attrs.items():
            assert getattr(got, attr) == value, (name, attr, getattr(got, attr))
    assert cols["c_int"]["nullable"] is False
    assert cols["c_int"]["default"] == "'7'"
    assert cols["c_varchar"]["default"] == "(_utf8mb4'x')"


def test_every_type_values(engine):
    # Reflected types read the values: JSON columns parse, unsigned and
    # decimal numbers stay exact.
    with engine.connect() as conn:
        table = sa.Table("every_type", sa.MetaData(), autoload_with=conn)
        row = conn.execute(sa.select(table)).mappings().one()
    assert row["c_ubigint"] == 18446744073709551615
    assert row["c_hugeint"] == Decimal("-170141183460469231731687303715884105727")
    assert row["c_decimal"] == Decimal("-123.4567")
    assert row["c_json"] == {"k": [1, 2]}
    assert row["c_list"] == [1, None, 3]
    assert row["c_array"] == [1.5, 2.0]
    assert row["c_struct"] == {"a": 1, "b": "x y"}
    assert row["c_map"] == {"k": 1}
    assert row["c_enum"] == "green"
    assert row["c_timestamp"] == dt.datetime(2024, 2, 29, 12, 34, 56, 123456)


def test_table_autoload(engine):
    with engine.connect() as conn:
        orders = sa.Table("orders", sa.MetaData(), autoload_with=conn)
        assert [c.name for c in orders.primary_key] == ["order_id"]
        assert {fk.target_fullname for fk in orders.foreign_keys} == {"customers.customer_id", "products.product_id"}
        rows = conn.execute(sa.select(orders.c.order_id, orders.c.tags).order_by(orders.c.order_id)).all()
    assert rows == [(1, ["gift"]), (2, ["gift", "express"]), (3, None)]


def test_orm_automap(engine):
    Base = automap_base()
    Base.prepare(autoload_with=engine)
    Order, Customer = Base.classes.orders, Base.classes.customers
    with Session(engine) as session:
        order = session.get(Order, 2)
        assert order.status == "new"
        assert order.customers.name == "linus"  # the foreign key became a relationship
        ada = session.scalars(sa.select(Customer).where(Customer.name == "ada")).one()
        assert sorted(o.order_id for o in ada.orders_collection) == [1, 3]


def test_pandas_read_sql_table(engine):
    products = pd.read_sql_table("products", engine)
    assert list(products.columns) == ["product_id", "name", "category", "price"]
    assert products["product_id"].tolist() == [1, 2, 3]
    assert [float(p) for p in products["price"]] == [12.5, 59.99, 7.0]
    orders = pd.read_sql_table("orders", engine)
    assert orders["tags"].tolist()[:2] == [["gift"], ["gift", "express"]]


def test_pandas_to_sql_round_trip(engine):
    df = pd.DataFrame({
        "id": [1, 2, 3],
        "name": ["a", "it's", None],
        "price": [1.5, 2.25, None],
        "ok": [True, False, True],
        "ts": pd.to_datetime(["2024-01-01 10:00:00", "2024-02-29 12:34:56.789", "2000-01-01 00:00:00"], format="ISO8601"),
    })
    df.to_sql("pd_round_trip", engine, index=False, if_exists="replace")
    back = pd.read_sql_table("pd_round_trip", engine)
    assert list(back.columns) == list(df.columns)
    assert back["id"].tolist() == [1, 2, 3]
    assert back["name"].tolist()[:2] == ["a", "it's"] and pd.isna(back["name"][2])
    assert back["price"].tolist()[:2] == [1.5, 2.25] and pd.isna(back["price"][2])
    assert back["ok"].astype(bool).tolist() == [True, False, True]  # tinyint(1), as on MySQL
    assert back["ts"].tolist() == df["ts"].tolist()
    # And the table reflects as pandas made it.
    cols = {c["name"]: type(c["type"]) for c in sa.inspect(engine).get_columns("pd_round_trip")}
    assert cols == {"id": my.BIGINT, "name": my.LONGTEXT, "price": my.DOUBLE, "ok": my.TINYINT, "ts": my.DATETIME}
