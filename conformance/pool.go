package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// The txpool_content fixture records the pool of the node that recorded the
// fixtures: every transaction the eth_sendRawTransaction fixtures sent. A
// copy of the fixtures without one of those files (this repository's
// ../shared copy lacks upstream's send-access-list-transaction.io) leaves
// that transaction out of the pool being replayed against, and the fixture
// fails on any node, go-ethereum's included. UnsentPoolTxs finds such
// transactions in the recorded answer itself, where they appear signed and
// complete; SeedPool sends them before the replay, so the pool holds what
// the recording node's held. With a complete copy there is nothing to send.

// poolFixture is the fixture that records a pool.
const poolFixture = "txpool_content/get-content.io"

// UnsentPoolTxs returns the transactions of the recorded txpool_content
// answer in dir that no fixture in dir sends, rebuilt from their recorded
// fields (each checked against its recorded hash), in sender and nonce
// order.
func UnsentPoolTxs(dir string) ([]*types.Transaction, error) {
	sent, err := sentTxs(filepath.Join(dir, "tests"))
	if err != nil {
		return nil, err
	}
	c, err := loadFile(filepath.Join(dir, "tests", poolFixture))
	if err != nil {
		return nil, err
	}
	var out []*types.Transaction
	for _, ex := range c.Exchanges {
		var resp struct {
			Result map[string]map[string]map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(ex.Response, &resp); err != nil {
			return nil, fmt.Errorf("%s: %w", poolFixture, err)
		}
		for _, kind := range []string{"pending", "queued"} {
			for _, byNonce := range sorted(resp.Result[kind]) {
				for _, raw := range sorted(byNonce) {
					tx, err := recordedTx(raw)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", poolFixture, err)
					}
					if !sent[tx.Hash()] {
						out = append(out, tx)
					}
				}
			}
		}
	}
	return out, nil
}

// recordedTx rebuilds a signed transaction from its RPC object.
func recordedTx(raw json.RawMessage) (*types.Transaction, error) {
	var want struct {
		Hash common.Hash `json:"hash"`
	}
	tx := new(types.Transaction)
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, err
	}
	if err := tx.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("transaction %v: %w", want.Hash, err)
	}
	if tx.Hash() != want.Hash {
		return nil, fmt.Errorf("transaction rebuilt as %v, recorded %v", tx.Hash(), want.Hash)
	}
	return tx, nil
}

// sentTxs are the hashes of the transactions the fixtures under tests send
// (eth_sendRawTransaction, eth_sendRawTransactionSync, testing_buildBlockV1).
func sentTxs(tests string) (map[common.Hash]bool, error) {
	files, err := filepath.Glob(filepath.Join(tests, "*", "*.io"))
	if err != nil {
		return nil, err
	}
	sent := make(map[common.Hash]bool)
	for _, f := range files {
		c, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		for _, ex := range c.Exchanges {
			var req struct {
				Method string            `json:"method"`
				Params []json.RawMessage `json:"params"`
			}
			if json.Unmarshal([]byte(ex.Request), &req) != nil || len(req.Params) == 0 {
				continue
			}
			var raws []hexutil.Bytes
			switch {
			case strings.HasPrefix(req.Method, "eth_sendRawTransaction"):
				var one hexutil.Bytes
				if json.Unmarshal(req.Params[0], &one) == nil {
					raws = append(raws, one)
				}
			case req.Method == "testing_buildBlockV1" && len(req.Params) > 2:
				json.Unmarshal(req.Params[2], &raws)
			}
			for _, raw := range raws {
				tx := new(types.Transaction)
				if tx.UnmarshalBinary(raw) == nil {
					sent[tx.Hash()] = true
				}
			}
		}
	}
	return sent, nil
}

// sorted returns m's values in key order.
func sorted[V any](m map[string]V) []V {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]V, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// SeedPool sends UnsentPoolTxs(dir) to the node at url and returns how many
// it sent. Run it before replaying the fixtures.
func SeedPool(client *http.Client, url, dir string) (int, error) {
	if _, err := os.Stat(filepath.Join(dir, "tests", poolFixture)); err != nil {
		return 0, nil // no pool fixture to prepare for
	}
	txs, err := UnsentPoolTxs(dir)
	if err != nil {
		return 0, err
	}
	for i, tx := range txs {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return i, err
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "eth_sendRawTransaction", "params": []any{hexutil.Bytes(raw)}})
		resp, err := client.Post(url, "application/json", strings.NewReader(string(body)))
		if err != nil {
			return i, err
		}
		var res struct {
			Error *struct{ Message string } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if err != nil {
			return i, err
		}
		if res.Error != nil {
			return i, fmt.Errorf("eth_sendRawTransaction %v: %s", tx.Hash(), res.Error.Message)
		}
	}
	return len(txs), nil
}
