package flightsql_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// Raw DoPut and DoExchange streams: FlightData messages as a hostile or
// broken client may send them, through gRPC's generated Flight client,
// past every check a Flight SQL client library makes.

// Descriptor choices of a raw message.
const (
	descNone               = iota // no flight_descriptor
	descEmptyCmd                  // CMD with no bytes
	descPath                      // a PATH descriptor
	descGarbage                   // CMD of garbage bytes
	descUnknownAny                // an Any of a type nobody registered
	descNotPut                    // an Any of a command DoPut does not take
	descIngest                    // CommandStatementIngest, create or append
	descIngestReplace             // CommandStatementIngest, replace
	descUpdate                    // CommandStatementUpdate
	descPreparedUpdate            // CommandPreparedStatementUpdate, a valid handle
	descPreparedQuery             // CommandPreparedStatementQuery, a valid handle
	descPreparedForged            // CommandPreparedStatementUpdate, a forged handle
	descPreparedListUpdate        // CommandPreparedStatementUpdate of a LIST<BIGINT> parameter
	descKinds
)

// Payload choices of a raw message: an IPC message or none.
const (
	payNone          = iota
	payFlatSchema    // BIGINT, VARCHAR
	payFlatBatch     // three rows of it
	payNestedSchema  // LIST<BIGINT>
	payNestedBatch   // three rows of it
	payParamSchema   // one BIGINT parameter
	payParamBatch    // two parameter rows
	payGarbage       // header and body from the input
	payTruncatedBody // a valid message, its body cut short
	payFlippedHeader // a valid message, one header byte changed
	payKinds
)

// rawMsg is one FlightData message of a raw stream, as the fuzz input
// describes it.
type rawMsg struct {
	desc, pay byte
	// arg picks the valid message that payTruncatedBody and
	// payFlippedHeader change, and where.
	arg byte
	// garbage is the command bytes (descGarbage), or header then body
	// (payGarbage), split at arg.
	garbage []byte
	meta    bool // with app_metadata
}

// rawInput is a fuzz input: a DoPut or DoExchange call and its messages.
type rawInput struct {
	exchange bool
	msgs     []rawMsg
}

// maxRawMsgs bounds a call's messages, so each input stays quick.
const maxRawMsgs = 8

// encode is the fuzz input that decodes to in: the seeds are written so.
func (in rawInput) encode() []byte {
	b := []byte{0}
	if in.exchange {
		b[0] = 1
	}
	for _, m := range in.msgs {
		flags := m.desc
		if m.meta {
			flags |= 0x80
		}
		b = append(b, flags, m.pay, m.arg, byte(len(m.garbage)))
		b = append(b, m.garbage...)
	}
	return b
}

// decodeRaw reads any bytes as a rawInput; each message takes four bytes
// and its garbage.
func decodeRaw(b []byte) rawInput {
	var in rawInput
	if len(b) == 0 {
		return in
	}
	in.exchange = b[0]&1 == 1
	b = b[1:]
	for len(b) >= 4 && len(in.msgs) < maxRawMsgs {
		m := rawMsg{desc: b[0] & 0x7f % descKinds, meta: b[0]&0x80 != 0, pay: b[1] % payKinds, arg: b[2]}
		n := min(int(b[3]), len(b)-4)
		m.garbage = b[4 : 4+n]
		b = b[4+n:]
		in.msgs = append(in.msgs, m)
	}
	return in
}

// rawFixture is what raw messages are made of: valid IPC messages, and
// commands naming the fixture's tables and prepared statements.
type rawFixture struct {
	ipc map[byte]*flight.FlightData // by payload kind, the valid ones
	// cmds are the encoded commands by descriptor kind (valid ones).
	cmds map[byte][]byte
}

// ipcMessages writes recs (one schema) with arrow-go's Flight writer and
// returns the messages: the schema, then one per batch.
func ipcMessages(t testing.TB, recs ...arrow.RecordBatch) []*flight.FlightData {
	t.Helper()
	var out capture
	w := flight.NewRecordWriter(&out, ipc.WithSchema(recs[0].Schema()))
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.msgs
}

type capture struct{ msgs []*flight.FlightData }

func (c *capture) Send(fd *flight.FlightData) error {
	c.msgs = append(c.msgs, proto.Clone(fd).(*flight.FlightData))
	return nil
}

