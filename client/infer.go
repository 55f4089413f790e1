package client

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// inferCSV reads a CSV header and up to n rows after it, and types each
// column as the first of these that every non-empty value in the sample
// parses as: int64, float64, boolean (Go's strconv.ParseBool), date32
// (YYYY-MM-DD), timestamp[us] (ISO 8601 with a space or T; tagged UTC
// when a value carries a zone), else utf8. Empty values are nulls, and a
// column that is empty throughout the sample is utf8. Values after the
// sample that do not parse as their column's type fail the read with the
// value named, so nothing is silently lost.
func inferCSV(r io.Reader, n int) (*arrow.Schema, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read the CSV header: %w", err)
	}
	names := append([]string(nil), header...)
	cols := make([]csvColumn, len(names))
	for i := range cols {
		cols[i] = csvColumn{possible: csvAll}
	}
	for row := 0; row < n; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sample CSV rows: %w", err)
		}
		for i, v := range rec {
			cols[i].observe(v)
		}
	}
	fields := make([]arrow.Field, len(names))
	for i, name := range names {
		if name == "" {
			return nil, fmt.Errorf("column %d has an empty name in the header", i+1)
		}
		fields[i] = arrow.Field{Name: name, Type: cols[i].typ(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// The types a CSV column may still be, as bits.
const (
	csvInt = 1 << iota
	csvFloat
	csvBool
	csvDate
	csvTimestamp
	csvAll = csvInt | csvFloat | csvBool | csvDate | csvTimestamp
)

type csvColumn struct {
	possible int
	seen     bool // a non-empty value
	zoned    bool // a timestamp with a zone
}

func (c *csvColumn) observe(v string) {
	if v == "" {
		return
	}
	c.seen = true
	if c.possible&csvInt != 0 {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			c.possible &^= csvInt
		}
	}
	if c.possible&csvFloat != 0 {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			c.possible &^= csvFloat
		}
	}
	if c.possible&csvBool != 0 {
		if _, err := strconv.ParseBool(v); err != nil {
			c.possible &^= csvBool
		}
	}
	if c.possible&csvDate != 0 {
		if _, err := time.Parse("2006-01-02", v); err != nil {
			c.possible &^= csvDate
		}
	}
	if c.possible&csvTimestamp != 0 {
		_, zoned, err := arrow.TimestampFromStringInLocation(v, arrow.Microsecond, time.UTC)
		if err != nil {
			c.possible &^= csvTimestamp
		}
		c.zoned = c.zoned || zoned
	}
}

func (c *csvColumn) typ() arrow.DataType {
	switch {
	case !c.seen:
		return arrow.BinaryTypes.String
	case c.possible&csvInt != 0:
		return arrow.PrimitiveTypes.Int64
	case c.possible&csvFloat != 0:
		return arrow.PrimitiveTypes.Float64
	case c.possible&csvBool != 0:
		return arrow.FixedWidthTypes.Boolean
	case c.possible&csvDate != 0:
		return arrow.FixedWidthTypes.Date32
	case c.possible&csvTimestamp != 0 && c.zoned:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case c.possible&csvTimestamp != 0:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	}
	return arrow.BinaryTypes.String
}

// csvReadable checks that arrow's CSV reader can parse every column of a
// schema given for CSV files.
func csvReadable(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
			arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.LARGE_STRING,
			arrow.BINARY, arrow.LARGE_BINARY, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP,
			arrow.TIME32, arrow.TIME64, arrow.DECIMAL128, arrow.DECIMAL256:
		default:
			return fmt.Errorf("column %q is %s, which CSV cannot carry", f.Name, f.Type)
		}
	}
	return nil
}

