"""The typed table: one column per common DuckDB type, three rows (typical
values, extremes, all NULL), and the values each client must see.

Each Column holds the DuckDB type, the SQL literal of each row, the Arrow type
ADBC must report, and the value Python must get for each row: `py` is what
pyarrow's to_pylist gives over ADBC, `mysql` what PyMySQL gives (see
mysqlwire/mysqltypes.go for the MySQL mapping). Columns that the MySQL
endpoint sends as DuckDB's text form (INTERVAL) are compared with
CAST(col AS VARCHAR) read over Flight, marked by mysql=TEXT; LIST and STRUCT
go out as JSON text (MySQL's json).
"""

import dataclasses
import datetime as dt
from decimal import Decimal

import pyarrow as pa

TABLE = "interop_typed"
UTC = dt.timezone.utc
TEXT = object()  # mysql: DuckDB's VARCHAR cast of the value
SAME = object()  # mysql: the same as py


@dataclasses.dataclass
class Column:
    name: str
    sql_type: str
    literals: tuple  # SQL literal per row
    arrow: pa.DataType
    py: tuple  # value per row, as pyarrow's to_pylist gives it
    mysql: object = SAME  # SAME, TEXT, or a tuple of PyMySQL values


def _interval(months=0, days=0, nanos=0):
    return pa.MonthDayNano([months, days, nanos])


def _secs(h=0, m=0, s=0, us=0):
    return ((h * 60 + m) * 60 + s) * 1_000_000_000 + us * 1000


COLUMNS = [
    Column("c_tinyint", "TINYINT", ("42", "-128", "NULL"), pa.int8(), (42, -128, None)),
    Column("c_smallint", "SMALLINT", ("-1234", "-32768", "NULL"), pa.int16(), (-1234, -32768, None)),
    Column("c_int", "INTEGER", ("123456789", "-2147483648", "NULL"), pa.int32(), (123456789, -2147483648, None)),
    # 2^53 + 1: a double would round it.
    Column("c_bigint", "BIGINT", ("9007199254740993", "-9223372036854775808", "NULL"), pa.int64(),
           (9007199254740993, -9223372036854775808, None)),
    Column("c_utinyint", "UTINYINT", ("255", "0", "NULL"), pa.uint8(), (255, 0, None)),
    Column("c_usmallint", "USMALLINT", ("65535", "0", "NULL"), pa.uint16(), (65535, 0, None)),
    Column("c_uint", "UINTEGER", ("4294967295", "0", "NULL"), pa.uint32(), (4294967295, 0, None)),
    Column("c_ubigint", "UBIGINT", ("18446744073709551615", "0", "NULL"), pa.uint64(),
           (18446744073709551615, 0, None)),
    Column("c_hugeint", "HUGEINT", ("123456789012345678901234567", "-1", "NULL"), pa.decimal128(38, 0),
           (Decimal("123456789012345678901234567"), Decimal("-1"), None)),
    Column("c_float", "FLOAT", ("1.5", "-0.25", "NULL"), pa.float32(), (1.5, -0.25, None)),
    Column("c_double", "DOUBLE", ("3.141592653589793", "1e300", "NULL"), pa.float64(),
           (3.141592653589793, 1e300, None)),
    Column("c_decimal", "DECIMAL(18,4)", ("12345678901234.5678", "-0.0001", "NULL"), pa.decimal128(18, 4),
           (Decimal("12345678901234.5678"), Decimal("-0.0001"), None)),
    Column("c_varchar", "VARCHAR", ("'héllo, wörld ✓ 🎉 it''s'", "''", "NULL"), pa.string(),
           ("héllo, wörld ✓ 🎉 it's", "", None)),
    Column("c_blob", "BLOB", ("'\\x00\\xFF\\x10quiver'::BLOB", "''::BLOB", "NULL"), pa.binary(),
           (b"\x00\xff\x10quiver", b"", None)),
    Column("c_bool", "BOOLEAN", ("true", "false", "NULL"), pa.bool_(), (True, False, None),
           mysql=(1, 0, None)),
    Column("c_date", "DATE", ("DATE '2024-02-29'", "DATE '1900-01-01'", "NULL"), pa.date32(),
           (dt.date(2024, 2, 29), dt.date(1900, 1, 1), None)),
    Column("c_time", "TIME", ("TIME '23:59:59.123456'", "TIME '00:00:00'", "NULL"), pa.time64("us"),
           (dt.time(23, 59, 59, 123456), dt.time(0, 0), None),
           mysql=(dt.timedelta(hours=23, minutes=59, seconds=59, microseconds=123456), dt.timedelta(0), None)),
    Column("c_timestamp", "TIMESTAMP",
           ("TIMESTAMP '2024-02-29 12:34:56.789012'", "TIMESTAMP '1969-12-31 23:59:59.5'", "NULL"),
           pa.timestamp("us"),
           (dt.datetime(2024, 2, 29, 12, 34, 56, 789012), dt.datetime(1969, 12, 31, 23, 59, 59, 500000), None)),
    # An instant: ADBC must give it UTC-aware; MySQL's TIMESTAMP carries no
    # zone, so PyMySQL gets the naive UTC wall time.
    Column("c_timestamptz", "TIMESTAMPTZ",
           ("TIMESTAMPTZ '2024-02-29 12:34:56.789012+02:00'", "TIMESTAMPTZ '2000-01-01 00:00:00+00'", "NULL"),
           pa.timestamp("us", tz="UTC"),
           (dt.datetime(2024, 2, 29, 10, 34, 56, 789012, tzinfo=UTC), dt.datetime(2000, 1, 1, tzinfo=UTC), None),
           mysql=(dt.datetime(2024, 2, 29, 10, 34, 56, 789012), dt.datetime(2000, 1, 1), None)),
    Column("c_interval", "INTERVAL",
           ("INTERVAL '1 month 2 days 03:04:05.006'", "INTERVAL '-90 minutes'", "NULL"),
           pa.month_day_nano_interval(),
           (_interval(1, 2, _secs(3, 4, 5, 6000)), _interval(nanos=-_secs(m=90)), None), mysql=TEXT),
    Column("c_uuid", "UUID",
           ("'550e8400-e29b-41d4-a716-446655440000'", "'00000000-0000-0000-0000-000000000000'", "NULL"),
           pa.string(),
           ("550e8400-e29b-41d4-a716-446655440000", "00000000-0000-0000-0000-000000000000", None)),
    Column("c_list", "INTEGER[]", ("[1, 2, NULL, 4]", "[]", "NULL"), pa.list_(pa.int32()),
           ([1, 2, None, 4], [], None), mysql=("[1, 2, null, 4]", "[]", None)),
    Column("c_struct", "STRUCT(a INTEGER, b VARCHAR)", ("{'a': 7, 'b': 'x'}", "{'a': NULL, 'b': ''}", "NULL"),
           pa.struct([("a", pa.int32()), ("b", pa.string())]),
           ({"a": 7, "b": "x"}, {"a": None, "b": ""}, None), mysql=('{"a": 7, "b": "x"}', '{"a": null, "b": ""}', None)),
]

