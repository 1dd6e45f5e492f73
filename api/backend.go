package api

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
)

// Backend is the sealed chain the handlers read: the local chain
// (*chain.Chain, through Local) or, in follow mode, an upstream node reached
// over JSON-RPC (follower.Backend, given to New). Methods return
// nil for unknown blocks, as *chain.Chain's do.
type Backend interface {
	Config() *params.ChainConfig
	Genesis() *types.Block
	Head() *types.Header
	Safe() *types.Header
	Finalized() *types.Header
	HeaderByNumber(n uint64) *types.Header
	HeaderByHash(h common.Hash) *types.Header
	BlockByNumber(n uint64) *types.Block
	BlockByHash(h common.Hash) *types.Block
	IsCanonical(h *types.Header) bool
	// Receipts are a block's receipts with every derived field set.
	Receipts(b *types.Block) types.Receipts
	ReceiptsByHash(blockHash common.Hash) types.Receipts
	CanonicalReceipt(tx *types.Transaction, blockHash common.Hash, number, index uint64) (*types.Receipt, error)
	TxLookup(hash common.Hash) (tx *types.Transaction, blockHash common.Hash, number, index uint64, ok bool)
	// StateReader is a concurrency-safe reader of the state at root.
	StateReader(root common.Hash) (state.Reader, error)
	// StateAt opens a private StateDB at h (eth_getProof).
	StateAt(h *types.Header) (*state.StateDB, error)
	// StateDatabase backs StateDBs opened over readers.
	StateDatabase() state.Database
	// ChainContext serves canonical headers for BLOCKHASH.
	ChainContext() core.ChainContext
}

// localChain adapts *chain.Chain to Backend.
type localChain struct{ *chain.Chain }

func (c localChain) ReceiptsByHash(h common.Hash) types.Receipts {
	return c.BlockChain().GetReceiptsByHash(h)
}

func (c localChain) CanonicalReceipt(tx *types.Transaction, blockHash common.Hash, number, index uint64) (*types.Receipt, error) {
	if c.Config().Optimism != nil {
		// The L1 fee fields derive from the block's first transaction:
		// op-geth answers from the whole block's receipts.
		rs := c.BlockChain().GetReceiptsByHash(blockHash)
		if index >= uint64(len(rs)) {
			return nil, nil
		}
		return rs[index], nil
	}
	return c.BlockChain().GetCanonicalReceipt(tx, blockHash, number, index)
}
