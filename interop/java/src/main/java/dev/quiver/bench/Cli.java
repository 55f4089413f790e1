package dev.quiver.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the bench programs share: their flags, the two JDBC connections,
 * the column kinds they read, and a little JSON.
 */
final class Cli {
  private final Map<String, List<String>> flags = new HashMap<>();

  /**
   * Parses "--name value" pairs; a flag may repeat. The drivers' INFO
   * logging (java.util.logging) is turned off on the way.
   */
  Cli(String[] args) {
    java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 == args.length) {
        throw new IllegalArgumentException("want --name value pairs, got " + args[i]);
      }
      flags.computeIfAbsent(args[i].substring(2), k -> new ArrayList<>()).add(args[++i]);
    }
  }

  String get(String name, String def) {
    List<String> v = flags.get(name);
    return v == null ? def : v.get(v.size() - 1);
  }

  String need(String name) {
    String v = get(name, null);
    if (v == null) {
      throw new IllegalArgumentException("--" + name + " is required");
    }
    return v;
  }

  List<String> all(String name) {
    return flags.getOrDefault(name, List.of());
  }

  int intFlag(String name, int def) {
    return Integer.parseInt(get(name, String.valueOf(def)));
  }

  /**
   * MySQL Connector/J against quiver's MySQL endpoint. Without
   * useCursorFetch, and unless a statement asks to stream, Connector/J
   * buffers the whole result before next() returns: the seed's mode.
   */
  Connection mysql() throws SQLException {
    String user = get("user", "");
    return DriverManager.getConnection("jdbc:mysql://" + need("mysql") + "/main?user="
        + (user.isEmpty() ? "bench" : user) + "&password=" + get("password", "")
        + "&useSSL=false&allowPublicKeyRetrieval=true");
  }

  /** The Arrow Flight SQL JDBC driver against quiver's Flight endpoint. */
  Connection flightJdbc() throws SQLException {
    String url = "jdbc:arrow-flight-sql://" + need("flight") + "/?useEncryption=false";
    String user = get("user", "");
    if (!user.isEmpty()) {
      url += "&user=" + user + "&password=" + get("password", "");
    }
    return DriverManager.getConnection(url);
  }

  /** How a column is read: the Java type its values are cast to. */
  enum Kind {
    LONG,
    INT,
    DOUBLE,
    STRING
  }

  static Kind[] kinds(ResultSetMetaData md) throws SQLException {
    Kind[] out = new Kind[md.getColumnCount()];
    for (int c = 1; c <= out.length; c++) {
      switch (md.getColumnType(c)) {
        case Types.BIGINT:
          out[c - 1] = Kind.LONG;
          break;
        case Types.INTEGER:
          out[c - 1] = Kind.INT;
          break;
        case Types.DOUBLE:
          out[c - 1] = Kind.DOUBLE;
          break;
        case Types.VARCHAR:
        case Types.LONGVARCHAR:
        case Types.CHAR:
          out[c - 1] = Kind.STRING;
          break;
        default:
          throw new SQLException("column " + md.getColumnName(c) + ": type " + md.getColumnTypeName(c)
              + " is not one the bench reads (BIGINT, INTEGER, DOUBLE, VARCHAR)");
      }
    }
    return out;
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"':
          b.append("\\\"");
          break;
        case '\\':
          b.append("\\\\");
          break;
        case '\n':
          b.append("\\n");
          break;
        default:
          if (ch < 0x20) {
            b.append(String.format("\\u%04x", (int) ch));
          } else {
            b.append(ch);
          }
      }
    }
    return b.append('"').toString();
  }

  static String versionsJson(Connection mysql, Connection flight) throws SQLException {
    return "{\"connectorj\":" + quote(mysql.getMetaData().getDriverVersion())
        + ",\"flight_jdbc\":" + quote(flight.getMetaData().getDriverVersion())
        + ",\"java\":" + quote(System.getProperty("java.version")) + "}";
  }
}
