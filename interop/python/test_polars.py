"""polars read_database and write_database (engine="adbc") over Flight SQL."""

import datetime as dt
from decimal import Decimal

import polars as pl
import pytest

import typed
from values import plain


def test_read_database_every_type(adbc_conn, typed_table):
    # polars cannot import Arrow's month_day_nano_interval (it panics unless
    # POLARS_IMPORT_INTERVAL_AS_STRUCT=1), so INTERVAL is left out here;
    # pandas and JDBC read it.
    names = [n for n in typed.NAMES if n != "c_interval"]
    df = pl.read_database(typed.select_sql(names), connection=adbc_conn)
    assert df.columns == names
    assert df.height == typed.NROWS
    for name in names:
        got = [plain(v) for v in df[name].to_list()]
        want = list(typed.BY_NAME[name].py)
        assert got == want, f"{name}: got {got!r}, want {want!r}"
    assert df.schema["c_timestamptz"] == pl.Datetime("us", "UTC")
    assert df.schema["c_bigint"] == pl.Int64
    assert df.schema["c_ubigint"] == pl.UInt64
    assert df.schema["c_varchar"] == pl.String


def test_read_database_with_params_and_batches(adbc_conn):
    df = pl.read_database(
        "SELECT range AS id, 'v' || range AS s FROM range(100000) WHERE range % ? = 0",
        connection=adbc_conn, execute_options={"parameters": (10,)},
    )
    assert df.height == 10_000
    assert df["id"].sum() == sum(range(0, 100_000, 10))
    frames = list(pl.read_database("SELECT range AS id FROM range(250000)", connection=adbc_conn,
                                   iter_batches=True, batch_size=50_000))
    assert sum(f.height for f in frames) == 250_000


def frame():
    return pl.DataFrame({
        "id": pl.Series([1, 2, 3], dtype=pl.Int64),
        "name": ["a", None, "c"],
        "price": pl.Series([Decimal("1.10"), Decimal("2.20"), None], dtype=pl.Decimal(10, 2)),
        "at": pl.Series([dt.datetime(2024, 1, 1, 12), None, dt.datetime(2024, 3, 1)], dtype=pl.Datetime("us", "UTC")),
        "day": [dt.date(2024, 1, 1), dt.date(2024, 2, 29), None],
        "ok": [True, False, None],
        "tags": [["x", "y"], [], None],
    })


def test_write_database_modes(adbc_conn, table_name):
    df = frame()
    assert df.write_database(table_name, connection=adbc_conn, engine="adbc") == 3
    with pytest.raises(Exception):
        df.write_database(table_name, connection=adbc_conn, engine="adbc", if_table_exists="fail")
    df.write_database(table_name, connection=adbc_conn, engine="adbc", if_table_exists="append")
    back = pl.read_database(f"SELECT * FROM {table_name} ORDER BY id", connection=adbc_conn)
    assert back.height == 6
    assert back.columns == df.columns
    assert back.schema["at"] == pl.Datetime("us", "UTC")
    assert back.head(1).rows() == df.head(1).rows()

    df.head(2).write_database(table_name, connection=adbc_conn, engine="adbc", if_table_exists="replace")
    back = pl.read_database(f"SELECT * FROM {table_name} ORDER BY id", connection=adbc_conn)
    assert back.sort("id").to_dicts() == df.head(2).to_dicts()
