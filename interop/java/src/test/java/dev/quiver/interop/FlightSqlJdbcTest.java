package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The Apache Arrow Flight SQL JDBC driver against quiver's Flight port. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FlightSqlJdbcTest {
  private Connection conn;

  @BeforeAll
  void connect() throws SQLException {
    conn = Env.flight();
    TypedTable.create(conn);
  }

  @AfterAll
  void close() throws SQLException {
    if (conn != null) {
      conn.close();
    }
  }

  private long count(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      assertTrue(rs.next());
      return rs.getLong(1);
    }
  }

  private boolean tableExists(Connection c, String name) throws SQLException {
    try (ResultSet rs = c.getMetaData().getTables(null, null, name, null)) {
      return rs.next();
    }
  }

  // --- statements ---------------------------------------------------------

  @Test
  void executeQuery() throws SQLException {
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT 42 AS answer, 'forty-two' AS words")) {
      ResultSetMetaData md = rs.getMetaData();
      assertEquals(2, md.getColumnCount());
      assertEquals("answer", md.getColumnName(1));
      assertTrue(rs.next());
      assertEquals(42, rs.getInt("answer"));
      assertEquals("forty-two", rs.getString(2));
      assertFalse(rs.next());
    }
  }

  @Test
  void executeUpdateDdlTakesEffectAndDmlCounts() throws SQLException {
    String t = Env.tableName();
    try (Statement st = conn.createStatement(); Connection other = Env.flight()) {
      assertEquals(0, st.executeUpdate("CREATE TABLE " + t + " (id INTEGER, name VARCHAR)"));
      assertTrue(tableExists(other, t), "a second connection sees the new table at once");
      assertEquals(3, st.executeUpdate("INSERT INTO " + t + " VALUES (1, 'a'), (2, 'b'), (3, 'c')"));
      assertEquals(2, st.executeUpdate("UPDATE " + t + " SET name = 'z' WHERE id > 1"));
      assertEquals(1, st.executeUpdate("DELETE FROM " + t + " WHERE id = 1"));
      assertEquals(2, count(other, "SELECT count(*) FROM " + t));
      st.executeUpdate("DROP TABLE " + t);
      assertFalse(tableExists(other, t));
    }
  }

  @Test
  void executeTellsQueriesFromUpdates() throws SQLException {
    String t = Env.tableName();
    try (Statement st = conn.createStatement()) {
      assertFalse(st.execute("CREATE TABLE " + t + " (id INTEGER)"));
      assertFalse(st.execute("INSERT INTO " + t + " VALUES (7)"));
      assertEquals(1, st.getUpdateCount());
      assertTrue(st.execute("SELECT id FROM " + t));
      try (ResultSet rs = st.getResultSet()) {
        assertTrue(rs.next());
        assertEquals(7, rs.getInt(1));
      }
      st.execute("DROP TABLE " + t);
    }
  }

  @Test
  void largeResult() throws SQLException {
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT range AS id FROM range(300000)")) {
      long n = 0;
      long sum = 0;
      while (rs.next()) {
        n++;
        sum += rs.getLong(1);
      }
      assertEquals(300_000, n);
      assertEquals(300_000L * 299_999L / 2, sum);
    }
  }

  // --- prepared statements ------------------------------------------------

  @Test
  void preparedQueryWithParameters() throws SQLException {
    String sql = "SELECT id, c_varchar, c_decimal FROM " + TypedTable.NAME + " WHERE id >= ? AND c_int >= ? ORDER BY id";
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      // The prepared SELECT is a query, not an update: it has a result schema.
      assertEquals(3, ps.getMetaData().getColumnCount());
      ps.setInt(1, 1);
      ps.setInt(2, Integer.MIN_VALUE);
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next());
        assertEquals(1, rs.getInt(1));
        assertEquals("héllo, wörld ✓ 🎉 it's", rs.getString(2));
        assertEquals(new BigDecimal("12345678901234.5678"), rs.getBigDecimal(3));
        assertTrue(rs.next());
        assertEquals(2, rs.getInt(1));
        assertFalse(rs.next());
      }
      ps.setInt(1, 2);
      ps.setInt(2, 0);
      try (ResultSet rs = ps.executeQuery()) {
        assertFalse(rs.next(), "row 2 has c_int < 0");
      }
      ps.setInt(1, 1);
      assertTrue(ps.execute(), "execute() of a prepared SELECT returns a result set");
      try (ResultSet rs = ps.getResultSet()) {
        assertTrue(rs.next());
      }
    }
  }

  @Test
  void preparedInsertWithParametersAndBatches() throws SQLException {
    String t = Env.tableName();
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE " + t
          + " (id BIGINT, name VARCHAR, amount DECIMAL(10,2), day DATE, ts TIMESTAMP, ok BOOLEAN, tm TIME, tz TIMESTAMPTZ)");
    }
    String insert = "INSERT INTO " + t + " VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    try (PreparedStatement ps = conn.prepareStatement(insert)) {
      ps.setLong(1, 1);
      ps.setString(2, "it's one");
      ps.setBigDecimal(3, new BigDecimal("10.25"));
      ps.setDate(4, Date.valueOf(LocalDate.of(2024, 2, 29)));
      ps.setTimestamp(5, Timestamp.valueOf(LocalDateTime.of(2024, 1, 2, 3, 4, 5)));
      ps.setBoolean(6, true);
      ps.setTime(7, java.sql.Time.valueOf(java.time.LocalTime.of(13, 14, 15)));
      ps.setTimestamp(8, Timestamp.from(java.time.Instant.parse("2024-06-01T10:00:00.250Z")));
      assertEquals(1, ps.executeUpdate());

      for (int i = 2; i <= 101; i++) {
        ps.setLong(1, i);
        ps.setString(2, "n" + i);
        ps.setBigDecimal(3, BigDecimal.valueOf(i, 2));
        ps.setNull(4, Types.DATE);
        ps.setNull(5, Types.TIMESTAMP);
        ps.setBoolean(6, i % 2 == 0);
        ps.setNull(7, Types.TIME);
        ps.setNull(8, Types.TIMESTAMP_WITH_TIMEZONE);
        ps.addBatch();
      }
      int[] counts = ps.executeBatch();
      int total = 0;
      for (int c : counts) {
        total += c;
      }
      assertEquals(100, total);
    }
    assertEquals(101, count(conn, "SELECT count(*) FROM " + t));
    try (PreparedStatement ps = conn.prepareStatement("SELECT name, amount, day, ts, ok, tm, tz FROM " + t + " WHERE id = ?")) {
      ps.setLong(1, 1);
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next());
        assertEquals("it's one", rs.getString(1));
        assertEquals(new BigDecimal("10.25"), rs.getBigDecimal(2));
        assertEquals(LocalDate.of(2024, 2, 29), rs.getDate(3).toLocalDate());
        assertEquals(LocalDateTime.of(2024, 1, 2, 3, 4, 5), rs.getTimestamp(4).toLocalDateTime());
        assertTrue(rs.getBoolean(5));
        assertEquals(java.time.LocalTime.of(13, 14, 15), rs.getTime(6).toLocalTime());
        assertEquals(java.time.Instant.parse("2024-06-01T10:00:00.250Z"), rs.getTimestamp(7).toInstant());
      }
    }
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("DROP TABLE " + t);
    }
  }

  @Test
  void preparedDdlRunsOnExecute() throws SQLException {
    String t = Env.tableName();
    try (PreparedStatement ps = conn.prepareStatement("CREATE TABLE " + t + " (x INTEGER)")) {
      ps.execute();
    }
    assertTrue(tableExists(conn, t));
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("DROP TABLE " + t);
    }
  }

  // --- metadata -----------------------------------------------------------

  @Test
  void getCatalogsSchemasAndTableTypes() throws SQLException {
    DatabaseMetaData md = conn.getMetaData();
    List<String> schemas = new ArrayList<>();
    try (ResultSet rs = md.getSchemas()) {
      while (rs.next()) {
        schemas.add(rs.getString("TABLE_SCHEM"));
      }
    }
    assertTrue(schemas.contains("main"), schemas.toString());
    try (ResultSet rs = md.getCatalogs()) {
      assertTrue(rs.next());
    }
    List<String> types = new ArrayList<>();
    try (ResultSet rs = md.getTableTypes()) {
      while (rs.next()) {
        types.add(rs.getString(1));
      }
    }
    assertTrue(types.contains("VIEW"), types.toString());
  }

  @Test
  void getTables() throws SQLException {
    try (ResultSet rs = conn.getMetaData().getTables(null, "main", TypedTable.NAME, null)) {
      assertTrue(rs.next(), "the typed table is listed");
      assertEquals(TypedTable.NAME, rs.getString("TABLE_NAME"));
      assertEquals("main", rs.getString("TABLE_SCHEM"));
      String type = rs.getString("TABLE_TYPE");
      assertTrue(type.equals("BASE TABLE") || type.equals("TABLE"), type);
      assertFalse(rs.next());
    }
    try (ResultSet rs = conn.getMetaData().getTables(null, null, "interop_typed_j%", new String[] {"VIEW"})) {
      assertFalse(rs.next(), "no view matches");
    }
  }

  @Test
  void getColumns() throws SQLException {
    List<String> names = new ArrayList<>();
    List<Integer> jdbcTypes = new ArrayList<>();
    try (ResultSet rs = conn.getMetaData().getColumns(null, "main", TypedTable.NAME, null)) {
      while (rs.next()) {
        assertEquals(names.size() + 1, rs.getInt("ORDINAL_POSITION"));
        names.add(rs.getString("COLUMN_NAME"));
        jdbcTypes.add(rs.getInt("DATA_TYPE"));
      }
    }
    List<String> want = new ArrayList<>(List.of("id"));
    TypedTable.COLUMNS.forEach(c -> want.add(c.name()));
    assertEquals(want, names);
    assertEquals(Types.INTEGER, jdbcTypes.get(0));
    assertEquals(Types.BIGINT, jdbcTypes.get(names.indexOf("c_bigint")));
    assertEquals(Types.VARCHAR, jdbcTypes.get(names.indexOf("c_varchar")));
    assertEquals(Types.DECIMAL, jdbcTypes.get(names.indexOf("c_decimal")));
    assertEquals(Types.DATE, jdbcTypes.get(names.indexOf("c_date")));
    assertEquals(Types.BOOLEAN, jdbcTypes.get(names.indexOf("c_bool")));

    try (ResultSet rs = conn.getMetaData().getColumns(null, "main", TypedTable.NAME, "c_var%")) {
      assertTrue(rs.next());
      assertEquals("c_varchar", rs.getString("COLUMN_NAME"));
      assertFalse(rs.next());
    }
  }

  @Test
  void getPrimaryKeys() throws SQLException {
    try (ResultSet rs = conn.getMetaData().getPrimaryKeys(null, "main", TypedTable.NAME)) {
      assertTrue(rs.next(), "the typed table's primary key is listed");
      assertEquals("id", rs.getString("COLUMN_NAME"));
      assertEquals(1, rs.getInt("KEY_SEQ"));
      assertEquals(TypedTable.NAME, rs.getString("TABLE_NAME"));
      assertFalse(rs.next());
    }
  }

  // --- types --------------------------------------------------------------

  @Test
  void everyTypeThroughGetObject() throws SQLException {
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(TypedTable.selectSql())) {
      for (int row = 1; row <= 3; row++) {
        assertTrue(rs.next(), "row " + row);
        for (TypedTable.Column c : TypedTable.COLUMNS) {
          TypedTable.check(c, c.flight(), row, rs.getObject(c.name()));
        }
      }
      assertFalse(rs.next());
    }
  }

  @Test
  void everyTypeThroughAPreparedStatement() throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(TypedTable.selectSql());
        ResultSet rs = ps.executeQuery()) {
      for (int row = 1; row <= 3; row++) {
        assertTrue(rs.next(), "row " + row);
        int i = 1;
        for (TypedTable.Column c : TypedTable.COLUMNS) {
          TypedTable.check(c, c.flight(), row, rs.getObject(i++));
        }
      }
    }
  }

  // --- errors -------------------------------------------------------------

  @Test
  void errorsAreClearAndTheConnectionGoesOn() throws SQLException {
    try (Statement st = conn.createStatement()) {
      SQLException e = assertThrows(SQLException.class, () -> st.executeQuery("SELEC 1"));
      assertTrue(e.getMessage().contains("syntax error"), e.getMessage());
      e = assertThrows(SQLException.class, () -> st.executeQuery("SELECT * FROM no_such_table_xyz"));
      assertTrue(e.getMessage().contains("no_such_table_xyz"), e.getMessage());
      assertEquals(1, count(conn, "SELECT 1"));
    }
  }

  @Test
  void wrongPasswordIsRefused() {
    String url = "jdbc:arrow-flight-sql://" + Env.get("QUIVER_FLIGHT") + "/?useEncryption=false&user="
        + Env.user() + "&password=wrong";
    assertThrows(SQLException.class, () -> {
      try (Connection c = java.sql.DriverManager.getConnection(url)) {
        count(c, "SELECT 1");
      }
    });
  }
}
