package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Flight SQL JDBC driver cannot read compressed result bodies: its
 * shaded jar lacks Arrow's codecs (apache/arrow-java#926). So a server
 * started with --compression zstd must not apply its default to it, and
 * the driver must read the same results uncompressed. The server's
 * /metrics shows which codec the batches went with.
 */
class FlightSqlCompressionTest {
  private static final int ROWS = 300_000;
  private static final String SQL =
      "SELECT range AS id, 'row ' || (range % 1000) AS s FROM range(" + ROWS + ") ORDER BY id";
  private static final Pattern BATCHES =
      Pattern.compile("(?m)^quiver_flight_result_batches_total\\{codec=\"(\\w+)\"\\} (\\S+)$");

  /**
   * quiver_flight_result_batches_total by codec, from the zstd server, whose
   * /metrics asks its user to log in.
   */
  private static Map<String, Double> resultBatches() throws IOException, InterruptedException {
    String login = Base64.getEncoder().encodeToString(
        (Env.user() + ":" + Env.password()).getBytes(StandardCharsets.UTF_8));
    HttpResponse<String> resp = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://" + Env.get("QUIVER_ZSTD_HTTP") + "/metrics"))
            .header("Authorization", "Basic " + login).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, resp.statusCode(), "GET /metrics");
    Map<String, Double> out = new HashMap<>();
    Matcher m = BATCHES.matcher(resp.body());
    while (m.find()) {
      out.put(m.group(1), Double.parseDouble(m.group(2)));
    }
    return out;
  }

  private static double delta(Map<String, Double> before, Map<String, Double> after, String codec) {
    return after.getOrDefault(codec, 0.0) - before.getOrDefault(codec, 0.0);
  }

  @Test
  void serverDefaultCompressionSparesTheDriver() throws Exception {
    try (Connection c = DriverManager.getConnection(
        Env.flightUrl(Env.get("QUIVER_ZSTD_FLIGHT"), "useEncryption=false"))) {
      Map<String, Double> before = resultBatches();
      long rows = 0;
      try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(SQL)) {
        while (rs.next()) {
          assertEquals(rows, rs.getLong(1), "rows arrive in order");
          assertEquals("row " + (rows % 1000), rs.getString(2));
          rows++;
        }
      }
      Map<String, Double> after = resultBatches();
      assertEquals(ROWS, rows);
      assertTrue(delta(before, after, "none") >= 2, "uncompressed batches: " + after + " after " + before);
      assertEquals(0.0, delta(before, after, "zstd"), "zstd batches: " + after + " after " + before);
    }
  }
}
