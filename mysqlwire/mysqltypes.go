package mysqlwire

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// How DuckDB's types show to MySQL clients. mysqlTypes is the one table of
// it: the catalog (SHOW CREATE TABLE, SHOW COLUMNS, INFORMATION_SCHEMA,
// through the SQL that columnTypesSQL and duckKeySQL render from it) and
// the column definitions of result sets (mysqlField) both read it, so
// what a client learns about a table's column is what its values arrive
// as.
//
// A result set knows only its Arrow types, which carry less than DuckDB's:
// UUID, JSON and ENUM values arrive as strings, so their result columns are
// VARCHAR, whatever the catalog says of the table column; and so does a
// VARCHAR column, which the catalog calls longtext (see below).

// mysqlType is the MySQL face of one DuckDB type. A negative number stands
// for NULL in INFORMATION_SCHEMA.
type mysqlType struct {
	duck       string // the key: DuckDB's type as duckdb_columns() spells it, or a family (DECIMAL, ENUM, JSON)
	dataType   string // DATA_TYPE: MySQL's bare type name
	columnType string // COLUMN_TYPE; "" where it is built from the column (decimal(p,s), enum(…))

	wire       querypb.Type // a result column's type
	wireLength uint32       // a result column's length
	decimals   uint32       // a result column's decimals
	text       bool         // a character type: utf8mb4 in results and in the catalog

	charLength int64 // CHARACTER_MAXIMUM_LENGTH
	octets     int64 // CHARACTER_OCTET_LENGTH
	precision  int64 // NUMERIC_PRECISION
	scale      int64 // NUMERIC_SCALE
	fsp        int64 // DATETIME_PRECISION
}

// Lengths MySQL gives its unbounded types.
const (
	longLength = 4294967295 // longtext, longblob and json: 2^32-1 bytes

	// keyVarcharChars is the length a VARCHAR column gets when it is part of
	// a key or an index, where MySQL allows no longtext: 255 characters,
	// so that a key of three such columns fits InnoDB's 3072-byte limit in
	// utf8mb4. DuckDB keeps no declared length.
	keyVarcharChars = 255
)

// Keys of mysqlTypes that the code refers to.
const (
	keyVarchar = "VARCHAR"
	keyDecimal = "DECIMAL"
	keyEnum    = "ENUM"
	keyJSON    = "JSON"
	keyNull    = `"NULL"`
)

