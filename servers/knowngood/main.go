// Command knowngood runs one reference WebSocket or Socket.IO target,
// chosen with -variant (knowngood -list names them; knowngood -h lists the
// flags; knowngood -version says which build it is).
package main

import (
	"os"

	"github.com/knowngood/knowngood/servers"
)

func main() { os.Exit(servers.Main()) }
