package flashblock

import (
	"bytes"
	"errors"
	"slices"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
)

// EncodeSnapshot writes snap as one flashblock message: payload_id, index, base (for
// index 0 only), diff (cumulative roots, gas and hash of the block so far,
// the flashblock's new transactions as EIP-2718 bytes) and metadata (block
// number, new balances of the accounts it touched, receipts of its new
// transactions keyed by hash). Keys come in the order Base's builders write
// them; addresses in lower-case hex, as theirs (no EIP-55 checksum).
func EncodeSnapshot(snap *pending.Snapshot) ([]byte, error) {
	h := snap.Header
	if h == nil || h.Number == nil {
		return nil, errors.New("flashblock without a block number")
	}
	n := min(max(snap.NewTxs, 0), len(snap.Txs))
	first := len(snap.Txs) - n
	newTxs := snap.Txs[first:]

	b := make([]byte, 0, 2048+len(newTxs)*512)
	b = append(b, `{"payload_id":`...)
	b = ethjson.AppendHexBytes(b, snap.PayloadID[:])
	b = append(b, `,"index":`...)
	b = strconv.AppendUint(b, snap.Index, 10)
	if snap.Index == 0 {
		b = append(b, `,"base":{"parent_beacon_block_root":`...)
		var beaconRoot common.Hash
		if h.ParentBeaconRoot != nil {
			beaconRoot = *h.ParentBeaconRoot
		}
		b = ethjson.AppendHexBytes(b, beaconRoot[:])
		b = append(b, `,"parent_hash":`...)
		b = ethjson.AppendHexBytes(b, h.ParentHash[:])
		b = append(b, `,"fee_recipient":`...)
		b = ethjson.AppendHexBytes(b, h.Coinbase[:])
		b = append(b, `,"prev_randao":`...)
		b = ethjson.AppendHexBytes(b, h.MixDigest[:])
		b = append(b, `,"block_number":`...)
		b = ethjson.AppendBig(b, h.Number)
		b = append(b, `,"gas_limit":`...)
		b = ethjson.AppendU64(b, h.GasLimit)
		b = append(b, `,"timestamp":`...)
		b = ethjson.AppendU64(b, h.Time)
		b = append(b, `,"extra_data":`...)
		b = ethjson.AppendHexBytes(b, h.Extra)
		b = append(b, `,"base_fee_per_gas":`...)
		if h.BaseFee == nil { // a chain before London
			b = append(b, `"0x0"`...)
		} else {
			b = ethjson.AppendBig(b, h.BaseFee)
		}
		b = append(b, '}')
	}
	b = append(b, `,"diff":{"state_root":`...)
	b = ethjson.AppendHexBytes(b, h.Root[:])
	b = append(b, `,"receipts_root":`...)
	b = ethjson.AppendHexBytes(b, h.ReceiptHash[:])
	b = append(b, `,"logs_bloom":`...)
	b = ethjson.AppendHexBytes(b, h.Bloom[:])
	b = append(b, `,"gas_used":`...)
	b = ethjson.AppendU64(b, h.GasUsed)
	b = append(b, `,"block_hash":`...)
	hash := h.Hash()
	b = ethjson.AppendHexBytes(b, hash[:])
	b = append(b, `,"transactions":[`...)
	for i, tx := range newTxs {
		if i > 0 {
			b = append(b, ',')
		}
		raw, err := tx.MarshalBinary()
		if err != nil {
			return nil, err
		}
		b = ethjson.AppendHexBytes(b, raw)
	}
	b = append(b, `],"withdrawals":[`...)
	if snap.Index == 0 {
		for i, w := range snap.Withdrawals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = ethjson.AppendU64(b, w.Index)
			b = append(b, `,"validatorIndex":`...)
			b = ethjson.AppendU64(b, w.Validator)
			b = append(b, `,"address":`...)
			b = ethjson.AppendHexBytes(b, w.Address[:])
			b = append(b, `,"amount":`...)
			b = ethjson.AppendU64(b, w.Amount)
			b = append(b, '}')
		}
	}
	b = append(b, `],"withdrawals_root":`...)
	wroot := types.EmptyWithdrawalsHash
	if h.WithdrawalsHash != nil {
		wroot = *h.WithdrawalsHash
	}
	b = ethjson.AppendHexBytes(b, wroot[:])
	if h.BlobGasUsed != nil {
		b = append(b, `,"blob_gas_used":`...)
		b = ethjson.AppendU64(b, *h.BlobGasUsed)
	}
	b = append(b, `},"metadata":{"block_number":`...)
	b = h.Number.Append(b, 10)
	b = append(b, `,"new_account_balances":{`...)
	b = appendBalances(b, snap.Diff)
	b = append(b, `},"receipts":{`...)
	if len(snap.Receipts) == len(snap.Txs) {
		b = appendReceipts(b, newTxs, snap.Receipts[first:])
	}
	b = append(b, "}}}"...)
	return b, nil
}

