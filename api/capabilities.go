package api

import (
	"context"
	"encoding/json"

	"github.com/preconf/preconf/ethjson"
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
	var e ethjson.Encoder
	e.Buf = make([]byte, 0, 512)
	e.Open()
	e.Key("head")
	e.Open()
	e.U64("number", head.Number.Uint64())
	e.Hash("hash", a.hashes.of(head))
	e.Close()
	for _, r := range capabilityResources {
		e.Key(r)
		e.Open()
		e.Bool("disabled", false)
		e.U64("oldestBlock", 0)
		e.Close()
	}
	e.Close()
	return json.RawMessage(e.Buf), nil
}
