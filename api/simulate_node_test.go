package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/simulate"
)

func rpcCall(t *testing.T, url, method string, params ...any) json.RawMessage {
	t.Helper()
	res, err := rpcTry(url, method, params...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rpcTry is one JSON-RPC call (safe to use from any goroutine).
func rpcTry(url, method string, params ...any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: %v: %s", method, err, raw)
	}
	if out.Error != nil {
		return nil, fmt.Errorf("%s: error %d %s", method, out.Error.Code, out.Error.Message)
	}
	return out.Result, nil
}

// With the sequencer running, an empty block simulated at "pending" in
// compute mode is the pending block with nothing added: its state root must
// be the root the sequencer seals for that block (pre-confirmed transaction
// included), which checks the pre-confirmed state, the pending environment
// and the root computation end to end.
func TestSimulatePendingRootMatchesSealedBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sequencer for several blocks")
	}
	sim := simulate.DefaultOptions()
	sim.Roots = simulate.RootCompute
	n, err := node.New(node.Config{Sequencer: &sequencer.Config{BlockTime: time.Second}, Simulate: &sim})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	url := n.URL()
	from, to := chain.DevAccounts()[0], chain.DevAccounts()[1]
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var hash common.Hash
		if err := json.Unmarshal(rpcCall(t, url, "eth_sendTransaction", map[string]any{"from": from, "to": to, "value": "0x1234"}), &hash); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // let a flashblock pre-confirm it
		before := pendingTxs(t, url)
		var blocks []struct {
			Number    hexutil.Uint64 `json:"number"`
			StateRoot common.Hash    `json:"stateRoot"`
		}
		if err := json.Unmarshal(rpcCall(t, url, "eth_simulateV1", map[string]any{"blockStateCalls": []any{map[string]any{}}}, "pending"), &blocks); err != nil {
			t.Fatal(err)
		}
		// The pending block: the L1-attributes deposit, then the transfer.
		if after := pendingTxs(t, url); len(before.Transactions) != 2 || before.Transactions[1] != hash ||
			after.Number != before.Number || len(after.Transactions) != 2 || after.Number != blocks[0].Number {
			continue // not pre-confirmed yet, or the block moved on meanwhile: try again
		}
		num := fmt.Sprintf("0x%x", uint64(blocks[0].Number))
		var sealed *struct {
			StateRoot    common.Hash   `json:"stateRoot"`
			Transactions []common.Hash `json:"transactions"`
		}
		for time.Now().Before(deadline) {
			if err := json.Unmarshal(rpcCall(t, url, "eth_getBlockByNumber", num, false), &sealed); err != nil {
				t.Fatal(err)
			}
			if sealed != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if sealed == nil {
			t.Fatalf("block %s never sealed", num)
		}
		if sealed.StateRoot != blocks[0].StateRoot {
			t.Fatalf("block %s: simulated root %s, sealed %s", num, blocks[0].StateRoot, sealed.StateRoot)
		}
		return
	}
	t.Fatal("no block with a pre-confirmed transaction was simulated before the deadline")
}

type pendingBlock struct {
	Number       hexutil.Uint64 `json:"number"`
	Transactions []common.Hash  `json:"transactions"`
}

func pendingTxs(t *testing.T, url string) pendingBlock {
	t.Helper()
	var b pendingBlock
	if err := json.Unmarshal(rpcCall(t, url, "eth_getBlockByNumber", "pending", false), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// Simulations and calls at pending while the sequencer pre-confirms and
// seals underneath: every answer is well-formed, and each simulation's first
// block is a pending block (number above the head it was built on).
func TestSimulateWhileSequencing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sequencer")
	}
	n, err := node.New(node.Config{Sequencer: &sequencer.Config{BlockTime: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	url := n.URL()
	from, to := chain.DevAccounts()[2], chain.DevAccounts()[3]
	req := map[string]any{"blockStateCalls": []any{
		map[string]any{"calls": []any{map[string]any{"from": from, "to": to, "value": "0x1"}}},
		map[string]any{},
	}}
	errs := make(chan error, 8)
	stop := time.Now().Add(2 * time.Second)
	for w := 0; w < 4; w++ {
		go func() {
			for time.Now().Before(stop) {
				var blocks []struct {
					Number hexutil.Uint64 `json:"number"`
					Calls  []struct {
						Status hexutil.Uint64 `json:"status"`
					} `json:"calls"`
				}
				raw, err := rpcTry(url, "eth_simulateV1", req, "pending")
				if err == nil {
					err = json.Unmarshal(raw, &blocks)
				}
				if err != nil {
					errs <- err
					return
				}
				if len(blocks) != 2 || blocks[1].Number != blocks[0].Number+1 || len(blocks[0].Calls) != 1 || blocks[0].Calls[0].Status != 1 {
					errs <- fmt.Errorf("bad simulation: %+v", blocks)
					return
				}
				if _, err := rpcTry(url, "eth_call", map[string]any{"from": from, "to": to, "value": "0x1"}, "pending"); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for time.Now().Before(stop) {
		rpcCall(t, url, "eth_sendTransaction", map[string]any{"from": chain.DevAccounts()[4], "to": to, "value": "0x2"})
		time.Sleep(50 * time.Millisecond)
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
