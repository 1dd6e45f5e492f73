package api

import (
	"context"
	"encoding/json"

	"github.com/preconf/preconf/rpc"
)

// capabilityResources are eth_capabilities' resource kinds, in the
// execution-apis schema's order.
var capabilityResources = []string{"state", "tx", "logs", "receipts", "blocks", "stateproofs"}

// capabilities answers eth_capabilities: the sealed head, and for every
// resource the oldest block it is served for. The node is an archive: it
// commits every block's state, indexes every transaction, and keeps every
// block, receipt and log, so each resource is enabled from genesis and has
// no delete strategy (the schema's deleteStrategy describes pruning, which
// this node does not do).
func (a *API) capabilities(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	head := a.chain.Head()
	var e enc
	e.b = make([]byte, 0, 512)
	e.open()
	e.key("head")
	e.open()
	e.u64("number", head.Number.Uint64())
	e.hash("hash", a.hashes.of(head))
	e.close()
	for _, r := range capabilityResources {
		e.key(r)
		e.open()
		e.boolean("disabled", false)
		e.u64("oldestBlock", 0)
		e.close()
	}
	e.close()
	return json.RawMessage(e.b), nil
}
