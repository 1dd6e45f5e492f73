package sequencer

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethdb"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/txpool"
)

// TestAutomineLosesNothingUnsynced: automine writes (Admit, then automine,
// as eth_sendRawTransaction does), then a crash that loses everything the
// WAL was given after its last fsync, as a power cut can: the child cuts
// the log at its last synced byte, syncs the store (a kill leaves it what
// it was given: every mined block, the state of those not yet flushed only
// in memory) and kills itself. The restarted node must hold every
// transaction whose write returned, and every block a write returned after
// must keep its hash. It fails if a write answers before the record that
// holds its transaction and its block's seal is synced (one fsync per write:
// the final flashblock's, recFinalFlashblock).
func TestAutomineLosesNothingUnsynced(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		automineKillChild(t, dir, os.Getenv(killPointEnv))
		return
	}
	if testing.Short() {
		t.Skip("kills a child process")
	}
	// The writes' count decides where the crash falls among the disk work
	// left for later (a tick's flush and rotation, settleEvery).
	for _, writes := range []string{"1", "7", "70"} {
		t.Run(writes+" writes", func(t *testing.T) { killAndCheck(t, "TestAutomineLosesNothingUnsynced", writes) })
	}
}

// automineKillChild makes writes transfers under automine in dir, noting
// each returned write's transaction in dir/acked and the head it returned
// at in dir/mined, then cuts the WAL at its last fsync and kills itself.
func automineKillChild(t *testing.T, dir, writes string) {
	var n int
	if _, err := fmt.Sscan(writes, &n); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, dir, chain.DevGenesis(), Config{Mining: AutoMining}) // as killAndCheck reopens it
	if err := h.seq.Start(); err != nil {
		t.Fatal(err)
	}
	acked := appendFile(t, filepath.Join(dir, "acked"))
	mined := appendFile(t, filepath.Join(dir, "mined"))
	ctx := context.Background()
	to := common.BigToAddress(big.NewInt(0xdead))
	s := h.seq
	for i := 0; i < n; i++ {
		tx := h.transfer(i%3, to, 1) // Admit
		if err := s.Automine(ctx, txpool.Result{}); err != nil {
			t.Fatal(err)
		}
		acked(tx.Hash().Hex())
		head := h.chain.Head()
		mined(fmt.Sprintf("%d %s", head.Number, head.Hash().Hex()))
	}
	// As the next mine would run: after the last write's afterMine, with
	// the disk work it left pending.
	h.powerCut()
}

// powerCut, on the sequencer goroutine as a mine runs (no disk work
// first), loses what the WAL was given after its last fsync, keeps what
// the store was given (synced), and kills the process.
func (h *harness) powerCut() {
	s := h.seq
	err := s.send(context.Background(), command{mine: true, run: func() error {
		if err := s.wal.cutUnsynced(); err != nil {
			return err
		}
		if err := h.chain.BlockChain().TrieDB().Disk().(ethdb.KeyValueSyncer).SyncKeyValue(); err != nil {
			return err
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}})
	h.t.Fatalf("still alive: %v", err)
}

// cutUnsynced truncates the log at its last fsync: what a power cut leaves.
func (w *WAL) cutUnsynced() error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Truncate(w.syncedSize); err != nil {
		return err
	}
	return w.f.Sync()
}
