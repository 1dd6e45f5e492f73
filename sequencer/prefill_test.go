package sequencer

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// TestPrefill drives the ticks of an OP-stack block by hand: the boundary
// publishes the deposit alone and executes the pool's transactions
// unpublished, which stay in the pool; flashblock 1 (or a command before
// it, beforeCommand) publishes them, each once and in order, with what
// arrived meanwhile, including a held sender's next nonce.
func TestPrefill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		publish func(*harness) error // publishes the held transactions and the new ones
	}{
		{"flashblock 1", func(h *harness) error { return h.seq.tick() }},
		{"command first", func(h *harness) error {
			if err := h.seq.beforeCommand(); err != nil {
				return err
			}
			return h.seq.tick()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, "", nil, Config{Interval: testInterval, BlockTime: testBlockTime})
			defer h.chain.Close()
			s := h.seq
			held := []*types.Transaction{h.transfer(0, common.Address{0x01}, 1), h.transfer(1, common.Address{0x02}, 2), h.transfer(0, common.Address{0x03}, 3)}
			if err := s.tick(); err != nil { // the boundary: opens the block
				t.Fatal(err)
			}
			snap := h.src.Current()
			if snap.Index != 0 || len(snap.Block().Transactions()) != 1 || snap.Block().Transactions()[0].Type() != types.DepositTxType {
				t.Fatalf("flashblock %d holds %d transactions, want 0 with the deposit alone", snap.Index, len(snap.Block().Transactions()))
			}
			if got := len(s.blk.Txs); got != 1+len(held) {
				t.Fatalf("open block executed %d transactions, want the deposit and %d held", got, len(held))
			}
			for _, tx := range held {
				if h.preconfirmed(tx) || !s.pool.Has(tx.Hash()) {
					t.Errorf("held %v: pre-confirmed %v, pooled %v; want unpublished and pooled", tx.Hash(), h.preconfirmed(tx), s.pool.Has(tx.Hash()))
				}
			}
			// Candidates skip the held transactions, not the sender's next.
			next := h.transfer(0, common.Address{0x04}, 4)
			fresh := h.transfer(2, common.Address{0x05}, 5)
			if runs := s.candidates(s.blk); len(runs) != 2 {
				t.Errorf("%d candidate runs, want 2 (sender 0's next, sender 2's)", len(runs))
			} else {
				for _, run := range runs {
					if len(run) != 1 || (run[0].Tx.Hash() != next.Hash() && run[0].Tx.Hash() != fresh.Hash()) {
						t.Errorf("candidate run %v, want only the transactions sent after the prefill", run[0].Tx.Hash())
					}
				}
			}
			for _, tx := range held {
				if !s.pool.Has(tx.Hash()) {
					t.Errorf("held %v left the pool before it was published", tx.Hash())
				}
			}
			if err := tc.publish(h); err != nil {
				t.Fatal(err)
			}
			want := append(held, next, fresh)
			got := h.src.Current().Block().Transactions()
			if len(got) != 1+len(want) {
				t.Fatalf("pending block holds %d transactions, want %d", len(got), 1+len(want))
			}
			for i, tx := range want[:len(held)] {
				if got[1+i].Hash() != tx.Hash() {
					t.Errorf("pending transaction %d is %v, want held %v", 1+i, got[1+i].Hash(), tx.Hash())
				}
			}
			for _, tx := range want {
				if !h.preconfirmed(tx) || s.pool.Has(tx.Hash()) {
					t.Errorf("%v: pre-confirmed %v, pooled %v; want published and out of the pool", tx.Hash(), h.preconfirmed(tx), s.pool.Has(tx.Hash()))
				}
			}
			if len(s.blk.held) != 0 {
				t.Errorf("%d senders still held", len(s.blk.held))
			}
		})
	}
}

// TestSingleFlashblockBlocks: with the block time equal to the flashblock
// interval an OP-stack block has one flashblock, which takes the pool's
// transactions with the deposit (held alone, no block would ever hold one).
func TestSingleFlashblockBlocks(t *testing.T) {
	h := newHarnessStarted(t, newHarnessWith(t, "", nil, Config{Interval: testInterval, BlockTime: testInterval}))
	defer h.stop()
	tx := h.transfer(0, common.Address{0x01}, 1)
	h.waitFor("sealing", func() bool { return h.sealed(tx) })
	_, bh, _, idx, _ := h.chain.TxLookup(tx.Hash())
	if b := h.chain.BlockByHash(bh); idx != 1 || b.Transactions()[0].Type() != types.DepositTxType {
		t.Errorf("transfer at index %d of a block opening with type %d, want 1 after the deposit", idx, b.Transactions()[0].Type())
	}
	if got := h.chain.Receipts(h.chain.BlockByHash(bh))[idx].Status; got != types.ReceiptStatusSuccessful {
		t.Errorf("status %d", got)
	}
}

// TestManualPreconfirmOPStack: under manual mining a pre-confirmation that
// re-opens an OP-stack block publishes its flashblock 0 (the deposit alone)
// and, at once, flashblock 1 with the transactions ready, not an interval
// later.
func TestManualPreconfirmOPStack(t *testing.T) {
	h := newHarnessWith(t, "", nil, Config{Mining: ManualMining, Interval: testInterval})
	defer h.chain.Close()
	s := h.seq
	if err := s.openNext(nil); err != nil { // as Start does
		t.Fatal(err)
	}
	if err := s.firstFlashblock(); err != nil {
		t.Fatal(err)
	}
	s.set.clock.offset += 100 // the open block is older than now: the pre-confirmation re-opens it
	tx := h.transfer(0, common.Address{0x01}, 1)
	if err := s.preconfirm(); err != nil {
		t.Fatal(err)
	}
	snap := h.src.Current()
	if !h.preconfirmed(tx) || snap.Index != 1 || snap.Block().Transactions()[0].Type() != types.DepositTxType {
		t.Errorf("after one pre-confirmation: transfer pre-confirmed %v in flashblock %d; want it in flashblock 1 after the deposit", h.preconfirmed(tx), snap.Index)
	}
}
