package sequencer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/ethdb"

	"github.com/preconf/preconf/chain"
)

// killChildEnv names the datadir of TestKillAroundFlush's child process,
// which builds the chain there and kills itself; killPointEnv names where.
const (
	killChildEnv = "PRECONF_KILL_CHILD_DIR"
	killPointEnv = "PRECONF_KILL_POINT"
)

// killPoints are the moments of rollover, after a block's seal, at which
// TestKillAroundFlush's child kills itself: each leaves the store as a
// kill -9 there does (every write the store was given is on disk).
var killPoints = []struct {
	name string
	// at runs rollover's steps after the seal of the block with state root
	// root, up to the kill.
	at func(s *Sequencer, c *chain.Chain, root common.Hash) error
}{
	// The window a mine series hits again and again: the head is the new
	// block, its state only in memory.
	{"after the seal", func(*Sequencer, *chain.Chain, common.Hash) error { return nil }},
	// Mid-Flush, the block's trie written but for its root (go-ethereum's
	// hash database writes a node after its children, in order).
	{"during the state commit", func(_ *Sequencer, c *chain.Chain, root common.Hash) error {
		if err := c.BlockChain().TrieDB().Commit(root, false); err != nil {
			return err
		}
		rawdb.DeleteLegacyTrieNode(c.BlockChain().TrieDB().Disk(), root)
		return nil
	}},
	// Mid-Flush, the state written, the state snapshot not capped.
	{"after the state commit", func(_ *Sequencer, c *chain.Chain, root common.Hash) error {
		return c.BlockChain().TrieDB().Commit(root, false)
	}},
	// Flushed; the WAL still holds the records of the block before.
	{"before the WAL rotation", func(s *Sequencer, _ *chain.Chain, root common.Hash) error {
		return s.chain.Flush(root)
	}},
}

// TestKillAroundFlush: under manual mining, a series of mined blocks, then
// SIGKILL after the next block was sealed (its WAL seal record written, the
// block the chain's head), at each step of its flush. The restarted node
// must hold every admitted transaction, and every sealed block must keep
// its hash.
//
// The child process seals with the sequencer's own steps and kills itself
// at that point, after syncing the store, so that what the store was given
// is on disk whatever the timing: before the chain's fix a kill before the
// state's root was on disk rewound the head to the snapshot's disk layer
// (the first block mined after the start), below what the WAL covers, and
// the transactions of every block in between were lost.
func TestKillAroundFlush(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(t, dir, os.Getenv(killPointEnv))
		return
	}
	if testing.Short() {
		t.Skip("kills a child process")
	}
	for _, p := range killPoints {
		t.Run(p.name, func(t *testing.T) { killAndCheck(t, "TestKillAroundFlush", p.name) })
	}
}

// killAndCheck runs test's child that kills itself at point, restarts the
// node on its datadir and checks what it acknowledged.
func killAndCheck(t *testing.T, test, point string) {
	dir, out := runKillChild(t, test, point)
	acked := readLines(t, filepath.Join(dir, "acked"))
	mined := readLines(t, filepath.Join(dir, "mined"))
	if len(acked) == 0 || len(mined) == 0 {
		t.Fatalf("child acknowledged %d transactions and %d blocks\n%s", len(acked), len(mined), out)
	}

	h := newManualHarness(t, dir, 0)
	defer h.stop()
	for i := 0; i < 3 && h.seq.pool.Len() > 0; i++ {
		if err := h.seq.Mine(context.Background(), MineOptions{Blocks: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range mined {
		var (
			num  uint64
			hash string
		)
		if _, err := fmt.Sscan(line, &num, &hash); err != nil {
			t.Fatalf("mined record %q: %v", line, err)
		}
		var now common.Hash
		if got := h.chain.HeaderByNumber(num); got != nil {
			now = got.Hash()
		}
		if now != common.HexToHash(hash) {
			t.Errorf("sealed block %d was %s, now %v (head %d)", num, hash, now, h.chain.Head().Number)
		}
	}
	lost := 0
	for _, line := range acked {
		if _, _, _, _, ok := h.chain.TxLookup(common.HexToHash(line)); !ok {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged transactions lost (head %d, %d left in the pool)", lost, len(acked), h.chain.Head().Number, h.seq.pool.Len())
	}
}

// runKillChild runs test's child in a new datadir, which kills itself at
// point, and returns the datadir and the child's output.
func runKillChild(t *testing.T, test, point string) (dir string, out []byte) {
	dir = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir, killPointEnv+"="+point)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	return dir, out
}

// killChild mines blocks of transfers in dir, then seals one more block as
// rollover does and kills the process at the kill point named point.
// Admitted transactions go to dir/acked and sealed blocks ("number hash")
// to dir/mined, each line written before the next step.
func killChild(t *testing.T, dir, point string) {
	var at func(*Sequencer, *chain.Chain, common.Hash) error
	for _, p := range killPoints {
		if p.name == point {
			at = p.at
		}
	}
	if at == nil {
		t.Fatalf("no kill point %q", point)
	}
	h := newManualHarness(t, dir, 0)
	acked := appendFile(t, filepath.Join(dir, "acked"))
	mined := appendFile(t, filepath.Join(dir, "mined"))
	ctx := context.Background()
	to := common.BigToAddress(big.NewInt(0xdead))
	for b := 0; b < 12; b++ {
		for i := 0; i < 3; i++ {
			acked(h.transfer(i, to, 1).Hash().Hex())
		}
		if err := h.seq.Mine(ctx, MineOptions{Blocks: 1}); err != nil {
			t.Fatal(err)
		}
		head := h.chain.Head()
		mined(fmt.Sprintf("%d %s", head.Number, head.Hash().Hex()))
	}
	for i := 0; i < 3; i++ {
		acked(h.transfer(i, to, 1).Hash().Hex())
	}
	s := h.seq
	err := s.do(ctx, func() error {
		// mineOne, with rollover stopped at the kill point.
		if err := s.freshen(); err != nil {
			return err
		}
		if err := s.flashblock(); err != nil {
			return err
		}
		root, err := s.seal(nil)
		if err != nil {
			return err
		}
		// Sealed: the head, which readers see.
		head := h.chain.Head()
		mined(fmt.Sprintf("%d %s", head.Number, head.Hash().Hex()))
		if err := s.openNext(nil); err != nil {
			return err
		}
		if err := s.firstFlashblock(); err != nil {
			return err
		}
		if err := at(s, h.chain, root); err != nil {
			return err
		}
		// Whatever the store was given is on disk, as it may be at a kill.
		if err := h.chain.BlockChain().TrieDB().Disk().(ethdb.KeyValueSyncer).SyncKeyValue(); err != nil {
			return err
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
	t.Fatalf("still alive: %v", err)
}

// appendFile returns a function that appends a line to path and syncs it.
func appendFile(t *testing.T, path string) func(string) {
	return func(line string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
