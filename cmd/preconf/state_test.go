package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestStateFlag: --state writes the pending state on exit and loads it at
// the next start (on a fresh datadir, so only the file carries it); a
// state anvil dumped loads with --load-state.
func TestStateFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	set := `{"jsonrpc":"2.0","id":1,"method":"anvil_setBalance","params":["0x00000000000000000000000000000000000000e1","0x2a"]}`
	get := `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000000e1","pending"]}`
	p := start(t, "--datadir", t.TempDir(), "--block-time", "0", "--state", file)
	post(t, p.url, set)
	p.stop(t)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("--state wrote nothing on exit: %v", err)
	}
	var st struct {
		Accounts map[string]json.RawMessage `json:"accounts"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Accounts["0x00000000000000000000000000000000000000e1"] == nil {
		t.Fatalf("state file without the account (%v): %.300s", err, raw)
	}
	p = start(t, "--datadir", t.TempDir(), "--block-time", "0", "--state", file)
	got := post(t, p.url, get)
	p.stop(t)
	if got != `"0x2a"` {
		t.Fatalf("balance after --state reload: %s", got)
	}
	p = start(t, "--datadir", t.TempDir(), "--block-time", "0", "--load-state", filepath.Join("..", "..", "anvil", "testdata", "anvil-dump-state.json"))
	got = post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000000d1","pending"]}`)
	p.stop(t)
	if got != `"0x1234"` {
		t.Fatalf("balance from anvil's state file: %s", got)
	}
	if _, code := run(t, "--state", file, "--dump-state", file); code != 2 {
		t.Fatalf("--state with --dump-state exited %d", code)
	}
}
