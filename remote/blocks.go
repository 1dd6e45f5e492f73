package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// ErrLying marks an upstream answer that contradicts itself or a
// commitment (a header whose hash is not the one claimed, a proof that does
// not verify against the state root, code whose hash is not the account's).
var ErrLying = errors.New("upstream answer fails verification")

// Head is a sealed block's header with its transaction hashes.
type Head struct {
	Header *types.Header
	Txs    []common.Hash
}

type blockHashes struct {
	Hash         *common.Hash    `json:"hash"`
	Transactions json.RawMessage `json:"transactions"`
}

// decodeHead parses an eth_getBlockBy* answer (transactions as hashes) and
// checks that the header hashes to the claimed hash. A JSON null is (nil, nil).
func decodeHead(raw json.RawMessage) (*Head, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	h := new(types.Header)
	if err := json.Unmarshal(raw, h); err != nil {
		return nil, fmt.Errorf("upstream header: %w", err)
	}
	var extra blockHashes
	if err := json.Unmarshal(raw, &extra); err != nil {
		return nil, fmt.Errorf("upstream block: %w", err)
	}
	if extra.Hash == nil {
		return nil, fmt.Errorf("upstream block without hash")
	}
	if got := h.Hash(); got != *extra.Hash {
		return nil, fmt.Errorf("%w: block %d claims hash %s, its header hashes to %s", ErrLying, h.Number, *extra.Hash, got)
	}
	var txs []common.Hash
	if len(extra.Transactions) > 0 && extra.Transactions[0] == '[' {
		if err := json.Unmarshal(extra.Transactions, &txs); err != nil {
			return nil, fmt.Errorf("upstream block %d transactions: %w", h.Number, err)
		}
	}
	if txs == nil {
		txs = []common.Hash{}
	}
	return &Head{Header: h, Txs: txs}, nil
}

// HeadByNumber fetches a canonical block's header and transaction hashes by
// number or tag ("latest", "safe", "finalized", "0x…"); nil when unknown.
func (c *Client) HeadByNumber(ctx context.Context, tag string) (*Head, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, &raw, "eth_getBlockByNumber", tag, false); err != nil {
		return nil, err
	}
	return decodeHead(raw)
}

// HeadByHash fetches a block's header and transaction hashes; nil when unknown.
func (c *Client) HeadByHash(ctx context.Context, hash common.Hash) (*Head, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, &raw, "eth_getBlockByHash", hash, false); err != nil {
		return nil, err
	}
	return decodeHead(raw)
}

// Tag is the JSON-RPC form of a block number.
func Tag(n uint64) string { return hexutil.EncodeUint64(n) }

// RawBlock fetches a block by hash as consensus RLP (debug_getRawBlock)
// and checks its hash; nil when unknown.
func (c *Client) RawBlock(ctx context.Context, hash common.Hash) (*types.Block, error) {
	var raw hexutil.Bytes
	if err := c.Call(ctx, &raw, "debug_getRawBlock", hash); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, nil
	}
	b := new(types.Block)
	if err := rlp.DecodeBytes(raw, b); err != nil {
		return nil, fmt.Errorf("upstream block %s: %w", hash, err)
	}
	if b.Hash() != hash {
		return nil, fmt.Errorf("%w: asked block %s, got %s", ErrLying, hash, b.Hash())
	}
	if types.DeriveSha(b.Transactions(), trieHasher()) != b.TxHash() {
		return nil, fmt.Errorf("%w: block %s transactions do not match its header", ErrLying, hash)
	}
	return b, nil
}

// RawReceipts fetches a block's consensus receipts (debug_getRawReceipts)
// and checks them against the header's receipts root.
func (c *Client) RawReceipts(ctx context.Context, header *types.Header) (types.Receipts, error) {
	var raws []hexutil.Bytes
	if err := c.Call(ctx, &raws, "debug_getRawReceipts", header.Hash()); err != nil {
		return nil, err
	}
	out := make(types.Receipts, len(raws))
	for i, raw := range raws {
		r := new(types.Receipt)
		if err := r.UnmarshalBinary(raw); err != nil {
			return nil, fmt.Errorf("upstream receipt %d of block %d: %w", i, header.Number, err)
		}
		out[i] = r
	}
	if types.DeriveSha(out, trieHasher()) != header.ReceiptHash {
		return nil, fmt.Errorf("%w: receipts of block %d do not match its receipts root", ErrLying, header.Number)
	}
	return out, nil
}

// Block fetches a block by hash, checked against its hash and
// transactions root: as consensus RLP (debug_getRawBlock) where the upstream
// offers it, else as JSON with full transactions (eth_getBlockByHash), as
// public endpoints serve no debug_* methods. nil when unknown.
func (c *Client) Block(ctx context.Context, hash common.Hash) (*types.Block, error) {
	if !c.noDebug.Load() {
		b, err := c.RawBlock(ctx, hash)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			return b, err
		}
		c.noDebug.Store(true)
	}
	var raw json.RawMessage
	if err := c.Call(ctx, &raw, "eth_getBlockByHash", hash, true); err != nil {
		return nil, err
	}
	head, err := decodeHead(raw)
	if err != nil || head == nil {
		return nil, err
	}
	if head.Header.Hash() != hash {
		return nil, fmt.Errorf("%w: asked block %s, got %s", ErrLying, hash, head.Header.Hash())
	}
	var body struct {
		Transactions []*types.Transaction `json:"transactions"`
		Withdrawals  []*types.Withdrawal  `json:"withdrawals"`
		Uncles       []common.Hash        `json:"uncles"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("upstream block %s body: %w", hash, err)
	}
	if len(body.Uncles) > 0 {
		return nil, fmt.Errorf("upstream block %s has uncles, which only debug_getRawBlock serves", hash)
	}
	b := types.NewBlockWithHeader(head.Header).WithBody(types.Body{Transactions: body.Transactions, Withdrawals: body.Withdrawals})
	if types.DeriveSha(b.Transactions(), trieHasher()) != b.TxHash() {
		return nil, fmt.Errorf("%w: block %s transactions do not match its header", ErrLying, hash)
	}
	return b, nil
}

// Receipts fetches a block's consensus receipts, checked against the
// header's receipts root: debug_getRawReceipts where offered, else
// eth_getBlockReceipts.
func (c *Client) Receipts(ctx context.Context, header *types.Header) (types.Receipts, error) {
	if !c.noDebug.Load() {
		rs, err := c.RawReceipts(ctx, header)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			return rs, err
		}
		c.noDebug.Store(true)
	}
	var rs types.Receipts
	if err := c.Call(ctx, &rs, "eth_getBlockReceipts", header.Hash()); err != nil {
		return nil, err
	}
	if types.DeriveSha(rs, trieHasher()) != header.ReceiptHash {
		return nil, fmt.Errorf("%w: receipts of block %d do not match its receipts root", ErrLying, header.Number)
	}
	return rs, nil
}

// RawHead holds an eth_getBlockBy* answer as Request.Result in a batch;
// Decode checks and parses it as HeadByNumber does.
type RawHead json.RawMessage

// UnmarshalJSON keeps the answer as it came.
func (r *RawHead) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// Decode is the head (nil for a JSON null), its hash checked.
func (r RawHead) Decode() (*Head, error) { return decodeHead(json.RawMessage(r)) }
