package sequencer

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/opstack"
)

// A user deposit is what the OptimismPortal on L1 emits and the rollup node
// turns into an L2 deposit transaction: on the dev chain there is no L1, so
// Deposit injects one (eth_sendTransaction with anvil --optimism's deposit
// fields: see deposit_api.go). Users cannot submit deposit transactions
// themselves: the pool refuses type 0x7e.

// Deposit is a user deposit as the L1 bridge would make it.
type Deposit struct {
	From common.Address
	To   *common.Address // nil: a contract creation
	// Mint is credited to From before the deposit runs (the ETH locked on
	// L1); Value is then sent to To, from the minted and held balance.
	Mint, Value *big.Int
	Gas         uint64
	Data        []byte
	// SourceHash, when not zero, is used as given; otherwise it is derived
	// from a simulated L1 log: the open block's L1 origin and the next log
	// index of that L1 block's deposits.
	SourceHash common.Hash
}

// Deposit limits, as the OptimismPortal enforces them on L1.
const (
	// MaxDepositData is the portal's calldata limit (LargeCalldata).
	MaxDepositData = 120_000
	// depositDataGas is the portal's minimum gas per calldata byte
	// (minimumGasLimit = 21000 + 16 per byte).
	depositDataGas = 16
)

// ErrNotOPStack answers a deposit on a chain that is not an OP-stack one.
var ErrNotOPStack = errors.New("deposit transactions need an OP-stack chain the sequencer simulates the L1 of: not a plain-Ethereum chain (--l1, a non-OP --genesis) nor a fork")

// Deposit queues d for the next block, where it follows the L1-attributes
// deposit in flashblock 0 (as the rollup node includes the deposits of an
// L1 block), and returns the deposit transaction's hash. The deposit is in
// the WAL before Deposit returns: like an admitted transaction, it survives
// a crash.
func (s *Sequencer) Deposit(ctx context.Context, d Deposit) (common.Hash, error) {
	if s.op == nil {
		return common.Hash{}, ErrNotOPStack
	}
	if err := s.Err(); err != nil {
		return common.Hash{}, fmt.Errorf("sequencer stopped: %w", err)
	}
	if err := checkDeposit(&d); err != nil {
		return common.Hash{}, err
	}
	var (
		hash common.Hash
		derr error
	)
	err := s.do(ctx, func() error {
		// Validation errors go to the caller, not to the sequencer loop.
		hash, derr = s.queueDeposit(d)
		return nil
	})
	if err != nil {
		return common.Hash{}, err
	}
	return hash, derr
}

// checkDeposit applies the portal's rules to d.
func checkDeposit(d *Deposit) error {
	for _, v := range []*big.Int{d.Mint, d.Value} {
		if v != nil && (v.Sign() < 0 || v.BitLen() > 256) {
			return errors.New("deposit mint and value must be in uint256 range")
		}
	}
	if len(d.Data) > MaxDepositData {
		return fmt.Errorf("deposit data of %d bytes exceeds the portal's %d", len(d.Data), MaxDepositData)
	}
	if min := params.TxGas + depositDataGas*uint64(len(d.Data)); d.Gas < min {
		return fmt.Errorf("deposit gas %d is below the portal's minimum of %d (21000 + 16 per data byte)", d.Gas, min)
	}
	return nil
}

