package flightsql

import (
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// registerSQLInfo registers what GetSqlInfo reports about the server.
func registerSQLInfo(s *Server) error {
	infos := map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:                        "quiver",
		flightsql.SqlInfoFlightSqlServerVersion:                     "0.1.0",
		flightsql.SqlInfoFlightSqlServerArrowVersion:                "18.8.0",
		flightsql.SqlInfoFlightSqlServerReadOnly:                    false,
		flightsql.SqlInfoFlightSqlServerSql:                         true,
		flightsql.SqlInfoFlightSqlServerSubstrait:                   false,
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(flightsql.SqlTransactionTransaction),
		flightsql.SqlInfoFlightSqlServerCancel:                      true,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               true,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: true,
		flightsql.SqlInfoFlightSqlServerStatementTimeout:            int32(0),
		flightsql.SqlInfoFlightSqlServerTransactionTimeout:          int32(0),
		flightsql.SqlInfoDDLCatalog:                                 true,
		flightsql.SqlInfoDDLSchema:                                  true,
		flightsql.SqlInfoIdentifierCase:                             int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoQuotedIdentifierCase:                       int64(flightsql.SqlCaseSensitivityCaseInsensitive),
		flightsql.SqlInfoIdentifierQuoteChar:                        `"`,
		flightsql.SqlInfoTransactionsSupported:                      true,
		flightsql.SqlInfoSupportsColumnAliasing:                     true,
		flightsql.SqlInfoNullPlusNullIsNull:                         true,
		flightsql.SqlInfoSupportsTableCorrelationNames:              true,
		flightsql.SqlInfoSupportsExpressionsInOrderBy:               true,
		flightsql.SqlInfoSupportsOrderByUnrelated:                   true,
		flightsql.SqlInfoSupportedGroupBy:                           int32(1 << 1), // SQL_GROUP_BY_UNRELATED
		flightsql.SqlInfoSupportsLikeEscapeClause:                   true,
		flightsql.SqlInfoSupportsNonNullableColumns:                 true,
		flightsql.SqlInfoSupportsIntegrityEnhancementFacility:       true,
		flightsql.SqlInfoCatalogTerm:                                "catalog",
		flightsql.SqlInfoSchemaTerm:                                 "schema",
		flightsql.SqlInfoProcedureTerm:                              "procedure",
		flightsql.SqlInfoCatalogAtStart:                             true,
		flightsql.SqlInfoSelectForUpdateSupported:                   false,
		flightsql.SqlInfoStoredProceduresSupported:                  false,
		flightsql.SqlInfoCorrelatedSubqueriesSupported:              true,
		flightsql.SqlInfoSupportedUnions:                            int32(3), // UNION and UNION ALL
		flightsql.SqlInfoMaxColumnNameLen:                           int64(0),
		flightsql.SqlInfoDefaultTransactionIsolation:                int32(4), // snapshot (serializable in DuckDB)
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit:      false,
		flightsql.SqlInfoDataDefinitionsInTransactionsIgnored:       false,
		flightsql.SqlInfoBatchUpdatesSupported:                      true,
		flightsql.SqlInfoSavePointsSupported:                        false,
		flightsql.SqlInfoNamedParametersSupported:                   true,
		flightsql.SqlInfoLocatorsUpdateCopy:                         false,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported:    false,
		flightsql.SqlInfoKeywords:                                   []string{"ASOF", "PIVOT", "UNPIVOT", "QUALIFY", "SUMMARIZE", "DESCRIBE", "ATTACH", "DETACH", "COPY", "EXPORT", "IMPORT", "INSTALL", "LOAD", "MACRO", "PRAGMA"},
		flightsql.SqlInfoNumericFunctions:                           []string{"abs", "ceil", "floor", "round", "sqrt", "pow", "exp", "ln", "log10", "log2", "sin", "cos", "tan", "pi", "random", "sign", "trunc", "mod"},
		flightsql.SqlInfoStringFunctions:                            []string{"concat", "length", "lower", "upper", "trim", "ltrim", "rtrim", "substring", "replace", "position", "left", "right", "repeat", "reverse", "lpad", "rpad", "regexp_matches", "regexp_replace", "split_part", "starts_with"},
		flightsql.SqlInfoSystemFunctions:                            []string{"current_database", "current_schema", "current_user", "version"},
		flightsql.SqlInfoDateTimeFunctions:                          []string{"current_date", "current_time", "current_timestamp", "now", "date_trunc", "date_part", "date_diff", "date_add", "extract", "strftime", "strptime", "epoch", "make_date", "make_timestamp"},
	}
	infos[flightsql.SqlInfoFlightSqlServerVersion] = "quiver 0.1.0 (DuckDB " + duckdb.LibraryVersion() + ")"
	for id, v := range infos {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return err
		}
	}
	return nil
}
