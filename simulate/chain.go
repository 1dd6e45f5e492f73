package simulate

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
)

// simChain is the chain as simulated blocks see it: canonical headers below
// the base, the base itself, then the simulated blocks already built. It
// answers BLOCKHASH for all three.
type simChain struct {
	core.ChainContext
	base    *types.Header
	headers []*types.Header // simulated blocks built so far, in order
}

func (c *simChain) GetHeaderByNumber(n uint64) *types.Header {
	b := c.base.Number.Uint64()
	switch {
	case n == b:
		return c.base
	case n < b:
		return c.ChainContext.GetHeaderByNumber(n)
	}
	for _, h := range c.headers {
		if h.Number.Uint64() == n {
			return h
		}
	}
	return nil
}

func (c *simChain) GetHeader(hash common.Hash, n uint64) *types.Header {
	h := c.GetHeaderByNumber(n)
	if h == nil || h.Hash() != hash {
		return nil
	}
	return h
}

func (c *simChain) GetHeaderByHash(hash common.Hash) *types.Header {
	if c.base.Hash() == hash {
		return c.base
	}
	if h := c.ChainContext.GetHeaderByHash(hash); h != nil {
		return h
	}
	for _, h := range c.headers {
		if h.Hash() == hash {
			return h
		}
	}
	return nil
}
