package dev.quiver.bench;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The Java side of {@code quiver-bench jdbc}: seed 000's aspects 1 and 2.
 * Each case (a query and its row count) is read by every contender, in
 * turn, on connections opened once:
 *
 * <ul>
 *   <li>{@code mysql}: MySQL Connector/J, buffered (the seed's baseline);
 *   <li>{@code mysql-stream}: Connector/J streaming row by row
 *       ({@code setFetchSize(Integer.MIN_VALUE)});
 *   <li>{@code flight-jdbc}: the Arrow Flight SQL JDBC driver;
 *   <li>{@code raw}: FlightSqlClient's Arrow batches, end to end;
 *   <li>{@code raw-prefetched}: the same batches drained into memory
 *       first, untimed; only the conversion loop is timed, as the seed's
 *       raw-batch table did.
 * </ul>
 *
 * <p>The JDBC contenders read every column of every row with
 * {@code rs.getObject(i)} cast to the column's Java type; the raw ones
 * resolve each batch's vectors once and read them with typed
 * {@code .get(i)} (a VARCHAR becomes a String, as JDBC gives it). Every
 * value goes into a checksum, so the JIT cannot drop the work; the
 * contenders' checksums and row counts must agree, else the run fails.
 *
 * <p>The contenders alternate (a warm-up of each on a smaller LIMIT, then
 * A B C … A B C …), and every run's seconds are printed as JSON on stdout.
 *
 * <pre>
 * java -cp target/classes:target/bench-lib/* dev.quiver.bench.JdbcBench \
 *     --flight 127.0.0.1:PORT --mysql 127.0.0.1:PORT \
 *     --case num20:1000000:"SELECT * FROM num LIMIT 1000000"
 * </pre>
 */
public final class JdbcBench {
  static final List<String> ALL =
      List.of("mysql", "mysql-stream", "flight-jdbc", "raw", "raw-prefetched");

  /** One timed read: its seconds, rows and checksum. */
  record Run(double seconds, long rows, long checksum) {}

  private final Connection mysql;
  private final Connection flight;
  private final BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE);
  private final FlightClient flightClient;
  private final FlightSqlClient sql;
  private final CallOption[] auth;

  JdbcBench(Cli cli) throws SQLException {
    mysql = cli.mysql();
    flight = cli.flightJdbc();
    String[] hp = cli.need("flight").split(":");
    flightClient =
        FlightClient.builder(allocator, Location.forGrpcInsecure(hp[0], Integer.parseInt(hp[1]))).build();
    String user = cli.get("user", "");
    if (user.isEmpty()) {
      auth = new CallOption[0];
    } else {
      auth = new CallOption[] {flightClient.authenticateBasicToken(user, cli.get("password", "")).orElseThrow()};
    }
    sql = new FlightSqlClient(flightClient);
  }

  Run run(String contender, String query) throws Exception {
    System.gc();
    switch (contender) {
      case "mysql":
        return jdbc(mysql, query, false);
      case "mysql-stream":
        return jdbc(mysql, query, true);
      case "flight-jdbc":
        return jdbc(flight, query, false);
      case "raw":
        return raw(query);
      case "raw-prefetched":
        return rawPrefetched(query);
      default:
        throw new IllegalArgumentException("unknown contender " + contender + " (have " + ALL + ")");
    }
  }

  /** Aspect 1: every cell through getObject, cast to its Java type. */
  static Run jdbc(Connection conn, String query, boolean stream) throws SQLException {
    long start = System.nanoTime();
    long rows = 0;
    long sink = 0;
    try (Statement st = conn.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_READ_ONLY)) {
      if (stream) {
        st.setFetchSize(Integer.MIN_VALUE);
      }
      try (ResultSet rs = st.executeQuery(query)) {
        Cli.Kind[] kinds = Cli.kinds(rs.getMetaData());
        while (rs.next()) {
          for (int c = 1; c <= kinds.length; c++) {
            switch (kinds[c - 1]) {
              case LONG: {
                Long v = (Long) rs.getObject(c);
                if (v != null) {
                  sink += v;
                }
                break;
              }
              case INT: {
                Integer v = (Integer) rs.getObject(c);
                if (v != null) {
                  sink += v;
                }
                break;
              }
              case DOUBLE: {
                Double v = (Double) rs.getObject(c);
                if (v != null) {
                  sink += Double.doubleToLongBits(v);
                }
                break;
              }
              case STRING: {
                String v = (String) rs.getObject(c);
                if (v != null) {
                  sink += v.hashCode();
                }
                break;
              }
            }
          }
          rows++;
        }
      }
    }
    return new Run((System.nanoTime() - start) / 1e9, rows, sink);
  }

  /** Aspect 2, end to end: execute, fetch every endpoint, convert. */
  Run raw(String query) throws Exception {
    long start = System.nanoTime();
    long[] acc = new long[2];
    FlightInfo info = sql.execute(query, auth);
    for (FlightEndpoint ep : info.getEndpoints()) {
      try (FlightStream s = sql.getStream(ep.getTicket(), auth)) {
        while (s.next()) {
          consume(s.getRoot(), acc);
        }
      }
    }
    return new Run((System.nanoTime() - start) / 1e9, acc[0], acc[1]);
  }

  /**
   * Aspect 2 as the seed timed it: the batches are drained into memory
   * first, untimed; the clock runs over the conversion loop alone.
   */
  Run rawPrefetched(String query) throws Exception {
    List<ArrowRecordBatch> batches = new ArrayList<>();
    Schema schema = null;
    try {
      FlightInfo info = sql.execute(query, auth);
      for (FlightEndpoint ep : info.getEndpoints()) {
        try (FlightStream s = sql.getStream(ep.getTicket(), auth)) {
          while (s.next()) {
            schema = s.getRoot().getSchema();
            batches.add(new VectorUnloader(s.getRoot()).getRecordBatch());
          }
        }
      }
      if (schema == null) {
        return new Run(0, 0, 0);
      }
      System.gc();
      long start = System.nanoTime();
      long[] acc = new long[2];
      try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
        VectorLoader loader = new VectorLoader(root);
        for (ArrowRecordBatch b : batches) {
          loader.load(b);
          consume(root, acc);
        }
      }
      return new Run((System.nanoTime() - start) / 1e9, acc[0], acc[1]);
    } finally {
      for (ArrowRecordBatch b : batches) {
        b.close();
      }
    }
  }

  /**
   * Reads every value of a batch, row by row, through vectors resolved
   * once for the batch; acc is {rows, checksum}.
   */
  static void consume(VectorSchemaRoot root, long[] acc) {
    List<FieldVector> fvs = root.getFieldVectors();
    int n = fvs.size();
    int[] kind = new int[n];
    BigIntVector[] longs = new BigIntVector[n];
    IntVector[] ints = new IntVector[n];
    Float8Vector[] doubles = new Float8Vector[n];
    VarCharVector[] strings = new VarCharVector[n];
    for (int c = 0; c < n; c++) {
      FieldVector v = fvs.get(c);
      if (v instanceof BigIntVector) {
        longs[c] = (BigIntVector) v;
        kind[c] = 0;
      } else if (v instanceof IntVector) {
        ints[c] = (IntVector) v;
        kind[c] = 1;
      } else if (v instanceof Float8Vector) {
        doubles[c] = (Float8Vector) v;
        kind[c] = 2;
      } else if (v instanceof VarCharVector) {
        strings[c] = (VarCharVector) v;
        kind[c] = 3;
      } else {
        throw new IllegalStateException("column " + v.getName() + ": " + v.getMinorType()
            + " is not one the bench reads (BIGINT, INT, DOUBLE, VARCHAR)");
      }
    }
    int rowCount = root.getRowCount();
    long sink = 0;
    for (int i = 0; i < rowCount; i++) {
      for (int c = 0; c < n; c++) {
        switch (kind[c]) {
          case 0:
            if (!longs[c].isNull(i)) {
              sink += longs[c].get(i);
            }
            break;
          case 1:
            if (!ints[c].isNull(i)) {
              sink += ints[c].get(i);
            }
            break;
          case 2:
            if (!doubles[c].isNull(i)) {
              sink += Double.doubleToLongBits(doubles[c].get(i));
            }
            break;
          default:
            if (!strings[c].isNull(i)) {
              sink += new String(strings[c].get(i), StandardCharsets.UTF_8).hashCode();
            }
        }
      }
    }
    acc[0] += rowCount;
    acc[1] += sink;
  }

  void close() throws Exception {
    mysql.close();
    flight.close();
    sql.close();
    allocator.close();
  }

  public static void main(String[] args) throws Exception {
    Cli cli;
    try {
      cli = new Cli(args);
    } catch (IllegalArgumentException e) {
      System.err.println("JdbcBench: " + e.getMessage());
      System.exit(2);
      return;
    }
    int reps = cli.intFlag("reps", 3);
    long warmRows = cli.intFlag("warmup-rows", 200_000);
    List<String> contenders = List.of(cli.get("contenders", String.join(",", ALL)).split(","));
    for (String c : contenders) {
      if (!ALL.contains(c)) {
        System.err.println("JdbcBench: unknown contender " + c + " (have " + ALL + ")");
        System.exit(2);
      }
    }
    JdbcBench b = new JdbcBench(cli);
    StringJoiner cases = new StringJoiner(",", "[", "]");
    for (String spec : cli.all("case")) {
      String[] parts = spec.split(":", 3);
      String workload = parts[0];
      long rows = Long.parseLong(parts[1]);
      String query = parts[2];
      System.err.printf("JdbcBench: %s %,d rows%n", workload, rows);
      if (warmRows > 0) {
        String warm = "SELECT * FROM (" + query + ") w LIMIT " + warmRows;
        for (String c : contenders) {
          check(workload, c, b.run(c, warm), Math.min(rows, warmRows), null);
        }
      }
      Map<String, List<Double>> secs = new LinkedHashMap<>();
      Long checksum = null;
      for (int r = 0; r < reps; r++) {
        for (String c : contenders) {
          Run run = b.run(c, query);
          checksum = check(workload, c, run, rows, checksum);
          secs.computeIfAbsent(c, k -> new ArrayList<>()).add(run.seconds());
        }
      }
      StringJoiner sj = new StringJoiner(",", "{", "}");
      for (Map.Entry<String, List<Double>> e : secs.entrySet()) {
        StringJoiner vs = new StringJoiner(",", "[", "]");
        e.getValue().forEach(v -> vs.add(String.valueOf(v)));
        sj.add(Cli.quote(e.getKey()) + ":" + vs);
      }
      cases.add("{\"workload\":" + Cli.quote(workload) + ",\"rows\":" + rows + ",\"seconds\":" + sj
          + ",\"checksum\":" + checksum + "}");
    }
    System.out.println("{\"versions\":" + Cli.versionsJson(b.mysql, b.flight) + ",\"reps\":" + reps
        + ",\"cases\":" + cases + "}");
    b.close();
  }

  /** Fails on a wrong row count or a checksum unlike the others'. */
  static Long check(String workload, String contender, Run run, long rows, Long checksum) {
    if (run.rows() != rows) {
      throw new IllegalStateException(
          workload + ": " + contender + " read " + run.rows() + " rows, want " + rows);
    }
    if (checksum != null && run.checksum() != checksum) {
      throw new IllegalStateException(workload + ": " + contender + "'s checksum " + run.checksum()
          + " differs from the other contenders' " + checksum);
    }
    return run.checksum();
  }
}
