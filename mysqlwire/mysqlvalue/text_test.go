package mysqlvalue

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

func TestCivil(t *testing.T) {
	// Against the time package over ±2000 years around the epoch.
	for days := int64(-730_000); days <= 730_000; days += 37 {
		want := time.Unix(days*86400, 0).UTC()
		y, m, d := civil(days)
		if y != int64(want.Year()) || m != int64(want.Month()) || d != int64(want.Day()) {
			t.Fatalf("civil(%d) = %d-%d-%d, want %s", days, y, m, d, want.Format("2006-01-02"))
		}
	}
}

func TestAppendDate(t *testing.T) {
	tests := map[int32]string{
		0:               "1970-01-01",
		-1:              "1969-12-31",
		19782:           "2024-02-29",
		-719162:         "0001-01-01",
		-719163:         "0001-12-31 (BC)",
		2932896:         "9999-12-31",
		2932897:         "10000-01-01",
		dateInfinity:    "infinity",
		dateNegInfinity: "-infinity",
	}
	for days, want := range tests {
		if got := string(appendDate(nil, days)); got != want {
			t.Errorf("appendDate(%d) = %q, want %q", days, got, want)
		}
	}
}

func TestAppendTimestamp(t *testing.T) {
	ts := time.Date(2024, 2, 29, 12, 34, 56, 123456789, time.UTC)
	tests := []struct {
		v    int64
		unit arrow.TimeUnit
		tz   bool
		want string
	}{
		{ts.UnixMicro(), arrow.Microsecond, false, "2024-02-29 12:34:56.123456"},
		{ts.UnixNano(), arrow.Nanosecond, false, "2024-02-29 12:34:56.123456789"},
		{ts.UnixMilli(), arrow.Millisecond, true, "2024-02-29 12:34:56.123+00"},
		{ts.Unix(), arrow.Second, false, "2024-02-29 12:34:56"},
		{-1, arrow.Microsecond, false, "1969-12-31 23:59:59.999999"},
		{-62135596800000000 - 1, arrow.Microsecond, false, "0001-12-31 (BC) 23:59:59.999999"},
		{timestampInfinity, arrow.Microsecond, false, "infinity"},
		{timestampNegInf, arrow.Microsecond, true, "-infinity"},
	}
	for _, tt := range tests {
		if got := string(appendTimestamp(nil, tt.v, tt.unit, tt.tz)); got != tt.want {
			t.Errorf("appendTimestamp(%d, %v) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
	if !timestampYearOK(ts.UnixMicro(), arrow.Microsecond) || timestampYearOK(-62135596800000000-1, arrow.Microsecond) {
		t.Errorf("timestampYearOK is wrong about year 2024 or 1 BC")
	}
}

func TestAppendInterval(t *testing.T) {
	tests := []struct {
		months, days int32
		micros       int64
		want         string
	}{
		{0, 0, 0, "00:00:00"},
		{14, 3, 4*3600e6 + 5e6 + 123000, "1 year 2 months 3 days 04:00:05.123"},
		{-13, 0, 0, "-1 year -1 month"},
		{-1, -1, 0, "-1 month -1 day"},
		{0, 1, -3600e6, "1 day -01:00:00"},
		{0, 0, 100 * 3600e6, "100:00:00"},
		{0, 0, -1, "-00:00:00.000001"},
		{24, 2, 0, "2 years 2 days"},
	}
	for _, tt := range tests {
		if got := string(appendInterval(nil, tt.months, tt.days, tt.micros)); got != tt.want {
			t.Errorf("appendInterval(%d, %d, %d) = %q, want %q", tt.months, tt.days, tt.micros, got, tt.want)
		}
	}
}

func TestAppendDouble(t *testing.T) {
	tests := []struct {
		v    float64
		bits int
		want string
	}{
		{3, 64, "3.0"}, {-2.5, 64, "-2.5"}, {0.1, 64, "0.1"}, {1e15, 64, "1000000000000000.0"},
		{1e16, 64, "1e+16"}, {1e-5, 64, "1e-05"}, {0.0001, 64, "0.0001"}, {123456789.25, 64, "123456789.25"},
		{math.Copysign(0, -1), 64, "-0.0"}, {math.NaN(), 64, "nan"}, {math.Inf(-1), 64, "-inf"},
		{5e-324, 64, "5e-324"}, {1.7976931348623157e308, 64, "1.7976931348623157e+308"},
		{float64(float32(1.1)), 32, "1.1"}, {16777216, 32, "16777216.0"}, {float64(float32(1e20)), 32, "1e+20"},
	}
	for _, tt := range tests {
		if got := string(appendDouble(nil, tt.v, tt.bits)); got != tt.want {
			t.Errorf("appendDouble(%v, %d) = %q, want %q", tt.v, tt.bits, got, tt.want)
		}
	}
}

func TestAppendDecimal128(t *testing.T) {
	max38, _ := new(big.Int).SetString(strings.Repeat("9", 38), 10)
	tests := []struct {
		n     decimal128.Num
		scale int32
		want  string
	}{
		{decimal128.FromI64(12345), 2, "123.45"},
		{decimal128.FromI64(-5), 2, "-0.05"},
		{decimal128.FromI64(0), 3, "0.000"},
		{decimal128.FromI64(7), 0, "7"},
		{decimal128.FromBigInt(max38), 10, "9999999999999999999999999999.9999999999"},
		{decimal128.FromBigInt(new(big.Int).Neg(max38)), 0, "-" + strings.Repeat("9", 38)},
		{decimal128.FromI64(math.MinInt64), 0, "-9223372036854775808"},
	}
	for _, tt := range tests {
		if got := string(appendDecimal128(nil, tt.n, tt.scale)); got != tt.want {
			t.Errorf("appendDecimal128(%v, %d) = %q, want %q", tt.n.BigInt(), tt.scale, got, tt.want)
		}
	}
}

func FuzzAppendDecimal128(f *testing.F) {
	f.Add(int64(0), uint64(1), uint8(0))
	f.Add(int64(-1), uint64(0), uint8(5))
	f.Add(int64(math.MaxInt64), uint64(math.MaxUint64), uint8(38))
	f.Fuzz(func(t *testing.T, hi int64, lo uint64, scale uint8) {
		n := decimal128.New(hi, lo)
		s := int32(scale % 39)
		got := string(appendDecimal128(nil, n, s))
		want := new(big.Rat).SetFrac(n.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)).FloatString(int(s))
		if got != want {
			t.Fatalf("appendDecimal128(%v, %d) = %s, want %s", n.BigInt(), s, got, want)
		}
	})
}

func TestNeedsQuotes(t *testing.T) {
	quoted := []string{"", " a", "a ", "\ta", "NULL", "null", "Null", "a,b", "a:b", "a=b", "(", ")", "[x]", "{", "}", "it's", `a"b`}
	plain := []string{"a", "a b", "a\\b", "NULLS", "a-b", "é", "x\ny", "a;b"}
	for _, s := range quoted {
		if !needsQuotes(s) {
			t.Errorf("needsQuotes(%q) = false, want true", s)
		}
	}
	for _, s := range plain {
		if needsQuotes(s) {
			t.Errorf("needsQuotes(%q) = true, want false", s)
		}
	}
	if got := string(appendQuoted(nil, `it's a\b`)); got != `'it\'s a\\b'` {
		t.Errorf("appendQuoted = %s", got)
	}
	if got := string(appendBlobText(nil, []byte("a'\\\x00\x7f~ "))); got != `a\x27\x5C\x00\x7F~ ` {
		t.Errorf("appendBlobText = %s", got)
	}
}
