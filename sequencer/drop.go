package sequencer

import (
	"context"

	"github.com/ethereum/go-ethereum/common"
)

// DropTransactions takes pooled transactions out of the pool (all of them
// when hashes is nil) and rotates the WAL so that a restart does not admit
// them again (anvil_dropTransaction, anvil_dropAllTransactions). Each
// one's nonce is its sender's next again. A transaction already
// pre-confirmed in the open block is not in the pool: it stays, as an
// already mined one does on anvil. It returns how many were dropped.
func (s *Sequencer) DropTransactions(ctx context.Context, hashes []common.Hash) (int, error) {
	n := 0
	err := s.do(ctx, func() error {
		if hashes == nil {
			for _, e := range s.pool.All() {
				hashes = append(hashes, e.Tx.Hash())
			}
		}
		var drop []common.Hash
		for _, h := range hashes {
			if s.pool.Has(h) {
				drop = append(drop, h)
			}
		}
		if len(drop) == 0 {
			return nil
		}
		s.pool.Drop(drop...)
		n = len(drop)
		if s.wal != nil {
			return s.wal.Rotate(s.walContent)
		}
		return nil
	})
	return n, err
}

// Chain is the chain below the sequencer.
func (s *Sequencer) Chain() Chain { return s.chain }
