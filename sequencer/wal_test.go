package sequencer

import (
	"bytes"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

func TestWALTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.wal")
	w, recs, err := openWAL(path)
	if err != nil || len(recs) != 0 {
		t.Fatalf("open: %v %v", recs, err)
	}
	for i := 0; i < 3; i++ {
		if err := w.Append(&record{Kind: recFlashblock, Number: 7, Index: uint64(i), Entries: [][]byte{{byte(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	good, _ := os.Stat(path)
	// A torn append: a frame header promising more than is there.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{0, 0, 1, 0, 1, 2, 3, 4, 5, 6})
	f.Close()
	w, recs, err = openWAL(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[2].Index != 2 || recs[2].Entries[0][0] != 2 {
		t.Fatalf("records after torn tail: %+v", recs)
	}
	if st, _ := os.Stat(path); st.Size() != good.Size() {
		t.Errorf("torn tail not cut: size %d, want %d", st.Size(), good.Size())
	}
	// Appends continue after the cut.
	if err := w.Append(&record{Kind: recAdmit, Entries: [][]byte{{9}}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// A flipped byte in the second record: only the first survives.
	raw, _ := os.ReadFile(path)
	raw[len(raw)/3+10] ^= 0xff
	os.WriteFile(path, raw, 0o600)
	w, recs, err = openWAL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(recs) >= 4 {
		t.Fatalf("corrupt record accepted: %d records", len(recs))
	}
	// Rotation replaces the content atomically.
	if err := w.Rotate(func() []*record { return []*record{{Kind: recAdmit, Entries: [][]byte{{1}}}} }); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, recs, err = openWAL(path)
	if err != nil || len(recs) != 1 || recs[0].Kind != recAdmit {
		t.Fatalf("after rotate: %+v %v", recs, err)
	}
}

// TestWALReadsV1 reads testdata/v1.wal, written by the build before
// flashblock records were described as entries (record.Txs): every later
// build must read it the same, so that a datadir recovers after an upgrade.
func TestWALReadsV1(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "v1.wal"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.wal")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	w, recs, err := openWAL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	env := record{Kind: recFlashblock, Number: 5, Parent: common.Hash{0x11}, Time: 1700000000, Coinbase: common.Address{0x22},
		GasLimit: 30_000_000, Random: common.Hash{0x33}, BeaconRoot: common.Hash{0x44}, Extra: []byte("x")}
	fb0, fb1 := env, env
	fb0.Entries = [][]byte{{0x02, 0x01}, {0xf8, 0x01}}
	fb1.Index = 1
	want := []record{
		{Kind: recAdmit, Entries: [][]byte{{0x02, 0xaa, 0xbb}}},
		fb0, fb1,
		{Kind: recSeal, Number: 5, Parent: common.Hash{0x11}, Hash: common.Hash{0x55}},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i := range want {
		if got, want := fmt.Sprintf("%+v", recs[i]), fmt.Sprintf("%+v", want[i]); got != want {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// And written again, byte for byte the same.
	var again []byte
	for i := range recs {
		if again, err = frame(again, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(again, raw) {
		t.Error("records re-encode to other bytes than the v1 log")
	}
}

// TestRecoverPending stops the sequencer mid-block (as a crash would: the
// open block exists only in the WAL) and restarts it: the pending block comes
// back with the same transactions in the same order, the same flashblock
// index and state root, and is then sealed with them first. Gapped pool
// transactions survive too.
func TestRecoverPending(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, 30*time.Second) // no sealing during the test
	var sent []*types.Transaction
	for i := 0; i < 25; i++ {
		sent = append(sent, h.transfer(i%5, common.BigToAddress(big.NewInt(int64(500+i))), int64(i+1)))
		if i%7 == 0 {
			time.Sleep(3 * testInterval) // spread over several flashblocks
		}
	}
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(sent[len(sent)-1]) })
	// A gapped transaction waits in the pool.
	key := h.keys[7]
	from := crypto.PubkeyToAddress(key.PublicKey)
	gapped := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 1, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &common.Address{1}})
	if res, err := h.seq.Admit(gapped); err != nil || !res.Queued {
		t.Fatalf("gapped: %+v %v", res, err)
	}
	before := h.src.Current()
	head := h.chain.Head()
	h.stop()

	h2 := newHarness(t, dir, testBlockTime)
	defer h2.stop()
	after := h2.src.Current()
	if h2.chain.Head().Hash() != head.Hash() {
		t.Fatalf("head changed across restart: %v → %v", head.Number, h2.chain.Head().Number)
	}
	if after.Index < before.Index || after.Header.Number.Cmp(before.Header.Number) != 0 {
		t.Fatalf("resumed block %v index %d, was %v index %d", after.Header.Number, after.Index, before.Header.Number, before.Index)
	}
	if len(after.Txs) < len(before.Txs) {
		t.Fatalf("resumed %d txs, had %d", len(after.Txs), len(before.Txs))
	}
	for i, tx := range before.Txs {
		if after.Txs[i].Hash() != tx.Hash() {
			t.Fatalf("tx %d: %v after restart, was %v", i, after.Txs[i].Hash(), tx.Hash())
		}
	}
	if after.Index == before.Index && after.Header.Root != before.Header.Root {
		t.Errorf("state root %v after replay, was %v", after.Header.Root, before.Header.Root)
	}
	if !h2.seq.pool.Has(gapped.Hash()) {
		t.Fatal("gapped pool transaction lost across restart")
	}
	// Fill the gap: both execute; everything gets sealed in order.
	fill := h2.sign(key, &types.DynamicFeeTx{ChainID: h2.chain.Config().ChainID, Nonce: 0, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &common.Address{1}})
	if _, err := h2.seq.Admit(fill); err != nil {
		t.Fatal(err)
	}
	h2.waitFor("gapped tx sealed", func() bool { return h2.sealed(gapped) })
	b := h2.chain.BlockByNumber(before.Header.Number.Uint64())
	for i, tx := range before.Txs {
		if b.Transactions()[i].Hash() != tx.Hash() {
			t.Fatalf("sealed tx %d is %v, pre-confirmed was %v", i, b.Transactions()[i].Hash(), tx.Hash())
		}
	}
	st, _ := h2.chain.StateAt(h2.chain.Head())
	if st.GetNonce(from) != 2 {
		t.Errorf("nonce %d, want 2", st.GetNonce(from))
	}
}

// TestRecoverAfterRewind: a store that comes back one block short of the
// last flushed block (chain.Open's repair stops at that block; this is the
// WAL's margin) gets the block sealed again with the same hash: the WAL
// keeps its records through one rotation, and the pending block resumes on
// top of it. TestKillAroundFlush kills a real process instead.
func TestRecoverAfterRewind(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, testBlockTime)
	h.waitFor("block 1", func() bool { return h.chain.Head().Number.Uint64() >= 1 })
	var last *types.Transaction
	for i := 0; i < 20; i++ {
		last = h.transfer(i%3, common.BigToAddress(big.NewInt(int64(900+i))), 1)
	}
	h.waitFor("sealing", func() bool { return h.sealed(last) })
	h.stop()

	// Reopen the chain alone and rewind one block, as the repair would.
	h2 := newHarnessNoStart(t, dir)
	head := h2.chain.Head()
	if head.Number.Uint64() < 2 {
		t.Fatalf("head %d too low", head.Number)
	}
	if err := h2.chain.BlockChain().SetHead(head.Number.Uint64() - 1); err != nil {
		t.Fatal(err)
	}
	if h2.chain.Head().Number.Uint64() != head.Number.Uint64()-1 {
		t.Fatalf("rewind failed: head %d", h2.chain.Head().Number)
	}
	if err := h2.seq.Start(); err != nil {
		t.Fatal(err)
	}
	defer h2.stop()
	h2.waitFor("re-sealed head", func() bool { return h2.chain.Head().Number.Cmp(head.Number) >= 0 })
	if got := h2.chain.HeaderByNumber(head.Number.Uint64()); got.Hash() != head.Hash() {
		t.Fatalf("block %d re-sealed as %v, was %v", head.Number, got.Hash(), head.Hash())
	}
	if !h2.sealed(last) {
		t.Error("transaction of the rewound block missing")
	}
}
