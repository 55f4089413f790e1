package ipcx

// Compression of Arrow IPC bodies (LZ4_FRAME and ZSTD), owned by quiver.
//
// Where arrow-go's ipc package is used unchanged, and where not:
//
//   - Encoding record batches into IPC payloads (schema and dictionary
//     messages, the FieldNode/Buffer layout, slicing, padding) is arrow-go's
//     ipc.Writer, unchanged, writing uncompressed through a PayloadWriter.
//     quiver then compresses each payload's buffers itself and rewrites the
//     message header (codec_meta.go). arrow-go's own compressing writer
//     (ipc.WithLZ4/WithZstd) is not used: its codecs are unexported and
//     cannot be replaced, it allocates a fresh output buffer per buffer and
//     per batch, it parallelises only across the buffers of one batch (a
//     batch with two large buffers keeps at most two cores busy), and a
//     large buffer is one serial stream.
//   - Assembling record batches from messages (array loading, dictionaries,
//     validation) is arrow-go's ipc.Reader, unchanged, fed uncompressed
//     messages: quiver decompresses the body into one new buffer and
//     rewrites the header without its BodyCompression, so the stock reader
//     slices the body without copying. arrow-go's decompression is not used
//     on quiver's read paths: it builds a new zstd.Decoder or lz4.Reader for
//     every batch (a zstd.Decoder starts goroutines and allocates its
//     windows), decompresses the buffers one after another through an
//     io.Reader (an extra copy per LZ4 block), and allocates every buffer
//     separately.
//   - The block codecs are pierrec/lz4 v4's block functions and
//     klauspost/compress/zstd's EncodeAll/DecodeAll, reused across calls
//     (one process-wide zstd.Encoder and zstd.Decoder, which are safe for
//     concurrent use, and pooled lz4.Compressors). The LZ4 frame format
//     around the blocks (codec_lz4.go) and the walk over zstd frames
//     (codec_zstd.go) are quiver's, so a large buffer is split into
//     independent pieces that are compressed and decompressed in parallel.
//   - Server-side DoPut ingest still reads with arrow-go's reader, which
//     decompresses any valid LZ4_FRAME or ZSTD body (including C++'s linked
//     LZ4 blocks); quiver's decoder accepts the same inputs.
//
// What goes on the wire stays standard Arrow IPC: one LZ4 frame per buffer
// (64 KiB independent blocks, no checksums, as arrow-go and Arrow C++ write
// them) or one or more concatenated zstd frames per buffer (RFC 8878 allows
// a stream of frames; Arrow C++, Java and arrow-go read them), each behind
// the 8-byte uncompressed length, and -1 with the raw bytes when a buffer
// does not shrink enough. Each message carries its own BodyCompression, so
// a stream may switch codec between batches (auto does).

import (
	"fmt"
	"strings"
)

// Codec is a body compression codec of the Arrow IPC format.
type Codec int8

// The codecs. CodecLZ4 and CodecZSTD have the values of the IPC format's
// CompressionType (LZ4_FRAME = 0, ZSTD = 1) plus one.
const (
	CodecNone Codec = iota
	CodecLZ4
	CodecZSTD
)

// fbType is the codec's CompressionType in the IPC flatbuffers.
func (c Codec) fbType() int8 { return int8(c) - 1 }

// codecFromFB maps an IPC CompressionType to a Codec.
func codecFromFB(t int8) (Codec, error) {
	switch t {
	case 0:
		return CodecLZ4, nil
	case 1:
		return CodecZSTD, nil
	}
	return CodecNone, fmt.Errorf("unknown IPC compression type %d", t)
}

// String is the codec's name as clients spell it: none, lz4, zstd.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecLZ4:
		return "lz4"
	case CodecZSTD:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec reads a codec name: none (or empty), lz4 (or lz4_frame),
// zstd. It does not accept auto, which is a policy, not a codec.
func ParseCodec(name string) (Codec, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "none":
		return CodecNone, nil
	case "lz4", "lz4_frame":
		return CodecLZ4, nil
	case "zstd":
		return CodecZSTD, nil
	}
	return CodecNone, fmt.Errorf("unknown codec %q: use none, lz4 or zstd", name)
}

// DefaultMinSavings is the fraction a buffer must shrink by to be sent
// compressed; a buffer that saves less is sent raw (uncompressed length
// -1), as the IPC format allows.
const DefaultMinSavings = 0.1
