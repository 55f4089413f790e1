package flightsql

import (
	"context"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// JDBC type codes (java.sql.Types) that XdbcDataType has no name for.
const (
	jdbcBoolean               int32 = 16
	jdbcJavaObject            int32 = 2000
	jdbcArray                 int32 = 2003
	jdbcTimestampWithTimezone int32 = 2014
)

// Values of the nullable and searchable columns of GetXdbcTypeInfo.
const (
	xdbcNullable = 1 // NULLABILITY_NULLABLE

	searchBasic = 2 // SEARCHABLE_BASIC: every comparison but LIKE
	searchFull  = 3 // SEARCHABLE_FULL: LIKE too
)

// xdbcType is one row of GetXdbcTypeInfo. Zero optional fields are sent as
// NULL.
type xdbcType struct {
	name string
	// dataType is the code the Flight SQL JDBC driver reports for the
	// type's Arrow form (so getColumns and getTypeInfo agree): XDBC codes
	// where XdbcDataType has one, java.sql.Types codes otherwise.
	dataType int32
	// sqlDataType is dataType, except SQL_DATETIME (9) and SQL_INTERVAL
	// (10) for the date, time and interval types, which subcode names.
	sqlDataType int32
	subcode     *int32
	columnSize  *int32
	prefix      string
	suffix      string
	params      []string
	caseSens    bool
	searchable  int32
	unsigned    *bool // numeric types only
	radix       *int32
	minScale    *int32
	maxScale    *int32
}

func i32(v int32) *int32 { return &v }
func boolp(v bool) *bool { return &v }

// xdbcInt is an integer type of digits decimal digits.
func xdbcInt(name string, code pb.XdbcDataType, digits int32, unsigned bool) xdbcType {
	return xdbcType{name: name, dataType: int32(code), columnSize: i32(digits), searchable: searchBasic,
		unsigned: boolp(unsigned), radix: i32(10), minScale: i32(0), maxScale: i32(0)}
}

// xdbcTime is a date or time type: its literal's length and its digits of
// second fractions.
func xdbcTime(name string, code, sub int32, size, frac int32, prefix string) xdbcType {
	t := xdbcType{name: name, dataType: code, sqlDataType: int32(pb.XdbcDataType_XDBC_DATETIME), subcode: i32(sub),
		columnSize: i32(size), prefix: prefix, suffix: "'", searchable: searchBasic}
	if code != int32(pb.XdbcDataType_XDBC_DATE) {
		t.minScale, t.maxScale = i32(frac), i32(frac)
	}
	return t
}

// xdbcTypes is every DuckDB type a column can have, as GetXdbcTypeInfo
// reports it, ordered by data_type, then type_name.
var xdbcTypes = func() []xdbcType {
	const (
		subDate     = int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_DATE)
		subTime     = int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_TIME)
		subTimeTZ   = int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_TIME_WITH_TIMEZONE)
		subTS       = int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_TIMESTAMP)
		subTSTZ     = int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_TIMESTAMP_WITH_TIMEZONE)
		codeDate    = int32(pb.XdbcDataType_XDBC_DATE)
		codeTime    = int32(pb.XdbcDataType_XDBC_TIME)
		codeTS      = int32(pb.XdbcDataType_XDBC_TIMESTAMP)
		codeVarchar = int32(pb.XdbcDataType_XDBC_VARCHAR)
		codeVarbin  = int32(pb.XdbcDataType_XDBC_VARBINARY)
		codeDecimal = int32(pb.XdbcDataType_XDBC_DECIMAL)
	)
	types := []xdbcType{
		{name: "BOOLEAN", dataType: jdbcBoolean, columnSize: i32(1), searchable: searchBasic},

		xdbcInt("TINYINT", pb.XdbcDataType_XDBC_TINYINT, 3, false),
		xdbcInt("UTINYINT", pb.XdbcDataType_XDBC_TINYINT, 3, true),
		xdbcInt("SMALLINT", pb.XdbcDataType_XDBC_SMALLINT, 5, false),
		xdbcInt("USMALLINT", pb.XdbcDataType_XDBC_SMALLINT, 5, true),
		xdbcInt("INTEGER", pb.XdbcDataType_XDBC_INTEGER, 10, false),
		xdbcInt("UINTEGER", pb.XdbcDataType_XDBC_INTEGER, 10, true),
		xdbcInt("BIGINT", pb.XdbcDataType_XDBC_BIGINT, 19, false),
		xdbcInt("UBIGINT", pb.XdbcDataType_XDBC_BIGINT, 20, true),
		// 128-bit integers reach clients as decimal128(38, 0): 38 digits
		// is what survives the trip. UHUGEINT values above 2^127-1 do not
		// fit decimal128 at all.
		xdbcInt("HUGEINT", pb.XdbcDataType_XDBC_DECIMAL, 38, false),
		xdbcInt("UHUGEINT", pb.XdbcDataType_XDBC_DECIMAL, 38, true),
		{name: "DECIMAL", dataType: codeDecimal, columnSize: i32(38), params: []string{"precision", "scale"},
			searchable: searchBasic, unsigned: boolp(false), radix: i32(10), minScale: i32(0), maxScale: i32(38)},
		// FLOAT is 4 bytes: 24 binary digits of mantissa. The JDBC driver
		// reports a float32 column as FLOAT.
		{name: "FLOAT", dataType: int32(pb.XdbcDataType_XDBC_FLOAT), columnSize: i32(24), searchable: searchBasic,
			unsigned: boolp(false), radix: i32(2)},
		{name: "DOUBLE", dataType: int32(pb.XdbcDataType_XDBC_DOUBLE), columnSize: i32(53), searchable: searchBasic,
			unsigned: boolp(false), radix: i32(2)},

		// VARCHAR has no declared maximum length; UUID, JSON and ENUM
		// values reach clients as utf8 (ENUM dictionary-encoded).
		{name: "VARCHAR", dataType: codeVarchar, prefix: "'", suffix: "'", caseSens: true, searchable: searchFull},
		{name: "JSON", dataType: codeVarchar, prefix: "'", suffix: "'::JSON", caseSens: true, searchable: searchFull},
		{name: "ENUM", dataType: codeVarchar, prefix: "'", suffix: "'", params: []string{"values"}, caseSens: true, searchable: searchFull},
		{name: "UUID", dataType: codeVarchar, columnSize: i32(36), prefix: "'", suffix: "'::UUID", searchable: searchBasic},

		// Binary types reach clients as Arrow binary.
		{name: "BLOB", dataType: codeVarbin, prefix: "'", suffix: "'::BLOB", searchable: searchBasic},
		{name: "BIT", dataType: codeVarbin, prefix: "'", suffix: "'::BIT", searchable: searchBasic},
		{name: "BIGNUM", dataType: codeVarbin, prefix: "'", suffix: "'::BIGNUM", searchable: searchBasic},

		xdbcTime("DATE", codeDate, subDate, 10, 0, "DATE '"),
		xdbcTime("TIME", codeTime, subTime, 15, 6, "TIME '"),
		// TIMETZ reaches clients as time64[us]: the offset is not sent.
		xdbcTime("TIMETZ", codeTime, subTimeTZ, 21, 6, "TIMETZ '"),
		xdbcTime("TIMESTAMP", codeTS, subTS, 26, 6, "TIMESTAMP '"),
		xdbcTime("TIMESTAMP_S", codeTS, subTS, 19, 0, "TIMESTAMP_S '"),
		xdbcTime("TIMESTAMP_MS", codeTS, subTS, 23, 3, "TIMESTAMP_MS '"),
		xdbcTime("TIMESTAMP_NS", codeTS, subTS, 29, 9, "TIMESTAMP_NS '"),
		xdbcTime("TIMESTAMPTZ", jdbcTimestampWithTimezone, subTSTZ, 32, 6, "TIMESTAMPTZ '"),
		// INTERVAL (months, days, microseconds) matches no single SQL
		// interval type, so it has no subcode.
		{name: "INTERVAL", dataType: jdbcJavaObject, sqlDataType: int32(pb.XdbcDataType_XDBC_INTERVAL),
			prefix: "INTERVAL '", suffix: "'", searchable: searchBasic},

		// Nested types. A LIST column is declared as T[], an ARRAY as T[n].
		{name: "LIST", dataType: jdbcArray, prefix: "[", suffix: "]", params: []string{"element_type"}, searchable: searchBasic},
		{name: "ARRAY", dataType: jdbcArray, prefix: "[", suffix: "]", params: []string{"element_type", "length"}, searchable: searchBasic},
		{name: "STRUCT", dataType: jdbcJavaObject, prefix: "{", suffix: "}", params: []string{"fields"}, searchable: searchBasic},
		{name: "MAP", dataType: jdbcJavaObject, prefix: "MAP {", suffix: "}", params: []string{"key_type", "value_type"}, searchable: searchBasic},
		{name: "UNION", dataType: jdbcJavaObject, params: []string{"members"}, searchable: searchBasic},
	}
	for i := range types {
		if types[i].sqlDataType == 0 {
			types[i].sqlDataType = types[i].dataType
		}
	}
	sort.SliceStable(types, func(i, j int) bool {
		if types[i].dataType != types[j].dataType {
			return types[i].dataType < types[j].dataType
		}
		return types[i].name < types[j].name
	})
	return types
}()