// queueDeposit builds, logs and queues d (on the sequencer goroutine).
func (s *Sequencer) queueDeposit(d Deposit) (common.Hash, error) {
	b := s.blk
	origin := b.origin()
	if origin == nil {
		return common.Hash{}, errors.New("the open block has no L1 origin")
	}
	if room := b.Header.GasLimit - opstack.L1InfoGas; d.Gas > room {
		return common.Hash{}, fmt.Errorf("deposit gas %d exceeds what a block holds besides its L1-attributes deposit (%d)", d.Gas, room)
	}
	source := d.SourceHash
	if source == (common.Hash{}) {
		source = opstack.UserDepositSourceHash(origin.Hash, s.depositLogIndex(origin.Number))
	}
	// No mint is a zero mint, as decoding gives it back: the pending
	// block reads as the stored one.
	mint := new(big.Int)
	if d.Mint != nil {
		mint.Set(d.Mint)
	}
	value := new(big.Int)
	if d.Value != nil {
		value.Set(d.Value)
	}
	tx := types.NewTx(&types.DepositTx{
		SourceHash: source, From: d.From, To: d.To, Mint: mint, Value: value, Gas: d.Gas, Data: d.Data,
	})
	hash := tx.Hash()
	if s.knownTx(hash) {
		return common.Hash{}, fmt.Errorf("%w: deposit %s (same source hash and fields)", errAlreadyKnown, hash)
	}
	if s.wal != nil {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return common.Hash{}, err
		}
		if err := s.wal.Append(&record{Kind: recDeposit, Entries: [][]byte{raw}}); err != nil {
			return common.Hash{}, fmt.Errorf("journal deposit: %w", err)
		}
	}
	s.op.queue = append(s.op.queue, tx)
	return hash, nil
}

var errAlreadyKnown = errors.New("already known")

// knownTx reports whether hash is queued, in the open block or sealed.
func (s *Sequencer) knownTx(hash common.Hash) bool {
	for _, tx := range s.op.queue {
		if tx.Hash() == hash {
			return true
		}
	}
	if s.blk != nil {
		for _, tx := range s.blk.Txs {
			if tx.Hash() == hash {
				return true
			}
		}
	}
	_, _, _, _, ok := s.chain.TxLookup(hash)
	return ok
}

// depositLogIndex is the log index the next user deposit of L1 block
// number gets: the deposits already queued, plus those in the L2 blocks
// whose origin is that L1 block (the open one and the sealed ones before
// it). A deposit queued under an origin lands in the next block, whose
// origin is the same or later, so no two deposits of one L1 block share an
// index (counting a later origin's deposits only leaves gaps).
func (s *Sequencer) depositLogIndex(number uint64) uint64 {
	n := uint64(len(s.op.queue))
	count := func(txs types.Transactions) {
		for _, tx := range txs[1:] {
			if tx.IsDepositTx() {
				n++
			}
		}
	}
	count(s.blk.Txs)
	for h := s.blk.Parent; h.Number.Sign() > 0; {
		blk := s.chain.BlockByHash(h.Hash())
		if blk == nil || len(blk.Transactions()) == 0 {
			break
		}
		info, _, err := opstack.ParseL1Info(blk.Transactions()[0].Data())
		if err != nil || info.Number != number {
			break
		}
		count(blk.Transactions())
		if h = s.chain.HeaderByHash(h.ParentHash); h == nil {
			break
		}
	}
	return n
}

// requeueDeposits restores the deposits logged before a restart that no
// replayed or sealed block includes, in their logged order.
func (s *Sequencer) requeueDeposits(raws [][]byte) {
	if s.op == nil {
		return
	}
	for _, raw := range raws {
		tx := new(types.Transaction)
		if tx.UnmarshalBinary(raw) != nil || !tx.IsDepositTx() {
			continue
		}
		if s.knownTx(tx.Hash()) {
			continue
		}
		s.op.queue = append(s.op.queue, tx)
	}
	if n := len(s.op.queue); n > 0 {
		s.log.Info("re-queued deposits from the WAL", "count", n)
	}
}

// queuedDepositRecords are the WAL records of the queued deposits (for
// rotation).
func (s *Sequencer) queuedDepositRecords() []*record {
	if s.op == nil {
		return nil
	}
	out := make([]*record, 0, len(s.op.queue))
	for _, tx := range s.op.queue {
		raw, err := tx.MarshalBinary()
		if err != nil {
			continue
		}
		out = append(out, &record{Kind: recDeposit, Entries: [][]byte{raw}})
	}
	return out
}
