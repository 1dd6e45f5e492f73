package follower

import (
	"context"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/remote"
)

// maxHeaders bounds the header cache (BLOCKHASH needs at most 256 back).
const maxHeaders = 4096

// headers caches sealed headers fetched from the upstream (by hash: they are
// immutable) and serves them as go-ethereum's chain context, so BLOCKHASH
// works during re-execution without a local chain.
type headers struct {
	c      *remote.Client
	config *params.ChainConfig
	engine consensus.Engine

	mu     sync.Mutex
	byHash map[common.Hash]*types.Header
	roots  map[common.Hash]*types.Header
	order  []common.Hash
	head   *types.Header
	// pre are the headers of pre-confirmed blocks not sealed yet that a
	// pending block builds on (next.go), for BLOCKHASH; kept apart from
	// byHash, which holds what the upstream served.
	pre map[common.Hash]*types.Header
}

func newHeaders(c *remote.Client, config *params.ChainConfig) *headers {
	return &headers{c: c, config: config, engine: beacon.New(ethash.NewFaker()), byHash: make(map[common.Hash]*types.Header), roots: make(map[common.Hash]*types.Header)}
}

func (h *headers) add(hd *types.Header) {
	hash := hd.Hash()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.byHash[hash]; ok {
		return
	}
	h.byHash[hash] = hd
	h.roots[hd.Root] = hd
	h.order = append(h.order, hash)
	if len(h.order) > maxHeaders {
		drop := h.order[:len(h.order)-maxHeaders]
		for _, k := range drop {
			if old := h.byHash[k]; old != nil && h.roots[old.Root] == old {
				delete(h.roots, old.Root)
			}
			delete(h.byHash, k)
		}
		h.order = append([]common.Hash(nil), h.order[len(drop):]...)
	}
}

func (h *headers) setHead(hd *types.Header) {
	h.add(hd)
	h.mu.Lock()
	h.head = hd
	h.mu.Unlock()
}

func (h *headers) cached(hash common.Hash) *types.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byHash[hash]
}

// byRoot is a cached header with state root root, or nil.
func (h *headers) byRoot(root common.Hash) *types.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.roots[root]
}

// setPre replaces the pre-confirmed headers pending blocks build on.
func (h *headers) setPre(pre map[common.Hash]*types.Header) {
	h.mu.Lock()
	h.pre = pre
	h.mu.Unlock()
}

func (h *headers) byHashCtx(ctx context.Context, hash common.Hash) (*types.Header, error) {
	if hd := h.cached(hash); hd != nil {
		return hd, nil
	}
	h.mu.Lock()
	hd := h.pre[hash]
	h.mu.Unlock()
	if hd != nil {
		return hd, nil
	}
	head, err := h.c.HeadByHash(ctx, hash)
	if err != nil || head == nil {
		return nil, err
	}
	h.add(head.Header)
	return head.Header, nil
}

func quick() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// Config implements consensus.ChainHeaderReader.
func (h *headers) Config() *params.ChainConfig { return h.config }

// CurrentHeader implements consensus.ChainHeaderReader.
func (h *headers) CurrentHeader() *types.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.head
}

// GetHeader implements consensus.ChainHeaderReader.
func (h *headers) GetHeader(hash common.Hash, number uint64) *types.Header {
	hd := h.GetHeaderByHash(hash)
	if hd == nil || hd.Number.Uint64() != number {
		return nil
	}
	return hd
}

// GetHeaderByHash implements consensus.ChainHeaderReader.
func (h *headers) GetHeaderByHash(hash common.Hash) *types.Header {
	ctx, cancel := quick()
	defer cancel()
	hd, _ := h.byHashCtx(ctx, hash)
	return hd
}

// GetHeaderByNumber implements consensus.ChainHeaderReader (canonical).
func (h *headers) GetHeaderByNumber(number uint64) *types.Header {
	ctx, cancel := quick()
	defer cancel()
	head, err := h.c.HeadByNumber(ctx, remote.Tag(number))
	if err != nil || head == nil {
		return nil
	}
	h.add(head.Header)
	return head.Header
}

// Engine implements core.ChainContext (only Author is ever asked, and the
// follower always passes the fee recipient explicitly).
func (h *headers) Engine() consensus.Engine { return h.engine }