// appendBalances writes the touched accounts' balances, sorted by address
// (a removed account has balance zero).
func appendBalances(b []byte, d *pending.Diff) []byte {
	if d == nil {
		return b
	}
	addrs := make([]common.Address, 0, len(d.Accounts))
	for a := range d.Accounts {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(x, y common.Address) int { return bytes.Compare(x[:], y[:]) })
	for i, a := range addrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = ethjson.AppendHexBytes(b, a[:])
		b = append(b, ':')
		if acct := d.Accounts[a]; acct != nil && acct.Balance != nil {
			b = ethjson.AppendBig(b, acct.Balance.ToBig())
		} else {
			b = append(b, `"0x0"`...)
		}
	}
	return b
}

// appendReceipts writes consensus receipts keyed by transaction hash,
// internally tagged: type, status, cumulativeGasUsed, logs (address, topics,
// data), and for deposits depositNonce and depositReceiptVersion; sorted by
// hash.
func appendReceipts(b []byte, txs types.Transactions, receipts types.Receipts) []byte {
	order := make([]int, len(txs))
	for i := range order {
		order[i] = i
	}
	hashes := make([]common.Hash, len(txs))
	for i, tx := range txs {
		hashes[i] = tx.Hash()
	}
	slices.SortFunc(order, func(x, y int) int { return bytes.Compare(hashes[x][:], hashes[y][:]) })
	for k, i := range order {
		r := receipts[i]
		if k > 0 {
			b = append(b, ',')
		}
		b = ethjson.AppendHexBytes(b, hashes[i][:])
		b = append(b, `:{"type":`...)
		b = ethjson.AppendU64(b, uint64(txs[i].Type()))
		b = append(b, `,"status":`...)
		b = ethjson.AppendU64(b, r.Status)
		b = append(b, `,"cumulativeGasUsed":`...)
		b = ethjson.AppendU64(b, r.CumulativeGasUsed)
		b = append(b, `,"logs":[`...)
		for j, l := range r.Logs {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"address":`...)
			b = ethjson.AppendHexBytes(b, l.Address[:])
			b = append(b, `,"topics":[`...)
			for t, topic := range l.Topics {
				if t > 0 {
					b = append(b, ',')
				}
				b = ethjson.AppendHexBytes(b, topic[:])
			}
			b = append(b, `],"data":`...)
			b = ethjson.AppendHexBytes(b, l.Data)
			b = append(b, '}')
		}
		b = append(b, ']')
		// An OP-stack deposit's receipt: the nonce it ran with, and its
		// version from Canyon on (op-alloy's OpDepositReceipt).
		if r.DepositNonce != nil {
			b = append(b, `,"depositNonce":`...)
			b = ethjson.AppendU64(b, *r.DepositNonce)
		}
		if r.DepositReceiptVersion != nil {
			b = append(b, `,"depositReceiptVersion":`...)
			b = ethjson.AppendU64(b, *r.DepositReceiptVersion)
		}
		b = append(b, '}')
	}
	return b
}
