package siolite

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// eventPacket is 42[nsp][id]["event",args...], nsp being "" for the
// namespace "/" and "/name," for another.
func eventPacket(nsp string, id int64, event string, args []any) ([]byte, error) {
	packet := make([]byte, 0, 96)
	packet = append(append(packet, '4', '2'), nsp...)
	if id >= 0 {
		packet = strconv.AppendInt(packet, id, 10)
	}
	packet = appendString(append(packet, '['), event)
	var err error
	for _, a := range args {
		if packet, err = appendValue(append(packet, ','), a); err != nil {
			return nil, err
		}
	}
	return append(packet, ']'), nil
}

// appendValue appends v as JSON. The kinds loadgen sends (strings,
// integers, maps of them) are written here: through encoding/json's
// reflection they were a tenth of a load client's CPU. Anything else
// goes through encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendString(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case json.RawMessage:
		if json.Valid(x) {
			return append(b, x...), nil
		}
	case map[string]any:
		// Sorted, as encoding/json writes a map.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(append(appendString(b, k), ':'), x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	enc, err := json.Marshal(v)
	return append(b, enc...), err
}

// appendString appends s as a JSON string: quote, backslash and control
// characters escaped, the rest as it is. A string that is not valid UTF-8
// goes through encoding/json, which writes U+FFFD for each bad byte.
func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		enc, _ := json.Marshal(s)
		return append(b, enc...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
