package dev.quiver.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.LocalOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;

/**
 * The Java side of {@code quiver-bench parquet}: a JDBC result written to a
 * Parquet file with parquet-hadoop (seed 000, aspect 3). The same
 * WriteSupport serves both drivers, so the driver is the only difference:
 * {@code mysql} (MySQL Connector/J, buffered: the seed's baseline) and
 * {@code flight-jdbc} (the Arrow Flight SQL JDBC driver).
 *
 * <p>It stays up between runs, so that {@code quiver-bench parquet} can
 * alternate it with the other writers on a warm JVM: each line on stdin is
 * one run, {@code CONTENDER<TAB>CODEC<TAB>PATH<TAB>SQL} with CODEC
 * {@code uncompressed} or {@code snappy}; each answer on stdout is
 * {@code {"seconds":S,"rows":N}} or {@code {"error":"…"}}. The first line
 * it prints gives the drivers' versions.
 */
public final class ParquetBench {
  private final Map<String, Connection> conns = new HashMap<>();

  ParquetBench(Cli cli) throws SQLException {
    conns.put("mysql", cli.mysql());
    conns.put("flight-jdbc", cli.flightJdbc());
  }

  /** Writes query's result to path and returns its rows. */
  long write(String contender, String codec, String path, String query) throws Exception {
    Connection conn = conns.get(contender);
    if (conn == null) {
      throw new IllegalArgumentException("unknown contender " + contender + " (have " + conns.keySet() + ")");
    }
    CompressionCodecName cc = CompressionCodecName.fromConf(codec.toUpperCase());
    long rows = 0;
    try (Statement st = conn.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_READ_ONLY);
        ResultSet rs = st.executeQuery(query)) {
      RowWriteSupport ws = new RowWriteSupport(rs.getMetaData());
      try (ParquetWriter<ResultSet> w = new Builder(new LocalOutputFile(Paths.get(path)), ws)
          .withCompressionCodec(cc)
          .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
          .build()) {
        while (rs.next()) {
          w.write(rs);
          rows++;
        }
      }
    }
    return rows;
  }

  /**
   * Writes the current row of a ResultSet as one Parquet record: BIGINT
   * through getLong, VARCHAR through getString, each column optional.
   */
  static final class RowWriteSupport extends WriteSupport<ResultSet> {
    private final MessageType schema;
    private final Cli.Kind[] kinds;
    private final String[] names;
    private RecordConsumer out;

    RowWriteSupport(ResultSetMetaData md) throws SQLException {
      kinds = Cli.kinds(md);
      names = new String[kinds.length];
      Types.MessageTypeBuilder b = Types.buildMessage();
      for (int c = 0; c < kinds.length; c++) {
        names[c] = md.getColumnLabel(c + 1);
        Type t;
        switch (kinds[c]) {
          case LONG:
            t = Types.optional(PrimitiveTypeName.INT64).named(names[c]);
            break;
          case INT:
            t = Types.optional(PrimitiveTypeName.INT32).named(names[c]);
            break;
          case DOUBLE:
            t = Types.optional(PrimitiveTypeName.DOUBLE).named(names[c]);
            break;
          default:
            t = Types.optional(PrimitiveTypeName.BINARY)
                .as(LogicalTypeAnnotation.stringType())
                .named(names[c]);
        }
        b.addField(t);
      }
      schema = b.named("row");
    }

    @Override
    public WriteContext init(Configuration conf) {
      return new WriteContext(schema, Map.of());
    }

    @Override
    public void prepareForWrite(RecordConsumer consumer) {
      out = consumer;
    }

    @Override
    public void write(ResultSet rs) {
      try {
        out.startMessage();
        for (int c = 0; c < kinds.length; c++) {
          int col = c + 1;
          switch (kinds[c]) {
            case LONG: {
              long v = rs.getLong(col);
              if (!rs.wasNull()) {
                out.startField(names[c], c);
                out.addLong(v);
                out.endField(names[c], c);
              }
              break;
            }
            case INT: {
              int v = rs.getInt(col);
              if (!rs.wasNull()) {
                out.startField(names[c], c);
                out.addInteger(v);
                out.endField(names[c], c);
              }
              break;
            }
            case DOUBLE: {
              double v = rs.getDouble(col);
              if (!rs.wasNull()) {
                out.startField(names[c], c);
                out.addDouble(v);
                out.endField(names[c], c);
              }
              break;
            }
            default: {
              String v = rs.getString(col);
              if (v != null) {
                out.startField(names[c], c);
                out.addBinary(Binary.fromString(v));
                out.endField(names[c], c);
              }
            }
          }
        }
        out.endMessage();
      } catch (SQLException e) {
        throw new IllegalStateException("read row: " + e.getMessage(), e);
      }
    }
  }

  static final class Builder extends ParquetWriter.Builder<ResultSet, Builder> {
    private final WriteSupport<ResultSet> ws;

    Builder(OutputFile file, WriteSupport<ResultSet> ws) {
      super(file);
      this.ws = ws;
    }

    @Override
    protected Builder self() {
      return this;
    }

    @Override
    protected WriteSupport<ResultSet> getWriteSupport(Configuration conf) {
      return ws;
    }

    @Override
    protected WriteSupport<ResultSet> getWriteSupport(org.apache.parquet.conf.ParquetConfiguration conf) {
      return ws;
    }
  }

  public static void main(String[] args) throws Exception {
    Cli cli;
    try {
      cli = new Cli(args);
    } catch (IllegalArgumentException e) {
      System.err.println("ParquetBench: " + e.getMessage());
      System.exit(2);
      return;
    }
    ParquetBench b = new ParquetBench(cli);
    String versions = Cli.versionsJson(b.conns.get("mysql"), b.conns.get("flight-jdbc"));
    System.out.println("{\"versions\":" + versions.substring(0, versions.length() - 1)
        + ",\"parquet_hadoop\":" + Cli.quote(org.apache.parquet.Version.VERSION_NUMBER) + "}}");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] p = line.split("\t", 4);
      String answer;
      try {
        if (p.length != 4) {
          throw new IllegalArgumentException("want CONTENDER<TAB>CODEC<TAB>PATH<TAB>SQL, got " + line);
        }
        System.gc();
        long start = System.nanoTime();
        long rows = b.write(p[0], p[1], p[2], p[3]);
        answer = "{\"seconds\":" + (System.nanoTime() - start) / 1e9 + ",\"rows\":" + rows + "}";
      } catch (Exception e) {
        answer = "{\"error\":" + Cli.quote(String.valueOf(e)) + "}";
      }
      System.out.println(answer);
      System.out.flush();
    }
    for (Connection c : b.conns.values()) {
      c.close();
    }
  }
}
