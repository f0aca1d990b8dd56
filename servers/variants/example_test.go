package variants_test

import (
	"fmt"

	"github.com/knowngood/knowngood/servers/variants"
)

// A test that should run against every WebSocket echo selects them by
// property, so a variant added to the catalog is tested without editing it.
func ExampleWhere() {
	for _, v := range variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)) {
		fmt.Println(v.Name, v.Library)
	}
	// Output:
	// echo-gorilla gorilla
	// echo-coder coder
	// echo-gnet gnet
	// echo-nbio nbio
}

// Reads tells whether a flag matters to a variant: start-up warns about a
// flag given to a variant that does not read it.
func ExampleVariant_Reads() {
	v, _ := variants.Lookup("echo-gorilla")
	fmt.Println(v.Reads("max-message"), v.Reads("delay"))
	// Output: true false
}
