package testchain

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/blockexec"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/pending"
)

// TxChanges is what one transaction (or, at Tx -1, the block's opening
// system calls) changed: the accounts and slots it wrote, with their
// values after it.
type TxChanges struct {
	Tx   int // index in the block; -1 for the system calls
	Diff *pending.Diff
	// Prior values of the accounts and slots in Diff (nil: did not exist).
	Prior      map[common.Address]*types.StateAccount
	PriorSlots map[common.Address]map[common.Hash]common.Hash
}

// Changes replays block b on its parent's state with execution hooks and
// returns what each transaction changed (for builder metadata: balances,
// access lists). It checks the replay ends at the block's state root.
func (c *Chain) Changes(b *Block) ([]TxChanges, error) {
	parent := c.header(b.ParentHash())
	if parent == nil {
		return nil, fmt.Errorf("testchain: parent of block %d unknown", b.NumberU64())
	}
	st, err := c.State(parent)
	if err != nil {
		return nil, err
	}
	h := b.Header()
	before, err := c.State(parent) // untouched: the values at the block's start
	if err != nil {
		return nil, err
	}
	t := pending.NewTracker()
	evm := forkrules.NewEVM(core.NewEVMBlockContext(h, headerChain{c}, &h.Coinbase, c.Config, st), state.NewHookedState(st, t.Hooks()), c.Config, vm.Config{})
	cur := map[common.Address]*types.StateAccount{} // latest values of accounts changed so far
	curSlots := map[common.Address]map[common.Hash]common.Hash{}
	collect := func(i int) TxChanges {
		d := t.Collect(st)
		ps := make(map[common.Address]map[common.Hash]common.Hash, len(d.Storage))
		for a, m := range d.Storage {
			ps[a] = make(map[common.Hash]common.Hash, len(m))
			if curSlots[a] == nil {
				curSlots[a] = make(map[common.Hash]common.Hash)
			}
			for k, v := range m {
				if old, ok := curSlots[a][k]; ok {
					ps[a][k] = old
				} else {
					ps[a][k] = before.GetState(a, k)
				}
				curSlots[a][k] = v
			}
		}
		p := make(map[common.Address]*types.StateAccount, len(d.Accounts))
		for a, acct := range d.Accounts {
			if v, ok := cur[a]; ok {
				p[a] = v
			} else if before.Exist(a) {
				p[a] = &types.StateAccount{Nonce: before.GetNonce(a), Balance: before.GetBalance(a).Clone(), CodeHash: before.GetCodeHash(a).Bytes()}
			} else {
				p[a] = nil
			}
			cur[a] = acct
		}
		return TxChanges{Tx: i, Diff: d, Prior: p, PriorSlots: ps}
	}
	blockexec.PreSystemCalls(c.Config, h, h.ParentHash, evm)
	out := []TxChanges{collect(-1)}
	signer := types.MakeSigner(c.Config, h.Number, h.Time)
	gp := core.NewGasPool(h.GasLimit)
	for i, tx := range b.Transactions() {
		msg, err := core.TransactionToMessage(tx, signer, h.BaseFee)
		if err != nil {
			return nil, err
		}
		st.SetTxContext(tx.Hash(), i)
		if _, err := core.ApplyTransactionWithEVM(msg, gp, st, h.Number, h.Hash(), h.Time, tx, evm); err != nil {
			return nil, fmt.Errorf("testchain: replay tx %d of block %d: %w", i, b.NumberU64(), err)
		}
		out = append(out, collect(i))
	}
	if root := st.IntermediateRoot(true); root != h.Root {
		return nil, fmt.Errorf("testchain: replay of block %d ends at %s, not %s", b.NumberU64(), root, h.Root)
	}
	return out, nil
}

func (c *Chain) header(hash common.Hash) *types.Header {
	if hash == c.genesisBlock.Hash() {
		return c.genesisBlock.Header()
	}
	for _, b := range c.Blocks {
		if b.Hash() == hash {
			return b.Header()
		}
	}
	return nil
}

// headerChain serves the generated headers to the EVM (BLOCKHASH).
type headerChain struct{ c *Chain }

func (h headerChain) Config() *params.ChainConfig { return h.c.Config }
func (h headerChain) CurrentHeader() *types.Header {
	return h.c.Blocks[len(h.c.Blocks)-1].Header()
}
func (h headerChain) GetHeader(hash common.Hash, _ uint64) *types.Header { return h.c.header(hash) }
func (h headerChain) GetHeaderByHash(hash common.Hash) *types.Header     { return h.c.header(hash) }
func (h headerChain) GetHeaderByNumber(n uint64) *types.Header {
	if n == 0 {
		return h.c.genesisBlock.Header()
	}
	if n <= uint64(len(h.c.Blocks)) {
		return h.c.Blocks[n-1].Header()
	}
	return nil
}
func (h headerChain) Engine() consensus.Engine { return nil }
