package sequencer

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/syscalls"
)

// seal finalises the open block, logs the seal and has the chain insert it
// as the head (state committed to the in-memory trie database). The block is
// durable through the WAL already; the caller then calls chain.Flush with the
// returned root to write the state to disk and sync. want, during replay, is
// the hash the block had when first sealed.
func (s *Sequencer) seal(want *common.Hash) (common.Hash, error) {
	start := time.Now()
	b := s.blk
	block, _, err := s.finalise(b)
	if err != nil {
		return common.Hash{}, err
	}
	if err := stateErr(b.statedb); err != nil {
		return common.Hash{}, fmt.Errorf("seal block %d: %w", block.NumberU64(), err)
	}
	hash, n := block.Hash(), block.NumberU64()
	if want != nil && *want != hash {
		s.log.Error("replayed block differs from the one sealed before the crash", "number", n, "was", *want, "now", hash)
	}
	sealRec := &record{Kind: recSeal, Number: n, Parent: block.ParentHash(), Hash: hash}
	if want == nil && s.wal != nil {
		if err := s.wal.Append(sealRec); err != nil {
			return common.Hash{}, err
		}
	}
	root, err := s.chain.InsertSealed(block, b.receipts, b.statedb)
	if err != nil {
		return common.Hash{}, err
	}
	s.prevLogged = append(b.logged, sealRec)
	s.sealedOrigin(b, hash)
	s.blk = nil
	s.set.clock.sealed(block.Time())
	s.settle(n)
	d := time.Since(start)
	s.stats.LastSeal.Store(int64(d))
	if int64(d) > s.stats.MaxSeal.Load() {
		s.stats.MaxSeal.Store(int64(d))
	}
	s.stats.Blocks.Add(1)
	s.log.Debug("sealed block", "number", n, "hash", hash, "txs", len(b.txs), "gas", block.GasUsed(), "elapsed", d)
	return root, nil
}

// finalise runs the open block's post-execution system calls, credits its
// withdrawals and assembles the block: final gas, state root, requests and
// blob gas in the header. It also returns the requests (nil before Prague).
func (s *Sequencer) finalise(b *openBlock) (*types.Block, [][]byte, error) {
	header := types.CopyHeader(b.header)
	var logs []*types.Log
	for _, r := range b.receipts {
		logs = append(logs, r.Logs...)
	}
	requests, err := syscalls.Post(s.config, header, logs, b.evm)
	if err != nil {
		return nil, nil, fmt.Errorf("block %d post-execution: %w", header.Number, err)
	}
	if requests != nil {
		rh := types.CalcRequestsHash(requests)
		header.RequestsHash = &rh
	}
	for _, w := range b.withdrawals { // as go-ethereum's beacon engine: amounts in gwei
		amount := new(uint256.Int).Mul(uint256.NewInt(w.Amount), uint256.NewInt(params.GWei))
		b.statedb.AddBalance(w.Address, amount, tracing.BalanceIncreaseWithdrawal)
	}
	header.GasUsed = b.gp.Used()
	header.Root = b.statedb.IntermediateRoot(s.config.IsEIP158(header.Number))
	if root := s.withdrawalsRoot(b); root != nil {
		header.WithdrawalsHash = root
	}
	if header.BlobGasUsed != nil {
		var blobGas uint64
		for _, r := range b.receipts {
			blobGas += r.BlobGasUsed
		}
		header.BlobGasUsed = &blobGas
	}
	var withdrawals []*types.Withdrawal
	if header.WithdrawalsHash != nil {
		withdrawals = make([]*types.Withdrawal, 0, len(b.withdrawals))
		withdrawals = append(withdrawals, b.withdrawals...)
	}
	// The transaction and receipt roots are the flashblocks' (txRoots
	// hashes only what the last one did not cover), not the whole block
	// hashed again: the shell block sets every other derived field.
	shell := types.NewBlock(header, &types.Body{Withdrawals: withdrawals}, nil, trie.NewStackTrie(nil), s.config)
	h := shell.Header()
	h.TxHash, h.ReceiptHash = b.txRoots()
	h.Bloom = types.MergeBloom(b.receipts)
	return types.NewBlockWithHeader(h).WithBody(types.Body{Transactions: b.txs, Withdrawals: shell.Withdrawals()}), requests, nil
}

// settle moves the safe and finalized markers to the blocks SafeLag and
// FinalizedLag below block n (genesis while the chain is shorter), never
// back: an imported chain's head, which the import marks as both, stays
// safe and finalized until the lags pass it.
func (s *Sequencer) settle(n uint64) {
	if h := s.lagged(n, s.cfg.SafeLag); h != nil && h.Number.Cmp(s.chain.Safe().Number) > 0 {
		s.chain.SetSafe(h)
	}
	if h := s.lagged(n, s.cfg.FinalizedLag); h != nil && h.Number.Cmp(s.chain.Finalized().Number) > 0 {
		s.chain.SetFinalized(h)
	}
}

// lagged is the header lag blocks below n (genesis while n is smaller).
func (s *Sequencer) lagged(n, lag uint64) *types.Header {
	if n < lag {
		return s.chain.HeaderByNumber(0)
	}
	return s.chain.HeaderByNumber(n - lag)
}
