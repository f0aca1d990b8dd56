package socketio

import (
	"testing"

	"github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// TestReaches: what a restoring socket keeps is what Node's
// shouldIncludePacket sends it.
func TestReaches(t *testing.T) {
	set := func(rooms ...socket.Room) *types.Set[socket.Room] { return types.NewSet(rooms...) }
	in := []socket.Room{"sid", "a"}
	for _, c := range []struct {
		name string
		opts *socket.BroadcastOptions
		want bool
	}{
		{"to everyone", &socket.BroadcastOptions{Rooms: set(), Except: set()}, true},
		{"to its room", &socket.BroadcastOptions{Rooms: set("a"), Except: set()}, true},
		{"to another room", &socket.BroadcastOptions{Rooms: set("b"), Except: set()}, false},
		{"to it alone", &socket.BroadcastOptions{Rooms: set("sid")}, true},
		{"to everyone but its room", &socket.BroadcastOptions{Rooms: set(), Except: set("a")}, false},
		{"without options", nil, true},
	} {
		if got := reaches(in, c.opts); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