NAMES = [c.name for c in COLUMNS]
NROWS = 3
BY_NAME = {c.name: c for c in COLUMNS}


def create_sql():
    """The statements that create and fill the table."""
    cols = ", ".join(f"{c.name} {c.sql_type}" for c in COLUMNS)
    rows = []
    for r in range(NROWS):
        rows.append("(" + ", ".join([str(r + 1)] + [c.literals[r] for c in COLUMNS]) + ")")
    return [
        f"CREATE OR REPLACE TABLE {TABLE} (id INTEGER PRIMARY KEY, {cols})",
        f"INSERT INTO {TABLE} VALUES " + ", ".join(rows),
    ]


def select_sql(names=None):
    return f"SELECT {', '.join(names or NAMES)} FROM {TABLE} ORDER BY id"


def expected(client, text_forms=None, rows=range(NROWS)):
    """Each row's values as a dict, for client "adbc" or "mysql". For the
    MySQL text columns, text_forms holds each row's VARCHAR casts (the
    text_forms fixture)."""
    out = []
    for r in rows:
        row = {}
        for col in COLUMNS:
            if client == "mysql" and col.mysql is TEXT:
                row[col.name] = text_forms[r][col.name]
            elif client == "mysql" and col.mysql is not SAME:
                row[col.name] = col.mysql[r]
            else:
                row[col.name] = col.py[r]
        out.append(row)
    return out


def type_matches(got: pa.DataType, want: pa.DataType) -> bool:
    """Arrow type equality that ignores a list's child field name."""
    if pa.types.is_list(want):
        return pa.types.is_list(got) and type_matches(got.value_type, want.value_type)
    return got == want