// mysqlTypes maps DuckDB's types to MySQL's. DECIMAL stands for every
// DECIMAL(p,s), ENUM for every ENUM(…), and JSON for JSON and the nested
// types (LIST, ARRAY, STRUCT, MAP), whose values are sent as JSON text.
// VARCHAR is longtext, as DuckDB keeps no length (varchar(255) in a key:
// see keyVarcharChars). A type not listed (UNION, and any type DuckDB adds)
// is sent as text and described as VARCHAR is.
var mysqlTypes = []mysqlType{
	{duck: "BOOLEAN", dataType: "tinyint", columnType: "tinyint(1)", wire: sqltypes.Int8, wireLength: 1, charLength: -1, octets: -1, precision: 3, scale: 0, fsp: -1},
	{duck: "TINYINT", dataType: "tinyint", columnType: "tinyint", wire: sqltypes.Int8, wireLength: 4, charLength: -1, octets: -1, precision: 3, scale: 0, fsp: -1},
	{duck: "SMALLINT", dataType: "smallint", columnType: "smallint", wire: sqltypes.Int16, wireLength: 6, charLength: -1, octets: -1, precision: 5, scale: 0, fsp: -1},
	{duck: "INTEGER", dataType: "int", columnType: "int", wire: sqltypes.Int32, wireLength: 11, charLength: -1, octets: -1, precision: 10, scale: 0, fsp: -1},
	{duck: "BIGINT", dataType: "bigint", columnType: "bigint", wire: sqltypes.Int64, wireLength: 20, charLength: -1, octets: -1, precision: 19, scale: 0, fsp: -1},
	{duck: "UTINYINT", dataType: "tinyint", columnType: "tinyint unsigned", wire: sqltypes.Uint8, wireLength: 3, charLength: -1, octets: -1, precision: 3, scale: 0, fsp: -1},
	{duck: "USMALLINT", dataType: "smallint", columnType: "smallint unsigned", wire: sqltypes.Uint16, wireLength: 5, charLength: -1, octets: -1, precision: 5, scale: 0, fsp: -1},
	{duck: "UINTEGER", dataType: "int", columnType: "int unsigned", wire: sqltypes.Uint32, wireLength: 10, charLength: -1, octets: -1, precision: 10, scale: 0, fsp: -1},
	{duck: "UBIGINT", dataType: "bigint", columnType: "bigint unsigned", wire: sqltypes.Uint64, wireLength: 20, charLength: -1, octets: -1, precision: 20, scale: 0, fsp: -1},
	// HUGEINT values arrive as decimal(38,0), the widest Arrow decimal
	// DuckDB makes.
	{duck: "HUGEINT", dataType: "decimal", columnType: "decimal(38,0)", wire: sqltypes.Decimal, wireLength: 39, charLength: -1, octets: -1, precision: 38, scale: 0, fsp: -1},
	{duck: "UHUGEINT", dataType: "decimal", columnType: "decimal(38,0)", wire: sqltypes.Decimal, wireLength: 39, charLength: -1, octets: -1, precision: 38, scale: 0, fsp: -1},
	{duck: keyDecimal, dataType: "decimal", wire: sqltypes.Decimal, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	{duck: "FLOAT", dataType: "float", columnType: "float", wire: sqltypes.Float32, wireLength: 12, decimals: decimalsNotFixed, charLength: -1, octets: -1, precision: 12, scale: -1, fsp: -1},
	{duck: "DOUBLE", dataType: "double", columnType: "double", wire: sqltypes.Float64, wireLength: 22, decimals: decimalsNotFixed, charLength: -1, octets: -1, precision: 22, scale: -1, fsp: -1},
	// A result VARCHAR stays VARCHAR (what MySQL sends for a computed
	// string), so that drivers map it to their string type.
	{duck: keyVarchar, dataType: "longtext", columnType: "longtext", wire: sqltypes.VarChar, wireLength: textColumnLength, text: true, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "UUID", dataType: "char", columnType: "char(36)", wire: sqltypes.VarChar, wireLength: 36 * 4, text: true, charLength: 36, octets: 36 * 4, precision: -1, scale: -1, fsp: -1},
	{duck: keyEnum, dataType: "enum", wire: sqltypes.VarChar, wireLength: textColumnLength, text: true, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	{duck: keyJSON, dataType: "json", columnType: "json", wire: sqltypes.TypeJSON, wireLength: longLength, text: true, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	// INTERVAL has no MySQL type: its text, as DuckDB prints it.
	{duck: "INTERVAL", dataType: "longtext", columnType: "longtext", wire: sqltypes.VarChar, wireLength: textColumnLength, text: true, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "BLOB", dataType: "longblob", columnType: "longblob", wire: sqltypes.Blob, wireLength: longLength, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "BIT", dataType: "longblob", columnType: "longblob", wire: sqltypes.Blob, wireLength: longLength, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "BIGNUM", dataType: "longblob", columnType: "longblob", wire: sqltypes.Blob, wireLength: longLength, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "DATE", dataType: "date", columnType: "date", wire: sqltypes.Date, wireLength: 10, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	{duck: "TIME", dataType: "time", columnType: "time(6)", wire: sqltypes.Time, wireLength: 15, decimals: 6, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	{duck: "TIME WITH TIME ZONE", dataType: "time", columnType: "time(6)", wire: sqltypes.Time, wireLength: 15, decimals: 6, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	{duck: "TIMESTAMP_S", dataType: "datetime", columnType: "datetime", wire: sqltypes.Datetime, wireLength: 19, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 0},
	{duck: "TIMESTAMP_MS", dataType: "datetime", columnType: "datetime(3)", wire: sqltypes.Datetime, wireLength: 23, decimals: 3, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 3},
	{duck: "TIMESTAMP", dataType: "datetime", columnType: "datetime(6)", wire: sqltypes.Datetime, wireLength: 26, decimals: 6, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	// MySQL stops at microseconds.
	{duck: "TIMESTAMP_NS", dataType: "datetime", columnType: "datetime(6)", wire: sqltypes.Datetime, wireLength: 26, decimals: 6, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	// An instant, sent in UTC.
	{duck: "TIMESTAMP WITH TIME ZONE", dataType: "timestamp", columnType: "timestamp(6)", wire: sqltypes.Timestamp, wireLength: 26, decimals: 6, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	// SELECT NULL; no table column has this type.
	{duck: keyNull, dataType: "null", columnType: "null", wire: sqltypes.Null, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
}

// mysqlTypeIndex finds an entry of mysqlTypes by its key.
var mysqlTypeIndex = func() map[string]int {
	m := make(map[string]int, len(mysqlTypes))
	for i, t := range mysqlTypes {
		m[t.duck] = i
	}
	return m
}()

// mysqlTypeOf returns the entry of a key of mysqlTypes (see duckKey); an
// unknown key is text, as VARCHAR.
func mysqlTypeOf(key string) *mysqlType {
	if i, ok := mysqlTypeIndex[key]; ok {
		return &mysqlTypes[i]
	}
	return &mysqlTypes[mysqlTypeIndex[keyVarchar]]
}

// duckFamilies are the DuckDB type names with parameters, as LIKE patterns
// over duckdb_columns().data_type, and their keys. Order matters: a list
// of decimals ends with ']' before it starts with "DECIMAL(".
var duckFamilies = []struct{ like, key string }{
	{"%]", keyJSON}, // LIST (INTEGER[]) and ARRAY (INTEGER[3])
	{"STRUCT(%", keyJSON},
	{"MAP(%", keyJSON},
	{"DECIMAL(%", keyDecimal},
	{"ENUM(%", keyEnum},
}

// duckKey returns the key of mysqlTypes for a DuckDB type as
// duckdb_columns() spells it. duckKeySQL is the same in SQL.
func duckKey(dataType string) string {
	if _, ok := mysqlTypeIndex[dataType]; ok && dataType != keyNull {
		return dataType
	}
	for _, f := range duckFamilies {
		if likeMatch(f.like, dataType) {
			return f.key
		}
	}
	return keyVarchar
}

// duckKeySQL is duckKey as a DuckDB expression over the type name expr.
func duckKeySQL(expr string) string {
	var b strings.Builder
	b.WriteString("CASE WHEN " + expr + " IN (")
	n := 0
	for _, t := range mysqlTypes {
		if t.duck == keyNull || t.duck == keyDecimal || t.duck == keyEnum {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + t.duck + "'")
		n++
	}
	b.WriteString(") THEN " + expr)
	for _, f := range duckFamilies {
		fmt.Fprintf(&b, " WHEN %s LIKE '%s' THEN '%s'", expr, f.like, f.key)
	}
	b.WriteString(" ELSE '" + keyVarchar + "' END")
	return b.String()
}

// columnTypesSQL renders mysqlTypes as a query with one row per key, for
// the INFORMATION_SCHEMA tables to join.
func columnTypesSQL() string {
	var b strings.Builder
	b.WriteString("SELECT duck, data_type, column_type, is_text, char_length::BIGINT AS char_length, octet_length::BIGINT AS octet_length, " +
		"num_precision::BIGINT AS num_precision, num_scale::BIGINT AS num_scale, fsp::UINTEGER AS fsp FROM (VALUES ")
	num := func(n int64) string {
		if n < 0 {
			return "NULL"
		}
		return fmt.Sprint(n)
	}
	for i, t := range mysqlTypes {
		if i > 0 {
			b.WriteString(", ")
		}
		colType := "NULL"
		if t.columnType != "" {
			colType = "'" + t.columnType + "'"
		}
		fmt.Fprintf(&b, "('%s', '%s', %s, %t, %s, %s, %s, %s, %s)", strings.ReplaceAll(t.duck, "'", "''"), t.dataType, colType, t.text,
			num(t.charLength), num(t.octets), num(t.precision), num(t.scale), num(t.fsp))
	}
	b.WriteString(") AS t(duck, data_type, column_type, is_text, char_length, octet_length, num_precision, num_scale, fsp)")
	return b.String()
}

// arrowKey returns the key of mysqlTypes for a result column's Arrow
// type, with the fractional-seconds digits of a time type.
func arrowKey(dt arrow.DataType) (key string, fsp uint32) {
	if ext, ok := dt.(arrow.ExtensionType); ok {
		dt = ext.StorageType()
	}
	switch t := dt.(type) {
	case *arrow.NullType:
		return keyNull, 0
	case *arrow.BooleanType:
		return "BOOLEAN", 0
	case *arrow.Int8Type:
		return "TINYINT", 0
	case *arrow.Int16Type:
		return "SMALLINT", 0
	case *arrow.Int32Type:
		return "INTEGER", 0
	case *arrow.Int64Type:
		return "BIGINT", 0
	case *arrow.Uint8Type:
		return "UTINYINT", 0
	case *arrow.Uint16Type:
		return "USMALLINT", 0
	case *arrow.Uint32Type:
		return "UINTEGER", 0
	case *arrow.Uint64Type:
		return "UBIGINT", 0
	case *arrow.Float16Type, *arrow.Float32Type:
		return "FLOAT", 0
	case *arrow.Float64Type:
		return "DOUBLE", 0
	case arrow.DecimalType:
		return keyDecimal, 0
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return "BLOB", 0
	case *arrow.Date32Type, *arrow.Date64Type:
		return "DATE", 0
	case *arrow.Time32Type:
		return "TIME", fractionDigits(t.Unit)
	case *arrow.Time64Type:
		return "TIME", fractionDigits(t.Unit)
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "TIMESTAMP WITH TIME ZONE", fractionDigits(t.Unit)
		}
		return "TIMESTAMP", fractionDigits(t.Unit)
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType, *arrow.ListViewType,
		*arrow.LargeListViewType, *arrow.StructType, *arrow.MapType:
		return keyJSON, 0
	}
	// Strings, dictionaries (ENUM), intervals and unions.
	return keyVarchar, 0
}

// mysqlField maps one Arrow result field to a MySQL column definition,
// through mysqlTypes.
func mysqlField(f arrow.Field) *querypb.Field {
	key, fsp := arrowKey(f.Type)
	t := mysqlTypeOf(key)
	fld := &querypb.Field{Name: f.Name, OrgName: f.Name, Type: t.wire, ColumnLength: t.wireLength, Decimals: t.decimals, Charset: charsetBinary}
	if t.text {
		fld.Charset = charsetUTF8MB4
	}
	switch t.wire {
	case sqltypes.Decimal:
		dt := f.Type
		if ext, ok := dt.(arrow.ExtensionType); ok {
			dt = ext.StorageType()
		}
		d := dt.(arrow.DecimalType)
		p, s := uint32(d.GetPrecision()), uint32(d.GetScale())
		fld.ColumnLength = p + 1 // sign
		if s > 0 {
			fld.ColumnLength++ // decimal point
		}
		fld.Decimals = s
	case sqltypes.Time:
		fld.ColumnLength, fld.Decimals = 8+withPoint(fsp), fsp
	case sqltypes.Datetime, sqltypes.Timestamp:
		fld.ColumnLength, fld.Decimals = 19+withPoint(fsp), fsp
	}
	return fld
}
