package txpool

import (
	"sync"

	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// rollupCosts is op-geth's L1 data and operator fee function for one
// pending environment, shared by the admissions that meet it.
//
// op-geth's function reads L1Block's fee slots from the state on its first
// call and keeps them in its closure, so one built per admission read them
// through the pending state every time: at 3,000 transfers/s on the
// OP-stack dev chain the fee took 3.9 % of the node's CPU samples, 1.5 %
// those reads (1.3 % compressing the transaction, needed and cached on it).
// The closure's cache is unsynchronised; calls hold mu.
type rollupCosts struct {
	head *types.Header // the environment's identity (see rollupCost)
	mu   sync.Mutex
	fn   types.TotalRollupCostFunc
}

// rollupCost is tx's L1 data and operator fee at head's time, from st's
// L1Block values; nil on a chain that is not an OP-stack one.
//
// The cache is keyed by the header pointer: every published pending
// snapshot has a header of its own (pending.Assemble) and without one the
// env answers the sealed head's, so a new block, flashblock, cheat or
// rewind is a new key and L1Block's values are read again.
func (p *Pool) rollupCost(head *types.Header, st state.Reader, tx *types.Transaction) *uint256.Int {
	if p.chain.Optimism == nil {
		return nil
	}
	rc := p.rollup.Load()
	if rc == nil || rc.head != head {
		fn := types.NewTotalRollupCostFunc(p.chain, stateGetter{st})
		if fn == nil {
			return nil
		}
		rc = &rollupCosts{head: head, fn: fn}
		p.rollup.Store(rc)
	}
	tx.RollupCostData() // the compression, cached on tx: outside the lock
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.fn(tx, head.Time)
}
