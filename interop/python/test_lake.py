"""The Iceberg lake `quiver ingest --lake` writes, read by engines no one here
wrote: pyiceberg and Spark (Iceberg's Spark runtime with its JdbcCatalog).

interop/run.sh makes the lake before the suite runs (interop/lake/lakegen:
an in-process Kafka, MESSAGES messages whose id is their sequence number
0..MESSAGES-1, message i in partition i % PARTITIONS, ingested by two
`quiver ingest` processes of one consumer group at the same time) and passes
it in QUIVER_LAKE_DIR (the warehouse, with the SQLite catalog catalog.db,
catalog name quiver), QUIVER_LAKE_MESSAGES, QUIVER_LAKE_PARTITIONS,
QUIVER_LAKE_GROUP and QUIVER_SPARK_JARS (the Iceberg Spark runtime and the
SQLite JDBC driver from the local Maven repository, comma-separated).
"""

import datetime as dt
import json
import os

import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import GreaterThanOrEqual

NAMESPACE = "quiver"
TABLE = "events"
TOPIC = "events"
# lakegen's first message is at this Kafka timestamp, message i i seconds
# later; the table is partitioned by day(_timestamp).
MIDNIGHT = dt.datetime(2026, 3, 2, tzinfo=dt.timezone.utc)
FIRST_AFTER_MIDNIGHT = 3600


def _env(name):
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(
            f"{name} is not set: run this suite through `make interop` "
            "(interop/run.sh), which makes the lake and exports it"
        )
    return value


@pytest.fixture(scope="module")
def lake():
    """The lake's directory, message count, partition count and group."""
    return (_env("QUIVER_LAKE_DIR"), int(_env("QUIVER_LAKE_MESSAGES")),
            int(_env("QUIVER_LAKE_PARTITIONS")), _env("QUIVER_LAKE_GROUP"))


def end_offsets(messages, partitions):
    """Each partition's end offset once messages went round-robin."""
    return {p: messages // partitions + (1 if messages % partitions > p else 0)
            for p in range(partitions)}


# --- pyiceberg ----------------------------------------------------------------


@pytest.fixture(scope="module")
def iceberg_table(lake):
    directory = lake[0]
    catalog = SqlCatalog("quiver", uri=f"sqlite:///{directory}/catalog.db", warehouse=f"file://{directory}")
    return catalog.load_table(f"{NAMESPACE}.{TABLE}")


@pytest.fixture(scope="module")
def iceberg_rows(iceberg_table):
    return iceberg_table.scan().to_arrow()


def test_pyiceberg_reads_every_sequence_number_exactly_once(lake, iceberg_rows):
    _, messages, _, _ = lake
    ids = iceberg_rows.column("id").to_pylist()
    unique = set(ids)
    want = set(range(messages))
    assert not want - unique, f"{len(want - unique)} sequence numbers missing, e.g. {sorted(want - unique)[:10]}"
    assert not unique - want, f"unexpected ids, e.g. {sorted(unique - want)[:10]}"
    assert len(ids) == messages, f"{len(ids) - len(unique)} rows duplicated"


