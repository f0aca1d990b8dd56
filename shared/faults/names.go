package faults

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The modes by name: the flag of each is -fault-NAME, and the admin
// listener's POST /control/fault takes NAME=VALUE.
const (
	NameReject          = "reject"
	NameDelay           = "delay"
	NameCloseAfter      = "close-after"
	NameDrop            = "drop"
	NameLeakTimers      = "leak-timers"
	NameDropChunkedPost = "drop-chunked-post"
)

// Names are the modes' names, in the order the flags are listed.
func Names() []string {
	return []string{NameReject, NameDelay, NameCloseAfter, NameDrop, NameLeakTimers, NameDropChunkedPost}
}

// SocketIOOnly reports whether the mode called name acts on what only a
// Socket.IO target has: a socket's interval timer (leak-timers), a
// polling POST (drop-chunked-post).
func SocketIOOnly(name string) bool {
	return name == NameLeakTimers || name == NameDropChunkedPost
}

// Off is the value that turns any mode off, besides its zero.
const Off = "off"

// MinLeakPeriod is the shortest period of -fault-leak-timers: a shorter
// one would spend the target's CPU on the timers rather than its memory.
const MinLeakPeriod = 10 * time.Millisecond

// Parse sets the mode called name in m from value, in the form its flag
// takes (0.2, 200ms, 10, true), or off. The error says what form is
// wanted; it names neither the flag nor the parameter, which the caller
// does. The value's range is Check's.
func (m *Modes) Parse(name, value string) error {
	if value == Off {
		value = "0"
	}
	var err error
	switch name {
	case NameReject:
		m.Reject, err = parseFraction(value)
	case NameDrop:
		m.Drop, err = parseFraction(value)
	case NameDelay:
		m.Delay, err = parseDuration(value)
	case NameLeakTimers:
		m.LeakTimers, err = parseDuration(value)
	case NameCloseAfter:
		m.CloseAfter, err = strconv.Atoi(value)
		if err != nil {
			err = errors.New("want a whole number such as 10, or off")
		}
	case NameDropChunkedPost:
		m.DropChunkedPost, err = strconv.ParseBool(value)
		if err != nil {
			err = errors.New("want true or false, or off")
		}
	default:
		err = fmt.Errorf("no known-bad mode is called %q; want one of reject, delay, close-after, drop, leak-timers, drop-chunked-post", name)
	}
	return err
}

func parseFraction(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("want a fraction from 0 to 1 such as 0.2, or off")
	}
	return v, nil
}

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("want a duration such as 200ms or 2s, or off")
	}
	return v, nil
}

// Check returns the name of the first mode of m whose value is out of its
// range and why ("-1s; want 0 (off) or a positive duration"), or "" when
// every value is in range: the rule of the flags and of the admin
// listener alike.
func (m Modes) Check() (name, why string) {
	switch {
	case !(m.Reject >= 0 && m.Reject <= 1): // NaN too
		return NameReject, fmt.Sprintf("%v; want a fraction from 0 to 1 such as 0.2", m.Reject)
	case m.Delay < 0:
		return NameDelay, fmt.Sprintf("%s; want 0 (off) or a positive duration", m.Delay)
	case m.CloseAfter < 0 || int64(m.CloseAfter) > math.MaxUint32:
		// Each connection counts in 32 bits.
		return NameCloseAfter, fmt.Sprintf("%d; want 0 (off) to %d messages", m.CloseAfter, uint32(math.MaxUint32))
	case !(m.Drop >= 0 && m.Drop <= 1):
		return NameDrop, fmt.Sprintf("%v; want a fraction from 0 to 1 such as 0.2", m.Drop)
	case m.LeakTimers != 0 && m.LeakTimers < MinLeakPeriod:
		return NameLeakTimers, fmt.Sprintf("%s; want 0 (off) or a period of at least %s", m.LeakTimers, MinLeakPeriod)
	}
	return "", ""
}

// Values are m's modes by name, each in its flag's form (as /health shows
// the flags: 0.2, 200ms, 10, true; 0, 0s or false when off).
func (m Modes) Values() map[string]string {
	return map[string]string{
		NameReject:          strconv.FormatFloat(m.Reject, 'g', -1, 64),
		NameDelay:           m.Delay.String(),
		NameCloseAfter:      strconv.Itoa(m.CloseAfter),
		NameDrop:            strconv.FormatFloat(m.Drop, 'g', -1, 64),
		NameLeakTimers:      m.LeakTimers.String(),
		NameDropChunkedPost: strconv.FormatBool(m.DropChunkedPost),
	}
}

// Active are the names of the modes of m that are on, in Names' order.
func (m Modes) Active() []string {
	var on []string
	for _, c := range []struct {
		name string
		on   bool
	}{
		{NameReject, m.Reject != 0}, {NameDelay, m.Delay != 0}, {NameCloseAfter, m.CloseAfter != 0},
		{NameDrop, m.Drop != 0}, {NameLeakTimers, m.LeakTimers != 0}, {NameDropChunkedPost, m.DropChunkedPost},
	} {
		if c.on {
			on = append(on, c.name)
		}
	}
	return on
}
