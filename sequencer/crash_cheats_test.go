package sequencer

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// TestCrashCheats: cheats made through the anvil methods survive kill -9.
// A writer sets balances, nonces and storage slots of fresh accounts
// (each a value of its own) and impersonates accounts while the node is
// killed at random moments, five times; after every restart each
// acknowledged cheat reads back at pending, and, once sealed, at latest,
// and each acknowledged impersonation still lets eth_sendTransaction send
// without a key. Blocks are sealed every second meanwhile, so cheats land
// in open blocks, sealed ones and the WAL's rotations.
func TestCrashCheats(t *testing.T) {
	tmp, bin, logs := crashBinary(t, "node.log")
	defer logs.Close()
	n := &crashNode{t: t, bin: bin, dir: filepath.Join(tmp, "data"),
		args: func(int) []string { return []string{"--block-time", "1s", "--flashblock-interval", "100ms"} },
		http: &http.Client{Timeout: 15 * time.Second}, logs: logs}
	n.start()
	defer func() {
		if n.running() {
			n.kill()
		}
	}()
	var (
		mu          sync.Mutex
		acked       []cheat
		impersonate []common.Address
		next        uint64 = 1
	)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 0; round < 5; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				v := next
				next++
				mu.Unlock()
				addr := common.BigToAddress(new(big.Int).SetUint64(0xc0000000 + v))
				var err error
				switch v % 4 {
				case 0:
					_, err = n.call("anvil_setBalance", addr, hexutil.Uint64(v))
				case 1:
					_, err = n.call("anvil_setNonce", addr, hexutil.Uint64(v))
				case 2:
					_, err = n.call("anvil_setStorageAt", addr, "0x1", common.BigToHash(new(big.Int).SetUint64(v)))
				case 3:
					if _, err = n.call("anvil_setBalance", addr, hexutil.Uint64(1e18)); err == nil {
						_, err = n.call("anvil_impersonateAccount", addr)
					}
				}
				if err != nil {
					return // killed
				}
				mu.Lock()
				acked = append(acked, cheat{addr, v})
				if v%4 == 3 {
					impersonate = append(impersonate, addr)
				}
				mu.Unlock()
			}
		}()
		time.Sleep(time.Duration(300+rng.Intn(1500)) * time.Millisecond)
		n.kill()
		close(stop)
		wg.Wait()
		n.start()
		mu.Lock()
		checkCheats(t, n, acked, "pending")
		mu.Unlock()
	}
	// Sealed: wait for a block after the last restart, then read latest.
	res, _ := n.call("eth_blockNumber")
	var at hexutil.Uint64
	json.Unmarshal(res, &at)
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, _ := n.call("eth_blockNumber")
		var now hexutil.Uint64
		json.Unmarshal(res, &now)
		if now > at {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no block sealed after the restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkCheats(t, n, acked, "latest")
	if len(impersonate) == 0 {
		t.Fatal("no impersonation was acknowledged")
	}
	for _, addr := range impersonate {
		if _, err := n.call("eth_sendTransaction", map[string]any{"from": addr, "to": addr, "value": "0x1"}); err != nil {
			t.Fatalf("send from %v, impersonated before a crash: %v", addr, err)
		}
	}
	t.Logf("%d cheats acknowledged over 5 kills, %d impersonations", len(acked), len(impersonate))
}

// cheat is an acknowledged cheat: v says what it set (v%4: balance v,
// nonce v, slot 1 = v, balance 1 ether and impersonated).
type cheat struct {
	addr common.Address
	v    uint64
}

// checkCheats reads every acknowledged cheat back at block.
func checkCheats(t *testing.T, n *crashNode, acked []cheat, block string) {
	t.Helper()
	for _, c := range acked {
		var (
			res json.RawMessage
			err error
		)
		want := fmt.Sprintf("%#x", c.v)
		switch c.v % 4 {
		case 0:
			res, err = n.call("eth_getBalance", c.addr, block)
		case 1:
			res, err = n.call("eth_getTransactionCount", c.addr, block)
		case 2:
			res, err = n.call("eth_getStorageAt", c.addr, "0x1", block)
			want = common.BigToHash(new(big.Int).SetUint64(c.v)).Hex()
		case 3:
			res, err = n.call("eth_getBalance", c.addr, block)
			want = "0xde0b6b3a7640000"
		}
		if err != nil {
			t.Fatal(err)
		}
		var got string
		json.Unmarshal(res, &got)
		if got != want {
			t.Fatalf("cheat %d on %v at %s: %s, want %s", c.v, c.addr, block, got, want)
		}
	}
}
