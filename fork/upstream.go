package fork

import (
	"context"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/remote"
)

// Upstream blocks at or below the fork block are fetched when first asked
// for, checked (a header against its hash, a body against the header's
// transactions root, receipts against its receipts root) and kept. A header
// fetched by number below the fork block's 256 ancestors (whose parent
// links were checked at fork time) is the upstream's canonical one, taken
// on trust. Failures (upstream down) answer "not found" and keep nothing.

// fetchTimeout bounds one upstream fetch made for a reader.
const fetchTimeout = 30 * time.Second

func fetchCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), fetchTimeout)
}

// fetchHeader fetches the upstream's canonical header at n (below the fork
// block) and keeps it as canonical here.
func (c *Chain) fetchHeader(g *generation, n uint64) *types.Header {
	ctx, cancel := fetchCtx()
	defer cancel()
	head, err := g.client.HeadByNumber(ctx, remote.Tag(n))
	if err != nil || head == nil {
		c.fetchFailed("header", n, err)
		return nil
	}
	h := head.Header
	c.fetchMu.Lock()
	batch := c.db.NewBatch()
	rawdb.WriteHeader(batch, h)
	rawdb.WriteCanonicalHash(batch, h.Hash(), n)
	err = batch.Write()
	c.fetchMu.Unlock()
	if err != nil {
		c.log.Warn("keep upstream header", "number", n, "err", err)
	}
	c.headers.Add(h.Hash(), h)
	c.roots.Add(h.Root, h)
	return h
}

// fetchHeaderByHash fetches a header the upstream has at or below the fork
// block on the canonical chain here; nil otherwise.
func (c *Chain) fetchHeaderByHash(g *generation, hash common.Hash) *types.Header {
	if _, ok := c.absent.Get(hash); ok {
		return nil
	}
	ctx, cancel := fetchCtx()
	defer cancel()
	head, err := g.client.HeadByHash(ctx, hash)
	if err != nil {
		c.fetchFailed("header", hash, err)
		return nil
	}
	if head == nil || head.Header.Number.Uint64() >= g.point.Number.Uint64() {
		c.absent.Add(hash, struct{}{}) // stored already if it were the fork block or a local one
		return nil
	}
	canon := c.HeaderByNumber(head.Header.Number.Uint64())
	if canon == nil || canon.Hash() != hash {
		if canon != nil {
			c.absent.Add(hash, struct{}{})
		}
		return nil
	}
	return canon
}

// fetchBlock fetches the body of an upstream block whose header is kept.
func (c *Chain) fetchBlock(g *generation, h *types.Header) *types.Block {
	ctx, cancel := fetchCtx()
	defer cancel()
	b, err := g.client.Block(ctx, h.Hash())
	if err != nil || b == nil {
		c.fetchFailed("block", h.Number, err)
		return nil
	}
	c.fetchMu.Lock()
	batch := c.db.NewBatch()
	rawdb.WriteBody(batch, b.Hash(), b.NumberU64(), b.Body())
	rawdb.WriteTxLookupEntriesByBlock(batch, b)
	err = batch.Write()
	c.fetchMu.Unlock()
	if err != nil {
		c.log.Warn("keep upstream block", "number", h.Number, "err", err)
	}
	return b
}

// fetchReceipts fetches and keeps an upstream block's receipts.
func (c *Chain) fetchReceipts(g *generation, b *types.Block) bool {
	ctx, cancel := fetchCtx()
	defer cancel()
	rs, err := g.client.Receipts(ctx, b.Header())
	if err != nil {
		c.fetchFailed("receipts", b.Number(), err)
		return false
	}
	rawdb.WriteReceipts(c.db, b.Hash(), b.NumberU64(), rs)
	return true
}

// lookupTx asks the upstream where a transaction is; it counts only in a
// block at or below the fork block on the canonical chain here.
func (c *Chain) lookupTx(g *generation, hash common.Hash) (uint64, bool) {
	if _, ok := c.absent.Get(hash); ok {
		return 0, false
	}
	ctx, cancel := fetchCtx()
	defer cancel()
	var loc *struct {
		BlockHash   *common.Hash    `json:"blockHash"`
		BlockNumber *hexutil.Uint64 `json:"blockNumber"`
	}
	if err := g.client.Call(ctx, &loc, "eth_getTransactionByHash", hash); err != nil {
		c.fetchFailed("transaction", hash, err)
		return 0, false
	}
	if loc == nil || loc.BlockHash == nil || loc.BlockNumber == nil || uint64(*loc.BlockNumber) > g.point.Number.Uint64() {
		// Unknown, pending, or after the fork block: never one of ours
		// (a local transaction is found in the local index first).
		c.absent.Add(hash, struct{}{})
		return 0, false
	}
	n := uint64(*loc.BlockNumber)
	if h := c.HeaderByNumber(n); h == nil || h.Hash() != *loc.BlockHash {
		return 0, false
	}
	return n, true
}

func (c *Chain) fetchFailed(what string, which any, err error) {
	if err != nil {
		c.log.Debug("upstream fetch failed", "what", what, "which", which, "err", err)
	}
}

// fetchAncestors fetches the headers of the ancestors blocks below point
// (fewer near genesis), checking each is the parent of the next.
func fetchAncestors(ctx context.Context, client *remote.Client, point *types.Header) ([]*types.Header, error) {
	n := point.Number.Uint64()
	lo := uint64(0)
	if n > ancestors {
		lo = n - ancestors
	}
	out := make([]*types.Header, 0, n-lo)
	want := point.ParentHash
	const chunk = 64 // providers cap batch sizes
	for hi := n; hi > lo; {
		from := max(lo, hi-min(hi, chunk))
		reqs := make([]*remote.Request, 0, hi-from)
		for k := hi; k > from; k-- {
			reqs = append(reqs, &remote.Request{Method: "eth_getBlockByNumber", Params: []any{remote.Tag(k - 1), false}, Result: new(remote.RawHead)})
		}
		if err := client.Batch(ctx, reqs); err != nil {
			return nil, fmt.Errorf("ancestors of the fork block: %w", err)
		}
		for _, r := range reqs {
			if r.Err != nil {
				return nil, fmt.Errorf("ancestors of the fork block: %w", r.Err)
			}
			head, err := r.Result.(*remote.RawHead).Decode()
			if err != nil {
				return nil, fmt.Errorf("ancestors of the fork block: %w", err)
			}
			if head == nil || head.Header.Hash() != want {
				return nil, fmt.Errorf("%w: the upstream's ancestors of the fork block do not link (reorg under way?)", remote.ErrLying)
			}
			out = append(out, head.Header)
			want = head.Header.ParentHash
		}
		hi = from
	}
	return out, nil
}
