package node

import (
	"context"
	"strings"
	"testing"

	"github.com/preconf/preconf/chain"
)

// BenchmarkHandleMixedBatch is the server's own part of `go run ./bench`'s
// "batch/10 mixed reads" workload (ten typical wallet reads in one batch,
// latest and pending; an account without code stands in for the bench's
// contract) and of a single eth_blockNumber, without the
// transport: in process, paired runs of two commits separate a change from
// the machine's speed, which whole-process comparisons on shared cores
// cannot (docs/bench.md, "Latest results").
func BenchmarkHandleMixedBatch(b *testing.B) {
	n, err := New(Config{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	a := chain.DevAccounts()
	acct := func(i int) string { return `"` + a[i].Hex() + `"` }
	calls := []string{
		`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`,
		`{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}`,
		`{"jsonrpc":"2.0","id":3,"method":"eth_getBalance","params":[` + acct(0) + `,"latest"]}`,
		`{"jsonrpc":"2.0","id":4,"method":"eth_getBalance","params":[` + acct(1) + `,"pending"]}`,
		`{"jsonrpc":"2.0","id":5,"method":"eth_getTransactionCount","params":[` + acct(0) + `,"pending"]}`,
		`{"jsonrpc":"2.0","id":6,"method":"eth_getStorageAt","params":[` + acct(2) + `,"0x0","latest"]}`,
		`{"jsonrpc":"2.0","id":7,"method":"eth_getStorageAt","params":[` + acct(2) + `,"0x1","pending"]}`,
		`{"jsonrpc":"2.0","id":8,"method":"eth_getCode","params":[` + acct(2) + `,"latest"]}`,
		`{"jsonrpc":"2.0","id":9,"method":"eth_getBalance","params":[` + acct(3) + `,"latest"]}`,
		`{"jsonrpc":"2.0","id":10,"method":"eth_getTransactionCount","params":[` + acct(1) + `,"latest"]}`,
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"batch", []byte("[" + strings.Join(calls, ",") + "]")},
		{"eth_blockNumber", []byte(calls[1])},
	} {
		if out := n.RPC.Handle(ctx, bc.body); strings.Contains(string(out), `"error"`) {
			b.Fatalf("%s: %s", bc.name, out)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n.RPC.Handle(ctx, bc.body)
			}
		})
	}
}
