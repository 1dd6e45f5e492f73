package sequencer

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/blockexec"
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
	if err := stateErr(b.StateDB); err != nil {
		return common.Hash{}, fmt.Errorf("seal block %d: %w", block.NumberU64(), err)
	}
	hash, n := block.Hash(), block.NumberU64()
	if want != nil && *want != hash {
		s.log.Error("replayed block differs from the one sealed before the crash", "number", n, "was", *want, "now", hash)
	}
	sealRec := &record{Kind: recSeal, Number: n, Parent: block.ParentHash(), Hash: hash}
	if want == nil && s.wal != nil {
		if err := s.logSeal(b, sealRec); err != nil {
			return common.Hash{}, err
		}
	}
	root, err := s.chain.InsertSealed(block, b.Receipts, b.StateDB)
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
	s.log.Debug("sealed block", "number", n, "hash", hash, "txs", len(b.Txs), "gas", block.GasUsed(), "elapsed", d)
	return root, nil
}

// logSeal logs the seal of b before the block goes into the chain. Durability
// invariant: a block readers can see sealed is sealed again, with the same
// hash, after a crash. Its seal record is synced first, unless b's last
// flashblock record is a final one (recFinalFlashblock, synced before that
// flashblock was published): recovery then seals the block after replaying
// it, and the seal record is only written (the next fsync covers it).
func (s *Sequencer) logSeal(b *openBlock, rec *record) error {
	if n := len(b.logged); n > 0 && b.logged[n-1].Kind == recFinalFlashblock {
		_, err := s.wal.Write(rec)
		return err
	}
	return s.wal.Append(rec)
}

// finalise closes the open block (blockexec: the post-execution system
// calls, its withdrawals, the roots) and returns it with its requests (nil
// before Prague).
func (s *Sequencer) finalise(b *openBlock) (*types.Block, [][]byte, error) {
	return b.Finalise(blockexec.Sealing{Withdrawals: b.withdrawals, PasserRoot: s.passerRoot(b)})
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
