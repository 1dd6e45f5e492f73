package testchain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
)

// Format is a flashblocks wire format.
type Format int

const (
	// BaseV1 is Base's stream since its V1 upgrade (2026): metadata holds
	// block_number, prev_flashblock_id ("<block>-<index>" of the flashblock
	// before) and a flashblock access list; no receipts, no balances.
	BaseV1 Format = iota
	// Legacy is the earlier stream, as preconf's own sequencer writes it:
	// metadata with new_account_balances and internally tagged receipts.
	Legacy
)

// Messages are the chain's flashblocks as a builder sends them, one JSON
// message each, in order.
func (c *Chain) Messages(f Format) ([][]byte, error) {
	var out [][]byte
	var prev string
	for _, b := range c.Blocks {
		changes, err := c.Changes(b)
		if err != nil {
			return nil, err
		}
		id := payloadID(b)
		var txs types.Transactions
		var receipts types.Receipts
		for _, fb := range b.Flashblocks {
			first := len(txs)
			txs = append(txs, fb.Txs...)
			receipts = fb.Receipts
			// The flashblock's changes: its transactions', and the system
			// calls' at index 0.
			lo, hi := first+1, len(txs)+1
			if fb.Index == 0 {
				lo = 0
			}
			var msg []byte
			switch f {
			case Legacy:
				snap := &pending.Snapshot{
					Header: fb.Header, Index: uint64(fb.Index), PayloadID: id, NewTxs: len(fb.Txs),
					Txs: txs, Receipts: receipts, Diff: merge(changes[lo:hi]),
				}
				msg, err = flashblock.EncodeSnapshot(snap)
			case BaseV1:
				msg, err = baseV1(b, fb, id, prev, first, changes[lo:hi])
			default:
				err = fmt.Errorf("testchain: unknown format %d", f)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
			prev = fmt.Sprintf("%d-%d", b.NumberU64(), fb.Index)
		}
	}
	return out, nil
}

// payloadID names a block's build.
func payloadID(b *Block) [8]byte {
	var id [8]byte
	copy(id[:], crypto.Keccak256([]byte("payload"), b.ParentHash().Bytes(), b.Number().Bytes()))
	return id
}

// merge folds per-transaction changes into one diff (later values win).
func merge(cs []TxChanges) *pending.Diff {
	d := pending.NewDiff()
	for _, c := range cs {
		maps.Copy(d.Accounts, c.Diff.Accounts)
		maps.Copy(d.Codes, c.Diff.Codes)
		for a, m := range c.Diff.Storage {
			if d.Storage[a] == nil {
				d.Storage[a] = make(map[common.Hash]common.Hash)
			}
			maps.Copy(d.Storage[a], m)
		}
	}
	return d
}

type v1Metadata struct {
	BlockNumber      uint64      `json:"block_number"`
	PrevFlashblockID string      `json:"prev_flashblock_id,omitempty"`
	AccessList       *accessList `json:"access_list"`
}

func baseV1(b *Block, fb *Flashblock, id [8]byte, prev string, first int, cs []TxChanges) ([]byte, error) {
	h := fb.Header
	msg := &flashblock.Message{PayloadID: id, Index: uint64(fb.Index)}
	if fb.Index == 0 {
		msg.Base = &flashblock.Base{
			ParentBeaconBlockRoot: *h.ParentBeaconRoot, ParentHash: h.ParentHash, FeeRecipient: h.Coinbase, PrevRandao: h.MixDigest,
			BlockNumber: hexutil.Uint64(h.Number.Uint64()), GasLimit: hexutil.Uint64(h.GasLimit), Timestamp: hexutil.Uint64(h.Time),
			ExtraData: h.Extra, BaseFeePerGas: (*hexutil.Big)(h.BaseFee),
		}
	}
	blobGas := hexutil.Uint64(*h.BlobGasUsed)
	msg.Diff = flashblock.Diff{
		StateRoot: h.Root, ReceiptsRoot: h.ReceiptHash, LogsBloom: h.Bloom, GasUsed: hexutil.Uint64(h.GasUsed), BlockHash: h.Hash(),
		Withdrawals: []*types.Withdrawal{}, WithdrawalsRoot: *h.WithdrawalsHash, BlobGasUsed: &blobGas,
	}
	for _, tx := range fb.Txs {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return nil, err
		}
		msg.Diff.Transactions = append(msg.Diff.Transactions, raw)
	}
	lo := first
	if fb.Index == 0 {
		lo = 0
	}
	al, err := newAccessList(cs, uint64(lo), uint64(first+len(fb.Txs)))
	if err != nil {
		return nil, err
	}
	md, err := json.Marshal(v1Metadata{BlockNumber: b.NumberU64(), PrevFlashblockID: prev, AccessList: al})
	if err != nil {
		return nil, err
	}
	msg.Metadata = md
	return flashblock.Encode(msg)
}

