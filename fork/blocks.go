package fork

import (
	"encoding/binary"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// Blocks are stored in go-ethereum's schema (rawdb): the fork block, its
// ancestors' headers and every local block from the start, upstream blocks
// below the fork block once asked for (upstream.go).

// Head is the newest block: the fork block until the first local seal.
func (c *Chain) Head() *types.Header { return c.head.Load() }

// Genesis is the upstream's block 0 (its header; the body when asked for).
func (c *Chain) Genesis() *types.Block { return types.NewBlockWithHeader(c.gen.Load().genesis) }

// Safe is the safe block's header, or nil when none is marked.
func (c *Chain) Safe() *types.Header { return c.safe.Load() }

// Finalized is the finalized block's header, or nil when none is marked.
func (c *Chain) Finalized() *types.Header { return c.finalized.Load() }

// HeaderByNumber returns the canonical header at n, or nil.
func (c *Chain) HeaderByNumber(n uint64) *types.Header {
	if n > c.head.Load().Number.Uint64() {
		return nil
	}
	if hash := rawdb.ReadCanonicalHash(c.db, n); hash != (common.Hash{}) {
		return c.header(hash, n)
	}
	g := c.gen.Load()
	if n >= g.point.Number.Uint64() {
		return nil
	}
	return c.fetchHeader(g, n)
}

// header reads a stored header.
func (c *Chain) header(hash common.Hash, n uint64) *types.Header {
	if h, ok := c.headers.Get(hash); ok {
		return h
	}
	h := rawdb.ReadHeader(c.db, hash, n)
	if h == nil {
		return nil
	}
	c.headers.Add(hash, h)
	if n < c.gen.Load().point.Number.Uint64() {
		c.roots.Add(h.Root, h)
	}
	return h
}

// HeaderByHash returns the header with hash h, or nil.
func (c *Chain) HeaderByHash(hash common.Hash) *types.Header {
	if h, ok := c.headers.Get(hash); ok {
		return h
	}
	if n, ok := rawdb.ReadHeaderNumber(c.db, hash); ok {
		return c.header(hash, n)
	}
	return c.fetchHeaderByHash(c.gen.Load(), hash)
}

// BlockByNumber returns the canonical block at n, or nil.
func (c *Chain) BlockByNumber(n uint64) *types.Block {
	h := c.HeaderByNumber(n)
	if h == nil {
		return nil
	}
	return c.BlockByHash(h.Hash())
}

// BlockByHash returns the block with hash h, or nil.
func (c *Chain) BlockByHash(hash common.Hash) *types.Block {
	if b, ok := c.blocks.Get(hash); ok {
		return b
	}
	h := c.HeaderByHash(hash)
	if h == nil {
		return nil
	}
	var b *types.Block
	if body := rawdb.ReadBody(c.db, hash, h.Number.Uint64()); body != nil {
		b = types.NewBlockWithHeader(h).WithBody(*body)
	} else if h.Number.Uint64() <= c.gen.Load().point.Number.Uint64() {
		b = c.fetchBlock(c.gen.Load(), h)
	}
	if b != nil {
		c.blocks.Add(hash, b)
	}
	return b
}

// IsCanonical reports whether h is the canonical header at its height.
func (c *Chain) IsCanonical(h *types.Header) bool {
	ch := c.HeaderByNumber(h.Number.Uint64())
	return ch != nil && ch.Hash() == h.Hash()
}

// Receipts returns the block's receipts with all derived fields filled.
func (c *Chain) Receipts(b *types.Block) types.Receipts {
	hash := b.Hash()
	if rs, ok := c.receipts.Get(hash); ok {
		return rs
	}
	rs := rawdb.ReadReceipts(c.db, hash, b.NumberU64(), b.Time(), c.Config())
	if rs == nil && b.NumberU64() <= c.gen.Load().point.Number.Uint64() {
		if c.fetchReceipts(c.gen.Load(), b) {
			rs = rawdb.ReadReceipts(c.db, hash, b.NumberU64(), b.Time(), c.Config())
		}
	}
	if rs == nil && c.Config().Optimism != nil {
		rs = c.localOPReceipts(b)
	}
	if rs != nil {
		c.receipts.Add(hash, rs)
	}
	return rs
}

// localOPReceipts are the receipts of a local block of an OP-stack fork.
// Such a block holds no L1-attributes deposit, from which op-geth derives
// the L1 fee fields of a block of two or more transactions (it gives up on
// the whole block without one), so they are derived without them: the
// block's receipts, their L1 fee fields null, as with one transaction.
func (c *Chain) localOPReceipts(b *types.Block) types.Receipts {
	txs := b.Transactions()
	if len(txs) == 0 || txs[0].IsDepositTx() {
		return nil
	}
	rs := rawdb.ReadRawReceipts(c.db, b.Hash(), b.NumberU64())
	if rs == nil {
		return nil
	}
	var blobPrice *big.Int
	if b.ExcessBlobGas() != nil {
		blobPrice = eip4844.CalcBlobFee(c.Config(), b.Header()) // as rawdb.ReadReceipts
	}
	plain := *c.Config()
	plain.Optimism = nil
	if err := rs.DeriveFields(&plain, b.Hash(), b.NumberU64(), b.Time(), b.BaseFee(), blobPrice, txs); err != nil {
		return nil
	}
	return rs
}

// ReceiptsByHash are the receipts of the block with hash h (nil if unknown).
func (c *Chain) ReceiptsByHash(hash common.Hash) types.Receipts {
	b := c.BlockByHash(hash)
	if b == nil {
		return nil
	}
	return c.Receipts(b)
}

// CanonicalReceipt is the receipt of tx at (blockHash, index).
func (c *Chain) CanonicalReceipt(tx *types.Transaction, blockHash common.Hash, number, index uint64) (*types.Receipt, error) {
	rs := c.ReceiptsByHash(blockHash)
	if index >= uint64(len(rs)) || rs[index].TxHash != tx.Hash() {
		return nil, nil
	}
	return rs[index], nil
}

// TxLookup finds a canonical transaction by hash: a local one, or one of
// the upstream's at or below the fork block.
func (c *Chain) TxLookup(hash common.Hash) (tx *types.Transaction, blockHash common.Hash, number, index uint64, ok bool) {
	num := rawdb.ReadTxLookupEntry(c.db, hash)
	if num != nil && *num > c.Head().Number.Uint64() {
		return nil, common.Hash{}, 0, 0, false // written, the head not moved yet
	}
	if num == nil {
		n, found := c.lookupTx(c.gen.Load(), hash)
		if !found {
			return nil, common.Hash{}, 0, 0, false
		}
		num = &n
	}
	b := c.BlockByNumber(*num)
	if b == nil {
		return nil, common.Hash{}, 0, 0, false
	}
	for i, t := range b.Transactions() {
		if t.Hash() == hash {
			return t, b.Hash(), *num, uint64(i), true
		}
	}
	return nil, common.Hash{}, 0, 0, false
}

// ChainContext serves canonical headers to the EVM (BLOCKHASH).
func (c *Chain) ChainContext() core.ChainContext { return chainContext{c} }

type chainContext struct{ c *Chain }

func (x chainContext) Config() *params.ChainConfig                 { return x.c.Config() }
func (x chainContext) CurrentHeader() *types.Header                { return x.c.Head() }
func (x chainContext) GetHeaderByNumber(n uint64) *types.Header    { return x.c.HeaderByNumber(n) }
func (x chainContext) GetHeaderByHash(h common.Hash) *types.Header { return x.c.HeaderByHash(h) }
func (x chainContext) Engine() consensus.Engine                    { return x.c.engine }
func (x chainContext) GetHeader(h common.Hash, n uint64) *types.Header {
	hd := x.c.HeaderByHash(h)
	if hd == nil || hd.Number.Uint64() != n {
		return nil
	}
	return hd
}

func encodeNumber(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

func decodeNumber(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
