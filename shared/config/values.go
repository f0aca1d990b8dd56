package config

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// The flag.Value types below exist for their error messages: the flag
// package prints `invalid value "x" for flag -name: ERR`, and ERR says what
// form is accepted.

type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 50ms, 2s or 1m")
	}
	*d = durationValue(v)
	return nil
}

type intValue int

func (i *intValue) String() string { return strconv.Itoa(int(*i)) }
func (i *intValue) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number such as 100")
	}
	*i = intValue(v)
	return nil
}

// sizeValue is a number of bytes, plain or with a binary suffix: 1048576,
// 1024KiB, 1MiB.
type sizeValue int64

func (b *sizeValue) String() string { return strconv.FormatInt(int64(*b), 10) }
func (b *sizeValue) Set(s string) error {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return errors.New("want a number of bytes such as 1048576 or 1MiB")
	}
	*b = sizeValue(v * mult)
	return nil
}

type fractionValue float64

func (f *fractionValue) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *fractionValue) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) { // NaN too
		return errors.New("want a fraction from 0 to 1 such as 0.2")
	}
	*f = fractionValue(v)
	return nil
}

// listValue is a comma-separated list; the empty string is the empty list.
type listValue []string

func (l *listValue) String() string { return strings.Join(*l, ",") }
func (l *listValue) Set(s string) error {
	*l = nil
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	return nil
}
