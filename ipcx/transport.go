package ipcx

// The gRPC transport settings for bulk Arrow data, shared by quiver's
// client and server so that both ends agree.
const (
	// MaxMessageSize is the gRPC message limit in both directions: result
	// batches of 64K wide rows exceed gRPC's 4 MB default.
	MaxMessageSize = 1 << 30
	// StreamWindow and ConnWindow are the HTTP/2 flow-control windows of
	// one call and of the connection.
	StreamWindow = 16 << 20
	ConnWindow   = 32 << 20
	// ReadBufferSize is the socket read buffer. Frames are copied out of
	// it at once, so a small one stays in cache: on a bulk DoGet, 64 KB
	// reads ran 1.2× faster than 1 MB.
	ReadBufferSize = 64 << 10
	// WriteBufferSize batches a client's writes. On a bulk DoPut, a
	// client write buffer of 64 KiB, of 4 MiB or none cost more CPU than
	// 1 MiB.
	WriteBufferSize = 1 << 20
	// ServerWriteBufferSize batches the server's writes. Its connections
	// share a pool of these buffers, each held from a response's first
	// write to its flush: with 1,000 clients sending at once, 1 MiB
	// buffers took 460 MB of the server's heap, and a server with 256
	// KiB ones fetched 10M rows as fast, within the noise.
	ServerWriteBufferSize = 256 << 10
)
