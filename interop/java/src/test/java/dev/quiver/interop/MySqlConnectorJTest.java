package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
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
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * MySQL Connector/J against quiver's MySQL-protocol port: queries,
 * client- and server-side prepared statements, metadata, every common type.
 * The typed table is created over Flight SQL, so both protocols read the
 * same rows.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MySqlConnectorJTest {
  /** Client-side prepared statements (Connector/J's default), then server-side (COM_STMT_*). */
  static final String CLIENT_PREP = "";
  static final String SERVER_PREP = "&useServerPrepStmts=true";

  @BeforeAll
  void createTable() throws SQLException {
    try (Connection flight = Env.flight()) {
      TypedTable.create(flight);
    }
  }

  private Connection mysql(String extra) throws SQLException {
    return Env.mysql(extra);
  }

  @Test
  void connectAndQuery() throws SQLException {
    try (Connection c = mysql(""); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT 1 + 1 AS two, 'x' AS s")) {
      assertTrue(c.isValid(5));
      assertEquals("main", c.getCatalog());
      ResultSetMetaData md = rs.getMetaData();
      assertEquals("two", md.getColumnLabel(1));
      assertTrue(rs.next());
      assertEquals(2, rs.getInt(1));
      assertEquals("x", rs.getString("s"));
      assertFalse(rs.next());
    }
  }

  @Test
  void updatesCountAndDdlTakesEffect() throws SQLException {
    String t = Env.tableName();
    try (Connection c = mysql(""); Statement st = c.createStatement()) {
      assertEquals(0, st.executeUpdate("CREATE TABLE " + t + " (id INTEGER, name VARCHAR)"));
      assertEquals(2, st.executeUpdate("INSERT INTO " + t + " VALUES (1, 'a'), (2, 'b')"));
      assertEquals(1, st.executeUpdate("UPDATE " + t + " SET name = 'z' WHERE id = 2"));
      try (ResultSet rs = st.executeQuery("SELECT name FROM " + t + " ORDER BY id")) {
        assertTrue(rs.next());
        assertEquals("a", rs.getString(1));
        assertTrue(rs.next());
        assertEquals("z", rs.getString(1));
      }
      st.executeUpdate("DROP TABLE " + t);
    }
  }

  @ParameterizedTest(name = "prepared statements{0}")
  @ValueSource(strings = {CLIENT_PREP, SERVER_PREP})
  void preparedStatements(String mode) throws SQLException {
    String t = Env.tableName();
    try (Connection c = mysql(mode)) {
      try (Statement st = c.createStatement()) {
        st.executeUpdate("CREATE TABLE " + t + " (id BIGINT, name VARCHAR, amount DECIMAL(10,2), day DATE, ts TIMESTAMP)");
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?, ?)")) {
        ps.setLong(1, 1);
        ps.setString(2, "it's \"quoted\" \\ here");
        ps.setBigDecimal(3, new BigDecimal("12.34"));
        ps.setDate(4, Date.valueOf(LocalDate.of(2024, 2, 29)));
        ps.setTimestamp(5, Timestamp.valueOf(LocalDateTime.of(2024, 1, 2, 3, 4, 5, 6000)));
        assertEquals(1, ps.executeUpdate());
        for (int i = 2; i <= 20; i++) {
          ps.setLong(1, i);
          ps.setString(2, "n" + i);
          ps.setBigDecimal(3, BigDecimal.valueOf(i));
          ps.setNull(4, Types.DATE);
          ps.setNull(5, Types.TIMESTAMP);
          ps.addBatch();
        }
        int total = 0;
        for (int n : ps.executeBatch()) {
          total += n;
        }
        assertEquals(19, total);
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT id, name, amount, day, ts FROM " + t + " WHERE id = ? OR name = ? ORDER BY id")) {
        ps.setLong(1, 1);
        ps.setString(2, "n7");
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next());
          assertEquals(1L, rs.getLong(1));
          assertEquals("it's \"quoted\" \\ here", rs.getString(2));
          assertEquals(new BigDecimal("12.34"), rs.getBigDecimal(3));
          assertEquals(LocalDate.of(2024, 2, 29), rs.getDate(4).toLocalDate());
          assertEquals(LocalDateTime.of(2024, 1, 2, 3, 4, 5, 6000), rs.getObject(5, LocalDateTime.class));
          assertTrue(rs.next());
          assertEquals(7L, rs.getLong(1));
          rs.getDate(4);
          assertTrue(rs.wasNull());
          assertFalse(rs.next());
        }
        // Reused with new parameters.
        ps.setLong(1, 20);
        ps.setString(2, "none");
        try (ResultSet rs = ps.executeQuery()) {
          assertTrue(rs.next());
          assertEquals(20L, rs.getLong(1));
          assertFalse(rs.next());
        }
      }
      try (Statement st = c.createStatement()) {
        st.executeUpdate("DROP TABLE " + t);
      }
    }
  }

  @ParameterizedTest(name = "every type{0}")
  @ValueSource(strings = {CLIENT_PREP, SERVER_PREP})
  void everyTypeThroughGetObject(String mode) throws SQLException {
    try (Connection c = mysql(mode); PreparedStatement ps = c.prepareStatement(TypedTable.selectSql());
        ResultSet rs = ps.executeQuery()) {
      for (int row = 1; row <= 3; row++) {
        assertTrue(rs.next(), "row " + row);
        for (TypedTable.Column col : TypedTable.COLUMNS) {
          TypedTable.check(col, col.mysql(), row, rs.getObject(col.name()));
        }
        if (row == 1) {
          // java.sql.Time stops at seconds; LocalTime keeps the micros.
          assertEquals(LocalTime.parse("23:59:59.123456"), rs.getObject("c_time", LocalTime.class));
        }
      }
      assertFalse(rs.next());
    }
  }

  @Test
  void unsignedExtremes() throws SQLException {
    try (Connection c = mysql(""); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(TypedTable.MYSQL_UNSIGNED_SQL)) {
      assertTrue(rs.next());
      assertEquals(255, rs.getObject("a"));
      assertEquals(65535, rs.getObject("b"));
      assertEquals(4294967295L, rs.getObject("c"));
      assertEquals(new BigInteger("18446744073709551615"), rs.getObject("d"));
    }
  }

  @Test
  void metadataGetTables() throws SQLException {
    try (Connection c = mysql("")) {
      List<String> tables = new ArrayList<>();
      try (ResultSet rs = c.getMetaData().getTables("main", null, "interop_typed%", new String[] {"TABLE"})) {
        while (rs.next()) {
          tables.add(rs.getString("TABLE_NAME"));
        }
      }
      assertTrue(tables.contains(TypedTable.NAME), tables.toString());
    }
  }

  @Test
  void metadataGetColumns() throws SQLException {
    try (Connection c = mysql("")) {
      List<String> columns = new ArrayList<>();
      try (ResultSet rs = c.getMetaData().getColumns("main", null, TypedTable.NAME, "%")) {
        while (rs.next()) {
          columns.add(rs.getString("COLUMN_NAME"));
        }
      }
      List<String> want = new ArrayList<>(List.of("id"));
      TypedTable.COLUMNS.forEach(col -> want.add(col.name()));
      assertEquals(want, columns);
    }
  }

  @Test
  void metadataGetPrimaryKeys() throws SQLException {
    try (Connection c = mysql(""); ResultSet rs = c.getMetaData().getPrimaryKeys("main", null, TypedTable.NAME)) {
      assertTrue(rs.next(), "the primary key is listed");
      assertEquals("id", rs.getString("COLUMN_NAME"));
      assertFalse(rs.next());
    }
  }

  @Test
  void metadataGetCatalogsAndProduct() throws SQLException {
    try (Connection c = mysql("")) {
      DatabaseMetaData md = c.getMetaData();
      assertTrue(md.getDatabaseProductVersion().length() > 0);
      List<String> catalogs = new ArrayList<>();
      try (ResultSet rs = md.getCatalogs()) {
        while (rs.next()) {
          catalogs.add(rs.getString(1));
        }
      }
      assertTrue(catalogs.contains("main"), catalogs.toString());
    }
  }

  @Test
  void resultSetMetadataTypes() throws SQLException {
    try (Connection c = mysql(""); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT c_int, c_bigint, c_varchar, c_decimal, c_date, c_timestamp, c_blob FROM "
            + TypedTable.NAME + " LIMIT 1")) {
      ResultSetMetaData md = rs.getMetaData();
      assertEquals(Types.INTEGER, md.getColumnType(1));
      assertEquals(Types.BIGINT, md.getColumnType(2));
      assertEquals(Types.VARCHAR, md.getColumnType(3));
      assertEquals(Types.DECIMAL, md.getColumnType(4));
      assertEquals(4, md.getScale(4));
      assertEquals(Types.DATE, md.getColumnType(5));
      assertEquals(Types.TIMESTAMP, md.getColumnType(6));
      assertTrue(md.getColumnType(7) == Types.LONGVARBINARY || md.getColumnType(7) == Types.BLOB
          || md.getColumnType(7) == Types.VARBINARY, "blob type " + md.getColumnType(7));
    }
  }

  @Test
  void errors() throws SQLException {
    try (Connection c = mysql(""); Statement st = c.createStatement()) {
      SQLException e = assertThrows(SQLException.class, () -> st.execute("SELEC 1"));
      assertEquals(1064, e.getErrorCode(), e.getMessage());
      e = assertThrows(SQLException.class, () -> st.executeQuery("SELECT * FROM no_such_table_xyz"));
      assertEquals(1146, e.getErrorCode(), e.getMessage());
      assertEquals("42S02", e.getSQLState());
      try (ResultSet rs = st.executeQuery("SELECT 42")) {
        assertTrue(rs.next());
        assertEquals(42, rs.getInt(1));
      }
    }
  }

  @Test
  void wrongPassword() {
    String url = Env.mysqlUrl("").replace("password=" + Env.password(), "password=wrong");
    SQLException e = assertThrows(SQLException.class, () -> java.sql.DriverManager.getConnection(url).close());
    assertEquals(1045, e.getErrorCode(), e.getMessage());
  }
}
