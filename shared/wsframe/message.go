package wsframe

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
)

// keepBuffer is the largest message buffer handed back to the pool: a rare
// huge message does not pin its memory for good.
const keepBuffer = 64 << 10

// buffers holds message buffers, so that handling a message allocates
// nothing once the pool is warm, and an idle connection holds no buffer.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// GetBuffer returns an empty message buffer from the pool.
func GetBuffer() *[]byte { return buffers.Get().(*[]byte) }

// PutBuffer hands b back to the pool, unless it has grown large.
func PutBuffer(b *[]byte) {
	if cap(*b) > keepBuffer {
		return
	}
	*b = (*b)[:0]
	buffers.Put(b)
}

// ErrTooBig: a message over the limit.
var ErrTooBig = errors.New("message over -max-message")

// ReadMessage puts all of r in *buf. With max >= 0, it stops with
// ErrTooBig as soon as more than max bytes have come.
func ReadMessage(r io.Reader, buf *[]byte, max int64) error {
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		*buf = b
		if max >= 0 && int64(len(b)) > max {
			return ErrTooBig
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Decode checks one whole data message as it came off the wire and
// returns its payload: inflated into *plain when compressed (no context
// takeover: each message stands alone). code is the close code the
// message calls for, 0 if none: 1009 when it inflates to more than max,
// 1002 for corrupt deflate data (as gorilla and coder have it), 1007 for
// text that is not UTF-8.
func Decode(op ws.OpCode, compressed bool, data []byte, plain *[]byte, max int64) (payload []byte, code int) {
	if compressed {
		in := inflaters.Get().(*inflater)
		err := in.inflate(data, plain, max)
		inflaters.Put(in)
		switch {
		case errors.Is(err, ErrTooBig):
			return nil, int(ws.StatusMessageTooBig)
		case err != nil:
			return nil, int(ws.StatusProtocolError)
		}
		data = *plain
	}
	if op == ws.OpText && !utf8.Valid(data) {
		return nil, int(ws.StatusInvalidFramePayloadData)
	}
	return data, 0
}

// inflater decompresses one message. Pooled: a flate reader is large.
type inflater struct {
	src bytes.Reader
	r   *wsflate.Reader
}

var inflaters = sync.Pool{New: func() any {
	in := &inflater{}
	in.r = wsflate.NewReader(&in.src, func(r io.Reader) wsflate.Decompressor {
		return &resettableReader{flate.NewReader(r)}
	})
	return in
}}

// resettableReader lets wsflate.Reader reuse a flate reader instead of
// making a new one per message: flate's Reset takes a dictionary too.
type resettableReader struct{ io.ReadCloser }

func (r *resettableReader) Reset(src io.Reader) {
	_ = r.ReadCloser.(flate.Resetter).Reset(src, nil)
}

func (in *inflater) inflate(data []byte, plain *[]byte, max int64) error {
	in.src.Reset(data)
	in.r.Reset(&in.src)
	return ReadMessage(in.r, plain, max)
}

// Deflater compresses one message at a time, without the final 4 bytes,
// as RFC 7692 7.2.1 wants, at gorilla's and coder's level. Take one with
// GetDeflater and give it back with PutDeflater: a flate writer is large.
type Deflater struct {
	buf bytes.Buffer
	w   *wsflate.Writer
}

var deflaters = sync.Pool{New: func() any {
	d := &Deflater{}
	d.w = wsflate.NewWriter(&d.buf, func(w io.Writer) wsflate.Compressor {
		f, _ := flate.NewWriter(w, flate.BestSpeed) // gorilla's and coder's level
		return f
	})
	return d
}}

// GetDeflater returns a Deflater from the pool.
func GetDeflater() *Deflater { return deflaters.Get().(*Deflater) }

// PutDeflater hands d back; what Deflate returned is no longer valid.
func PutDeflater(d *Deflater) { deflaters.Put(d) }

// Deflate compresses p. The result is valid until the next Deflate or
// PutDeflater.
func (d *Deflater) Deflate(p []byte) ([]byte, error) {
	d.buf.Reset()
	d.w.Reset(&d.buf)
	if _, err := d.w.Write(p); err != nil {
		return nil, err
	}
	if err := d.w.Flush(); err != nil {
		return nil, err
	}
	return d.buf.Bytes(), nil
}
