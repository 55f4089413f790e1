package protoarrow

import (
	"fmt"
	"strings"
)

// pathSpec is one parsed column of a normalizer spec.
type pathSpec struct {
	text  string    // the path as written, for errors
	segs  []segSpec // field names from the top-level message
	alias string    // "" when not renamed
}

// segSpec is one dotted segment of a path.
type segSpec struct {
	name string
	fan  bool // written with []
}

// parseSpec splits a normalizer spec into paths; see WithNormalizer.
func parseSpec(spec string) ([]pathSpec, error) {
	var out []pathSpec
	for i, item := range strings.Split(spec, ",") {
		words := strings.Fields(item)
		var p pathSpec
		switch {
		case len(words) == 1:
		case len(words) == 3 && strings.EqualFold(words[1], "as"):
			p.alias = words[2]
			if !isIdent(p.alias) {
				return nil, fmt.Errorf("%w: column %d: alias %q is not an identifier", ErrSpec, i+1, p.alias)
			}
		case len(words) == 0:
			return nil, fmt.Errorf("%w: column %d is empty", ErrSpec, i+1)
		default:
			return nil, fmt.Errorf("%w: column %d: %q is not \"path\" or \"path AS name\"", ErrSpec, i+1, strings.TrimSpace(item))
		}
		p.text = words[0]
		for _, s := range strings.Split(p.text, ".") {
			seg := segSpec{name: s}
			if name, ok := strings.CutSuffix(s, "[]"); ok {
				seg = segSpec{name: name, fan: true}
			}
			if !isIdent(seg.name) {
				return nil, fmt.Errorf("%w: path %q: bad segment %q", ErrSpec, p.text, s)
			}
			p.segs = append(p.segs, seg)
		}
		out = append(out, p)
	}
	return out, nil
}

// isIdent reports whether s is a Protobuf-style identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}
