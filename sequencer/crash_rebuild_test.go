package sequencer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// TestCrashRebuiltBlock: an open block rebuilt by dev methods before its
// first transaction (a cheat, then the clock and the coinbase changed,
// each a rebuild under a new payload id) survives kill -9 as it was
// acknowledged: after the restart the pending block has the same number,
// time, coinbase, cheat and payload id (the flashblocks feed's replay), and
// the next evm_mine seals it with them (at the clock's time then, as
// without a crash). Under manual mining, so that
// nothing seals it meanwhile; on both dev chains.
func TestCrashRebuiltBlock(t *testing.T) {
	tmp, bin, logs := crashBinary(t, "node.log")
	defer logs.Close()
	for _, chain := range []string{"op-stack", "l1"} {
		t.Run(chain, func(t *testing.T) {
			args := []string{"--block-time", "0"}
			if chain == "l1" {
				args = append(args, "--l1")
			}
			n := &crashNode{t: t, bin: bin, dir: filepath.Join(tmp, chain), args: func(int) []string { return args },
				http: &http.Client{Timeout: 15 * time.Second}, logs: logs}
			n.start()
			defer func() {
				if n.running() {
					n.kill()
				}
			}()
			must := func(method string, params ...any) json.RawMessage {
				t.Helper()
				res, err := n.call(method, params...)
				if err != nil {
					t.Fatalf("%s: %v", method, err)
				}
				return res
			}
			must("evm_mine") // block 1: the open block is then one the clock chose
			who := "0x00000000000000000000000000000000000000c5"
			coinbase := "0x00000000000000000000000000000000000000c1"
			must("anvil_setBalance", who, "0x1234")
			first := feedBase(t, n.url)
			must("evm_increaseTime", 3600)
			second := feedRebuilt(t, n.url, first)
			must("anvil_setCoinbase", coinbase)
			before, fb := pendingBlock(t, n), feedRebuilt(t, n.url, second)
			if fb.Base.FeeRecipient != coinbase || before.Time < uint64(time.Now().Unix())+3500 || uint64(fb.Base.Timestamp) != before.Time {
				t.Fatalf("pending block before the crash: %+v, its flashblock 0 %+v", before, fb)
			}
			n.kill()
			n.start()
			if after := pendingBlock(t, n); after != before {
				t.Fatalf("pending block after kill -9: %+v, before %+v", after, before)
			}
			if got := feedBase(t, n.url); got != fb {
				t.Fatalf("flashblock 0 after kill -9: %+v, before %+v", got, fb)
			}
			if bal := must("eth_getBalance", who, "pending"); string(bal) != `"0x1234"` {
				t.Fatalf("cheat after kill -9: balance %s", bal)
			}
			must("evm_mine")
			var latest struct {
				Number    hexutil.Uint64 `json:"number"`
				Timestamp hexutil.Uint64 `json:"timestamp"`
				Miner     string         `json:"miner"`
			}
			json.Unmarshal(must("eth_getBlockByNumber", "latest", false), &latest)
			// Mined at the clock's time now (the block is re-opened at it,
			// as anvil mines at the time of the mine): the offset was kept.
			ahead := uint64(time.Now().Unix()) + 3600
			if uint64(latest.Number) != before.Number || uint64(latest.Timestamp) < before.Time || uint64(latest.Timestamp) > ahead || latest.Miner != coinbase {
				t.Fatalf("mined block %d at %d by %s; the pending one was %d at %d by %s", latest.Number, latest.Timestamp, latest.Miner, before.Number, before.Time, coinbase)
			}
			if bal := must("eth_getBalance", who, "latest"); string(bal) != `"0x1234"` {
				t.Fatalf("cheat in the mined block: balance %s", bal)
			}
		})
	}
}

type pendingInfo struct{ Number, Time uint64 }

func pendingBlock(t *testing.T, n *crashNode) pendingInfo {
	t.Helper()
	res, err := n.call("eth_getBlockByNumber", "pending", false)
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Number    hexutil.Uint64 `json:"number"`
		Timestamp hexutil.Uint64 `json:"timestamp"`
	}
	if err := json.Unmarshal(res, &b); err != nil {
		t.Fatal(err)
	}
	return pendingInfo{uint64(b.Number), uint64(b.Timestamp)}
}

// flashblock0 is what TestCrashRebuiltBlock reads of a flashblock 0.
type flashblock0 struct {
	PayloadID string `json:"payload_id"`
	Index     uint64 `json:"index"`
	Base      struct {
		Timestamp    hexutil.Uint64 `json:"timestamp"`
		FeeRecipient string         `json:"fee_recipient"`
	} `json:"base"`
}

// feedRebuilt is the open block's first flashblock once the feed shows
// the rebuild of prev: the feed takes snapshots from the pending source
// on its own goroutine, so a replay right after the RPC answered may
// still be the old payload. A rebuild must get a new payload id; failing
// that within 10 s fails the test.
func feedRebuilt(t *testing.T, url string, prev flashblock0) flashblock0 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fb := feedBase(t, url)
		if fb.PayloadID != prev.PayloadID {
			return fb
		}
		if time.Now().After(deadline) {
			t.Fatalf("payload id %s after a rebuild: a rebuild must get a new one", fb.PayloadID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// feedBase is the open block's first flashblock, as the flashblocks feed
// replays it.
func feedBase(t *testing.T, url string) flashblock0 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/flashblocks?replay=block", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, msg, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fb flashblock0
	if err := json.Unmarshal(msg, &fb); err != nil || fb.Index != 0 {
		t.Fatal(fmt.Errorf("feed replay's first message (index %d): %v: %s", fb.Index, err, msg))
	}
	return fb
}