// accessList is a flashblock access list as Base's builders serialize it:
// EIP-7928 account changes (camelCase, block access indexes as quantities:
// 0 for the system calls, i+1 for transaction i) and fal_hash, the keccak256
// of their RLP encoding. Reads are not recorded here (the replay hooks see
// writes only).
type accessList struct {
	AccountChanges []accountJSON `json:"account_changes"`
	MinTxIndex     uint64        `json:"min_tx_index"`
	MaxTxIndex     uint64        `json:"max_tx_index"`
	FalHash        common.Hash   `json:"fal_hash"`
}

type accountJSON struct {
	Address        common.Address `json:"address"`
	StorageChanges []slotJSON     `json:"storageChanges"`
	StorageReads   []hexutil.Big  `json:"storageReads"`
	BalanceChanges []balanceJSON  `json:"balanceChanges"`
	NonceChanges   []nonceJSON    `json:"nonceChanges"`
	CodeChanges    []codeJSON     `json:"codeChanges"`
}

type slotJSON struct {
	Slot    common.Hash `json:"slot"`
	Changes []valueJSON `json:"changes"`
}
type valueJSON struct {
	Index    hexutil.Uint64 `json:"blockAccessIndex"`
	NewValue common.Hash    `json:"newValue"`
}
type balanceJSON struct {
	Index       hexutil.Uint64 `json:"blockAccessIndex"`
	PostBalance *hexutil.Big   `json:"postBalance"`
}
type nonceJSON struct {
	Index    hexutil.Uint64 `json:"blockAccessIndex"`
	NewNonce uint64         `json:"newNonce"`
}
type codeJSON struct {
	Index   hexutil.Uint64 `json:"blockAccessIndex"`
	NewCode hexutil.Bytes  `json:"newCode"`
}

// The RLP shapes of EIP-7928's account changes (alloy-rs/eips eip7928).
type (
	rlpAccount struct {
		Address  common.Address
		Storage  []rlpSlot
		Reads    []*big.Int
		Balances []rlpValue
		Nonces   []rlpNonce
		Codes    []rlpCode
	}
	rlpSlot struct {
		Slot    common.Hash
		Changes []rlpValue
	}
	rlpValue struct {
		Index uint32
		Value *big.Int
	}
	rlpNonce struct {
		Index uint32
		Nonce uint64
	}
	rlpCode struct {
		Index uint32
		Code  []byte
	}
)

