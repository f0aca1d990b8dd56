package scenario

import (
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"1/1": {1, 1}, "2/3": {2, 3}, "3/3": {3, 3}, "0+1/1": {1, 1}, "2+1/3": {3, 3}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2", "0/3", "4/3", "1/0", "-1/3", "a/b", "1/3/4", "1 /3", "2/-3", "3+1/3", "-1+1/3", "+1/3", "1+2/3", "0+1+1/3"} {
		_, err := ParseShard(in)
		if err == nil || !strings.Contains(err.Error(), "flag -shard: want I/N") || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseShard(%q): %v; want a one-line error naming -shard and I/N", in, err)
		}
	}
}

// TestShardSplit: the shards' counts add up to the total, and their
// offsets number every client once.
func TestShardSplit(t *testing.T) {
	if c, o := (Shard{}).Split(7); c != 7 || o != 0 {
		t.Errorf("unsharded Split(7) = %d, %d", c, o)
	}
	for _, total := range []int{0, 1, 2, 7, 9, 100, 1001} {
		for n := 1; n <= 5; n++ {
			next, sum := 0, 0
			for i := 1; i <= n; i++ {
				c, o := Shard{I: i, N: n}.Split(total)
				if o != next {
					t.Errorf("%d/%d of %d: offset %d, want %d", i, n, total, o, next)
				}
				if c != total/n && c != total/n+1 {
					t.Errorf("%d/%d of %d: %d, not an even share", i, n, total, c)
				}
				next, sum = o+c, sum+c
			}
			if sum != total {
				t.Errorf("%d shards of %d add up to %d", n, total, sum)
			}
		}
	}
}

func TestShardFlag(t *testing.T) {
	var c Common
	fs := NewFlagSet("x")
	c.Register(fs, Words{})
	if err := fs.Parse([]string{"-shard", "2/3"}); err != nil || c.Shard != (Shard{2, 3}) {
		t.Errorf("-shard 2/3: %v, %v", c.Shard, err)
	}
	fs = NewFlagSet("x")
	c.Register(fs, Words{})
	err := fs.Parse([]string{"-shard", "4/3"})
	if err == nil || err.Error() != `invalid value "4/3" for flag -shard: want I/N, 1 <= I <= N (e.g. 2/3)` {
		t.Errorf("-shard 4/3: %v", err)
	}
}
