package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.fail;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;

/**
 * The servers interop/run.sh started, from QUIVER_FLIGHT, QUIVER_MYSQL,
 * QUIVER_USER, QUIVER_PASSWORD, QUIVER_TLS_FLIGHT and QUIVER_TLS_CA.
 */
final class Env {
  private Env() {}

  static String get(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) {
      fail(name + " is not set: run this suite through `make interop` (interop/run.sh), which starts quiver");
    }
    return v;
  }

  static String user() {
    return get("QUIVER_USER");
  }

  static String password() {
    return get("QUIVER_PASSWORD");
  }

  /** A Flight SQL JDBC URL for HOST:PORT with the given extra options. */
  static String flightUrl(String hostPort, String options) {
    return "jdbc:arrow-flight-sql://" + hostPort + "/?" + options
        + "&user=" + user() + "&password=" + password();
  }

  static Connection flight() throws SQLException {
    return DriverManager.getConnection(flightUrl(get("QUIVER_FLIGHT"), "useEncryption=false"));
  }

  static String mysqlUrl(String extra) {
    String addr = System.getenv("QUIVER_MYSQL");
    if (addr == null || addr.isEmpty()) {
      fail("QUIVER_MYSQL is empty: `quiver serve --mysql 127.0.0.1:0` did not announce "
          + "'quiver: mysql listening on ADDR', so the MySQL-protocol endpoint is not live in this build");
    }
    return "jdbc:mysql://" + addr + "/main?user=" + user() + "&password=" + password()
        + "&useSSL=false&allowPublicKeyRetrieval=true" + extra;
  }

  static Connection mysql(String extra) throws SQLException {
    return DriverManager.getConnection(mysqlUrl(extra));
  }

  /** A fresh table name. */
  static String tableName() {
    return "j_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }
}
