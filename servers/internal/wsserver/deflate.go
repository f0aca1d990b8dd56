package wsserver

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// permessage-deflate (RFC 7692) is negotiated here, once for the three
// libraries, so that they accept the same offers and give the same answer.
// gorilla and coder negotiate by themselves, each with its own gaps
// (gorilla accepts server_max_window_bits and leaves it out of its answer;
// coder declines every value but 15 and also leaves it out), so their
// upgraders show the library only the offer chosen here and put this
// answer in place of theirs.
//
// What every target does once it is agreed: no context takeover either way
// (each message is compressed and inflated on its own, so a connection
// holds no compression state between messages), and a 32 KiB window when
// compressing, which is all Go's compress/flate can do: it cannot be told
// to use a smaller one. Inflating takes any window the client uses.

const (
	extensionsHeader = "Sec-WebSocket-Extensions"

	// deflateAnswer is the answer to an accepted offer. The server may name
	// both no-context-takeover parameters even when the offer did not
	// (RFC 7692 7.1.1.1, 7.1.1.2).
	deflateAnswer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"

	// compressorWindowBits is the window the server compresses with, as a
	// power of two: an offer of a smaller server_max_window_bits cannot be
	// honoured and is declined (RFC 7692 7.1.2.1).
	compressorWindowBits = 15
)

// negotiateDeflate answers the permessage-deflate offers in h: the first
// offer the server can honour, in the order the client sent them (RFC 7692
// 5.1). ok is false when no offer is acceptable; the upgrade goes on
// without compression. An offer with a parameter that is unknown, repeated,
// or has a bad value is declined, not an error (RFC 7692 5.1): the next
// offer may do.
func negotiateDeflate(h http.Header) (answer string, ok bool) {
	return negotiateDeflateIn(h.Values(extensionsHeader))
}

// negotiateDeflateIn is negotiateDeflate on the Sec-WebSocket-Extensions
// values.
func negotiateDeflateIn(values []string) (answer string, ok bool) {
	for _, v := range values {
		for _, ext := range splitOutsideQuotes(v, ',') {
			bits, ok := parseDeflateOffer(ext)
			switch {
			case !ok || bits != 0 && bits < compressorWindowBits:
				continue
			case bits != 0:
				// The offer limits the server's window: the answer must
				// name the limit, the same or smaller (RFC 7692 7.1.2.1).
				return deflateAnswer + "; server_max_window_bits=" + strconv.Itoa(compressorWindowBits), true
			default:
				// client_max_window_bits, with a value or without, needs no
				// answer: the server inflates any window (RFC 7692 7.1.2.2).
				return deflateAnswer, true
			}
		}
	}
	return "", false
}

// parseDeflateOffer reads one extension of a Sec-WebSocket-Extensions list.
// ok is true for a valid permessage-deflate offer; serverBits is its
// server_max_window_bits, 0 when it has none.
func parseDeflateOffer(ext string) (serverBits int, ok bool) {
	params := splitOutsideQuotes(ext, ';')
	if strings.TrimSpace(params[0]) != "permessage-deflate" {
		return 0, false
	}
	seen := make(map[string]bool, len(params))
	for _, p := range params[1:] {
		name, value, hasValue := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		if seen[name] {
			return 0, false
		}
		seen[name] = true
		if hasValue {
			if value, ok = unquoteToken(strings.TrimSpace(value)); !ok {
				return 0, false
			}
		}
		switch name {
		case "server_no_context_takeover", "client_no_context_takeover":
			if hasValue {
				return 0, false
			}
		case "server_max_window_bits":
			if serverBits, ok = windowBits(value); !hasValue || !ok {
				return 0, false
			}
		case "client_max_window_bits":
			if _, ok := windowBits(value); hasValue && !ok {
				return 0, false
			}
		default:
			return 0, false
		}
	}
	return serverBits, true
}

