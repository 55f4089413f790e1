package duckdbsql

import "bytes"

// DuckDB writes a DOUBLE constant that is not finite as a bare NaN,
// Infinity or -Infinity in its JSON trees (SELECT 1E1000), which is not
// JSON. The readers take such a token as the string of its name, so a
// statement with one reads like any other; a tree rewritten for
// json_deserialize_sql keeps the string, which DuckDB then refuses, so
// no rewrite changes a constant unseen.

// nonFinite are the tokens, as DuckDB writes them.
var nonFinite = [][]byte{[]byte("-Infinity"), []byte("Infinity"), []byte("NaN")}

// quoteNonFinite returns js with every NaN, Infinity and -Infinity outside
// a string quoted; js itself when it holds none.
func quoteNonFinite(js []byte) []byte {
	if !bytes.Contains(js, nonFinite[1]) && !bytes.Contains(js, nonFinite[2]) {
		return js
	}
	var out []byte
	last, inString := 0, false
	for i := 0; i < len(js); i++ {
		c := js[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		for _, tok := range nonFinite {
			if bytes.HasPrefix(js[i:], tok) {
				out = append(out, js[last:i]...)
				out = append(out, '"')
				out = append(out, tok...)
				out = append(out, '"')
				i += len(tok) - 1
				last = i + 1
				break
			}
		}
	}
	if out == nil {
		return js
	}
	return append(out, js[last:]...)
}
