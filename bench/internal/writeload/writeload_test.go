package writeload

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/core"

	"github.com/preconf/preconf/bench/internal/harness"
)

// The senders' transactions are signed in k order, sender k%K, nonces
// consecutive per sender across calls.
func TestWriteSendersSign(t *testing.T) {
	s := harness.NewSigners("preconf bench writeload sender", 4)
	reqs, err := s.Sign("127.0.0.1:1", 10, harness.Transfer)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 10 || s.Nonces[0] != 3 || s.Nonces[1] != 3 || s.Nonces[2] != 2 || s.Nonces[3] != 2 {
		t.Fatalf("%d requests, nonces %v; want 10, [3 3 2 2]", len(reqs), s.Nonces)
	}
	for i, r := range reqs {
		if !strings.Contains(string(r), `"eth_sendRawTransaction"`) {
			t.Fatalf("request %d: %.100s", i, r)
		}
	}
}

// TestWriteSendersGenesis: -writeload-chain picks the genesis; both fund
// every sender and raise the gas limit.
func TestWriteSendersGenesis(t *testing.T) {
	s := harness.NewSigners("preconf bench writeload sender", 3)
	for _, tt := range []struct {
		chain string
		op    bool
	}{{"l1", false}, {"op", true}} {
		t.Run(tt.chain, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "genesis.json")
			if err := genesis(s, tt.chain)(path); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var g core.Genesis
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			if op := g.Config.Optimism != nil; op != tt.op {
				t.Fatalf("OP-stack config %v, want %v", op, tt.op)
			}
			if g.GasLimit != writeloadGasLimit {
				t.Fatalf("gas limit %d, want %d", g.GasLimit, writeloadGasLimit)
			}
			for _, a := range s.Addrs {
				if acct, ok := g.Alloc[a]; !ok || acct.Balance.Sign() <= 0 {
					t.Fatalf("sender %s not funded", a)
				}
			}
		})
	}
}
