package fork_test

import (
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// Forked reads against local ones (docs/fork.md has the figures):
//
//	go test -run '^$' -bench . -benchtime 200000x ./fork
//
// Reader benchmarks read accounts through the chain's state reader at the
// head, under the API's caches: Local is go-ethereum's snapshot reader of a
// local chain; ForkWarm the same accounts read before (from memory) at a
// local block above the fork block; ForkDisk after a restart (from the
// datadir); ForkCold accounts never read (one upstream round trip each,
// counted as upstream-requests/op). RPC benchmarks are eth_getBalance over
// HTTP on a running node, local or forked.

const benchAccounts = 4096

func benchAddr(i int) common.Address { return common.BigToAddress(big.NewInt(int64(0xbe000000 + i))) }

// benchGenesis funds benchAccounts accounts besides the dev ones.
func benchGenesis() *chain.Config {
	g := chain.DevGenesis()
	for i := range benchAccounts {
		g.Alloc[benchAddr(i)] = types.Account{Balance: big.NewInt(int64(i + 1))}
	}
	return &chain.Config{Genesis: g, Logger: quiet()}
}

func readAll(b *testing.B, r state.Reader) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a, err := r.Account(benchAddr(i % benchAccounts))
		if err != nil || a == nil {
			b.Fatal(a, err)
		}
		i++
	}
}

func BenchmarkReaderLocal(b *testing.B) {
	c, err := chain.Open(*benchGenesis())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r, err := c.StateReader(c.Head().Root)
	if err != nil {
		b.Fatal(err)
	}
	readAll(b, r)
}

// benchFork forks an upstream holding the bench accounts at its head, reads
// them all once and seals a local block over them.
func benchFork(b *testing.B, dir string) (*node.Node, *fork.Chain) {
	up := startNode(b, node.Config{Genesis: benchGenesis().Genesis, HTTPAddr: "127.0.0.1", Logger: quiet()})
	fc, err := fork.Open(fork.Config{URL: up.URL(), Dir: dir, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	r, _ := fc.StateReader(fc.Head().Root)
	for i := range benchAccounts {
		if _, err := r.Account(benchAddr(i)); err != nil {
			b.Fatal(err)
		}
	}
	seal(b, fc, func(db *state.StateDB) { db.SetState(box, common.Hash{}, common.Hash{31: 1}) })
	return up, fc
}

func BenchmarkReaderForkWarm(b *testing.B) {
	up, fc := benchFork(b, b.TempDir())
	defer up.Close()
	defer fc.Close()
	r, err := fc.StateReader(fc.Head().Root)
	if err != nil {
		b.Fatal(err)
	}
	before := fc.Upstream().Requests.Load()
	readAll(b, r)
	b.ReportMetric(float64(fc.Upstream().Requests.Load()-before)/float64(b.N), "upstream-requests/op")
}

func BenchmarkReaderForkDisk(b *testing.B) {
	dir := b.TempDir()
	up, fc := benchFork(b, dir)
	defer up.Close()
	fc.Close()
	fc, err := fork.Open(fork.Config{URL: up.URL(), Dir: dir, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer fc.Close()
	r, err := fc.StateReader(fc.Head().Root)
	if err != nil {
		b.Fatal(err)
	}
	before := fc.Upstream().Requests.Load()
	readAll(b, r) // the first pass over the accounts comes from disk, later ones from memory
	b.ReportMetric(float64(fc.Upstream().Requests.Load()-before)/float64(b.N), "upstream-requests/op")
}

func BenchmarkReaderForkCold(b *testing.B) {
	up, fc := benchFork(b, b.TempDir())
	defer up.Close()
	defer fc.Close()
	r, err := fc.StateReader(fc.Head().Root)
	if err != nil {
		b.Fatal(err)
	}
	before := fc.Upstream().Requests.Load()
	i := 0
	for b.Loop() {
		if _, err := r.Account(benchAddr(benchAccounts + i)); err != nil { // never read: fetched
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(fc.Upstream().Requests.Load()-before)/float64(b.N), "upstream-requests/op")
}

// rpcBalances drives eth_getBalance at latest over the bench accounts.
func rpcBalances(b *testing.B, url string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["%s","latest"]}`, benchAddr(i%benchAccounts))
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var buf [256]byte
		n, _ := resp.Body.Read(buf[:])
		resp.Body.Close()
		if !strings.Contains(string(buf[:n]), `"result":"0x`) {
			b.Fatalf("answer %s", buf[:n])
		}
		i++
	}
}

func BenchmarkRPCBalanceLocal(b *testing.B) {
	n := startNode(b, node.Config{Genesis: benchGenesis().Genesis, HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: time.Second}, Logger: quiet()})
	rpcBalances(b, n.URL())
}

func BenchmarkRPCBalanceFork(b *testing.B) {
	up := startNode(b, node.Config{Genesis: benchGenesis().Genesis, HTTPAddr: "127.0.0.1", Logger: quiet()})
	n, err := forkNode(b, b.TempDir(), up.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	r, _ := n.Fork.StateReader(n.Fork.Head().Root)
	for i := range benchAccounts { // warm: read once before
		r.Account(benchAddr(i))
	}
	before := n.Fork.Upstream().Requests.Load()
	rpcBalances(b, n.URL())
	b.ReportMetric(float64(n.Fork.Upstream().Requests.Load()-before)/float64(b.N), "upstream-requests/op")
}
