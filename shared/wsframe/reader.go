package wsframe

import "github.com/gobwas/ws"

// Kind says what Reader.Next found.
type Kind uint8

const (
	// Incomplete: the input holds no whole frame; Need bytes must be
	// there before the next call can find one.
	Incomplete Kind = iota
	// Fragment: a data frame that is not the last of its message, held by
	// the Reader. Nothing to do.
	Fragment
	// Message: a whole data message, Op text or binary, still compressed
	// when Compressed (see Decode).
	Message
	Ping
	Pong
	// Close: the client's valid close frame; Code is its code (1005 when
	// it has none) and Payload the frame's payload, to echo.
	Close
	// BadClose: the client's close frame is invalid; Code is the code to
	// answer it with. The client sends nothing after it.
	BadClose
	// Fail: the frame breaks the rules; Code is the code to close with.
	// Lost: the input cannot be read on (no length to skip by, or the
	// frame was the client's close). Otherwise the frame is consumed,
	// and Skip more of its bytes, beyond the input, are still to come.
	Fail
)

// Frame is what Reader.Next found at the start of its input.
type Frame struct {
	Kind       Kind
	Op         ws.OpCode // Message: text or binary
	Compressed bool      // Message: permessage-deflate data
	Lost       bool      // Fail: the framing cannot be followed
	Code       int       // Close, BadClose, Fail
	Need       int       // Incomplete
	Skip       int64     // Fail, when not Lost
	// Payload is unmasked: Ping, Pong, Close and a one-frame Message point
	// into the input, a fragmented Message into the Reader's buffer (valid
	// until the next Next or Reset).
	Payload []byte
}

// Reader takes a client's frames from a byte stream, one per call, and
// reassembles fragmented messages. It holds no input: the caller keeps the
// bytes and hands them again, from the first one not consumed. Its zero
// value is ready, without compression; it holds a buffer only while a
// fragmented message is arriving.
type Reader struct {
	msg        *[]byte // the fragments so far, or the message just whole
	op         ws.OpCode
	compressed bool
	// Deflate: permessage-deflate was agreed, so RSV1 marks a compressed
	// message.
	Deflate bool
}

// Next reads the frame at the start of buf, a data message at most max
// bytes, into *f, and returns how many bytes of buf it consumed. Masked
// payloads are unmasked in place. f is filled in place, not returned: the
// gnet loops call this once per message, and copying the result showed in
// their profile.
func (r *Reader) Next(buf []byte, max int64, f *Frame) int {
	if r.op == 0 && r.msg != nil {
		r.Reset() // the last Message's buffer
	}
	h, hlen, err := ParseHeader(buf)
	if err != nil {
		*f = Frame{Kind: Fail, Code: int(ws.StatusProtocolError), Lost: true}
		return len(buf)
	}
	if hlen == 0 {
		*f = Frame{Kind: Incomplete, Need: len(buf) + 1}
		return 0
	}
	avail := int64(len(buf) - hlen)
	if code := HeaderCode(h, r.state(), r.Deflate, max); code != 0 {
		if h.OpCode == ws.OpClose {
			// The client's close, bad as it is: it sends nothing after it.
			*f = Frame{Kind: Fail, Code: code, Lost: true}
			return len(buf)
		}
		// The header parsed, so the framing holds: the frame is skipped.
		if h.Length > avail {
			*f = Frame{Kind: Fail, Code: code, Skip: h.Length - avail}
			return len(buf)
		}
		*f = Frame{Kind: Fail, Code: code}
		return hlen + int(h.Length)
	}
	if h.Length > avail {
		*f = Frame{Kind: Incomplete, Need: hlen + int(h.Length)}
		return 0
	}
	n := hlen + int(h.Length)
	payload := buf[hlen:n]
	ws.Cipher(payload, h.Mask, 0)
	r.frame(h, payload, f)
	return n
}

// frame is a whole, valid frame's meaning.
func (r *Reader) frame(h ws.Header, payload []byte, f *Frame) {
	switch h.OpCode {
	case ws.OpPing:
		*f = Frame{Kind: Ping, Payload: payload}
		return
	case ws.OpPong:
		*f = Frame{Kind: Pong, Payload: payload}
		return
	case ws.OpClose:
		code, fail := CloseFrameCode(payload)
		if fail != 0 {
			*f = Frame{Kind: BadClose, Code: fail}
			return
		}
		*f = Frame{Kind: Close, Code: code, Payload: payload}
		return
	case ws.OpText, ws.OpBinary:
		if h.Fin {
			*f = Frame{Kind: Message, Op: h.OpCode, Compressed: h.Rsv1(), Payload: payload}
			return
		}
		r.op, r.compressed = h.OpCode, h.Rsv1()
		r.msg = GetBuffer()
		*r.msg = append(*r.msg, payload...)
		*f = Frame{Kind: Fragment}
		return
	default: // ws.OpContinuation: HeaderCode let no other through
		*r.msg = append(*r.msg, payload...)
		if !h.Fin {
			*f = Frame{Kind: Fragment}
			return
		}
		*f = Frame{Kind: Message, Op: r.op, Compressed: r.compressed, Payload: *r.msg}
		r.op = 0 // the buffer is freed by Reset or the next call
	}
}

// state is the message under way, for HeaderCode.
func (r *Reader) state() InMessage {
	m := InMessage{Op: r.op, Compressed: r.compressed}
	if r.op != 0 {
		m.Held = int64(len(*r.msg))
	}
	return m
}

// Held is how many payload bytes of a fragmented message the Reader holds.
func (r *Reader) Held() int {
	if r.msg == nil {
		return 0
	}
	return len(*r.msg)
}

// Reset drops the message under way, or the one just returned, and hands
// its buffer back.
func (r *Reader) Reset() {
	if r.msg != nil {
		PutBuffer(r.msg)
		r.msg = nil
	}
	r.op = 0
}
