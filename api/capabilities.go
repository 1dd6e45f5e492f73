package api

import (
	"context"
	"math"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/rpc"
)

// capabilitiesJSON is eth_capabilities' answer (execution-apis
// EthCapabilities): the sealed head and, per resource, what is served.
type capabilitiesJSON struct {
	Head struct {
		Number hexutil.Uint64 `json:"number"`
		Hash   common.Hash    `json:"hash"`
	} `json:"head"`
	State       capabilityJSON `json:"state"`
	Tx          capabilityJSON `json:"tx"`
	Logs        capabilityJSON `json:"logs"`
	Receipts    capabilityJSON `json:"receipts"`
	Blocks      capabilityJSON `json:"blocks"`
	StateProofs capabilityJSON `json:"stateproofs"`
}

type capabilityJSON struct {
	Disabled       bool           `json:"disabled"`
	OldestBlock    hexutil.Uint64 `json:"oldestBlock"`
	DeleteStrategy deleteStrategy `json:"deleteStrategy"`
}

// deleteStrategy is the schema's only strategy: a sliding window of the
// retentionBlocks most recent blocks.
type deleteStrategy struct {
	Type            string         `json:"type"`
	RetentionBlocks hexutil.Uint64 `json:"retentionBlocks"`
}

// keepAll is what this node does with every resource: it commits every
// block's state (archive), indexes every transaction and keeps every block,
// receipt and log, from genesis on. Expressed in the only strategy the
// schema has, that is a window of 2^64-1 blocks — one no block number can
// leave, so nothing is ever deleted. (A router computing the oldest block
// as head+1-window, floored at 0, gets genesis; go-ethereum and Nethermind
// omit the strategy instead, which the schema also allows.)
var keepAll = capabilityJSON{OldestBlock: 0, DeleteStrategy: deleteStrategy{Type: "window", RetentionBlocks: math.MaxUint64}}

// capabilities answers eth_capabilities: the sealed head, and every resource
// served from genesis and never deleted (keepAll).
func (a *API) capabilities(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	head := a.chain.Head()
	var out capabilitiesJSON
	out.Head.Number = hexutil.Uint64(head.Number.Uint64())
	out.Head.Hash = a.hashes.of(head)
	out.State, out.Tx, out.Logs, out.Receipts, out.Blocks, out.StateProofs = keepAll, keepAll, keepAll, keepAll, keepAll, keepAll
	return &out, nil
}
