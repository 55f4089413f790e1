package dev.quiver.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
// The driver jar is shaded: Arrow Flight's Java client is inside it,
// relocated, and the pom has no other Flight artifact.
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.FlightClient;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.Location;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.grpc.CredentialCallOption;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Flight SQL JDBC driver against three replicas of one Iceberg lake
 * (interop/run.sh: QUIVER_REPLICAS, QUIVER_REPLICA_PIDS,
 * QUIVER_REPLICA_MESSAGES). A plain scan of lake.quiver.events comes back as
 * several endpoints, each listing every replica, endpoint i first replica
 * i mod 3.
 *
 * <p>What the driver (18.2.0) does with locations: it opens every endpoint
 * of a result before reading, each through a new client of the endpoint's
 * first location that it can reach: a fresh connection with the URL's user
 * and password (a new handshake, not the first server's token), and it
 * asks for the stream's schema to be sure the location answers. On any
 * error it tries the next location; only when all failed does the query
 * fail, with the other errors suppressed in the first.
 *
 * <p>The last test kills replica 2 and leaves it dead.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LakeReplicasTest {
  private static final String SCAN = "SELECT * FROM lake.quiver.events";
  private static final int MIN_ENDPOINTS = 4;
  /**
   * Logs each failed handshake with a location at SEVERE, with a stack
   * trace, also when the driver then goes on to the next location.
   */
  private static final Logger HANDSHAKE =
      Logger.getLogger("org.apache.arrow.driver.jdbc.shaded.org.apache.arrow.flight.auth2.ClientHandshakeWrapper");

  private List<String> replicas;
  private long[] pids;
  private int messages;

  @BeforeAll
  void replicas() {
    String addrs = System.getenv("QUIVER_REPLICAS");
    assumeTrue(addrs != null && !addrs.isEmpty(),
        "QUIVER_REPLICAS is not set: the replicas run only under `make interop` (interop/run.sh), "
            + "and only when the replicas' lake was made");
    replicas = List.of(addrs.split(","));
    pids = Arrays.stream(Env.get("QUIVER_REPLICA_PIDS").split(",")).mapToLong(Long::parseLong).toArray();
    assertEquals(replicas.size(), pids.length);
    messages = Integer.parseInt(Env.get("QUIVER_REPLICA_MESSAGES"));
  }

  private Connection connect(int replica) throws SQLException {
    return DriverManager.getConnection(Env.flightUrl(replicas.get(replica), "useEncryption=false"));
  }

  /** Reads SCAN through JDBC and checks every message came exactly once. */
  private void assertScanReadsEveryMessageOnce(Connection conn) throws SQLException {
    BitSet ids = new BitSet(messages);
    Set<String> positions = new HashSet<>();
    long rows = 0;
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(SCAN)) {
      while (rs.next()) {
        rows++;
        long id = rs.getLong("id");
        assertTrue(id >= 0 && id < messages, "id " + id + " out of range");
        assertTrue(!ids.get((int) id), "id " + id + " read twice");
        ids.set((int) id);
        positions.add(rs.getInt("_kafka_partition") + "/" + rs.getLong("_offset"));
      }
    }
    assertEquals(messages, rows);
    assertEquals(messages, ids.cardinality());
    assertEquals(messages, positions.size(), "distinct (_kafka_partition, _offset)");
  }

  @Test
  @Order(1)
  void countsAgreeWithTheLake() throws SQLException {
    try (Connection conn = connect(0);
        Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM lake.quiver.events")) {
      assertTrue(rs.next());
      assertEquals(messages, rs.getLong(1));
      assertEquals(messages, rs.getLong(2));
      assertEquals(0, rs.getLong(3));
      assertEquals(messages - 1, rs.getLong(4));
    }
  }

  @Test
  @Order(2)
  void jdbcReadsTheSplitScanExactlyOnce() throws SQLException {
    try (Connection conn = connect(0)) {
      assertScanReadsEveryMessageOnce(conn);
    }
  }

  @Test
  @Order(3)
  void flightInfoHasSeveralEndpointsListingEveryReplica() throws Exception {
    String[] hostPort = replicas.get(0).split(":");
    try (BufferAllocator alloc = new RootAllocator();
        FlightClient client = FlightClient.builder(alloc,
            Location.forGrpcInsecure(hostPort[0], Integer.parseInt(hostPort[1]))).build()) {
      CredentialCallOption token = client.authenticateBasicToken(Env.user(), Env.password()).orElseThrow();
      // Not closed: closing it would close client a second time.
      FlightSqlClient sql = new FlightSqlClient(client);
      FlightInfo info = sql.execute(SCAN, token);
      List<FlightEndpoint> endpoints = info.getEndpoints();
      assertTrue(endpoints.size() >= MIN_ENDPOINTS, endpoints.size() + " endpoints");
      int n = replicas.size();
      for (int i = 0; i < endpoints.size(); i++) {
        List<String> got = new ArrayList<>();
        for (Location loc : endpoints.get(i).getLocations()) {
          got.add(loc.getUri().toString());
        }
        List<String> want = new ArrayList<>();
        for (int k = 0; k < n; k++) {
          want.add("grpc+tcp://" + replicas.get((i + k) % n));
        }
        assertEquals(want, got, "endpoint " + i);
      }
    }
  }

  /** Kills replica 2 (SIGKILL) and waits until its port refuses connections. */
  private void killReplica2() throws InterruptedException {
    ProcessHandle.of(pids[2]).ifPresent(ProcessHandle::destroyForcibly);
    String[] hostPort = replicas.get(2).split(":");
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (true) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), 1000);
      } catch (IOException refused) {
        return;
      }
      if (System.nanoTime() > deadline) {
        fail("replica 2 (" + replicas.get(2) + ") still accepts connections 10 s after SIGKILL");
      }
      Thread.sleep(50);
    }
  }

  @Test
  @Order(4)
  void jdbcFailsOverToTheNextLocationWhenAReplicaIsDead() throws Exception {
    killReplica2();
    Level level = HANDSHAKE.getLevel();
    HANDSHAKE.setLevel(Level.OFF);
    try (Connection conn = connect(0)) {
      assertScanReadsEveryMessageOnce(conn);
    } finally {
      HANDSHAKE.setLevel(level);
    }
  }
}