func anyCmd(t testing.TB, m proto.Message) []byte {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newRawFixture builds the IPC messages, and creates the tables and
// prepared statements the commands name, through c.
func newRawFixture(t testing.TB, c *client.Client) *rawFixture {
	t.Helper()
	mem := memory.NewGoAllocator()
	fx := &rawFixture{ipc: map[byte]*flight.FlightData{}, cmds: map[byte][]byte{}}

	flat := flatBatches(mem, 0, 1, 3)
	defer releaseAll(flat)
	msgs := ipcMessages(t, flat...)
	fx.ipc[payFlatSchema], fx.ipc[payFlatBatch] = msgs[0], msgs[1]

	lb := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}}, nil))
	defer lb.Release()
	list := lb.Field(0).(*array.ListBuilder)
	for i := range 3 {
		list.Append(true)
		for k := 0; k <= i; k++ {
			list.ValueBuilder().(*array.Int64Builder).Append(int64(k))
		}
	}
	nested := lb.NewRecordBatch()
	defer nested.Release()
	msgs = ipcMessages(t, nested)
	fx.ipc[payNestedSchema], fx.ipc[payNestedBatch] = msgs[0], msgs[1]

	pb1 := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil))
	defer pb1.Release()
	pb1.Field(0).(*array.Int64Builder).AppendValues([]int64{7, 8}, nil)
	params := pb1.NewRecordBatch()
	defer params.Release()
	msgs = ipcMessages(t, params)
	fx.ipc[payParamSchema], fx.ipc[payParamBatch] = msgs[0], msgs[1]

	ctx := c.Context(context.Background())
	for _, ddl := range []string{"CREATE TABLE fz_upd (i BIGINT)", "CREATE TABLE fz_list (l BIGINT[])"} {
		if _, err := c.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	prepare := func(sql string) []byte {
		p, err := c.SQL().Prepare(ctx, sql)
		if err != nil {
			t.Fatalf("prepare %s: %v", sql, err)
		}
		return p.Handle()
	}
	create := &pb.CommandStatementIngest_TableDefinitionOptions{
		IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_CREATE,
		IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND,
	}
	replace := &pb.CommandStatementIngest_TableDefinitionOptions{
		IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_CREATE,
		IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_REPLACE,
	}
	fx.cmds[descIngest] = anyCmd(t, &pb.CommandStatementIngest{Table: "fz_ingest", TableDefinitionOptions: create})
	fx.cmds[descIngestReplace] = anyCmd(t, &pb.CommandStatementIngest{Table: "fz_replace", TableDefinitionOptions: replace})
	fx.cmds[descUpdate] = anyCmd(t, &pb.CommandStatementUpdate{Query: "INSERT INTO fz_upd VALUES (1)"})
	fx.cmds[descPreparedUpdate] = anyCmd(t, &pb.CommandPreparedStatementUpdate{PreparedStatementHandle: prepare("INSERT INTO fz_upd VALUES (?)")})
	fx.cmds[descPreparedListUpdate] = anyCmd(t, &pb.CommandPreparedStatementUpdate{PreparedStatementHandle: prepare("INSERT INTO fz_list VALUES (?)")})
	fx.cmds[descPreparedQuery] = anyCmd(t, &pb.CommandPreparedStatementQuery{PreparedStatementHandle: prepare("SELECT ? + 1 AS x")})
	fx.cmds[descNotPut] = anyCmd(t, &pb.CommandGetCatalogs{})
	unknown, err := proto.Marshal(&anypb.Any{TypeUrl: "type.googleapis.com/quiver.NoSuchCommand", Value: []byte{8, 1}})
	if err != nil {
		t.Fatal(err)
	}
	fx.cmds[descUnknownAny] = unknown
	return fx
}

