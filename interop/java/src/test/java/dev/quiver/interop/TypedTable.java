package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Date;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Time;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A table with one column per common DuckDB type and three rows (typical
 * values, extremes, all NULL), and what each JDBC driver's getObject must
 * return for it: the class and the value.
 *
 * <p>The Flight SQL JDBC driver reads Arrow's unsigned integers as signed
 * ones of the same width, so a UTINYINT of 255 comes back as -1 (a driver
 * bug); the unsigned values here stay inside the signed range. Python's
 * suite covers the top of the unsigned ranges, and Connector/J here reads
 * them too ({@link #MYSQL_UNSIGNED_SQL}).
 */
final class TypedTable {
  private TypedTable() {}

  static final String NAME = "interop_typed_java";

  /** The expected getObject result of one column for one driver. */
  record Want(Class<?> type, Object row1, Object row2) {}

  record Column(String name, String sqlType, String lit1, String lit2, Want flight, Want mysql) {}

  static Want want(Class<?> type, Object row1, Object row2) {
    return new Want(type, row1, row2);
  }

  static final List<Column> COLUMNS = List.of(
      new Column("c_tinyint", "TINYINT", "42", "-128",
          want(Byte.class, (byte) 42, (byte) -128), want(Integer.class, 42, -128)),
      new Column("c_smallint", "SMALLINT", "-1234", "-32768",
          want(Short.class, (short) -1234, (short) -32768), want(Integer.class, -1234, -32768)),
      new Column("c_int", "INTEGER", "123456789", "-2147483648",
          want(Integer.class, 123456789, Integer.MIN_VALUE), want(Integer.class, 123456789, Integer.MIN_VALUE)),
      new Column("c_bigint", "BIGINT", "9007199254740993", "-9223372036854775808",
          want(Long.class, 9007199254740993L, Long.MIN_VALUE), want(Long.class, 9007199254740993L, Long.MIN_VALUE)),
      new Column("c_utinyint", "UTINYINT", "100", "0",
          want(Byte.class, (byte) 100, (byte) 0), want(Integer.class, 100, 0)),
      new Column("c_usmallint", "USMALLINT", "30000", "0",
          want(Short.class, (short) 30000, (short) 0), want(Integer.class, 30000, 0)),
      new Column("c_uint", "UINTEGER", "2000000000", "0",
          want(Integer.class, 2000000000, 0), want(Long.class, 2000000000L, 0L)),
      new Column("c_ubigint", "UBIGINT", "9000000000000000000", "0",
          want(Long.class, 9000000000000000000L, 0L),
          want(BigInteger.class, new BigInteger("9000000000000000000"), BigInteger.ZERO)),
      new Column("c_hugeint", "HUGEINT", "123456789012345678901234567", "-1",
          want(BigDecimal.class, new BigDecimal("123456789012345678901234567"), new BigDecimal("-1")),
          want(BigDecimal.class, new BigDecimal("123456789012345678901234567"), new BigDecimal("-1"))),
      // The Flight driver gives a Float by label and a Double by index
      // (JDBC's FLOAT is a double): compared as doubles.
      new Column("c_float", "FLOAT", "1.5", "-0.25",
          want(Number.class, 1.5d, -0.25d), want(Float.class, 1.5f, -0.25f)),
      new Column("c_double", "DOUBLE", "3.141592653589793", "1e300",
          want(Double.class, Math.PI, 1e300), want(Double.class, Math.PI, 1e300)),
      new Column("c_decimal", "DECIMAL(18,4)", "12345678901234.5678", "-0.0001",
          want(BigDecimal.class, new BigDecimal("12345678901234.5678"), new BigDecimal("-0.0001")),
          want(BigDecimal.class, new BigDecimal("12345678901234.5678"), new BigDecimal("-0.0001"))),
      new Column("c_varchar", "VARCHAR", "'héllo, wörld ✓ 🎉 it''s'", "''",
          want(String.class, "héllo, wörld ✓ 🎉 it's", ""), want(String.class, "héllo, wörld ✓ 🎉 it's", "")),
      new Column("c_blob", "BLOB", "'\\x00\\xFF\\x10quiver'::BLOB", "''::BLOB",
          want(byte[].class, blob(), new byte[0]), want(byte[].class, blob(), new byte[0])),
      new Column("c_bool", "BOOLEAN", "true", "false",
          want(Boolean.class, true, false), want(Boolean.class, true, false)),
      new Column("c_date", "DATE", "DATE '2024-02-29'", "DATE '1900-01-01'",
          want(Date.class, LocalDate.of(2024, 2, 29), LocalDate.of(1900, 1, 1)),
          want(Date.class, LocalDate.of(2024, 2, 29), LocalDate.of(1900, 1, 1))),
      // java.sql.Time holds milliseconds; the value compared is
      // milliseconds since midnight.
      new Column("c_time", "TIME", "TIME '23:59:59.123456'", "TIME '00:00:00'",
          want(Time.class, 86_399_123L, 0L), want(Time.class, 86_399_123L, 0L)),
      new Column("c_timestamp", "TIMESTAMP", "TIMESTAMP '2024-02-29 12:34:56.789012'",
          "TIMESTAMP '1969-12-31 23:59:59.5'",
          want(Timestamp.class, LocalDateTime.parse("2024-02-29T12:34:56.789012"),
              LocalDateTime.parse("1969-12-31T23:59:59.5")),
          want(LocalDateTime.class, LocalDateTime.parse("2024-02-29T12:34:56.789012"),
              LocalDateTime.parse("1969-12-31T23:59:59.5"))),
      // An instant: both drivers give a Timestamp of the same instant.
      new Column("c_timestamptz", "TIMESTAMPTZ", "TIMESTAMPTZ '2024-02-29 12:34:56.789012+02:00'",
          "TIMESTAMPTZ '2000-01-01 00:00:00+00'",
          want(Timestamp.class, Instant.parse("2024-02-29T10:34:56.789012Z"), Instant.parse("2000-01-01T00:00:00Z")),
          want(Timestamp.class, Instant.parse("2024-02-29T10:34:56.789012Z"), Instant.parse("2000-01-01T00:00:00Z"))),
      // Flight: Arrow's PeriodDuration (compared by its text); MySQL: DuckDB's text.
      new Column("c_interval", "INTERVAL", "INTERVAL '1 month 2 days 03:04:05.006'", "INTERVAL '-90 minutes'",
          want(Object.class, "P1M2D PT3H4M5.006S", "P0D PT-1H-30M"),
          want(String.class, "1 month 2 days 03:04:05.006", "-01:30:00")),
      new Column("c_uuid", "UUID", "'550e8400-e29b-41d4-a716-446655440000'", "'00000000-0000-0000-0000-000000000000'",
          want(String.class, "550e8400-e29b-41d4-a716-446655440000", "00000000-0000-0000-0000-000000000000"),
          want(String.class, "550e8400-e29b-41d4-a716-446655440000", "00000000-0000-0000-0000-000000000000")),
      // Flight: a List by label, a java.sql.Array by index.
      new Column("c_list", "INTEGER[]", "[1, 2, NULL, 4]", "[]",
          want(Object.class, Arrays.asList(1, 2, null, 4), List.of()),
          // MySQL: JSON text, as the catalog calls the column json.
          want(String.class, "[1, 2, null, 4]", "[]")),
      // Flight: a Map, in which the driver leaves out NULL fields.
      new Column("c_struct", "STRUCT(a INTEGER, b VARCHAR)", "{'a': 7, 'b': 'x'}", "{'a': NULL, 'b': ''}",
          want(Map.class, map("a", 7, "b", "x"), Map.of("b", "")),
          want(String.class, "{\"a\": 7, \"b\": \"x\"}", "{\"a\": null, \"b\": \"\"}")));

  /** Unsigned extremes, for Connector/J, which reads them correctly. */
  static final String MYSQL_UNSIGNED_SQL =
      "SELECT 255::UTINYINT AS a, 65535::USMALLINT AS b, 4294967295::UINTEGER AS c, "
          + "18446744073709551615::UBIGINT AS d";

  static byte[] blob() {
    byte[] tail = "quiver".getBytes(StandardCharsets.US_ASCII);
    byte[] b = new byte[3 + tail.length];
    b[0] = 0x00;
    b[1] = (byte) 0xFF;
    b[2] = 0x10;
    System.arraycopy(tail, 0, b, 3, tail.length);
    return b;
  }

  static Map<String, Object> map(String k1, Object v1, String k2, Object v2) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put(k1, v1);
    m.put(k2, v2);
    return m;
  }

  static String createSql() {
    String cols = COLUMNS.stream().map(c -> c.name() + " " + c.sqlType()).collect(Collectors.joining(", "));
    return "CREATE OR REPLACE TABLE " + NAME + " (id INTEGER PRIMARY KEY, " + cols + ")";
  }

  static String insertSql() {
    List<String> rows = new ArrayList<>();
    rows.add("(1, " + COLUMNS.stream().map(Column::lit1).collect(Collectors.joining(", ")) + ")");
    rows.add("(2, " + COLUMNS.stream().map(Column::lit2).collect(Collectors.joining(", ")) + ")");
    rows.add("(3" + ", NULL".repeat(COLUMNS.size()) + ")");
    return "INSERT INTO " + NAME + " VALUES " + String.join(", ", rows);
  }

  static String selectSql() {
    return "SELECT " + COLUMNS.stream().map(Column::name).collect(Collectors.joining(", "))
        + " FROM " + NAME + " ORDER BY id";
  }

  /** Creates the table over Flight SQL. */
  static void create(Connection flight) throws SQLException {
    try (Statement st = flight.createStatement()) {
      st.executeUpdate(createSql());
      st.executeUpdate(insertSql());
    }
  }

  /** Checks getObject's result for column c in row (1 or 2; 3 is NULL). */
  static void check(Column c, Want w, int row, Object got) throws SQLException {
    String where = c.name() + " row " + row;
    if (row == 3) {
      assertNull(got, where);
      return;
    }
    Object want = row == 1 ? w.row1() : w.row2();
    assertTrue(w.type().isInstance(got),
        where + ": got " + (got == null ? "null" : got.getClass().getName()) + ", want a " + w.type().getName());
    if (got instanceof java.sql.Array a) {
      got = Arrays.asList((Object[]) a.getArray());
    }
    if (got instanceof byte[] b) {
      assertArrayEquals((byte[]) want, b, where);
    } else if (got instanceof Time t) {
      assertEquals(want, Math.floorMod(t.getTime(), 86_400_000L), where);
    } else if (got instanceof Timestamp ts && want instanceof Instant) {
      assertEquals(want, ts.toInstant(), where);
    } else if (got instanceof Timestamp ts) {
      assertEquals(want, ts.toLocalDateTime(), where);
    } else if (got instanceof Date d) {
      assertEquals(want, d.toLocalDate(), where);
    } else if ((got instanceof Float || got instanceof Double) && want instanceof Double d) {
      assertEquals(d, ((Number) got).doubleValue(), where);
    } else if (got instanceof List<?> || got instanceof Map<?, ?>) {
      assertEquals(want, plain(got), where);
    } else if (c.name().equals("c_interval") && !(got instanceof String)) {
      assertEquals(want, got.toString(), where);
    } else {
      assertEquals(want, got, where);
    }
  }

  /** Nested values with Arrow's Text turned into String. */
  static Object plain(Object v) {
    if (v instanceof List<?> l) {
      List<Object> out = new ArrayList<>();
      l.forEach(x -> out.add(plain(x)));
      return out;
    }
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, x) -> out.put(String.valueOf(k), plain(x)));
      return out;
    }
    if (v == null || v instanceof Number || v instanceof Boolean) {
      return v;
    }
    return v.toString();
  }
}
