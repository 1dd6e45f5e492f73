package chain

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/conformance"
)

// fixtures returns the execution-apis directory, skipping (failing under CI)
// when it is absent.
func fixtures(t *testing.T) string {
	t.Helper()
	return conformance.Fixtures(t)
}

const wantHead = "0xd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7"

func TestImportExecutionAPIsChain(t *testing.T) {
	dir := fixtures(t)
	g, err := LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	c, err := Open(Config{Dir: datadir, Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ImportFile(filepath.Join(dir, "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 54 || res.Skipped != 0 {
		t.Fatalf("first import: %+v, want 54 imported", res)
	}
	if got := c.Head().Hash().Hex(); got != wantHead {
		t.Fatalf("head %s, want %s", got, wantHead)
	}
	if c.Safe() == nil || c.Safe().Hash() != c.Head().Hash() || c.Finalized() == nil || c.Finalized().Hash() != c.Head().Hash() {
		t.Fatal("after import the head must be safe and finalized")
	}
	// Every transaction is indexed at once.
	for n := uint64(1); n <= c.Head().Number.Uint64(); n++ {
		for i, tx := range c.BlockByNumber(n).Transactions() {
			_, bh, num, idx, ok := c.TxLookup(tx.Hash())
			if !ok || num != n || idx != uint64(i) || bh != c.BlockByNumber(n).Hash() {
				t.Fatalf("lookup of tx %s in block %d: ok=%v num=%d idx=%d", tx.Hash(), n, ok, num, idx)
			}
		}
	}
	// Importing again skips every block.
	res, err = c.ImportFile(filepath.Join(dir, "chain.rlp"))
	if err != nil || res.Imported != 0 || res.Skipped != 54 {
		t.Fatalf("second import: %+v %v, want 54 skipped", res, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen: same head, same safe/finalized, state readable at old blocks.
	c, err = Open(Config{Dir: datadir, Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Head().Hash().Hex(); got != wantHead {
		t.Fatalf("reopened head %s", got)
	}
	if c.Finalized() == nil || c.Finalized().Hash().Hex() != wantHead {
		t.Fatal("finalized marker lost on restart")
	}
	for _, n := range []uint64{0, 1, 20, 54} {
		h := c.HeaderByNumber(n)
		r, err := c.StateReader(h.Root)
		if err != nil {
			t.Fatalf("state at %d: %v", n, err)
		}
		if _, err := r.Account(common.Address{}); err != nil {
			t.Fatalf("read at %d: %v", n, err)
		}
	}
}

func TestOpenRejectsOtherGenesis(t *testing.T) {
	l2, err := DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	l2Hash := l2.ToBlock().Hash()
	other := DevGenesis()
	other.ExtraData = []byte("other")
	open := func(dir string, g *core.Genesis) (common.Hash, error) {
		c, err := Open(Config{Dir: dir, Genesis: g})
		if err != nil {
			return common.Hash{}, err
		}
		defer c.Close()
		return c.Genesis().Hash(), nil
	}

	// A new datadir gets the OP-stack dev chain; reopened without a
	// genesis, the stored one is used; another is refused.
	l2Dir := t.TempDir()
	if h, err := open(l2Dir, nil); err != nil || h != l2Hash {
		t.Fatalf("default genesis %v (%v), want the OP-stack dev chain's %v", h, err, l2Hash)
	}
	if h, err := open(l2Dir, nil); err != nil || h != l2Hash {
		t.Fatalf("reopened: %v (%v)", h, err)
	}
	if _, err := open(l2Dir, other); !errors.Is(err, ErrGenesisMismatch) {
		t.Fatalf("other genesis: want ErrGenesisMismatch, got %v", err)
	}
	if _, err := open(l2Dir, DevGenesis()); !errors.Is(err, ErrGenesisMismatch) || !strings.Contains(err.Error(), "without --l1") {
		t.Fatalf("--l1 on the OP-stack dev chain: %v", err)
	}

	// A datadir of the plain-Ethereum dev chain (the old default) opens
	// when asked for by name, and is refused with a pointer to --l1
	// otherwise.
	l1Dir := t.TempDir()
	l1Hash := DevGenesis().ToBlock().Hash()
	if h, err := open(l1Dir, DevGenesis()); err != nil || h != l1Hash {
		t.Fatalf("l1 genesis %v (%v)", h, err)
	}
	if _, err := open(l1Dir, nil); !errors.Is(err, ErrGenesisMismatch) || !strings.Contains(err.Error(), "--l1") {
		t.Fatalf("old default without --l1: %v", err)
	}
	if h, err := open(l1Dir, DevGenesis()); err != nil || h != l1Hash {
		t.Fatalf("l1 genesis reopened %v (%v)", h, err)
	}

	// Any other stored genesis is reused without naming it again.
	otherDir := t.TempDir()
	want, err := open(otherDir, other)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := open(otherDir, nil); err != nil || h != want {
		t.Fatalf("custom genesis reopened %v (%v), want %v", h, err, want)
	}
}

func TestImportRejectsCorruptInput(t *testing.T) {
	dir := fixtures(t)
	raw, err := os.ReadFile(filepath.Join(dir, "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"garbage", []byte("this is not rlp at all"), "decode block"},
		{"truncated", raw[:len(raw)/2], "decode block"},
		{"flipped byte", flip(raw, 200), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Open(Config{Genesis: g})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Import(bytes.NewReader(tt.data))
			if err == nil {
				t.Fatal("corrupt input imported without error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0xff
	return out
}

func TestDevGenesis(t *testing.T) {
	g := DevGenesis()
	if g.Config.ChainID.Uint64() != DevChainID {
		t.Fatalf("chain id %d", g.Config.ChainID)
	}
	if err := g.Config.CheckConfigForkOrder(); err != nil {
		t.Fatal(err)
	}
	if !g.Config.IsOsaka(common.Big0, 0) || !g.Config.IsPrague(common.Big0, 0) {
		t.Fatal("Prague and Osaka must be active at genesis")
	}
	// The first dev account is the well-known one of the test mnemonic.
	if got := DevAccounts()[0].Hex(); got != "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" {
		t.Fatalf("dev account 0 = %s", got)
	}
	for i, k := range DevKeys {
		key, _ := crypto.HexToECDSA(k)
		a := crypto.PubkeyToAddress(key.PublicKey)
		if acct, ok := g.Alloc[a]; !ok || acct.Balance.String() != "10000000000000000000000" {
			t.Fatalf("dev account %d not funded with 10000 ETH", i)
		}
	}
}

// TestSafeFinalizedDefaultGenesis: a chain nobody marked answers genesis for
// safe and finalized (never "not found"); a mark replaces it.
func TestSafeFinalizedDefaultGenesis(t *testing.T) {
	c, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	genesis := c.Genesis().Hash()
	if s, f := c.Safe(), c.Finalized(); s == nil || f == nil || s.Hash() != genesis || f.Hash() != genesis {
		t.Fatalf("fresh chain: safe %v finalized %v, want genesis %v", s, f, genesis)
	}
	c.SetSafe(c.Head())
	if c.Safe().Hash() != c.Head().Hash() {
		t.Error("SetSafe not reflected")
	}
}
