package follower

import (
	"errors"
	"fmt"
	"math/big"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/remote"
)

// Backend is the sealed chain as the upstream serves it, with the methods
// the API reads (the same as *chain.Chain's), so the whole interface works
// without a local chain. Immutable data (blocks and receipts by hash) is
// cached; state is read lazily through verified per-block readers.
type Backend struct {
	f *Follower

	blocks   *lru[common.Hash, *types.Block]
	receipts *lru[common.Hash, types.Receipts]
	genesis  atomic.Pointer[types.Block]
}

// Backend returns the follower's sealed-chain reader.
func (f *Follower) Backend() *Backend {
	f.backendOnce.Do(func() {
		f.backend = &Backend{f: f, blocks: newLRU[common.Hash, *types.Block](256), receipts: newLRU[common.Hash, types.Receipts](256)}
	})
	return f.backend
}

func (b *Backend) client() *remote.Client { return b.f.client }

// Config is the chain configuration.
func (b *Backend) Config() *params.ChainConfig { return b.f.cfg.Chain }

// Genesis is block 0 (nil while the upstream cannot be asked).
func (b *Backend) Genesis() *types.Block {
	if g := b.genesis.Load(); g != nil {
		return g
	}
	h := b.HeaderByNumber(0)
	if h == nil {
		return nil
	}
	g := b.BlockByHash(h.Hash())
	if g != nil {
		b.genesis.Store(g)
	}
	return g
}

// Head is the latest canonical header seen on the upstream.
func (b *Backend) Head() *types.Header { return b.f.Head() }

func (b *Backend) tagged(tag string) *types.Header {
	ctx, cancel := quick()
	defer cancel()
	h, err := b.client().HeadByNumber(ctx, tag)
	if err != nil || h == nil {
		return nil
	}
	b.f.headers.add(h.Header)
	return h.Header
}

// Safe is the upstream's safe block header, or nil.
func (b *Backend) Safe() *types.Header { return b.tagged("safe") }

// Finalized is the upstream's finalized block header, or nil.
func (b *Backend) Finalized() *types.Header { return b.tagged("finalized") }

// HeaderByNumber is the canonical header at n, or nil.
func (b *Backend) HeaderByNumber(n uint64) *types.Header {
	if h := b.Head(); h != nil && h.Number.Uint64() == n {
		return h
	}
	return b.tagged(remote.Tag(n))
}

// HeaderByHash is the header with hash h, or nil.
func (b *Backend) HeaderByHash(h common.Hash) *types.Header { return b.f.headers.GetHeaderByHash(h) }

// BlockByNumber is the canonical block at n, or nil.
func (b *Backend) BlockByNumber(n uint64) *types.Block {
	h := b.HeaderByNumber(n)
	if h == nil {
		return nil
	}
	return b.BlockByHash(h.Hash())
}

// BlockByHash is the block with hash h, or nil.
func (b *Backend) BlockByHash(h common.Hash) *types.Block {
	if blk, ok := b.blocks.get(h); ok {
		return blk
	}
	ctx, cancel := quick()
	defer cancel()
	blk, err := b.client().RawBlock(ctx, h)
	if err != nil || blk == nil {
		return nil
	}
	b.blocks.add(h, blk)
	b.f.headers.add(blk.Header())
	return blk
}

// IsCanonical reports whether h is the canonical header at its height.
func (b *Backend) IsCanonical(h *types.Header) bool {
	c := b.HeaderByNumber(h.Number.Uint64())
	return c != nil && c.Hash() == h.Hash()
}

// Receipts are the block's receipts with derived fields, checked against its
// receipts root.
func (b *Backend) Receipts(blk *types.Block) types.Receipts {
	hash := blk.Hash()
	if rs, ok := b.receipts.get(hash); ok {
		return rs
	}
	ctx, cancel := quick()
	defer cancel()
	rs, err := b.client().RawReceipts(ctx, blk.Header())
	if err != nil {
		return nil
	}
	var blobPrice *big.Int
	if blk.ExcessBlobGas() != nil {
		blobPrice = eip4844.CalcBlobFee(b.Config(), blk.Header())
	}
	if err := rs.DeriveFields(b.Config(), hash, blk.NumberU64(), blk.Time(), blk.BaseFee(), blobPrice, blk.Transactions()); err != nil {
		return nil
	}
	b.receipts.add(hash, rs)
	return rs
}

// ReceiptsByHash are the receipts of the block with hash h (nil if unknown).
func (b *Backend) ReceiptsByHash(h common.Hash) types.Receipts {
	blk := b.BlockByHash(h)
	if blk == nil {
		return nil
	}
	return b.Receipts(blk)
}

// CanonicalReceipt is the receipt of tx at (blockHash, index).
func (b *Backend) CanonicalReceipt(tx *types.Transaction, blockHash common.Hash, number, index uint64) (*types.Receipt, error) {
	rs := b.ReceiptsByHash(blockHash)
	if index >= uint64(len(rs)) {
		return nil, nil
	}
	return rs[index], nil
}

// TxLookup finds a sealed transaction by hash through the upstream; the
// transaction itself comes from its (verified) block.
func (b *Backend) TxLookup(hash common.Hash) (tx *types.Transaction, blockHash common.Hash, number, index uint64, ok bool) {
	ctx, cancel := quick()
	defer cancel()
	var loc *struct {
		BlockHash   *common.Hash    `json:"blockHash"`
		BlockNumber *hexutil.Uint64 `json:"blockNumber"`
		Index       *hexutil.Uint64 `json:"transactionIndex"`
	}
	if err := b.client().Call(ctx, &loc, "eth_getTransactionByHash", hash); err != nil || loc == nil || loc.BlockHash == nil || loc.Index == nil || loc.BlockNumber == nil {
		return nil, common.Hash{}, 0, 0, false
	}
	blk := b.BlockByHash(*loc.BlockHash)
	if blk == nil || uint64(*loc.Index) >= uint64(len(blk.Transactions())) {
		return nil, common.Hash{}, 0, 0, false
	}
	t := blk.Transactions()[*loc.Index]
	if t.Hash() != hash {
		return nil, common.Hash{}, 0, 0, false
	}
	return t, *loc.BlockHash, uint64(*loc.BlockNumber), uint64(*loc.Index), true
}

// errNoState: a state root the follower has no header for.
var errNoState = errors.New("state root unknown to this follower")

// StateReader is a verified lazy reader of the state at root (the root of
// a header the follower has seen).
func (b *Backend) StateReader(root common.Hash) (state.Reader, error) {
	h := b.f.headers.byRoot(root)
	if h == nil {
		if pre := b.f.preStates.Load(); pre != nil && (*pre)[root] != nil {
			return (*pre)[root], nil // a pre-confirmed block a pending one builds on
		}
		return nil, fmt.Errorf("%w: %s", errNoState, root)
	}
	return b.f.stateAt(h), nil
}

// StateAt opens a StateDB at h over the lazy reader (no trie: proofs of
// sealed state are answered by the upstream).
func (b *Backend) StateAt(h *types.Header) (*state.StateDB, error) {
	return state.NewWithReader(h.Root, b.f.exec.memdb, b.f.stateAt(h))
}

// StateDatabase is an empty in-memory database for StateDBs over readers.
func (b *Backend) StateDatabase() state.Database { return b.f.exec.memdb }

// ChainContext serves headers for BLOCKHASH during execution.
func (b *Backend) ChainContext() core.ChainContext { return b.f.headers }

var _ api.Backend = (*Backend)(nil)
