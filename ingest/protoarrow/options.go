package protoarrow

import (
	"fmt"
	"strings"
)

// Option configures a [Decoder].
type Option func(*config)

// config holds what the options set.
type config struct {
	normalize    string
	hasNormalize bool
}

// WithNormalizer adds a flat projection of chosen field paths to the
// decoder, filled from the same parse as the main record and flushed with
// [Decoder.NewNormalizedRecord].
//
// spec is a comma-separated list of paths, each optionally renamed with AS:
//
//	id, user.name AS user_name, items[].sku AS sku, items[].qty
//
// A path names fields from the top-level message down to a leaf (a scalar,
// an enum, a Timestamp or a wrapper), joined by dots. A repeated field or a
// map must be written with [] and fans out: the message gives one output row
// per element, and a message whose repeated field is empty or absent gives
// no row at all (an inner join). A map fans out over its entries, whose
// fields are key and value (attrs[].key, attrs[].value). Fan-outs may nest
// (items[].deals[].price gives one row per deal of each item, with item and
// top-level columns repeated), but all fan-out paths of one spec must lie on
// one chain: fanning out over two sibling repeated fields, which would be a
// cross product, is rejected. Without any fan-out each message gives exactly
// one row.
//
// A column is named by its alias, or else by its path with [] dropped and
// dots turned into underscores (items[].qty becomes items_qty). Every column
// is nullable: it is null when a message on its path is absent, and
// otherwise follows the presence rules of the main record.
func WithNormalizer(spec string) Option {
	return func(c *config) {
		c.normalize = spec
		c.hasNormalize = true
	}
}

// validate checks the options against each other.
func (c *config) validate() error {
	if c.hasNormalize && strings.TrimSpace(c.normalize) == "" {
		return fmt.Errorf("%w: empty spec", ErrSpec)
	}
	return nil
}