def test_pyiceberg_kafka_positions_are_distinct_and_match_the_ids(lake, iceberg_rows):
    _, messages, partitions, _ = lake
    rows = iceberg_rows.select(["id", "_kafka_partition", "_offset"]).to_pylist()
    pairs = {(r["_kafka_partition"], r["_offset"]) for r in rows}
    assert len(pairs) == len(rows) == messages
    # Message i went to partition i % partitions at offset i // partitions.
    wrong = [r for r in rows if (r["_kafka_partition"], r["_offset"]) != (r["id"] % partitions, r["id"] // partitions)]
    assert not wrong, f"{len(wrong)} rows at the wrong Kafka position, e.g. {wrong[:5]}"


def test_pyiceberg_reads_the_columns_and_prunes_by_day(lake, iceberg_table, iceberg_rows):
    _, messages, _, _ = lake
    assert iceberg_table.metadata.format_version == 2
    assert [(f.name, str(f.transform)) for f in iceberg_table.spec().fields] == [("_timestamp_day", "day")]
    by_id = iceberg_rows.sort_by("id").slice(0, 2).to_pylist()
    assert [(r["id"], r["name"], r["price"], r["ok"], r["qty"], r["color"], r["blob"]) for r in by_id] == [
        (0, "name-0", 0.0, True, 0, "RED", b"\x00\x01\x02"),
        (1, "name-1", 0.5, False, 1, "GREEN", b""),
    ]
    assert by_id[1]["at"] == by_id[1]["_timestamp"] == MIDNIGHT - dt.timedelta(seconds=FIRST_AFTER_MIDNIGHT - 1)
    # A filter on the partition source column: a scan of the second day's
    # files only, still exact.
    scan = iceberg_table.scan(row_filter=GreaterThanOrEqual("_timestamp", MIDNIGHT.isoformat()), selected_fields=("id",))
    after = scan.to_arrow().column("id")
    assert len(after) == messages - FIRST_AFTER_MIDNIGHT
    assert pc.min(after).as_py() == FIRST_AFTER_MIDNIGHT
    days = {task.file.partition[0] for task in scan.plan_files()}
    assert days == {(MIDNIGHT.date() - dt.date(1970, 1, 1)).days}


def test_pyiceberg_snapshot_summary_carries_the_kafka_offsets(lake, iceberg_table):
    _, messages, partitions, group = lake
    snapshot = iceberg_table.current_snapshot()
    summary = snapshot.summary.additional_properties
    key = f"quiver.kafka.offsets.{group}.{TOPIC}"
    assert key in summary, f"no {key} in the current snapshot's summary: {summary}"
    got = {int(p): end for p, end in json.loads(summary[key]).items()}
    assert got == end_offsets(messages, partitions)
    assert int(summary["total-records"]) == messages
    # Both ingest processes committed: more than one snapshot, each an append.
    snapshots = iceberg_table.snapshots()
    assert len(snapshots) > 1
    assert {s.summary.operation.value for s in snapshots} == {"append"}
    assert [s.sequence_number for s in snapshots] == list(range(1, len(snapshots) + 1))


# --- Spark --------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark(lake, tmp_path_factory):
    """A local SparkSession whose Iceberg catalog `quiver` is Iceberg's
    JdbcCatalog over the lake's SQLite catalog. Its jars come from the local
    Maven repository (interop/lake/pom.xml); Spark downloads nothing."""
    directory = lake[0]
    jars = _env("QUIVER_SPARK_JARS")
    # Spark would otherwise look up the host's address and bind to it.
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    scratch = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[1]").appName("quiver-interop")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.jars", jars)
        .config("spark.sql.catalog.quiver", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.quiver.catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog")
        .config("spark.sql.catalog.quiver.uri", f"jdbc:sqlite:{directory}/catalog.db")
        .config("spark.sql.catalog.quiver.warehouse", f"file://{directory}")
        # The catalog's iceberg_tables has the iceberg_type column (V1).
        .config("spark.sql.catalog.quiver.jdbc.schema-version", "V1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_spark_counts_every_sequence_number_once(lake, spark):
    _, messages, _, _ = lake
    row = spark.sql(f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM quiver.{NAMESPACE}.{TABLE}").collect()[0]
    assert tuple(row) == (messages, messages, 0, messages - 1)


def test_spark_reads_columns_and_filters_by_day(lake, spark):
    _, messages, partitions, _ = lake
    rows = spark.sql(
        f"SELECT id, name, color, blob, _offset, at = _timestamp FROM quiver.{NAMESPACE}.{TABLE} ORDER BY id LIMIT 2"
    ).collect()
    assert [tuple(r) for r in rows] == [
        (0, "name-0", "RED", bytearray(b"\x00\x01\x02"), 0, True),
        (1, "name-1", "GREEN", bytearray(b""), 1 // partitions, True),
    ]
    after = spark.sql(
        f"SELECT count(*), min(id) FROM quiver.{NAMESPACE}.{TABLE} "
        f"WHERE _timestamp >= TIMESTAMP '{MIDNIGHT:%Y-%m-%d %H:%M:%S}'"
    ).collect()[0]
    assert tuple(after) == (messages - FIRST_AFTER_MIDNIGHT, FIRST_AFTER_MIDNIGHT)


def test_spark_reads_the_kafka_offsets_from_the_snapshots(lake, spark):
    _, messages, partitions, group = lake
    key = f"quiver.kafka.offsets.{group}.{TOPIC}"
    rows = spark.sql(
        f"SELECT s.summary['{key}'] FROM quiver.{NAMESPACE}.{TABLE}.snapshots s "
        f"JOIN quiver.{NAMESPACE}.{TABLE}.refs r ON r.snapshot_id = s.snapshot_id WHERE r.name = 'main'"
    ).collect()
    assert len(rows) == 1, rows
    assert {int(p): end for p, end in json.loads(rows[0][0]).items()} == end_offsets(messages, partitions)


# Iceberg reserves _partition for a metadata column and its Spark runtime
# refuses any scan of a table that has a column of that name, so the lake
# calls the Kafka partition _kafka_partition (DuckDB's tables keep
# _partition).
def test_spark_reads_the_kafka_partition_column(lake, spark):
    _, messages, _, _ = lake
    row = spark.sql(f"SELECT count(DISTINCT _kafka_partition, _offset) FROM quiver.{NAMESPACE}.{TABLE}").collect()[0]
    assert row[0] == messages


def test_docs_lake_snippet_runs_as_written(lake):
    """The pyiceberg/pandas/polars block of docs/clients.md, run with the
    lake's directory in place of /tmp/quiver-lake."""
    directory, messages, _, _ = lake
    page = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "clients.md")).read()
    start = page.index("# pyiceberg, pandas, polars\n")
    block = page[start : page.index("```", start)]
    scope = {}
    exec(block.replace("/tmp/quiver-lake", directory), scope)
    assert len(scope["df"]) == messages - FIRST_AFTER_MIDNIGHT
    assert scope["lf"].select("id").collect().height == messages