// GetFlightInfoXdbcTypeInfo plans GetXdbcTypeInfo.
func (s *Server) GetFlightInfoXdbcTypeInfo(_ context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.XdbcTypeInfo)
}

// DoGetXdbcTypeInfo describes DuckDB's types, all of them or those of one
// data type.
func (s *Server) DoGetXdbcTypeInfo(_ context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rows []xdbcType
	for _, t := range xdbcTypes {
		if cmd.GetDataType() == nil || *cmd.GetDataType() == t.dataType {
			rows = append(rows, t)
		}
	}
	return schema_ref.XdbcTypeInfo, oneBatch(xdbcRecord(s.mem, rows)), nil
}

// xdbcRecord builds the GetXdbcTypeInfo batch of types.
func xdbcRecord(mem memory.Allocator, types []xdbcType) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema_ref.XdbcTypeInfo)
	defer b.Release()
	str := func(i int, v string) {
		if v == "" {
			b.Field(i).AppendNull()
			return
		}
		b.Field(i).(*array.StringBuilder).Append(v)
	}
	num := func(i int, v int32) { b.Field(i).(*array.Int32Builder).Append(v) }
	opt32 := func(i int, v *int32) {
		if v == nil {
			b.Field(i).AppendNull()
			return
		}
		num(i, *v)
	}
	optBool := func(i int, v *bool) {
		if v == nil {
			b.Field(i).AppendNull()
			return
		}
		b.Field(i).(*array.BooleanBuilder).Append(*v)
	}
	for _, t := range types {
		str(0, t.name)
		num(1, t.dataType)
		opt32(2, t.columnSize)
		str(3, t.prefix)
		str(4, t.suffix)
		if params := b.Field(5).(*array.ListBuilder); t.params == nil {
			params.AppendNull()
		} else {
			params.Append(true)
			params.ValueBuilder().(*array.StringBuilder).AppendValues(t.params, nil)
		}
		num(6, xdbcNullable)
		b.Field(7).(*array.BooleanBuilder).Append(t.caseSens)
		num(8, t.searchable)
		optBool(9, t.unsigned)
		b.Field(10).(*array.BooleanBuilder).Append(false) // fixed_prec_scale: no money-like type
		b.Field(11).(*array.BooleanBuilder).Append(false) // auto_increment: DuckDB uses sequences
		str(12, t.name)
		opt32(13, t.minScale)
		opt32(14, t.maxScale)
		num(15, t.sqlDataType)
		opt32(16, t.subcode)
		opt32(17, t.radix)
		b.Field(18).AppendNull() // interval_precision
	}
	return b.NewRecordBatch()
}
