package flightsql

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/version"
)

// registerSQLInfo registers what GetSqlInfo reports about the server:
// every id Flight SQL defines, each with the value type the Java
// reference implementation (and so the JDBC driver) uses. Keywords, the
// function lists and the null ordering are read from DuckDB itself.
func registerSQLInfo(s *Server) error {
	// BaseServer sets its allocator lazily, on the first call; set it now
	// so concurrent first calls do not race.
	s.Alloc = s.mem
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("get connection: %w", err)
	}
	defer c.Release()
	fromDB, err := duckdbSQLInfo(ctx, c)
	if err != nil {
		return err
	}
	idle := int32(min(s.opts.IdleTimeout.Milliseconds(), math.MaxInt32))
	txnIdle := int32(min(s.opts.TxnIdleTimeout.Milliseconds(), math.MaxInt32))
	infos := map[flightsql.SqlInfo]any{
		// The server.
		flightsql.SqlInfoFlightSqlServerName:         "quiver",
		flightsql.SqlInfoFlightSqlServerVersion:      "quiver " + version.Get().Short() + " (DuckDB " + duckdb.LibraryVersion() + ")",
		flightsql.SqlInfoFlightSqlServerArrowVersion: arrow.PkgVersion,
		flightsql.SqlInfoFlightSqlServerReadOnly:     false,
		flightsql.SqlInfoFlightSqlServerSql:          true,
		flightsql.SqlInfoFlightSqlServerSubstrait:    false,
		// Flight SQL wants NULL when Substrait is unsupported; a SqlInfo
		// value cannot be NULL, so the versions are empty.
		flightsql.SqlInfoFlightSqlServerSubstraitMinVersion:         "",
		flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion:         "",
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(flightsql.SqlTransactionTransaction),
		flightsql.SqlInfoFlightSqlServerCancel:                      true,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               true,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: true,
		// Prepared statements and transactions are dropped after this long
		// unused; using them resets the clock.
		flightsql.SqlInfoFlightSqlServerStatementTimeout:   idle,
		flightsql.SqlInfoFlightSqlServerTransactionTimeout: txnIdle,

		// DDL. Catalogs come and go with ATTACH and DETACH; DuckDB has no
		// CREATE or DROP DATABASE.
		flightsql.SqlInfoDDLCatalog: false,
		flightsql.SqlInfoDDLSchema:  true,
		flightsql.SqlInfoDDLTable:   true,

		// Identifiers: case-insensitive, quoted or not, and stored as
		// written.
		flightsql.SqlInfoIdentifierCase:       int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoQuotedIdentifierCase: int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoIdentifierQuoteChar:  `"`,
		flightsql.SqlInfoExtraNameChars:       "$",
		flightsql.SqlInfoSearchStringEscape:   `\`,

		flightsql.SqlInfoAllTablesAreASelectable: true,
		flightsql.SqlInfoNullOrdering:            fromDB.nullOrdering,
		flightsql.SqlInfoKeywords:                fromDB.keywords,
		flightsql.SqlInfoNumericFunctions:        fromDB.numeric,
		flightsql.SqlInfoStringFunctions:         fromDB.strings,
		flightsql.SqlInfoSystemFunctions:         fromDB.system,
		flightsql.SqlInfoDateTimeFunctions:       fromDB.datetime,
		flightsql.SqlInfoSupportsConvert:         supportsConvert(),

		// Query syntax.
		flightsql.SqlInfoSupportsColumnAliasing:                 true,
		flightsql.SqlInfoNullPlusNullIsNull:                     true,
		flightsql.SqlInfoSupportsTableCorrelationNames:          true,
		flightsql.SqlInfoSupportsDifferentTableCorrelationNames: false,
		flightsql.SqlInfoSupportsExpressionsInOrderBy:           true,
		flightsql.SqlInfoSupportsOrderByUnrelated:               true,
		flightsql.SqlInfoSupportedGroupBy: bitmask(
			pb.SqlSupportedGroupBy_SQL_GROUP_BY_UNRELATED, pb.SqlSupportedGroupBy_SQL_GROUP_BY_BEYOND_SELECT),
		flightsql.SqlInfoSupportsLikeEscapeClause:   true,
		flightsql.SqlInfoSupportsNonNullableColumns: true,
		flightsql.SqlInfoSupportedGrammar: bitmask(
			pb.SupportedSqlGrammar_SQL_MINIMUM_GRAMMAR, pb.SupportedSqlGrammar_SQL_CORE_GRAMMAR),
		flightsql.SqlInfoANSI92SupportedLevel: bitmask(
			pb.SupportedAnsi92SqlGrammarLevel_ANSI92_ENTRY_SQL, pb.SupportedAnsi92SqlGrammarLevel_ANSI92_INTERMEDIATE_SQL),
		// PRIMARY KEY, FOREIGN KEY, UNIQUE, CHECK.
		flightsql.SqlInfoSupportsIntegrityEnhancementFacility: true,
		// Flight SQL calls this an ordinal; the JDBC driver reads it as a
		// bitmask of levels, so both outer join levels are set.
		flightsql.SqlInfoOuterJoinsSupportLevel: bitmask(
			pb.SqlOuterJoinsSupportLevel_SQL_LIMITED_OUTER_JOINS, pb.SqlOuterJoinsSupportLevel_SQL_FULL_OUTER_JOINS),
		flightsql.SqlInfoSchemaTerm:     "schema",
		flightsql.SqlInfoProcedureTerm:  "procedure",
		flightsql.SqlInfoCatalogTerm:    "catalog",
		flightsql.SqlInfoCatalogAtStart: true,
		// Tables in CREATE INDEX may be qualified by schema and catalog;
		// DuckDB has neither procedures nor privileges.
		flightsql.SqlInfoSchemasSupportedActions:     bitmask(pb.SqlSupportedElementActions_SQL_ELEMENT_IN_INDEX_DEFINITIONS),
		flightsql.SqlInfoCatalogsSupportedActions:    bitmask(pb.SqlSupportedElementActions_SQL_ELEMENT_IN_INDEX_DEFINITIONS),
		flightsql.SqlInfoSupportedPositionedCommands: int32(0),
		flightsql.SqlInfoSelectForUpdateSupported:    false,
		flightsql.SqlInfoStoredProceduresSupported:   false,
		flightsql.SqlInfoSupportedSubqueries: bitmask(
			pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_COMPARISONS, pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_EXISTS,
			pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_INS, pb.SqlSupportedSubqueries_SQL_SUBQUERIES_IN_QUANTIFIEDS),
		flightsql.SqlInfoCorrelatedSubqueriesSupported: true,
		flightsql.SqlInfoSupportedUnions: bitmask(
			pb.SqlSupportedUnions_SQL_UNION, pb.SqlSupportedUnions_SQL_UNION_ALL),

		// Limits: 0 is no limit, or none known. DuckDB sets none of these.
		flightsql.SqlInfoMaxBinaryLiteralLen:     int64(0),
		flightsql.SqlInfoMaxCharLiteralLen:       int64(0),
		flightsql.SqlInfoMaxColumnNameLen:        int64(0),
		flightsql.SqlInfoMaxColumnsInGroupBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInIndex:       int64(0),
		flightsql.SqlInfoMaxColumnsInOrderBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInSelect:      int64(0),
		flightsql.SqlInfoMaxColumnsInTable:       int64(0),
		flightsql.SqlInfoMaxConnections:          int64(0),
		flightsql.SqlInfoMaxCursorNameLen:        int64(0),
		flightsql.SqlInfoMaxIndexLen:             int64(0),
		flightsql.SqlInfoDBSchemaNameLen:         int64(0),
		flightsql.SqlInfoMaxProcedureNameLen:     int64(0),
		flightsql.SqlInfoMaxCatalogNameLen:       int64(0),
		flightsql.SqlInfoMaxRowSize:              int64(0),
		flightsql.SqlInfoMaxRowSizeIncludesBlobs: false,
		flightsql.SqlInfoMaxStatementLen:         int64(0),
		flightsql.SqlInfoMaxStatements:           int64(0),
		flightsql.SqlInfoMaxTableNameLen:         int64(0),
		flightsql.SqlInfoMaxTablesInSelect:       int64(0),
		flightsql.SqlInfoMaxUsernameLen:          int64(0),

		// Transactions. DuckDB runs every transaction under snapshot
		// isolation, which is REPEATABLE READ (write skew is possible, so
		// not SERIALIZABLE). The JDBC driver reads the default as an int64.
		flightsql.SqlInfoDefaultTransactionIsolation: int64(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_REPEATABLE_READ),
		flightsql.SqlInfoTransactionsSupported:       true,
		flightsql.SqlInfoSupportedTransactionsIsolationlevels: bitmask(
			pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_REPEATABLE_READ),
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit: false,
		flightsql.SqlInfoDataDefinitionsInTransactionsIgnored:  false,

		// Results stream forward only and cannot be updated.
		flightsql.SqlInfoSupportedResultSetTypes: bitmask(pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_FORWARD_ONLY),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified: bitmask(
			pb.SqlSupportedResultSetConcurrency_SQL_RESULT_SET_CONCURRENCY_READ_ONLY),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly: bitmask(
			pb.SqlSupportedResultSetConcurrency_SQL_RESULT_SET_CONCURRENCY_READ_ONLY),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive:   int32(0),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive: int32(0),

		// A prepared statement takes a batch of parameter rows. Named
		// parameters here mean JDBC CallableStatement ones, and there are
		// no stored procedures to call.
		flightsql.SqlInfoBatchUpdatesSupported:                   true,
		flightsql.SqlInfoSavePointsSupported:                     false,
		flightsql.SqlInfoNamedParametersSupported:                false,
		flightsql.SqlInfoLocatorsUpdateCopy:                      false,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported: false,
	}
	for id, v := range infos {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return err
		}
	}
	for id, name := range pb.SqlInfo_name {
		if _, ok := infos[flightsql.SqlInfo(id)]; !ok {
			return fmt.Errorf("sql info %s (%d) has no value", name, id)
		}
	}
	return nil
}

// bitmask sets bit v for each enum value v.
func bitmask[E ~int32](vals ...E) int32 {
	var m int32
	for _, v := range vals {
		m |= 1 << v
	}
	return m
}

// duckdbInfo is what GetSqlInfo reports that DuckDB itself knows.
type duckdbInfo struct {
	nullOrdering                       int32
	keywords                           []string
	numeric, strings, system, datetime []string
}

// Functions GetSqlInfo lists by category, by their JDBC (Open Group CLI)
// names or DuckDB's own. Only those DuckDB has are reported.
var (
	numericFunctions = []string{"abs", "acos", "asin", "atan", "atan2", "cbrt", "ceil", "ceiling", "cos", "cot",
		"degrees", "even", "exp", "factorial", "floor", "gcd", "greatest", "lcm", "least", "ln", "log", "log10",
		"log2", "mod", "pi", "pow", "power", "radians", "random", "round", "sign", "sin", "sqrt", "tan", "trunc"}
	stringFunctions = []string{"ascii", "chr", "concat", "concat_ws", "contains", "ends_with", "format", "instr",
		"lcase", "left", "length", "levenshtein", "lower", "lpad", "ltrim", "md5", "position", "printf",
		"regexp_extract", "regexp_matches", "regexp_replace", "repeat", "replace", "reverse", "right", "rpad",
		"rtrim", "split_part", "starts_with", "string_split", "strpos", "substr", "substring", "translate", "trim",
		"ucase", "upper"}
	systemFunctions = []string{"coalesce", "current_database", "current_schema", "current_schemas",
		"current_setting", "current_user", "ifnull", "nullif", "typeof", "user", "version"}
	datetimeFunctions = []string{"age", "current_date", "current_time", "current_timestamp", "date_add", "date_diff",
		"date_part", "date_sub", "date_trunc", "datediff", "datepart", "dayname", "dayofmonth", "dayofweek",
		"dayofyear", "epoch", "epoch_ms", "hour", "last_day", "make_date", "make_time", "make_timestamp", "minute",
		"month", "monthname", "now", "quarter", "second", "strftime", "strptime", "time_bucket", "to_timestamp",
		"today", "week", "year"}
)

func duckdbSQLInfo(ctx context.Context, c *engine.Conn) (duckdbInfo, error) {
	var info duckdbInfo
	order, err := queryStrings(ctx, c, "SELECT current_setting('default_null_order')")
	if err != nil || len(order) != 1 {
		return info, fmt.Errorf("read default null order: %w", err)
	}
	// DuckDB's default_null_order, as Flight SQL's null ordering.
	switch strings.ToUpper(order[0]) {
	case "NULLS_FIRST":
		info.nullOrdering = int32(pb.SqlNullOrdering_SQL_NULLS_SORTED_AT_START)
	case "NULLS_FIRST_ON_ASC_LAST_ON_DESC":
		info.nullOrdering = int32(pb.SqlNullOrdering_SQL_NULLS_SORTED_LOW)
	case "NULLS_LAST_ON_ASC_FIRST_ON_DESC":
		info.nullOrdering = int32(pb.SqlNullOrdering_SQL_NULLS_SORTED_HIGH)
	default:
		info.nullOrdering = int32(pb.SqlNullOrdering_SQL_NULLS_SORTED_AT_END)
	}
	if info.keywords, err = queryStrings(ctx, c, "SELECT DISTINCT upper(keyword_name) AS k FROM duckdb_keywords() ORDER BY k"); err != nil {
		return info, fmt.Errorf("read keywords: %w", err)
	}
	for _, l := range []struct {
		dst  *[]string
		want []string
	}{{&info.numeric, numericFunctions}, {&info.strings, stringFunctions}, {&info.system, systemFunctions}, {&info.datetime, datetimeFunctions}} {
		have, err := queryStrings(ctx, c, `
			SELECT DISTINCT function_name AS f FROM duckdb_functions()
			WHERE list_contains(string_split($1, ','), function_name) ORDER BY f`, strings.Join(l.want, ","))
		if err != nil {
			return info, fmt.Errorf("read functions: %w", err)
		}
		*l.dst = have
	}
	return info, nil
}

// queryStrings runs a query and returns its first column.
func queryStrings(ctx context.Context, c *engine.Conn, sql string, args ...any) ([]string, error) {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		col := rows.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.ValueStr(i))
		}
	}
	return out, rows.Err()
}

// supportsConvert is SQL_SUPPORTS_CONVERT: which of Flight SQL's convert
// types CAST turns into which. Every type casts to the string types and
// back from them; numbers (BIT being BOOLEAN here) cast among themselves;
// temporal types cast as DuckDB's cast rules allow; binary types cast
// among themselves.
func supportsConvert() map[int32][]int32 {
	const (
		bigint        = pb.SqlSupportsConvert_SQL_CONVERT_BIGINT
		binary        = pb.SqlSupportsConvert_SQL_CONVERT_BINARY
		bit           = pb.SqlSupportsConvert_SQL_CONVERT_BIT
		char          = pb.SqlSupportsConvert_SQL_CONVERT_CHAR
		date          = pb.SqlSupportsConvert_SQL_CONVERT_DATE
		decimal       = pb.SqlSupportsConvert_SQL_CONVERT_DECIMAL
		float         = pb.SqlSupportsConvert_SQL_CONVERT_FLOAT
		integer       = pb.SqlSupportsConvert_SQL_CONVERT_INTEGER
		intervalDay   = pb.SqlSupportsConvert_SQL_CONVERT_INTERVAL_DAY_TIME
		intervalYear  = pb.SqlSupportsConvert_SQL_CONVERT_INTERVAL_YEAR_MONTH
		longvarbinary = pb.SqlSupportsConvert_SQL_CONVERT_LONGVARBINARY
		longvarchar   = pb.SqlSupportsConvert_SQL_CONVERT_LONGVARCHAR
		numeric       = pb.SqlSupportsConvert_SQL_CONVERT_NUMERIC
		real          = pb.SqlSupportsConvert_SQL_CONVERT_REAL
		smallint      = pb.SqlSupportsConvert_SQL_CONVERT_SMALLINT
		timeT         = pb.SqlSupportsConvert_SQL_CONVERT_TIME
		timestamp     = pb.SqlSupportsConvert_SQL_CONVERT_TIMESTAMP
		tinyint       = pb.SqlSupportsConvert_SQL_CONVERT_TINYINT
		varbinary     = pb.SqlSupportsConvert_SQL_CONVERT_VARBINARY
		varchar       = pb.SqlSupportsConvert_SQL_CONVERT_VARCHAR
	)
	strs := []pb.SqlSupportsConvert{char, longvarchar, varchar}
	nums := []pb.SqlSupportsConvert{bigint, bit, decimal, float, integer, numeric, real, smallint, tinyint}
	bins := []pb.SqlSupportsConvert{binary, longvarbinary, varbinary}
	intervals := []pb.SqlSupportsConvert{intervalDay, intervalYear}
	all := append(append(append(append(append([]pb.SqlSupportsConvert{}, strs...), nums...), bins...), intervals...),
		date, timeT, timestamp)
	to := map[pb.SqlSupportsConvert][]pb.SqlSupportsConvert{}
	for _, t := range strs {
		to[t] = all
	}
	for _, t := range nums {
		to[t] = append(append([]pb.SqlSupportsConvert{}, strs...), nums...)
	}
	for _, t := range bins {
		to[t] = append(append([]pb.SqlSupportsConvert{}, strs...), bins...)
	}
	for _, t := range intervals {
		to[t] = append(append([]pb.SqlSupportsConvert{}, strs...), intervals...)
	}
	to[date] = append(append([]pb.SqlSupportsConvert{}, strs...), date, timestamp)
	to[timeT] = append(append([]pb.SqlSupportsConvert{}, strs...), timeT)
	to[timestamp] = append(append([]pb.SqlSupportsConvert{}, strs...), date, timeT, timestamp)
	out := make(map[int32][]int32, len(to))
	for from, tos := range to {
		for _, t := range tos {
			out[int32(from)] = append(out[int32(from)], int32(t))
		}
	}
	return out
}

// sqlInfoIDs is a GetSqlInfo request for the given ids.
type sqlInfoIDs []uint32

func (ids sqlInfoIDs) GetInfo() []uint32 { return ids }

// DoGetSqlInfo answers GetSqlInfo. Ids that Flight SQL does not define
// (a newer client may ask for newer ones) are left out of the answer
// rather than failing the whole request.
func (s *Server) DoGetSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ids := cmd.GetInfo()
	if len(ids) == 0 {
		return s.BaseServer.DoGetSqlInfo(ctx, cmd)
	}
	known := make(sqlInfoIDs, 0, len(ids))
	for _, id := range ids {
		if _, ok := pb.SqlInfo_name[int32(id)]; ok {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		b := array.NewRecordBuilder(s.mem, schema_ref.SqlInfo)
		defer b.Release()
		return schema_ref.SqlInfo, oneBatch(b.NewRecordBatch()), nil
	}
	return s.BaseServer.DoGetSqlInfo(ctx, known)
}
