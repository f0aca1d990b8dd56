// Command loadgen is knowngood's reference load client: loadgen SCENARIO
// [flags], one subcommand a scenario (loadgen with no arguments names them;
// loadgen -version says which build it is).
package main

import (
	"os"

	"knowngood/loadgen"
)

func main() { os.Exit(loadgen.Main()) }