// message builds the FlightData m describes.
func (fx *rawFixture) message(t testing.TB, m rawMsg) *flight.FlightData {
	fd := &flight.FlightData{}
	switch m.desc {
	case descNone:
	case descEmptyCmd:
		fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD}
	case descPath:
		fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"fz_ingest"}}
	case descGarbage:
		fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: m.garbage}
	case descPreparedForged:
		fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD,
			Cmd: anyCmd(t, &pb.CommandPreparedStatementUpdate{PreparedStatementHandle: m.garbage})}
	default:
		fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: fx.cmds[m.desc]}
	}
	// The valid messages a changed one starts from.
	valid := []byte{payFlatSchema, payFlatBatch, payNestedSchema, payNestedBatch, payParamSchema, payParamBatch}
	switch m.pay {
	case payNone:
	case payGarbage:
		cut := min(int(m.arg), len(m.garbage))
		fd.DataHeader, fd.DataBody = m.garbage[:cut], m.garbage[cut:]
	case payTruncatedBody:
		src := fx.ipc[valid[int(m.arg)%len(valid)]]
		fd.DataHeader = src.DataHeader
		fd.DataBody = src.DataBody[:len(src.DataBody)*int(m.arg>>4)/16]
	case payFlippedHeader:
		src := fx.ipc[valid[int(m.arg)%len(valid)]]
		fd.DataHeader = append([]byte(nil), src.DataHeader...)
		fd.DataBody = src.DataBody
		if len(fd.DataHeader) > 0 {
			pos := 0
			if len(m.garbage) > 0 {
				pos = int(m.garbage[0])
			}
			fd.DataHeader[(pos*7+int(m.arg))%len(fd.DataHeader)] ^= m.arg | 1
		}
	default:
		src := fx.ipc[m.pay]
		fd.DataHeader, fd.DataBody = src.DataHeader, src.DataBody
	}
	if m.meta {
		fd.AppMetadata = []byte("app metadata")
	}
	return fd
}

// rawServer is a server, a raw Flight client on it, and the fixture.
type rawServer struct {
	srv    *server.Server
	client *client.Client
	fx     *rawFixture
	flight pb.FlightServiceClient
	health healthpb.HealthClient
}

func startRawServer(t testing.TB, cfg server.Config) *rawServer {
	t.Helper()
	srv := testutil.StartServer(t, cfg)
	c := testutil.Dial(t, srv, client.Config{})
	conn, err := grpc.NewClient(srv.FlightAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawServer{srv: srv, client: c, fx: newRawFixture(t, c),
		flight: pb.NewFlightServiceClient(conn), health: healthpb.NewHealthClient(conn)}
}

// rawCallTimeout bounds one raw call: the server must answer every
// stream once the client has sent it, and quickly; past this it hangs.
const rawCallTimeout = 30 * time.Second

// call sends in's messages, half-closes, reads the answers to the end and
// returns the call's final error (nil: success).
func (rs *rawServer) call(t testing.TB, in rawInput) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	type stream interface {
		Send(*flight.FlightData) error
		CloseSend() error
		RecvMsg(any) error
	}
	var s stream
	var err error
	if in.exchange {
		s, err = rs.flight.DoExchange(ctx)
	} else {
		s, err = rs.flight.DoPut(ctx)
	}
	if err != nil {
		return err
	}
	for _, m := range in.msgs {
		if err := s.Send(rs.fx.message(t, m)); err != nil {
			break // the server ended the call: RecvMsg says how
		}
	}
	s.CloseSend()
	for {
		var res pb.PutResult
		if err = s.RecvMsg(&res); err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if ctx.Err() != nil {
		t.Fatalf("%+v: no answer in %v: %v", in, rawCallTimeout, err)
	}
	return err
}

// check fails t unless err is a success or a status error that is not a
// server fault, no panic was recovered, and the server still answers.
func (rs *rawServer) check(t testing.TB, in rawInput, err error, panicsBefore float64) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("%+v: got %v, want a gRPC status", in, err)
	}
	switch st.Code() {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DeadlineExceeded:
		t.Fatalf("%+v: got %v, want success or the client's error", in, err)
	}
	if p := flightPanics(t); p != panicsBefore {
		t.Fatalf("%+v: the server recovered %v panics; see its log", in, p-panicsBefore)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, herr := rs.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if herr != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("%+v: health after the call: %v, %v", in, resp.GetStatus(), herr)
	}
}

func flightPanics(t testing.TB) float64 {
	v, _ := testutil.Metric(t, "quiver_flight_panics_total", nil)
	return v
}

