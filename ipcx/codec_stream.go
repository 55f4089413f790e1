package ipcx

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// NewStreamWriter returns a Writer of the Arrow IPC stream format (what
// ipc.NewWriter writes) to w, compressing like NewCompressedWriter. The
// caller must Close it, which writes the end-of-stream marker.
func NewStreamWriter(w io.Writer, comp Compression, opts ...ipc.Option) *Writer {
	return NewCompressedWriter(&streamSender{w: w}, comp, opts...)
}

// streamSender frames messages for an io.Writer: continuation marker,
// metadata length, metadata padded to 8 bytes, body.
type streamSender struct {
	w   io.Writer
	pre []byte
}

func (s *streamSender) SendMsg(m any) error {
	fd, ok := m.(*RawFlightData)
	if !ok {
		return fmt.Errorf("ipcx: stream writer cannot send %T", m)
	}
	padded := pad8(int64(len(fd.Header)))
	s.pre = binary.LittleEndian.AppendUint32(s.pre[:0], 0xFFFFFFFF)
	s.pre = binary.LittleEndian.AppendUint32(s.pre, uint32(padded))
	s.pre = append(s.pre, fd.Header...)
	s.pre = append(s.pre, zeroPad[:padded-int64(len(fd.Header))]...)
	if _, err := s.w.Write(s.pre); err != nil {
		return fmt.Errorf("write IPC message: %w", err)
	}
	for _, b := range fd.Body {
		if _, err := s.w.Write(b); err != nil {
			return fmt.Errorf("write IPC message body: %w", err)
		}
	}
	return nil
}

// closeStream writes the end-of-stream marker.
func (s *streamSender) closeStream() error {
	if _, err := s.w.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}); err != nil {
		return fmt.Errorf("write IPC end of stream: %w", err)
	}
	return nil
}
