package pending

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
)

// Flashblock is an open block's progress after one flashblock, as the
// sequencer that built it or a follower that re-executed it holds it.
type Flashblock struct {
	Parent *types.Header
	Env    *types.Header // the block's header from NewHeader; not modified
	// Root is the state root of the block so far (computed by the sequencer,
	// taken from the builder by a follower, which holds no trie).
	Root      common.Hash
	GasUsed   uint64
	Index     uint64
	PayloadID [8]byte
	// Txs and Receipts are the whole block so far; those from First on are
	// new in this flashblock.
	Txs      types.Transactions
	Receipts types.Receipts
	First    int
	// Bloom holds the earlier flashblocks' logs bloom; the new receipts'
	// logs are added to it.
	Bloom *types.Bloom
	Diff  *Diff  // the state this flashblock wrote
	State *State // the pending state, Diff included
	// WithdrawalsRoot, when set, is the header's withdrawals root: on
	// OP-stack chains from Isthmus on, the L2ToL1MessagePasser's storage
	// root (the builder's claim for a follower, which holds no trie).
	WithdrawalsRoot *common.Hash
	// DAFootprint, when set, is the header's blobGasUsed: OP-stack blocks
	// from Jovian on store their data-availability footprint there.
	DAFootprint *uint64
	// TxHash and ReceiptHash, when set, are the roots of Txs and Receipts,
	// kept incrementally by the caller; otherwise Assemble derives both
	// over the whole block so far.
	TxHash, ReceiptHash *common.Hash
}

// Assemble builds the sealed snapshot of f: the cumulative header (roots,
// bloom, gas) whose hash is the block hash so far, stamped on the new
// receipts and their logs.
func Assemble(f Flashblock) *Snapshot {
	h := types.CopyHeader(f.Env)
	h.Root = f.Root
	h.GasUsed = f.GasUsed
	switch {
	case f.TxHash != nil && f.ReceiptHash != nil:
		h.TxHash, h.ReceiptHash = *f.TxHash, *f.ReceiptHash
	case len(f.Txs) > 0:
		// Both roots cover the whole block so far: compute them side by side.
		done := make(chan common.Hash, 1)
		go func() { done <- types.DeriveSha(f.Receipts, trie.NewStackTrie(nil)) }()
		h.TxHash = types.DeriveSha(f.Txs, trie.NewStackTrie(nil))
		h.ReceiptHash = <-done
	}
	var blobGas uint64
	for i, r := range f.Receipts {
		if i >= f.First {
			for _, l := range r.Logs {
				f.Bloom.Add(l.Address.Bytes())
				for _, t := range l.Topics {
					f.Bloom.Add(t.Bytes())
				}
			}
		}
		blobGas += r.BlobGasUsed
	}
	h.Bloom = *f.Bloom
	if f.DAFootprint != nil {
		blobGas = *f.DAFootprint
	}
	if h.BlobGasUsed != nil {
		h.BlobGasUsed = &blobGas
	}
	if f.WithdrawalsRoot != nil {
		root := *f.WithdrawalsRoot
		h.WithdrawalsHash = &root
	}
	hash := h.Hash()
	for _, r := range f.Receipts[f.First:] {
		r.BlockHash = hash
		for _, l := range r.Logs {
			l.BlockHash = hash
		}
	}
	n := len(f.Txs)
	snap := &Snapshot{
		Parent:    f.Parent,
		Header:    h,
		Index:     f.Index,
		PayloadID: f.PayloadID,
		NewTxs:    n - f.First,
		Diff:      f.Diff,
		Txs:       f.Txs[:n:n],
		Receipts:  f.Receipts[:n:n],
		State:     f.State,
	}
	if h.WithdrawalsHash != nil {
		snap.Withdrawals = types.Withdrawals{}
	}
	return snap.Seal()
}
