package ipcx

import "sync"

// bufCache keeps a few large byte buffers for reuse: the memory compressed
// messages are read into before they are decompressed, and the arenas
// compressed bodies are written to. A sync.Pool would lose them at every
// garbage collection, which the multi-megabyte batches that pass through
// here cause often; this cache keeps up to maxBytes until they are taken
// again. Buffers come back only when nothing references them any more
// (for arenas: once gRPC has written them, see Hold).
type bufCache struct {
	mu       sync.Mutex
	bufs     [][]byte
	held     int // bytes of capacity in bufs
	maxBytes int
}

// get returns a buffer of length n: the smallest kept one that is large
// enough but not more than twice that, else a new one. (A caller may keep
// what it gets: a small message must not pin a large buffer.)
func (c *bufCache) get(n int) []byte {
	c.mu.Lock()
	best := -1
	for i, b := range c.bufs {
		if cap(b) >= n && cap(b) <= 2*n+64<<10 && (best < 0 || cap(b) < cap(c.bufs[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := c.bufs[best]
		c.bufs[best] = c.bufs[len(c.bufs)-1]
		c.bufs = c.bufs[:len(c.bufs)-1]
		c.held -= cap(b)
		c.mu.Unlock()
		return b[:n]
	}
	c.mu.Unlock()
	return make([]byte, n, n+n/8)
}

// put keeps b for reuse, unless that would hold more than maxBytes; the
// smallest buffers make room for a larger one.
func (c *bufCache) put(b []byte) {
	if cap(b) == 0 || cap(b) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.held+cap(b) > c.maxBytes && len(c.bufs) > 0 {
		small := 0
		for i := range c.bufs {
			if cap(c.bufs[i]) < cap(c.bufs[small]) {
				small = i
			}
		}
		if cap(c.bufs[small]) >= cap(b) {
			return // everything kept is larger: drop b
		}
		c.held -= cap(c.bufs[small])
		c.bufs[small] = c.bufs[len(c.bufs)-1]
		c.bufs = c.bufs[:len(c.bufs)-1]
	}
	c.bufs = append(c.bufs, b[:0])
	c.held += cap(b)
}

var (
	// scratches hold compressed message bodies while they are
	// decompressed.
	scratches = &bufCache{maxBytes: 64 << 20}
	// arenas hold compressed bodies until gRPC has sent them.
	arenas = &bufCache{maxBytes: 128 << 20}
)

func getScratch(n int) []byte { return scratches.get(n) }
func putScratch(b []byte)     { scratches.put(b) }
func getArena(n int) []byte   { return arenas.get(n) }
func putArena(b []byte)       { arenas.put(b) }
