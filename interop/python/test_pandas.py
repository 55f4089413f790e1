"""pandas.read_sql over both of quiver's protocols, on every common type,
comparing values: through ADBC (Flight SQL) and through PyMySQL (MySQL)."""

import warnings

import pandas as pd
import pyarrow as pa
import pytest

import typed
from values import frame_rows, plain

pytestmark = pytest.mark.filterwarnings("ignore:pandas only supports SQLAlchemy:UserWarning")


def assert_rows_equal(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        for name in g:
            assert g[name] == w[name], f"row {i + 1}, {name}: got {g[name]!r}, want {w[name]!r}"


# --- ADBC -------------------------------------------------------------------


def test_read_sql_adbc_every_type_pyarrow_backend(adbc_conn, typed_table):
    df = pd.read_sql(typed.select_sql(), adbc_conn, dtype_backend="pyarrow")
    assert list(df.columns) == typed.NAMES
    assert_rows_equal(frame_rows(df), typed.expected("adbc"))


def test_read_sql_adbc_every_type_default_backend(adbc_conn, typed_table):
    # Rows without NULLs, so integer columns stay integers.
    df = pd.read_sql(typed.select_sql() + " LIMIT 2", adbc_conn)
    assert_rows_equal(frame_rows(df), typed.expected("adbc", rows=range(2)))
    dtypes = df.dtypes
    assert str(dtypes["c_bigint"]) == "int64"
    assert str(dtypes["c_ubigint"]) == "uint64"
    assert str(dtypes["c_double"]) == "float64"
    assert str(dtypes["c_bool"]) == "bool"
    assert str(dtypes["c_timestamp"]).startswith("datetime64[")
    # TIMESTAMPTZ arrives as a UTC-aware column.
    tz = dtypes["c_timestamptz"]
    assert isinstance(tz, pd.DatetimeTZDtype), tz
    assert str(tz.tz) == "UTC"
    assert df["c_timestamptz"][0] == pd.Timestamp("2024-02-29 10:34:56.789012", tz="UTC")


def test_read_sql_adbc_nulls_everywhere(adbc_conn, typed_table):
    df = pd.read_sql(typed.select_sql() + " OFFSET 2", adbc_conn)
    assert len(df) == 1
    assert all(plain(v) is None for v in df.iloc[0]), df.iloc[0].to_dict()


def test_read_sql_adbc_large(adbc_conn):
    df = pd.read_sql("SELECT range AS id, range * 2 AS twice FROM range(500000)", adbc_conn)
    assert len(df) == 500_000
    assert int(df["twice"].sum()) == 2 * (500_000 * 499_999 // 2)


# --- PyMySQL ----------------------------------------------------------------


def test_read_sql_pymysql_every_type(mysql_conn, typed_table, text_forms):
    # Rows without NULLs, so integer columns stay integers; coerce_float=False
    # keeps DECIMAL as Decimal. (pandas 3's numpy_nullable and pyarrow
    # backends turn PyMySQL's dates, Decimals and bytes into strings, so the
    # default backend is the one that shows what PyMySQL received.)
    df = pd.read_sql(typed.select_sql() + " LIMIT 2", mysql_conn, coerce_float=False)
    assert list(df.columns) == typed.NAMES
    assert_rows_equal(frame_rows(df), typed.expected("mysql", text_forms, rows=range(2)))
    assert str(df.dtypes["c_bigint"]) == "int64"
    assert str(df.dtypes["c_double"]) == "float64"
    assert str(df.dtypes["c_timestamp"]).startswith("datetime64[")
    assert str(df.dtypes["c_timestamptz"]).startswith("datetime64[")  # naive UTC: MySQL has no zone


def test_read_sql_pymysql_nulls_everywhere(mysql_conn, typed_table):
    df = pd.read_sql(typed.select_sql() + " OFFSET 2", mysql_conn)
    assert len(df) == 1
    assert all(plain(v) is None for v in df.iloc[0]), df.iloc[0].to_dict()


def test_read_sql_pymysql_integers_with_nulls_stay_exact(mysql_conn, typed_table, text_forms):
    names = [c.name for c in typed.COLUMNS if pa.types.is_integer(c.arrow)]
    df = pd.read_sql(typed.select_sql(names), mysql_conn, dtype_backend="numpy_nullable")
    assert_rows_equal(frame_rows(df), typed.expected("mysql", text_forms))


def test_read_sql_pymysql_with_params(mysql_conn, typed_table):
    df = pd.read_sql(f"SELECT id, c_varchar FROM {typed_table} WHERE id = %s", mysql_conn, params=(1,))
    assert df.to_dict("records") == [{"id": 1, "c_varchar": typed.BY_NAME["c_varchar"].py[0]}]


def test_read_sql_same_frame_over_both_protocols(adbc_conn, mysql_conn):
    sql = "SELECT range AS id, 'v' || range AS s, range / 3 AS d FROM range(20000) ORDER BY id"
    a = pd.read_sql(sql, adbc_conn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = pd.read_sql(sql, mysql_conn)
    pd.testing.assert_frame_equal(a, m, check_dtype=False)
