package sequencer

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/txpool"
)

// TestRevertSurvivesCrash: under automine, writes, evm_snapshot, more
// writes, evm_revert, then (by case) more writes, and a crash that loses
// everything the WAL was given after its last fsync while the store keeps
// what it was given (the child cuts the log, syncs the store and kills
// itself). A revert's one fsync is its rewind record: the store's rewind
// is synced and the WAL rotated later, and the empty block opened after it
// is logged without an fsync. The restarted node must be at the state the
// revert returned to plus the writes acknowledged after it: every block a
// write returned after keeps its hash, every transaction acknowledged is
// in the chain, none of the reverted ones is, and the reverted snapshot is
// gone.
func TestRevertSurvivesCrash(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		revertKillChild(t, dir, os.Getenv(killPointEnv))
		return
	}
	if testing.Short() {
		t.Skip("kills a child process")
	}
	for _, after := range []string{"0", "1", "3"} {
		t.Run(after+" writes after the revert", func(t *testing.T) { revertKillAndCheck(t, after) })
	}
}

// revertKillChild writes, snapshots, writes, reverts and writes after
// more times in dir, noting the snapshot's id and block ("id number hash")
// in dir/snapshot, the reverted writes' transactions in dir/reverted, the
// others in dir/acked and the heads writes returned at in dir/mined, then
// cuts the WAL at its last fsync and kills itself.
func revertKillChild(t *testing.T, dir, after string) {
	var n int
	if _, err := fmt.Sscan(after, &n); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, dir, chain.DevGenesis(), Config{Mining: AutoMining})
	if err := h.seq.Start(); err != nil {
		t.Fatal(err)
	}
	acked := appendFile(t, filepath.Join(dir, "acked"))
	mined := appendFile(t, filepath.Join(dir, "mined"))
	reverted := appendFile(t, filepath.Join(dir, "reverted"))
	ctx := context.Background()
	s := h.seq
	to := common.BigToAddress(big.NewInt(0xdead))
	write := func(note func(string)) {
		tx := h.transfer(0, to, 1) // Admit
		if err := s.Automine(ctx, txpool.Result{}); err != nil {
			t.Fatal(err)
		}
		note(tx.Hash().Hex())
		head := h.chain.Head()
		mined(fmt.Sprintf("%d %s", head.Number, head.Hash().Hex()))
	}
	for range 3 {
		write(acked)
	}
	id, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := h.chain.Head()
	appendFile(t, filepath.Join(dir, "snapshot"))(fmt.Sprintf("%d %d %s", id, head.Number, head.Hash().Hex()))
	from := crypto.PubkeyToAddress(h.keys[0].PublicKey)
	nonce := h.nonce[from]
	for range 2 {
		tx := h.transfer(0, to, 7) // differs from the writes after the revert, same nonces
		if err := s.Automine(ctx, txpool.Result{}); err != nil {
			t.Fatal(err)
		}
		reverted(tx.Hash().Hex())
	}
	if ok, err := s.Revert(ctx, id); !ok || err != nil {
		t.Fatalf("revert: %v %v", ok, err)
	}
	h.nonce[from] = nonce
	mined(fmt.Sprintf("%d %s", head.Number, head.Hash().Hex()))
	for range n {
		write(acked)
	}
	h.powerCut()
}

// revertKillAndCheck runs the child, restarts the node on its datadir and
// checks the state the revert returned to and what was acknowledged since.
func revertKillAndCheck(t *testing.T, after string) {
	dir, out := runKillChild(t, "TestRevertSurvivesCrash", after)
	snap := readLines(t, filepath.Join(dir, "snapshot"))
	mined := readLines(t, filepath.Join(dir, "mined"))
	if len(snap) != 1 || len(mined) == 0 {
		t.Fatalf("child noted %d snapshots and %d heads\n%s", len(snap), len(mined), out)
	}
	var (
		id, target uint64
		hash       string
	)
	if _, err := fmt.Sscan(snap[0], &id, &target, &hash); err != nil {
		t.Fatal(err)
	}

	h := newManualHarness(t, dir, 0)
	defer h.stop()
	var last uint64
	for _, line := range mined[len(mined)-1:] {
		if _, err := fmt.Sscan(line, &last); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.chain.Head().Number.Uint64(); got != last {
		t.Errorf("head %d after the restart, want %d (the revert's target %d and the writes after it)", got, last, target)
	}
	for _, line := range mined {
		var (
			num uint64
			was string
		)
		if _, err := fmt.Sscan(line, &num, &was); err != nil {
			t.Fatal(err)
		}
		if got := h.chain.HeaderByNumber(num); got == nil || got.Hash() != common.HexToHash(was) {
			t.Errorf("block %d was %s when acknowledged, now %v", num, was, got)
		}
	}
	for _, line := range readLines(t, filepath.Join(dir, "acked")) {
		if _, _, _, _, ok := h.chain.TxLookup(common.HexToHash(line)); !ok {
			t.Errorf("acknowledged transaction %s lost", line)
		}
	}
	for _, line := range readLines(t, filepath.Join(dir, "reverted")) {
		if _, _, _, _, ok := h.chain.TxLookup(common.HexToHash(line)); ok {
			t.Errorf("reverted transaction %s is in the chain again", line)
		}
		if h.seq.pool.Get(common.HexToHash(line)) != nil {
			t.Errorf("reverted transaction %s is pooled again", line)
		}
	}
	if ok, err := h.seq.Revert(context.Background(), id); ok || err != nil {
		t.Errorf("the reverted snapshot %d is live again: %v %v", id, ok, err)
	}
}
