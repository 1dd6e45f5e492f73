package simulate

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/preconf/preconf/forkrules"
)

// maxJumpDestBytes bounds the shared JUMPDEST analyses (one bit per code
// byte, so 16 MiB covers 128 MiB of code); past it the cache starts over.
const maxJumpDestBytes = 16 << 20

// jumpDestCache keeps the EVM's JUMPDEST analysis of each contract across
// requests. go-ethereum keeps it per EVM, and every request builds its own
// EVM, so each call into a contract analysed its whole code again before
// its first jump: 8 % of the node's CPU on a Uniswap V2 bundle (approve,
// swap, add liquidity; go run ./bench -profile). An analysis depends only
// on the code, and the key is the code's hash, so sharing one is safe; the
// EVM only reads what it loads. Initcode has no hash and is not cached (the
// EVM analyses it locally).
type jumpDestCache struct {
	mu    sync.RWMutex
	m     map[common.Hash]vm.BitVec
	bytes int
}

// jumpDests is shared by every EVM this package builds.
var jumpDests = &jumpDestCache{m: make(map[common.Hash]vm.BitVec)}

// Load implements vm.JumpDestCache.
func (c *jumpDestCache) Load(codeHash common.Hash) (vm.BitVec, bool) {
	c.mu.RLock()
	v, ok := c.m[codeHash]
	c.mu.RUnlock()
	return v, ok
}

// Store implements vm.JumpDestCache.
func (c *jumpDestCache) Store(codeHash common.Hash, v vm.BitVec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[codeHash]; ok {
		return
	}
	if c.bytes+len(v) > maxJumpDestBytes {
		clear(c.m)
		c.bytes = 0
	}
	c.m[codeHash] = v
	c.bytes += len(v)
}

// newEVM is vm.NewEVM with the shared JUMPDEST analyses.
func newEVM(ctx vm.BlockContext, db vm.StateDB, cfg *params.ChainConfig, c vm.Config) *vm.EVM {
	evm := forkrules.NewEVM(ctx, db, cfg, c) // the chain's rules at the block (Karst's precompiles)
	evm.SetJumpDestCache(jumpDests)
	return evm
}
