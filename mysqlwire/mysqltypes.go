package mysqlwire

import (
	"fmt"
	"strings"

	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// How DuckDB's types show to MySQL clients in the catalog. mysqlTypes is
// the one table of it: SHOW CREATE TABLE, SHOW COLUMNS and
// INFORMATION_SCHEMA read it, through the SQL that columnTypesSQL and
// duckKeySQL render from it. Result columns are described from their Arrow
// types by mysqlvalue's table, and TestServer_InfoSchemaColumnsMatchResults
// holds the two to the same MySQL types, so that what a client learns
// about a table's column is what its values arrive as.
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

	text bool // a character type: utf8mb4

	charLength int64 // CHARACTER_MAXIMUM_LENGTH
	octets     int64 // CHARACTER_OCTET_LENGTH
	precision  int64 // NUMERIC_PRECISION
	scale      int64 // NUMERIC_SCALE
	fsp        int64 // DATETIME_PRECISION
}

// Lengths MySQL gives its unbounded types.
const (
	longLength = mysqlvalue.LongLength // longtext, longblob and json

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
	{duck: "BOOLEAN", dataType: "tinyint", columnType: "tinyint(1)", charLength: -1, octets: -1, precision: 3, scale: 0, fsp: -1},
	{duck: "TINYINT", dataType: "tinyint", columnType: "tinyint", charLength: -1, octets: -1, precision: 3, scale: 0, fsp: -1},
	{duck: "SMALLINT", dataType: "smallint", columnType: "smallint", charLength: -1, octets: -1, precision: 5, scale: 0, fsp: -1},
	{duck: "INTEGER", dataType: "int", columnType: "int", charLength: -1, octets: -1, precision: 10, scale: 0, fsp: -1},
	{duck: "BIGINT", dataType: "bigint", columnType: "bigint", charLength: -1, octets: -1, precision: 19, scale: 0, fsp: -1},
	{duck: "UTINYINT", dataType: "tinyint", columnType: "tinyint unsigned", charLength: -1, octets: -1, precision: 3, scale: 0, fsp: -1},
	{duck: "USMALLINT", dataType: "smallint", columnType: "smallint unsigned", charLength: -1, octets: -1, precision: 5, scale: 0, fsp: -1},
	{duck: "UINTEGER", dataType: "int", columnType: "int unsigned", charLength: -1, octets: -1, precision: 10, scale: 0, fsp: -1},
	{duck: "UBIGINT", dataType: "bigint", columnType: "bigint unsigned", charLength: -1, octets: -1, precision: 20, scale: 0, fsp: -1},
	// HUGEINT values arrive as decimal(38,0), the widest Arrow decimal
	// DuckDB makes.
	{duck: "HUGEINT", dataType: "decimal", columnType: "decimal(38,0)", charLength: -1, octets: -1, precision: 38, scale: 0, fsp: -1},
	{duck: "UHUGEINT", dataType: "decimal", columnType: "decimal(38,0)", charLength: -1, octets: -1, precision: 38, scale: 0, fsp: -1},
	{duck: keyDecimal, dataType: "decimal", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	{duck: "FLOAT", dataType: "float", columnType: "float", charLength: -1, octets: -1, precision: 12, scale: -1, fsp: -1},
	{duck: "DOUBLE", dataType: "double", columnType: "double", charLength: -1, octets: -1, precision: 22, scale: -1, fsp: -1},
	{duck: keyVarchar, dataType: "longtext", columnType: "longtext", text: true, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "UUID", dataType: "char", columnType: "char(36)", text: true, charLength: 36, octets: 36 * 4, precision: -1, scale: -1, fsp: -1},
	{duck: keyEnum, dataType: "enum", text: true, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	{duck: keyJSON, dataType: "json", columnType: "json", text: true, charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	// INTERVAL has no MySQL type: its text, as DuckDB prints it.
	{duck: "INTERVAL", dataType: "longtext", columnType: "longtext", text: true, charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "BLOB", dataType: "longblob", columnType: "longblob", charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "BIT", dataType: "longblob", columnType: "longblob", charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "BIGNUM", dataType: "longblob", columnType: "longblob", charLength: longLength, octets: longLength, precision: -1, scale: -1, fsp: -1},
	{duck: "DATE", dataType: "date", columnType: "date", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
	{duck: "TIME", dataType: "time", columnType: "time(6)", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	{duck: "TIME WITH TIME ZONE", dataType: "time", columnType: "time(6)", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	{duck: "TIMESTAMP_S", dataType: "datetime", columnType: "datetime", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 0},
	{duck: "TIMESTAMP_MS", dataType: "datetime", columnType: "datetime(3)", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 3},
	{duck: "TIMESTAMP", dataType: "datetime", columnType: "datetime(6)", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	// MySQL stops at microseconds.
	{duck: "TIMESTAMP_NS", dataType: "datetime", columnType: "datetime(6)", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	// An instant, sent in UTC.
	{duck: "TIMESTAMP WITH TIME ZONE", dataType: "timestamp", columnType: "timestamp(6)", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: 6},
	// SELECT NULL; no table column has this type.
	{duck: keyNull, dataType: "null", columnType: "null", charLength: -1, octets: -1, precision: -1, scale: -1, fsp: -1},
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
