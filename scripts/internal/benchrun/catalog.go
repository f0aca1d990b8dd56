package benchrun

import (
	"fmt"

	"github.com/knowngood/knowngood/servers/variants"
)

// The variants the benchmarks single out, selected from the catalog by
// property.
var (
	// SioBaseline is the Socket.IO variant whose connect does nothing: the
	// baseline the other connect models and the floors are compared with.
	SioBaseline = VariantWhere(variants.Connects(variants.AtOnce))
	// SharedLoop is the Socket.IO variant whose connects take turns on one
	// loop, the one whose success curve is a contract.
	SharedLoop = VariantWhere(variants.Connects(variants.SharedLoop))
	// GnetEcho and GnetBroadcast are the gnet variants of the echo and
	// broadcast families, the ones measured against the bare gnet floor.
	GnetEcho      = VariantWhere(variants.InFamily(variants.Echo), variants.Is(variants.Gnet))
	GnetBroadcast = VariantWhere(variants.InFamily(variants.Broadcast), variants.Is(variants.Gnet))
	// SocketIOVariants are the Socket.IO connect models, in catalog order.
	SocketIOVariants = variants.NamesOf(variants.ByFamily(variants.SocketIO))
)

// VariantWhere is the name of the first variant for which every predicate
// holds. A catalog without one is a programming error, caught by this
// package's tests.
func VariantWhere(preds ...func(variants.Variant) bool) string {
	v, ok := variants.First(preds...)
	if !ok {
		panic(fmt.Sprintf("benchrun: the catalog has no variant for %d predicates", len(preds)))
	}
	return v.Name
}
