package sequencer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
)

// testing_buildBlockV1 (execution-apis, testing namespace): build a block on
// a given parent with given payload attributes and answer it as
// engine_getPayloadV4 does, without sealing it: the method "MUST NOT modify
// the client's canonical chain or head block". The block is built exactly as
// the sequencer builds its own (same environment rules, same execution, same
// finalisation), on a state of its own, off the sequencer goroutine.

// BuildRequest is what testing_buildBlockV1 asks for.
type BuildRequest struct {
	Parent common.Hash
	Attrs  engine.PayloadAttributes
	// Txs are the transactions to include, in order, all of which must
	// apply; nil takes the pending block's transactions and then the pool's
	// (what the next mined block would hold); empty builds an empty block.
	Txs   []*types.Transaction
	Extra []byte
}

// BuildBlock's errors for a parent it cannot build on (go-ethereum's miner's
// words).
var (
	ErrUnknownParent    = errors.New("unknown parent block")
	ErrInvalidTimestamp = errors.New("invalid timestamp")
)

// BuildBlock builds the block req describes and returns it as an execution
// payload envelope. A RefusedError refuses the request as given; other
// errors (ErrUnknownParent, ErrInvalidTimestamp, a transaction core
// rejects) say why the block cannot be built.
func (s *Sequencer) BuildBlock(ctx context.Context, req BuildRequest) (*engine.ExecutionPayloadEnvelope, error) {
	parent := s.chain.HeaderByHash(req.Parent)
	if parent == nil {
		return nil, fmt.Errorf("%w %v", ErrUnknownParent, req.Parent)
	}
	if req.Attrs.Timestamp <= parent.Time {
		return nil, fmt.Errorf("%w, parent %d given %d", ErrInvalidTimestamp, parent.Time, req.Attrs.Timestamp)
	}
	if len(req.Attrs.Withdrawals) > 0 && s.config.IsOptimism() {
		return nil, &RefusedError{errors.New("withdrawals on an OP-stack chain")}
	}
	txs := req.Txs
	fromPool := txs == nil
	if fromPool {
		// The pending block's transactions come first, as in the next
		// mined block; only the sequencer goroutine may read them.
		if err := s.do(ctx, func() error {
			if s.blk.Parent.Hash() == parent.Hash() {
				txs = slices.Clone(s.blk.Txs)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	beaconRoot := common.Hash{}
	if req.Attrs.BeaconRoot != nil {
		beaconRoot = *req.Attrs.BeaconRoot
	}
	b, err := s.newBlock(parent, record{
		Kind: recFlashblock, Number: parent.Number.Uint64() + 1, Parent: parent.Hash(),
		Time: req.Attrs.Timestamp, Coinbase: req.Attrs.SuggestedFeeRecipient, GasLimit: s.gasLimit(parent),
		Random: req.Attrs.Random, BeaconRoot: beaconRoot, Extra: req.Extra,
	})
	if err != nil {
		return nil, err
	}
	b.withdrawals = req.Attrs.Withdrawals
	sidecars := make(map[common.Hash]*types.BlobTxSidecar)
	for _, tx := range txs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if sc := tx.BlobTxSidecar(); sc != nil {
			sidecars[tx.Hash()] = sc
			tx = tx.WithoutBlobTxSidecar()
		}
		if max := eip4844.MaxBlobGasPerBlock(s.config, b.Header.Time); b.BlobGas+tx.BlobGas() > max {
			return nil, fmt.Errorf("max data blobs reached: block blob gas %d of %d, tx %v needs %d", b.BlobGas, max, tx.Hash(), tx.BlobGas())
		}
		if err := s.apply(b, tx); err != nil {
			if fromPool {
				continue // pre-confirmed on another state: cannot happen on this parent
			}
			return nil, err // core's text, as go-ethereum's miner answers
		}
	}
	if fromPool {
		s.fill(b, false)
	}
	block, requests, err := s.finalise(b)
	if err != nil {
		return nil, err
	}
	if requests == nil && s.config.IsPrague(block.Number(), block.Time()) {
		requests = [][]byte{}
	}
	env := engine.BlockToExecutableData(block, blockValue(block, b.Receipts), s.sidecars(block, sidecars), requests)
	if !s.config.IsOptimism() {
		env.ParentBeaconBlockRoot = nil // op-geth's addition; go-ethereum's envelope has none
	}
	return env, nil
}

// sidecars are the blob sidecars of block's blob transactions, in order:
// given with the transactions or kept by the pool (a pre-confirmed blob
// transaction's sidecar is no longer kept: its blobs are left out).
func (s *Sequencer) sidecars(block *types.Block, given map[common.Hash]*types.BlobTxSidecar) []*types.BlobTxSidecar {
	var out []*types.BlobTxSidecar
	for _, tx := range block.Transactions() {
		if tx.Type() != types.BlobTxType {
			continue
		}
		if sc := given[tx.Hash()]; sc != nil {
			out = append(out, sc)
		} else if e := s.pool.Get(tx.Hash()); e != nil && e.Tx.BlobTxSidecar() != nil {
			out = append(out, e.Tx.BlobTxSidecar())
		}
	}
	return out
}

// blockValue is what the fee recipient earns: each transaction's effective
// tip times the gas it used (go-ethereum's miner's total fees).
func blockValue(block *types.Block, receipts types.Receipts) *big.Int {
	total := new(big.Int)
	for i, tx := range block.Transactions() {
		tip, err := tx.EffectiveGasTip(block.BaseFee())
		if err != nil {
			continue
		}
		total.Add(total, tip.Mul(tip, new(big.Int).SetUint64(receipts[i].GasUsed)))
	}
	return total
}