// windowBits reads a window size parameter: a decimal integer from 8 to 15
// without leading zeros (RFC 7692 7.1.2).
func windowBits(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 8 || n > 15 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// unquoteToken reads a parameter value, a token or a quoted-string whose
// content is a token (RFC 6455 9.1).
func unquoteToken(s string) (string, bool) {
	if strings.HasPrefix(s, `"`) {
		if len(s) < 2 || !strings.HasSuffix(s, `"`) {
			return "", false
		}
		var b strings.Builder
		for i := 1; i < len(s)-1; i++ {
			if s[i] == '\\' {
				i++
				if i == len(s)-1 {
					return "", false // the backslash escaped the closing quote
				}
			}
			b.WriteByte(s[i])
		}
		s = b.String()
	}
	if s == "" {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return "", false
		}
	}
	return s, true
}

func isTokenChar(c byte) bool {
	return c > ' ' && c < 0x7f && !strings.ContainsRune(`()<>@,;:\"/[]?={}`, rune(c))
}

// splitOutsideQuotes splits s at sep where sep is not inside a
// quoted-string, and drops empty elements of the list (RFC 7230 7). An
// unterminated quoted-string runs to the end of s. The result has at least
// one element.
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = appendNonEmpty(parts, s[start:i], sep)
			start = i + 1
		}
	}
	parts = appendNonEmpty(parts, s[start:], sep)
	if len(parts) == 0 {
		parts = append(parts, "")
	}
	return parts
}

// appendNonEmpty appends part, unless it is an empty element of a
// comma-separated list; an empty parameter (two semicolons) is kept, to be
// declined.
func appendNonEmpty(parts []string, part string, sep byte) []string {
	if sep == ',' && strings.TrimSpace(part) == "" {
		return parts
	}
	return append(parts, part)
}

// chooseDeflate is the negotiation for a library that negotiates by
// itself: it leaves r with the bare offer "permessage-deflate" when an
// offer was accepted (gorilla and coder both accept it, with no context
// takeover either way, as set up here) and with none otherwise, so that the
// library compresses exactly when the server agreed. It returns the answer
// the client must see.
func chooseDeflate(r *http.Request) (answer string, ok bool) {
	answer, ok = negotiateDeflate(r.Header)
	if ok {
		r.Header.Set(extensionsHeader, "permessage-deflate")
	} else {
		r.Header.Del(extensionsHeader)
	}
	return answer, ok
}

// answerOnHijack hands gorilla a connection whose first write, the 101
// response gorilla writes itself, carries answer in place of gorilla's
// fixed Sec-WebSocket-Extensions line. gorilla refuses an extensions header
// given to Upgrade, and writes its answer straight to the hijacked
// connection.
type answerOnHijack struct {
	http.ResponseWriter
	answer string
}

func (w *answerOnHijack) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &answerConn{Conn: c, answer: w.answer}, brw, nil
}

// answerConn rewrites the Sec-WebSocket-Extensions line of the first write.
// Written only by that write, which gorilla makes before Upgrade returns
// and before anything else can use the connection.
type answerConn struct {
	net.Conn
	answer  string
	written bool
}

func (c *answerConn) Write(p []byte) (int, error) {
	if c.written {
		return c.Conn.Write(p)
	}
	c.written = true
	line := func(v string) []byte { return []byte(extensionsHeader + ": " + v + "\r\n") }
	if _, err := c.Conn.Write(bytes.Replace(p, line(deflateAnswer), line(c.answer), 1)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// answerOnWriteHeader puts answer in coder's response: coder sets its own
// Sec-WebSocket-Extensions in the header, then calls WriteHeader(101), then
// hijacks (through Unwrap).
type answerOnWriteHeader struct {
	http.ResponseWriter
	answer string
}

func (w *answerOnWriteHeader) WriteHeader(status int) {
	if status == http.StatusSwitchingProtocols {
		w.Header().Set(extensionsHeader, w.answer)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *answerOnWriteHeader) Unwrap() http.ResponseWriter { return w.ResponseWriter }
