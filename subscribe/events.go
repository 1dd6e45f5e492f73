package subscribe

import (
	"encoding/json"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
)

// onHead sends a sealed header to newHeads (go-ethereum's header JSON).
func (s *Service) onHead(h *types.Header) {
	if h == nil || !s.has(kindNewHeads) {
		return
	}
	enc, err := json.Marshal(h)
	if err != nil {
		s.log.Error("encode header", "err", err)
		return
	}
	s.each(kindNewHeads, func(sb *subscriber) { sb.sub.Notify(enc) })
}

// onLogs sends sealed (or, on a reorg, removed) logs to matching logs
// subscriptions, one log per notification as go-ethereum does.
func (s *Service) onLogs(logs []*types.Log) {
	if len(logs) == 0 || !s.has(kindLogs) {
		return
	}
	for _, l := range logs {
		var enc []byte
		s.each(kindLogs, func(sb *subscriber) {
			if !sb.filter.Matches(l) {
				return
			}
			if enc == nil {
				var err error
				if enc, err = json.Marshal(l); err != nil {
					s.log.Error("encode log", "err", err)
					return
				}
			}
			sb.sub.Notify(enc)
		})
	}
}

// flashblock is one snapshot as the subscriptions see it: the transactions
// it added, their receipts, and where they sit in the pending block.
type flashblock struct {
	snap     *pending.Snapshot
	hash     common.Hash // the pending block's hash so far
	first    int         // index in the block of the first new transaction
	txs      types.Transactions
	receipts types.Receipts
}

func newFlashblock(snap *pending.Snapshot) *flashblock {
	n := min(max(snap.NewTxs, 0), len(snap.Txs))
	fb := &flashblock{snap: snap, hash: snap.Header.Hash(), first: len(snap.Txs) - n, txs: snap.Txs[len(snap.Txs)-n:]}
	if len(snap.Receipts) == len(snap.Txs) {
		fb.receipts = snap.Receipts[fb.first:]
	}
	return fb
}

func (fb *flashblock) receipt(i int) *types.Receipt {
	if i < len(fb.receipts) {
		return fb.receipts[i]
	}
	return nil
}

// onSnapshot sends one published flashblock to the pending kinds.
func (s *Service) onSnapshot(snap *pending.Snapshot) {
	if snap.Header == nil {
		return
	}
	fb := newFlashblock(snap)
	if s.has(kindFlashblocks) {
		// Base's newFlashblocks: the pending block so far, transactions hydrated.
		enc := ethjson.AppendBlock(nil, snap.Block(), fb.hash, ethjson.BlockOptions{FullTx: true, Receipts: snap.Receipts}, s.signer)
		s.each(kindFlashblocks, func(sb *subscriber) { sb.sub.Notify(enc) })
	}
	if len(fb.txs) == 0 {
		return
	}
	if s.has(kindPendingTxs) {
		s.pendingTxs(fb)
	}
	if s.has(kindFlashblockTxs) {
		s.flashblockTxs(fb)
	}
	if s.has(kindPendingLogs) {
		s.pendingLogs(fb)
	}
}

// pendingTxs: newPendingTransactions, one hash (or pool-style transaction
// object, location null) per notification. Here a transaction is pending
// from the flashblock that pre-confirms it.
func (s *Service) pendingTxs(fb *flashblock) {
	baseFee := fb.snap.Header.BaseFee
	for _, tx := range fb.txs {
		var hashEnc, fullEnc []byte
		s.each(kindPendingTxs, func(sb *subscriber) {
			if sb.full {
				if fullEnc == nil {
					fullEnc = ethjson.AppendTx(nil, tx, ethjson.Loc{BaseFee: baseFee}, s.signer)
				}
				sb.sub.Notify(fullEnc)
				return
			}
			if hashEnc == nil {
				hashEnc = quoteHash(tx.Hash())
			}
			sb.sub.Notify(hashEnc)
		})
	}
}

// flashblockTxs: Base's newFlashblockTransactions, one item per
// notification: the hash, or the transaction object with its receipt fields
// and logs (all transactions, or those with a log matching the filter).
func (s *Service) flashblockTxs(fb *flashblock) {
	for i, tx := range fb.txs {
		r := fb.receipt(i)
		var hashEnc, fullEnc []byte
		s.each(kindFlashblockTxs, func(sb *subscriber) {
			if !sb.full {
				if hashEnc == nil {
					hashEnc = quoteHash(tx.Hash())
				}
				sb.sub.Notify(hashEnc)
				return
			}
			if sb.filter != nil && !anyLogMatches(sb.filter, r) {
				return
			}
			if fullEnc == nil {
				fullEnc = s.txWithLogs(fb, fb.first+i, tx, r)
			}
			sb.sub.Notify(fullEnc)
		})
	}
}

func anyLogMatches(f *ethjson.LogFilter, r *types.Receipt) bool {
	if r == nil {
		return false
	}
	for _, l := range r.Logs {
		if f.Matches(l) {
			return true
		}
	}
	return false
}

// txWithLogs is Base's TransactionWithLogs: the transaction object located in
// the pending block, then logs, gasUsed, status (or root), cumulativeGasUsed,
// contractAddress and logsBloom from its receipt.
func (s *Service) txWithLogs(fb *flashblock, index int, tx *types.Transaction, r *types.Receipt) []byte {
	h := fb.snap.Header
	b := ethjson.AppendTx(nil, tx, ethjson.Loc{BlockHash: fb.hash, Number: h.Number.Uint64(), Time: h.Time, Index: uint64(index), BaseFee: h.BaseFee, Receipt: r}, s.signer)
	b = b[:len(b)-1] // reopen the object
	b = append(b, `,"logs":`...)
	if r == nil {
		b = append(b, `[]}`...)
		return b
	}
	b = ethjson.AppendLogs(b, r.Logs, fb.hash, h.Time)
	b = append(b, `,"gasUsed":`...)
	b = ethjson.AppendU64(b, r.GasUsed)
	if len(r.PostState) > 0 {
		b = append(b, `,"root":`...)
		b = ethjson.AppendHexBytes(b, r.PostState)
	} else {
		b = append(b, `,"status":`...)
		b = ethjson.AppendU64(b, r.Status)
	}
	b = append(b, `,"cumulativeGasUsed":`...)
	b = ethjson.AppendU64(b, r.CumulativeGasUsed)
	b = append(b, `,"contractAddress":`...)
	if r.ContractAddress != (common.Address{}) {
		b = ethjson.AppendHexBytes(b, r.ContractAddress[:])
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"logsBloom":`...)
	b = ethjson.AppendHexBytes(b, r.Bloom[:])
	return append(b, '}')
}

// pendingLogs: Base's pendingLogs, the logs of the flashblock's new
// transactions matching the filter, one per notification, stamped with the
// pending block's number, hash and time.
func (s *Service) pendingLogs(fb *flashblock) {
	h := fb.snap.Header
	for i := range fb.txs {
		r := fb.receipt(i)
		if r == nil {
			continue
		}
		for _, l := range r.Logs {
			var enc []byte
			s.each(kindPendingLogs, func(sb *subscriber) {
				if !sb.filter.Matches(l) {
					return
				}
				if enc == nil {
					enc = ethjson.AppendLog(nil, l, fb.hash, h.Time)
				}
				sb.sub.Notify(enc)
			})
		}
	}
}

func quoteHash(h common.Hash) []byte { return ethjson.AppendHexBytes(nil, h[:]) }
