package flightsql

import (
	"context"
	"net"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/quiverdata/quiver/ipcx"
)

// CompressionHeader is the call header a client sets to choose result
// compression: lz4, zstd, none or auto.
const CompressionHeader = "x-quiver-compression"

// optCompression is the session option with the same meaning.
const optCompression = "compression"

// The result compression metrics.
var (
	resultBatches = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_flight_result_batches_total",
		Help: "Result record batches sent, by the codec their body went with (none, lz4, zstd).",
	}, []string{"codec"})
	resultWireBytes = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_flight_result_wire_bytes_total",
		Help: "IPC bytes of result record batches as sent (after compression), by codec.",
	}, []string{"codec"})
)

func observeBatch(st ipcx.BatchStat) {
	c := st.Codec.String()
	resultBatches.WithLabelValues(c).Inc()
	resultWireBytes.WithLabelValues(c).Add(float64(st.WireBytes))
}

// ValidCompression reports whether name is a compression quiver accepts:
// none (or empty), lz4 (or lz4_frame), zstd or auto.
func ValidCompression(name string) bool {
	_, err := ipcx.ParseCompression(name)
	return err == nil
}

// noDefaultCompression are the gRPC user agents of clients whose stock
// Arrow readers cannot read compressed bodies, so a server default other
// than none would break them:
//   - grpc-java: the Flight SQL JDBC driver shades Arrow without its codecs
//     ("Please add arrow-compression module", apache/arrow-java#926), and
//     Arrow Java's FlightClient reads them only with arrow-compression on
//     the classpath;
//   - grpc-dotnet: Arrow .NET's Flight client has no codec factory unless
//     its caller passes one.
//
// They still get what they ask for with the header or the session option.
var noDefaultCompression = []string{"grpc-java", "grpc-dotnet"}

// cannotDecompress returns the call's user agent when it names one of
// noDefaultCompression, else "".
func cannotDecompress(md metadata.MD) string {
	for _, ua := range md.Get("user-agent") {
		for _, p := range noDefaultCompression {
			if strings.HasPrefix(ua, p) {
				return ua
			}
		}
	}
	return ""
}

// compressionFor picks the result compression of a call: the call header
// first, then the session option, then the server default (Options
// .Compression), else none. Clients that ask for nothing get the server
// default (ADBC, pyarrow, arrow-go), except those that could not read it
// (noDefaultCompression), which get none. A value quiver does not know is
// the client's mistake: InvalidArgument.
func (s *Server) compressionFor(ctx context.Context) (ipcx.Compression, error) {
	name, from := "", ""
	md, _ := metadata.FromIncomingContext(ctx) // nil when none: Get finds nothing
	if v := md.Get(CompressionHeader); len(v) > 0 && v[0] != "" {
		name, from = v[0], "header "+CompressionHeader
	}
	if name == "" {
		if sess, err := session.GetSessionFromContext(ctx); err == nil && sess != nil {
			if v := sess.GetSessionOption(optCompression); v != nil && v.GetStringValue() != "" {
				name, from = v.GetStringValue(), "session option "+optCompression
			}
		}
	}
	if name == "" {
		name, from = s.opts.Compression, "server default"
		if ua := cannotDecompress(md); ua != "" && name != "" {
			s.log.Debug("server default compression not applied: the client's Arrow reader cannot decompress", "user_agent", ua, "default", name)
			name = "none"
		}
	}
	comp, err := ipcx.ParseCompression(name)
	if err != nil {
		return comp, invalidf("%s: unknown compression %q: use lz4, zstd, none or auto", from, strings.TrimSpace(name))
	}
	comp.Observe = observeBatch
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if host, _, err := net.SplitHostPort(p.Addr.String()); err == nil {
			comp.Peer = host
		}
	}
	return comp, nil
}

// resultWriter returns the IPC writer of a result stream, compressing as
// the call asks (compressionFor).
func (s *Server) resultWriter(ctx context.Context, stream ipcx.MessageSender, schema *arrow.Schema) (*ipcx.Writer, error) {
	comp, err := s.compressionFor(ctx)
	if err != nil {
		return nil, err
	}
	return ipcx.NewCompressedWriter(stream, comp, ipc.WithSchema(schema), ipc.WithAllocator(s.mem)), nil
}
