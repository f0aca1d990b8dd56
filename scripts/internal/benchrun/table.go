package benchrun

import (
	"strconv"
	"strings"
)

// Met is a table's "met" cell: yes, or a bold no that stands out.
func Met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// Num is *v with prec decimals, "-" when unknown (nil).
func Num(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

// Known is v with prec decimals, "-" when unknown (negative).
func Known(v float64, prec int) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// Cell is s fit for one Markdown table cell: one line, no column breaks.
func Cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "/") }