func newAccessList(cs []TxChanges, lo, hi uint64) (*accessList, error) {
	accts := map[common.Address]*accountJSON{}
	get := func(a common.Address) *accountJSON {
		if accts[a] == nil {
			accts[a] = &accountJSON{Address: a, StorageChanges: []slotJSON{}, StorageReads: []hexutil.Big{}, BalanceChanges: []balanceJSON{},
				NonceChanges: []nonceJSON{}, CodeChanges: []codeJSON{}}
		}
		return accts[a]
	}
	for _, c := range cs {
		idx := hexutil.Uint64(c.Tx + 1)
		for _, a := range sortedAddrs(c.Diff.Accounts) {
			post, prior := c.Diff.Accounts[a], c.Prior[a]
			if post == nil {
				continue
			}
			if prior == nil { // a new account: changes are against zero
				prior = &types.StateAccount{Balance: new(uint256.Int), CodeHash: types.EmptyCodeHash[:]}
			}
			j := get(a)
			if !post.Balance.Eq(prior.Balance) {
				j.BalanceChanges = append(j.BalanceChanges, balanceJSON{idx, (*hexutil.Big)(post.Balance.ToBig())})
			}
			if post.Nonce != prior.Nonce {
				j.NonceChanges = append(j.NonceChanges, nonceJSON{idx, post.Nonce})
			}
			if code, ok := c.Diff.Codes[common.BytesToHash(post.CodeHash)]; ok && !bytes.Equal(prior.CodeHash, post.CodeHash) {
				j.CodeChanges = append(j.CodeChanges, codeJSON{idx, code})
			}
		}
		for _, a := range sortedAddrs(c.Diff.Storage) {
			for _, k := range sortedHashes(c.Diff.Storage[a]) {
				if v := c.Diff.Storage[a][k]; v != c.PriorSlots[a][k] { // a write of the same value is a read
					j := get(a)
					j.StorageChanges = addSlot(j.StorageChanges, k, valueJSON{idx, v})
				}
			}
		}
	}
	al := &accessList{AccountChanges: []accountJSON{}, MinTxIndex: lo, MaxTxIndex: hi}
	var enc []rlpAccount
	for _, a := range sortedAddrs(accts) {
		j := accts[a]
		slices.SortFunc(j.StorageChanges, func(x, y slotJSON) int { return bytes.Compare(x.Slot[:], y.Slot[:]) })
		al.AccountChanges = append(al.AccountChanges, *j)
		enc = append(enc, j.rlp())
	}
	raw, err := rlp.EncodeToBytes(enc)
	if err != nil {
		return nil, err
	}
	al.FalHash = crypto.Keccak256Hash(raw)
	return al, nil
}

// rlp is the account's changes in EIP-7928's RLP shape.
func (j *accountJSON) rlp() rlpAccount {
	r := rlpAccount{Address: j.Address, Reads: []*big.Int{}}
	for _, s := range j.StorageChanges {
		slot := rlpSlot{Slot: s.Slot}
		for _, c := range s.Changes {
			slot.Changes = append(slot.Changes, rlpValue{uint32(c.Index), c.NewValue.Big()})
		}
		r.Storage = append(r.Storage, slot)
	}
	for _, c := range j.BalanceChanges {
		r.Balances = append(r.Balances, rlpValue{uint32(c.Index), c.PostBalance.ToInt()})
	}
	for _, c := range j.NonceChanges {
		r.Nonces = append(r.Nonces, rlpNonce{uint32(c.Index), c.NewNonce})
	}
	for _, c := range j.CodeChanges {
		r.Codes = append(r.Codes, rlpCode{uint32(c.Index), c.NewCode})
	}
	return r
}

func addSlot(s []slotJSON, k common.Hash, v valueJSON) []slotJSON {
	for i := range s {
		if s[i].Slot == k {
			s[i].Changes = append(s[i].Changes, v)
			return s
		}
	}
	return append(s, slotJSON{Slot: k, Changes: []valueJSON{v}})
}

func sortedAddrs[V any](m map[common.Address]V) []common.Address {
	return slices.SortedFunc(maps.Keys(m), func(x, y common.Address) int { return bytes.Compare(x[:], y[:]) })
}

func sortedHashes[V any](m map[common.Hash]V) []common.Hash {
	return slices.SortedFunc(maps.Keys(m), func(x, y common.Hash) int { return bytes.Compare(x[:], y[:]) })
}