// rawSeeds covers each kind of stream by name: missing, empty and garbage
// descriptors, each valid command, schema after batches, batches without
// a schema, the descriptor on a later message, and broken IPC.
func rawSeeds() map[string]rawInput {
	msg := func(desc, pay byte) rawMsg { return rawMsg{desc: desc, pay: pay} }
	garbage := []byte("\x0a\x05hello\x12\x03abc\xff\xff\xff\xff")
	return map[string]rawInput{
		"schema, no descriptor":             {msgs: []rawMsg{msg(descNone, payFlatSchema), msg(descNone, payFlatBatch)}},
		"no messages":                       {},
		"empty command":                     {msgs: []rawMsg{msg(descEmptyCmd, payFlatSchema)}},
		"path descriptor":                   {msgs: []rawMsg{msg(descPath, payFlatSchema), msg(descNone, payFlatBatch)}},
		"garbage command":                   {msgs: []rawMsg{{desc: descGarbage, pay: payFlatSchema, garbage: garbage}}},
		"unknown Any":                       {msgs: []rawMsg{msg(descUnknownAny, payFlatSchema)}},
		"not a DoPut command":               {msgs: []rawMsg{msg(descNotPut, payFlatSchema)}},
		"ingest":                            {msgs: []rawMsg{msg(descIngest, payFlatSchema), msg(descNone, payFlatBatch), msg(descNone, payFlatBatch)}},
		"ingest nested":                     {msgs: []rawMsg{msg(descIngestReplace, payNestedSchema), msg(descNone, payNestedBatch)}},
		"ingest, no batches":                {msgs: []rawMsg{msg(descIngest, payFlatSchema)}},
		"ingest, descriptor only":           {msgs: []rawMsg{msg(descIngest, payNone)}},
		"ingest, batch of another schema":   {msgs: []rawMsg{msg(descIngest, payFlatSchema), msg(descNone, payNestedBatch)}},
		"nested schema, flat batch":         {msgs: []rawMsg{msg(descIngestReplace, payNestedSchema), msg(descNone, payFlatBatch)}},
		"update":                            {msgs: []rawMsg{msg(descUpdate, payNone)}},
		"update with data":                  {msgs: []rawMsg{msg(descUpdate, payFlatSchema), msg(descNone, payFlatBatch)}},
		"prepared update":                   {msgs: []rawMsg{msg(descPreparedUpdate, payParamSchema), msg(descNone, payParamBatch)}},
		"prepared update, wrong params":     {msgs: []rawMsg{msg(descPreparedUpdate, payNestedSchema), msg(descNone, payNestedBatch)}},
		"prepared list update":              {msgs: []rawMsg{msg(descPreparedListUpdate, payNestedSchema), msg(descNone, payNestedBatch)}},
		"prepared list update, flat batch":  {msgs: []rawMsg{msg(descPreparedListUpdate, payNestedSchema), msg(descNone, payFlatBatch)}},
		"prepared query, flat batch":        {msgs: []rawMsg{msg(descPreparedQuery, payNestedSchema), msg(descNone, payFlatBatch)}},
		"prepared query":                    {msgs: []rawMsg{msg(descPreparedQuery, payParamSchema), msg(descNone, payParamBatch)}},
		"prepared, forged handle":           {msgs: []rawMsg{{desc: descPreparedForged, pay: payParamSchema, garbage: garbage}}},
		"schema after batches":              {msgs: []rawMsg{msg(descIngest, payFlatBatch), msg(descNone, payFlatSchema), msg(descNone, payFlatBatch)}},
		"batches without a schema":          {msgs: []rawMsg{msg(descIngest, payFlatBatch), msg(descNone, payFlatBatch)}},
		"prepared, batches without schema":  {msgs: []rawMsg{msg(descPreparedUpdate, payParamBatch)}},
		"two schemas":                       {msgs: []rawMsg{msg(descIngest, payFlatSchema), msg(descNone, payNestedSchema), msg(descNone, payFlatBatch)}},
		"descriptor on a later message":     {msgs: []rawMsg{msg(descNone, payFlatSchema), msg(descIngest, payFlatBatch)}},
		"garbage IPC":                       {msgs: []rawMsg{{desc: descIngest, pay: payGarbage, arg: 4, garbage: garbage}}},
		"garbage batch after schema":        {msgs: []rawMsg{msg(descIngest, payFlatSchema), {desc: descNone, pay: payGarbage, arg: 3, garbage: garbage}}},
		"truncated body":                    {msgs: []rawMsg{msg(descIngest, payFlatSchema), {desc: descNone, pay: payTruncatedBody, arg: 0x81}}},
		"truncated nested body":             {msgs: []rawMsg{msg(descIngestReplace, payNestedSchema), {desc: descNone, pay: payTruncatedBody, arg: 0x33}}},
		"flipped schema header":             {msgs: []rawMsg{{desc: descIngest, pay: payFlippedHeader, arg: 0x10}, msg(descNone, payFlatBatch)}},
		"flipped batch header":              {msgs: []rawMsg{msg(descIngest, payFlatSchema), {desc: descNone, pay: payFlippedHeader, arg: 0x21, garbage: []byte{9}}}},
		"truncated param body":              {msgs: []rawMsg{msg(descPreparedUpdate, payParamSchema), {desc: descNone, pay: payTruncatedBody, arg: 0x45}}},
		"app metadata":                      {msgs: []rawMsg{{desc: descIngest, pay: payFlatSchema, meta: true}, {desc: descNone, pay: payFlatBatch, meta: true}}},
		"exchange, no descriptor":           {exchange: true, msgs: []rawMsg{msg(descNone, payFlatSchema), msg(descNone, payFlatBatch)}},
		"exchange, ingest":                  {exchange: true, msgs: []rawMsg{msg(descIngest, payFlatSchema), msg(descNone, payFlatBatch)}},
		"exchange, garbage":                 {exchange: true, msgs: []rawMsg{{desc: descGarbage, pay: payGarbage, arg: 2, garbage: garbage}}},
		"exchange, no messages":             {exchange: true},
		"exchange, prepared query":          {exchange: true, msgs: []rawMsg{msg(descPreparedQuery, payParamSchema), msg(descNone, payParamBatch)}},
		"exchange, batches without schema":  {exchange: true, msgs: []rawMsg{msg(descUpdate, payFlatBatch)}},
		"exchange, descriptor later":        {exchange: true, msgs: []rawMsg{msg(descNone, payFlatSchema), msg(descUpdate, payFlatBatch)}},
		"exchange, truncated body":          {exchange: true, msgs: []rawMsg{msg(descIngest, payFlatSchema), {desc: descNone, pay: payTruncatedBody, arg: 0x81}}},
		"exchange, path descriptor":         {exchange: true, msgs: []rawMsg{msg(descPath, payFlatSchema)}},
		"exchange, empty command":           {exchange: true, msgs: []rawMsg{msg(descEmptyCmd, payNone)}},
		"exchange, not a DoPut command":     {exchange: true, msgs: []rawMsg{msg(descNotPut, payNone)}},
		"exchange, unknown Any":             {exchange: true, msgs: []rawMsg{msg(descUnknownAny, payFlatSchema)}},
		"exchange, flipped header":          {exchange: true, msgs: []rawMsg{{desc: descIngest, pay: payFlippedHeader, arg: 0x10}}},
		"exchange, prepared, forged handle": {exchange: true, msgs: []rawMsg{{desc: descPreparedForged, pay: payParamSchema, garbage: garbage}}},
	}
}

// fuzzRaw drives the inputs into a live server, started once: every call
// ends with success or a status error of the client's making, within
// rawCallTimeout, with no panic recovered, and the server answers a
// health check after each. exchange picks the seeds' and inputs' method.
func fuzzRaw(f *testing.F, exchange bool) {
	seeds := rawSeeds()
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		if in := seeds[name]; in.exchange == exchange {
			f.Add(in.encode())
		}
	}
	rs := startRawServer(f, server.Config{})
	f.Fuzz(func(t *testing.T, b []byte) {
		in := decodeRaw(b)
		in.exchange = exchange
		before := flightPanics(t)
		err := rs.call(t, in)
		rs.check(t, in, err, before)
	})
}

// FuzzDoPut_Raw fuzzes DoPut with raw FlightData sequences.
func FuzzDoPut_Raw(f *testing.F) { fuzzRaw(f, false) }

// FuzzDoExchange_Raw fuzzes DoExchange with raw FlightData sequences.
func FuzzDoExchange_Raw(f *testing.F) { fuzzRaw(f, true) }
