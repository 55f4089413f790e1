package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * TLS on and off: a second quiver serves Flight with the self-signed
 * certificate run.sh made (QUIVER_TLS_FLIGHT, QUIVER_TLS_CA).
 */
class FlightSqlTlsTest {

  static String tlsAddr() {
    return Env.get("QUIVER_TLS_FLIGHT");
  }

  static String[] tlsOptions() {
    String ca = URLEncoder.encode(Env.get("QUIVER_TLS_CA"), StandardCharsets.UTF_8);
    return new String[] {
      "useEncryption=true&disableCertificateVerification=true",
      "useEncryption=true&tlsRootCerts=" + ca,
    };
  }

  private static String hello(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 'hello over ' || 'tls' AS s")) {
      assertTrue(rs.next());
      return rs.getString(1);
    }
  }

  @ParameterizedTest
  @MethodSource("tlsOptions")
  void tlsOn(String options) throws SQLException {
    try (Connection c = DriverManager.getConnection(Env.flightUrl(tlsAddr(), options))) {
      assertEquals("hello over tls", hello(c));
    }
  }

  @Test
  void tlsOffOnThePlainServer() throws SQLException {
    try (Connection c = Env.flight()) {
      assertEquals("hello over tls", hello(c));
    }
  }

  @Test
  void plainTextToTheTlsPortFails() {
    assertThrows(SQLException.class, () -> {
      try (Connection c = DriverManager.getConnection(Env.flightUrl(tlsAddr(), "useEncryption=false"))) {
        hello(c);
      }
    });
  }

  @Test
  void untrustedCertificateIsRefused() {
    // Encryption with verification on and no trust in the self-signed CA.
    assertThrows(SQLException.class, () -> {
      try (Connection c = DriverManager.getConnection(Env.flightUrl(tlsAddr(), "useEncryption=true&useSystemTrustStore=false"))) {
        hello(c);
      }
    });
  }
}
