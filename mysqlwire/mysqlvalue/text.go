package mysqlvalue

import (
	"bytes"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// This file renders leaf values as text the way DuckDB casts them to
// VARCHAR, appending to a caller's buffer so that a result is formatted
// without allocating per value. The MySQL text protocol sends every value
// as text; the binary protocol reparses it (see column.go).

const (
	microsPerSecond = 1_000_000
	microsPerDay    = 86_400 * microsPerSecond
	nanosPerDay     = 86_400 * 1_000_000_000

	// DuckDB's infinite dates and timestamps.
	dateInfinity      = math.MaxInt32
	dateNegInfinity   = -math.MaxInt32
	timestampInfinity = math.MaxInt64
	timestampNegInf   = -math.MaxInt64
)

// appendDouble appends v the way DuckDB prints a DOUBLE (or, with bitSize
// 32, a FLOAT): the shortest digits that read back to v, positional between
// 1e-4 and 1e16 with at least one decimal ("3.0"), scientific otherwise
// ("1e+16"), and nan, inf, -inf.
func appendDouble(b []byte, v float64, bitSize int) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "nan"...)
	case math.IsInf(v, 1):
		return append(b, "inf"...)
	case math.IsInf(v, -1):
		return append(b, "-inf"...)
	case v == 0:
		if math.Signbit(v) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	case v == math.Trunc(v) && v > -1e15 && v < 1e15:
		b = strconv.AppendInt(b, int64(v), 10)
		return append(b, ".0"...)
	}
	mark := len(b)
	b = strconv.AppendFloat(b, v, 'e', -1, bitSize)
	exp, neg := 0, false
	for _, c := range b[mark+bytes.LastIndexByte(b[mark:], 'e')+1:] {
		switch {
		case c == '-':
			neg = true
		case c >= '0' && c <= '9':
			exp = exp*10 + int(c-'0')
		}
	}
	if neg {
		exp = -exp
	}
	if exp < -4 || exp >= 16 {
		return b
	}
	b = strconv.AppendFloat(b[:mark], v, 'f', -1, bitSize)
	for _, c := range b[mark:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

// appendDecimal128 appends n with scale digits after the decimal point.
func appendDecimal128(b []byte, n decimal128.Num, scale int32) []byte {
	hi, lo := n.HighBits(), n.LowBits()
	neg := hi < 0
	if neg {
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	var buf [40]byte
	var digits []byte
	if hi == 0 {
		digits = strconv.AppendUint(buf[:0], lo, 10)
	} else {
		// |n| < 2^127, so hi < 1e19 and the quotient fits in 64 bits.
		q, r := bits.Div64(uint64(hi), lo, 1e19)
		digits = strconv.AppendUint(buf[:0], q, 10)
		digits = appendPadded(digits, r, 19)
	}
	return appendScaled(b, neg, digits, scale)
}

// appendDecimal256 appends a 256-bit decimal; it allocates, which is fine
// for a type DuckDB never produces.
func appendDecimal256(b []byte, n decimal256.Num, scale int32) []byte {
	v := n.BigInt()
	neg := v.Sign() < 0
	digits := new(big.Int).Abs(v).Append(nil, 10)
	return appendScaled(b, neg, digits, scale)
}

// appendScaledInt appends v / 10^scale in positional notation.
func appendScaledInt(b []byte, v int64, scale int32) []byte {
	var buf [24]byte
	neg := v < 0
	u := uint64(v)
	if neg {
		u = -u
	}
	return appendScaled(b, neg, strconv.AppendUint(buf[:0], u, 10), scale)
}

// appendScaled appends the unsigned decimal digits with a decimal point
// scale digits from the right.
func appendScaled(b []byte, neg bool, digits []byte, scale int32) []byte {
	if neg {
		b = append(b, '-')
	}
	s := int(scale)
	switch {
	case s <= 0:
		b = append(b, digits...)
		for ; s < 0; s++ {
			b = append(b, '0')
		}
	case len(digits) <= s:
		b = append(b, '0', '.')
		for k := len(digits); k < s; k++ {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[:len(digits)-s]...)
		b = append(b, '.')
		b = append(b, digits[len(digits)-s:]...)
	}
	return b
}

// appendPadded appends v in decimal, zero-padded to width digits.
func appendPadded(b []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || i > len(buf)-width {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[i:]...)
}

func append2(b []byte, v int64) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

// appendFraction appends "." and frac as a digits-wide fraction with its
// trailing zeros dropped, or nothing when frac is zero.
func appendFraction(b []byte, frac int64, digits int) []byte {
	if frac == 0 {
		return b
	}
	var buf [9]byte
	for k := digits - 1; k >= 0; k-- {
		buf[k] = byte('0' + frac%10)
		frac /= 10
	}
	n := digits
	for n > 0 && buf[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, buf[:n]...)
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date, year
// 0 being 1 BC.
func civil(days int64) (year int64, month, day int64) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = doy - (153*mp+2)/5 + 1
	month = mp + 3
	if mp >= 10 {
		month = mp - 9
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// appendDateParts appends YYYY-MM-DD and reports whether the year is BC,
// which DuckDB marks with a " (BC)" suffix.
func appendDateParts(b []byte, days int64) ([]byte, bool) {
	y, m, d := civil(days)
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	if y < 10000 {
		b = appendPadded(b, uint64(y), 4)
	} else {
		b = strconv.AppendInt(b, y, 10)
	}
	b = append(b, '-')
	b = append2(b, m)
	b = append(b, '-')
	b = append2(b, d)
	return b, bc
}

// appendDate appends a DATE given as days since the epoch.
func appendDate(b []byte, days int32) []byte {
	switch days {
	case dateInfinity:
		return append(b, "infinity"...)
	case dateNegInfinity:
		return append(b, "-infinity"...)
	}
	b, bc := appendDateParts(b, int64(days))
	if bc {
		b = append(b, " (BC)"...)
	}
	return b
}

// appendClock appends HH:MM:SS for seconds since midnight (hours may pass
// 24, as in intervals) and the sub-second fraction.
func appendClock(b []byte, secs, frac int64, fracDigits int) []byte {
	h := secs / 3600
	if h < 100 {
		b = append2(b, h)
	} else {
		b = strconv.AppendInt(b, h, 10)
	}
	b = append(b, ':')
	b = append2(b, secs/60%60)
	b = append(b, ':')
	b = append2(b, secs%60)
	return appendFraction(b, frac, fracDigits)
}

// appendTimeMicros appends a TIME given as microseconds since midnight.
func appendTimeMicros(b []byte, us int64) []byte {
	return appendClock(b, us/microsPerSecond, us%microsPerSecond, 6)
}

// timestampParts splits a timestamp in unit into days since the epoch,
// seconds into the day, and the sub-second fraction with its digit count.
func timestampParts(v int64, unit arrow.TimeUnit) (days, secs, frac int64, digits int) {
	var perDay, perSec int64
	switch unit {
	case arrow.Second:
		perDay, perSec, digits = 86_400, 1, 0
	case arrow.Millisecond:
		perDay, perSec, digits = 86_400_000, 1000, 3
	case arrow.Nanosecond:
		perDay, perSec, digits = nanosPerDay, 1_000_000_000, 9
	default:
		perDay, perSec, digits = microsPerDay, microsPerSecond, 6
	}
	days = v / perDay
	rem := v % perDay
	if rem < 0 {
		days--
		rem += perDay
	}
	return days, rem / perSec, rem % perSec, digits
}

// appendTimestamp appends a TIMESTAMP; with tz it appends DuckDB's "+00"
// offset of a TIMESTAMPTZ shown in UTC.
func appendTimestamp(b []byte, v int64, unit arrow.TimeUnit, tz bool) []byte {
	switch v {
	case timestampInfinity:
		return append(b, "infinity"...)
	case timestampNegInf:
		return append(b, "-infinity"...)
	}
	days, secs, frac, digits := timestampParts(v, unit)
	b, bc := appendDateParts(b, days)
	if bc {
		b = append(b, " (BC)"...)
	}
	b = append(b, ' ')
	b = appendClock(b, secs, frac, digits)
	if tz {
		b = append(b, "+00"...)
	}
	return b
}

// timestampYearOK reports whether a timestamp's year is in 1..9999, the
// range the binary protocol's DATETIME can carry.
func timestampYearOK(v int64, unit arrow.TimeUnit) bool {
	if v == timestampInfinity || v == timestampNegInf {
		return false
	}
	days, _, _, _ := timestampParts(v, unit)
	return dateYearOK(days)
}

func dateYearOK(days int64) bool {
	// 0001-01-01 and 9999-12-31 as days since the epoch.
	return days >= -719162 && days <= 2932896
}

// appendInterval appends an INTERVAL the way DuckDB prints it:
// "1 year 2 months 3 days 04:05:06.5", "-1 day", "00:00:00".
func appendInterval(b []byte, months, days int32, micros int64) []byte {
	start := len(b)
	unit := func(v int64, name string) {
		if len(b) > start {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
		b = append(b, name...)
		if v != 1 && v != -1 {
			b = append(b, 's')
		}
	}
	if years := months / 12; years != 0 {
		unit(int64(years), "year")
	}
	if m := months % 12; m != 0 {
		unit(int64(m), "month")
	}
	if days != 0 {
		unit(int64(days), "day")
	}
	if micros != 0 {
		if len(b) > start {
			b = append(b, ' ')
		}
		u := uint64(micros)
		if micros < 0 {
			b = append(b, '-')
			u = -u
		}
		b = appendClock(b, int64(u/microsPerSecond), int64(u%microsPerSecond), 6)
	} else if len(b) == start {
		b = append(b, "00:00:00"...)
	}
	return b
}

// appendBlobText appends a BLOB as DuckDB prints it: printable ASCII as
// is, every other byte (and ' and \) as \xHH.
func appendBlobText(b, v []byte) []byte {
	const hexDigits = "0123456789ABCDEF"
	for _, c := range v {
		if c >= 0x20 && c < 0x7f && c != '\'' && c != '\\' {
			b = append(b, c)
			continue
		}
		b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// needsQuotes reports whether DuckDB quotes a value inside a LIST, STRUCT
// or MAP: when it is empty, reads as NULL, has white space at either end,
// or holds a character that would make the nested text ambiguous.
func needsQuotes[T string | []byte](s T) bool {
	if len(s) == 0 || isSpaceByte(s[0]) || isSpaceByte(s[len(s)-1]) {
		return true
	}
	if len(s) == 4 && s[0]|0x20 == 'n' && s[1]|0x20 == 'u' && s[2]|0x20 == 'l' && s[3]|0x20 == 'l' {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '=', ':', ',', '(', ')', '[', ']', '{', '}', '\'', '"':
			return true
		}
	}
	return false
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// appendQuoted appends s in single quotes, escaping ' and \ with a
// backslash.
func appendQuoted[T string | []byte](b []byte, s T) []byte {
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '\'')
}