// inferNDJSON reads up to n lines of one JSON object each and builds a
// schema from them. Columns come in the order their keys first appear.
// Types: true/false is boolean; a number is int64 unless some value in the
// sample has a fraction or exponent (then float64); a string is utf8
// (timestamps included: DuckDB casts them); an array is a list of its
// elements' merged type; an object is a struct of its keys' merged types.
// null alone, or an empty array's element, is utf8. Values of different
// kinds in one column (a number and a string) are an error: give a schema
// instead. A key first seen after the sample fails the read (the guard
// below), rather than being dropped.
func inferNDJSON(r io.Reader, n int) (*arrow.Schema, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	dec.UseNumber()
	root := &jsonShape{kind: jsonObject}
	for line := 1; line <= n; line++ {
		if !dec.More() {
			break
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("sample JSON lines: object %d: %w", line, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, fmt.Errorf("sample JSON lines: object %d: want an object, got %v", line, tok)
		}
		if err := root.observeObject(dec, ""); err != nil {
			return nil, fmt.Errorf("sample JSON lines: object %d: %w", line, err)
		}
	}
	if len(root.keys) == 0 {
		return nil, errors.New("no keys in the sampled JSON lines")
	}
	fields := make([]arrow.Field, len(root.keys))
	for i, k := range root.keys {
		fields[i] = arrow.Field{Name: k, Type: root.fields[k].arrowType(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonInt
	jsonFloat
	jsonString
	jsonList
	jsonObject
)

func (k jsonKind) String() string {
	return [...]string{"null", "boolean", "integer", "number", "string", "array", "object"}[k]
}

// jsonShape is the merged shape of the values seen at one place.
type jsonShape struct {
	kind   jsonKind
	elem   *jsonShape            // jsonList
	keys   []string              // jsonObject, in first-seen order
	fields map[string]*jsonShape // jsonObject
}

func (s *jsonShape) merge(k jsonKind, path string) error {
	switch {
	case k == jsonNull || k == s.kind:
	case s.kind == jsonNull:
		s.kind = k
	case (s.kind == jsonInt && k == jsonFloat) || (s.kind == jsonFloat && k == jsonInt):
		s.kind = jsonFloat
	default:
		return fmt.Errorf("%s holds both %s and %s values; give the schema (quiver load --schema-from FILE)", pathName(path), s.kind, k)
	}
	return nil
}

func pathName(path string) string {
	if path == "" {
		return "the top level"
	}
	return "key " + strconv.Quote(path)
}

// observe reads one value from dec into the shape.
func (s *jsonShape) observe(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case nil:
		return nil
	case bool:
		return s.merge(jsonBool, path)
	case string:
		return s.merge(jsonString, path)
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return s.merge(jsonFloat, path)
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return s.merge(jsonFloat, path)
		}
		return s.merge(jsonInt, path)
	case json.Delim:
		switch v {
		case '[':
			if err := s.merge(jsonList, path); err != nil {
				return err
			}
			if s.elem == nil {
				s.elem = &jsonShape{}
			}
			for dec.More() {
				if err := s.elem.observe(dec, path+"[]"); err != nil {
					return err
				}
			}
			_, err := dec.Token() // ]
			return err
		case '{':
			if err := s.merge(jsonObject, path); err != nil {
				return err
			}
			return s.observeObject(dec, path)
		}
	}
	return fmt.Errorf("unexpected %v", tok)
}

// observeObject reads an object's members, its '{' already read.
func (s *jsonShape) observeObject(dec *json.Decoder, path string) error {
	if s.fields == nil {
		s.fields = map[string]*jsonShape{}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		child := s.fields[key]
		if child == nil {
			child = &jsonShape{}
			s.fields[key] = child
			s.keys = append(s.keys, key)
		}
		sub := key
		if path != "" {
			sub = path + "." + key
		}
		if err := child.observe(dec, sub); err != nil {
			return err
		}
	}
	_, err := dec.Token() // }
	return err
}

func (s *jsonShape) arrowType() arrow.DataType {
	switch s.kind {
	case jsonBool:
		return arrow.FixedWidthTypes.Boolean
	case jsonInt:
		return arrow.PrimitiveTypes.Int64
	case jsonFloat:
		return arrow.PrimitiveTypes.Float64
	case jsonList:
		return arrow.ListOf(s.elem.arrowType())
	case jsonObject:
		if len(s.keys) == 0 {
			return arrow.BinaryTypes.String
		}
		fields := make([]arrow.Field, len(s.keys))
		for i, k := range s.keys {
			fields[i] = arrow.Field{Name: k, Type: s.fields[k].arrowType(), Nullable: true}
		}
		return arrow.StructOf(fields...)
	}
	return arrow.BinaryTypes.String
}

// ndjsonGuard passes NDJSON through, line by line, after checking every
// object key against the schema. arrow's JSON reader skips keys its
// schema lacks; the guard turns such a key into an error naming its line,
// so no value is silently dropped.
type ndjsonGuard struct {
	br   *bufio.Reader
	root *arrow.StructType
	buf  []byte // the rest of the current line, to hand out
	long []byte // a line longer than br's buffer, assembled
	line int
	err  error
}

func newNDJSONGuard(br *bufio.Reader, schema *arrow.Schema) *ndjsonGuard {
	return &ndjsonGuard{br: br, root: arrow.StructOf(schema.Fields()...)}
}

func (g *ndjsonGuard) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			g.err = err
			return 0, err
		}
		if len(line) > 0 {
			g.line++
			if cerr := checkJSONKeys(line, g.root); cerr != nil {
				g.err = fmt.Errorf("line %d: %w", g.line, cerr)
				return 0, g.err
			}
		}
		g.buf = line
		if errors.Is(err, io.EOF) {
			g.err = io.EOF
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// readLine returns the next line with its newline; the slice is valid
// until the next call.
func (g *ndjsonGuard) readLine() ([]byte, error) {
	line, err := g.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	g.long = append(g.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = g.br.ReadSlice('\n')
		g.long = append(g.long, line...)
	}
	return g.long, err
}

// checkJSONKeys walks one line's JSON value and reports the first object
// key that dt has no field for. Malformed JSON is left for the decoder to
// report.
func checkJSONKeys(line []byte, dt arrow.DataType) error {
	s := jsonScan{b: line}
	s.ws()
	if s.i == len(s.b) {
		return nil
	}
	err := s.value(dt, "")
	if errors.Is(err, errMalformed) {
		return nil
	}
	return err
}

var errMalformed = errors.New("malformed JSON")

// jsonScan is a minimal scanner over one JSON text: enough to find object
// keys, without allocating for values.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *jsonScan) value(dt arrow.DataType, path string) error {
	s.ws()
	if s.i >= len(s.b) {
		return errMalformed
	}
	switch s.b[s.i] {
	case '{':
		st, _ := dt.(*arrow.StructType)
		return s.object(st, path)
	case '[':
		var elem arrow.DataType
		if l, ok := dt.(arrow.ListLikeType); ok {
			elem = l.Elem()
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.value(elem, path+"[]"); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return errMalformed
			}
			switch s.b[s.i] {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return errMalformed
			}
		}
	case '"':
		_, err := s.str(false)
		return err
	default:
		start := s.i
	literal:
		for ; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				break literal
			}
		}
		if s.i == start {
			return errMalformed
		}
		return nil
	}
}

// object checks an object's keys against st; a nil st (a map, or a type
// that is not a struct) checks nothing below.
func (s *jsonScan) object(st *arrow.StructType, path string) error {
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		key, err := s.str(true)
		if err != nil {
			return err
		}
		sub := key
		if path != "" {
			sub = path + "." + key
		}
		var ft arrow.DataType
		if st != nil {
			idx, ok := st.FieldIdx(key)
			if !ok {
				return fmt.Errorf("key %q is not in the schema inferred from the first lines; "+
					"sample more lines (quiver load --infer-rows N) or give the schema (--schema-from FILE)", sub)
			}
			ft = st.Field(idx).Type
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errMalformed
		}
		s.i++
		if err := s.value(ft, sub); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errMalformed
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errMalformed
		}
	}
}

// str reads a JSON string and, when want is set, returns it unescaped.
func (s *jsonScan) str(want bool) (string, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", errMalformed
	}
	start := s.i
	escaped := false
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i++
		case '"':
			s.i++
			raw := s.b[start:s.i]
			if !want {
				return "", nil
			}
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var out string
			if err := json.Unmarshal(raw, &out); err != nil {
				return "", errMalformed
			}
			return out, nil
		}
	}
	return "", errMalformed
}
