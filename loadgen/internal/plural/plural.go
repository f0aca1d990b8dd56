// Package plural writes counts in reports as English: "1 message",
// "2 messages".
package plural

import (
	"fmt"
	"strings"
)

// Of is n and noun, the noun made plural unless n is 1:
// "1 message", "0 messages", "3 replies". A noun that does not take an
// -s or -es gives its plural as the optional argument.
func Of[N int | int64 | uint64 | int32 | uint32](n N, noun string, plural ...string) string {
	return fmt.Sprintf("%d %s", n, Noun(n, noun, plural...))
}

// Noun is noun, made plural unless n is 1: for a count written apart.
func Noun[N int | int64 | uint64 | int32 | uint32](n N, noun string, plural ...string) string {
	if n == 1 {
		return noun
	}
	if len(plural) > 0 {
		return plural[0]
	}
	return pluralOf(noun)
}

// pluralOf makes the plural of a regular English noun, or of a phrase
// whose first word is the noun ("connection closed" stays as it is: give
// the plural then).
func pluralOf(noun string) string {
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}
