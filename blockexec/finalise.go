package blockexec

import (
	"fmt"

	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// Sealing says how a block is finalised beyond its chain's rules.
type Sealing struct {
	// Withdrawals are credited after the system calls (only blocks built
	// by testing_buildBlockV1 have any).
	Withdrawals types.Withdrawals
	// PasserRoot makes the withdrawals root the L2ToL1MessagePasser's
	// storage root, as an OP-stack block's from Isthmus on.
	PasserRoot bool
}

// Finalise runs the system calls that follow the block's last transaction,
// credits the withdrawals and assembles the block: gas used, state root,
// requests hash, blob gas (from Jovian on, the DA footprint), withdrawals
// root. It also returns the requests (nil before Prague). The transaction
// and receipt roots are the flashblocks' (Roots hashes only what they did
// not cover), not the whole block hashed again.
func (b *Block) Finalise(s Sealing) (*types.Block, [][]byte, error) {
	header := types.CopyHeader(b.Header)
	var logs []*types.Log
	for _, r := range b.Receipts {
		logs = append(logs, r.Logs...)
	}
	requests, err := PostSystemCalls(b.Config, header, logs, b.EVM)
	if err != nil {
		return nil, nil, fmt.Errorf("block %d post-execution: %w", header.Number, err)
	}
	if requests != nil {
		rh := types.CalcRequestsHash(requests)
		header.RequestsHash = &rh
	}
	for _, w := range s.Withdrawals { // as go-ethereum's beacon engine: amounts in gwei
		amount := new(uint256.Int).Mul(uint256.NewInt(w.Amount), uint256.NewInt(params.GWei))
		b.StateDB.AddBalance(w.Address, amount, tracing.BalanceIncreaseWithdrawal)
	}
	header.GasUsed = b.Gas.Used()
	header.Root = b.StateDB.IntermediateRoot(b.Config.IsEIP158(header.Number))
	if s.PasserRoot {
		root := b.StateDB.GetStorageRoot(params.OptimismL2ToL1MessagePasser)
		header.WithdrawalsHash = &root
	}
	if header.BlobGasUsed != nil {
		blobGas := b.BlobGas
		da, err := b.DAFootprint()
		if err != nil {
			return nil, nil, err
		}
		if da != nil {
			blobGas = *da
		}
		header.BlobGasUsed = &blobGas
	}
	var withdrawals []*types.Withdrawal
	if header.WithdrawalsHash != nil {
		withdrawals = make([]*types.Withdrawal, 0, len(s.Withdrawals))
		withdrawals = append(withdrawals, s.Withdrawals...)
	}
	// The shell block sets every other derived field.
	shell := types.NewBlock(header, &types.Body{Withdrawals: withdrawals}, nil, trie.NewStackTrie(nil), b.Config)
	h := shell.Header()
	h.TxHash, h.ReceiptHash = b.Roots()
	h.Bloom = types.MergeBloom(b.Receipts)
	return types.NewBlockWithHeader(h).WithBody(types.Body{Transactions: b.Txs, Withdrawals: shell.Withdrawals()}), requests, nil
}
