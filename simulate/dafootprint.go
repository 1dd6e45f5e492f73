package simulate

import (
	"context"
	"encoding/binary"

	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
)

// daFootprint sums a simulated OP-stack block's data-availability footprint
// (Jovian on; nil otherwise): types.CalcDAFootprint's, with the scalar read
// from L1Block (slot 8, a big-endian uint16 at byte offset 12 from the
// right, as the Jovian spec gives it) instead of from the block's
// L1-attributes deposit, which a simulated block does not have — the value
// the last deposit wrote there.
type daFootprint struct {
	scalar uint64
	total  uint64
}

func newDAFootprint(cfg *params.ChainConfig, time uint64, db *state.StateDB) *daFootprint {
	if !cfg.IsOptimism() || !cfg.IsJovian(time) {
		return nil
	}
	slot := db.GetState(types.L1BlockAddr, types.OperatorFeeParamsSlot)
	return &daFootprint{scalar: uint64(binary.BigEndian.Uint16(slot[18:20]))}
}

// add counts a transaction by its binary encoding.
func (d *daFootprint) add(enc []byte) {
	if d != nil {
		d.total += types.NewRollupCostData(enc).EstimatedDASize().Uint64() * d.scalar
	}
}

func (d *daFootprint) addTx(tx *types.Transaction) {
	if d != nil {
		d.total += tx.RollupCostData().EstimatedDASize().Uint64() * d.scalar
	}
}

// jovianMarker is a Jovian L1-attributes deposit with a zero scalar: the
// first transaction op-geth's assembly reads a footprint from.
var jovianMarker = func() *types.Transaction {
	data := make([]byte, types.JovianL1AttributesLen)
	copy(data, types.JovianL1AttributesSelector)
	return types.NewTx(&types.DepositTx{Data: data})
}()

// assemble is engine.FinalizeAndAssemble of header (whose blobGasUsed d has
// set). op-geth's assembly computes a Jovian footprint itself when the
// header's is zero, from a block that must open with an L1-attributes
// deposit: as op-geth's own simulation does, it is given one at the front
// (here with a zero scalar, so the zero stands) and the block is rebuilt
// without it.
func (d *daFootprint) assemble(ctx context.Context, engine consensus.Engine, chain consensus.ChainHeaderReader, header *types.Header, db *state.StateDB, body *types.Body, receipts types.Receipts) (*types.Block, error) {
	if d == nil || d.total != 0 {
		return engine.FinalizeAndAssemble(ctx, chain, header, db, body, receipts)
	}
	marked := *body
	marked.Transactions = append(types.Transactions{jovianMarker}, body.Transactions...)
	block, err := engine.FinalizeAndAssemble(ctx, chain, header, db, &marked, receipts)
	if err != nil {
		return nil, err
	}
	return types.NewBlock(block.Header(), body, receipts, trie.NewStackTrie(nil), chain.Config()), nil
}
