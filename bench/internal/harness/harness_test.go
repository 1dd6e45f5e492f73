package harness

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/preconf/preconf/chain"
)

func TestRotate(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	for round, want := range []string{"a b c", "b c a", "c a b", "a b c"} {
		if got := strings.Join(Rotate(nodes, round), " "); got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
}

// The shared genesis must load in preconf exactly as written, with the
// contract and its storage.
func TestGenesisLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "genesis.json")
	if err := WriteGenesis(path); err != nil {
		t.Fatal(err)
	}
	g, err := chain.LoadGenesis(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Config.ChainID.Uint64() != chain.DevChainID {
		t.Fatalf("chain id %v", g.Config.ChainID)
	}
	acct, ok := g.Alloc[ContractAddr]
	if !ok || len(acct.Code) == 0 || len(acct.Storage) != StorageSlots {
		t.Fatalf("contract missing or incomplete: %+v", acct)
	}
	for _, a := range chain.DevAccounts() {
		if g.Alloc[a].Balance.Cmp(DevBalance()) != 0 {
			t.Fatalf("account %s balance %v", a, g.Alloc[a].Balance)
		}
	}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StateReader(c.Head().Root)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < StorageSlots; i++ {
		v, err := r.Storage(ContractAddr, SlotKey(i))
		if err != nil || v != SlotValue(i) {
			t.Fatalf("slot %d = %x (%v), want %x", i, v, err, SlotValue(i))
		}
	}
}

// TestSentTxs: OP-stack deposits are the node's own, not the generator's.
func TestSentTxs(t *testing.T) {
	tests := []struct {
		name string
		txs  []hexutil.Bytes
		want int
	}{
		{"none", nil, 0},
		{"deposit alone", []hexutil.Bytes{{0x7e, 0xf8}}, 0},
		{"deposit and sent", []hexutil.Bytes{{0x7e, 0xf8}, {0x02, 0xf8}, {0xf8, 0x6b}}, 2},
		{"sent only", []hexutil.Bytes{{0x02, 0xf8}, {0x01, 0xf8}}, 2},
	}
	for _, tt := range tests {
		if got := SentTxs(tt.txs); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestPreconfBaseFlag: -preconf-base DIR adds node preconf-base right after
// preconf (so the ratios include preconf/preconf-base); naming that node
// without the flag is an error.
func TestPreconfBaseFlag(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		return o, o.Finish()
	}
	o, err := parse("-nodes", "preconf,anvil", "-preconf-base", "/tmp/main")
	if err != nil || strings.Join(o.Nodes, ",") != "preconf,preconf-base,anvil" || o.BaseRepo != "/tmp/main" {
		t.Fatalf("nodes %v base %q: %v", o.Nodes, o.BaseRepo, err)
	}
	if _, err := parse("-nodes", "preconf,preconf-base"); err == nil {
		t.Fatal("preconf-base without -preconf-base accepted")
	}
}
