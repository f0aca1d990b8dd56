package benchrun

import "testing"

func TestCells(t *testing.T) {
	v := 1.5
	for _, c := range [][2]string{
		{Met(true), "yes"}, {Met(false), "**no**"},
		{Num(&v, 1), "1.5"}, {Num(nil, 1), "-"},
		{Known(2, 2), "2.00"}, {Known(-1, 2), "-"},
		{Cell("a\nb|c"), "a b/c"},
	} {
		if c[0] != c[1] {
			t.Errorf("%q, want %q", c[0], c[1])
		}
	}
}
