package fork_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/pending"
)

// A fork serves the upstream's contract at latest and pending, pre-confirms
// transactions that change it within a flashblock, seals them, survives a
// restart without fetching again what it fetched, leaves the upstream as it
// was, and keeps serving what it holds when the upstream dies.
func TestFork(t *testing.T) {
	up := upstreamNode(t)
	setTx := send(t, up.URL(), devKey(t, 0), chain.DevChainID, append(selSet, arg(7)...))
	setRcpt := sealed(t, up.URL(), setTx)
	var point hexutil.Uint64
	if err := call(up.URL(), &point, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	block := uint64(point)
	p := newProxy(t, up.URL())
	dir := t.TempDir()
	fn, err := forkNode(t, dir, p.srv.URL, &block)
	if err != nil {
		t.Fatal(err)
	}
	url := fn.URL()
	dev1 := crypto.PubkeyToAddress(devKey(t, 1).PublicKey)

	// The upstream's blocks and state as of the fork block.
	var id hexutil.Uint64
	if err := call(url, &id, "eth_chainId"); err != nil || uint64(id) != chain.DevChainID {
		t.Fatalf("chain id %d, %v", id, err)
	}
	var upBlock, fkBlock map[string]any
	call(up.URL(), &upBlock, "eth_getBlockByNumber", hexutil.Uint64(block), false)
	call(url, &fkBlock, "eth_getBlockByNumber", hexutil.Uint64(block), false)
	if upBlock["hash"] == nil || upBlock["hash"] != fkBlock["hash"] {
		t.Fatalf("fork block: upstream %v, fork %v", upBlock["hash"], fkBlock["hash"])
	}
	var rcpt map[string]any
	if err := call(url, &rcpt, "eth_getTransactionReceipt", setTx); err != nil || rcpt["blockHash"] != setRcpt["blockHash"] {
		t.Fatalf("upstream receipt through the fork: %v %v", rcpt, err)
	}
	for _, tag := range []string{"latest", "pending"} {
		if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, tag); v != 7 {
			t.Fatalf("box value at %s: %d, want 7", tag, v)
		}
		if v := word(t, url, "eth_call", boxCall(selValue, tag)...); v != 7 {
			t.Fatalf("value() at %s: %d, want 7", tag, v)
		}
	}
	var code hexutil.Bytes
	if err := call(url, &code, "eth_getCode", box, "latest"); err != nil || string(code) != string(boxCode) {
		t.Fatalf("code %x, %v", code, err)
	}
	// The dev accounts are funded as on the dev chain (as anvil funds them
	// on a fork), their nonces are the upstream's.
	dev0 := chain.DevAccounts()[0]
	var upBal, fkBal hexutil.Big
	var upNonce, fkNonce hexutil.Uint64
	call(up.URL(), &upBal, "eth_getBalance", dev0, hexutil.Uint64(block))
	call(url, &fkBal, "eth_getBalance", dev0, hexutil.Uint64(block))
	call(up.URL(), &upNonce, "eth_getTransactionCount", dev0, hexutil.Uint64(block))
	call(url, &fkNonce, "eth_getTransactionCount", dev0, hexutil.Uint64(block))
	if fkBal.ToInt().Cmp(chain.DevGenesis().Alloc[dev0].Balance) != 0 || upBal.ToInt().Cmp(fkBal.ToInt()) >= 0 || upNonce != fkNonce || fkNonce == 0 {
		t.Fatalf("dev account 0 at the fork block: fork %v (nonce %d), upstream %v (nonce %d)", fkBal.ToInt(), fkNonce, upBal.ToInt(), upNonce)
	}

	// A cold read costs one upstream round trip, a warm one none.
	cold := func(addr common.Address, what string, params ...any) {
		t.Helper()
		before := p.sent()
		if err := call(url, nil, what, params...); err != nil {
			t.Fatal(err)
		}
		if d := p.about(before, addr); d != 1 {
			t.Fatalf("cold %s: %d upstream requests, want 1", what, d)
		}
		before = p.sent()
		if err := call(url, nil, what, params...); err != nil {
			t.Fatal(err)
		}
		if d := p.about(before, addr); d != 0 {
			t.Fatalf("warm %s: %d upstream requests, want 0", what, d)
		}
	}
	coldAddr, other := common.HexToAddress("0x00000000000000000000000000000000000c01d5"), common.HexToAddress("0x4200000000000000000000000000000000000042")
	cold(coldAddr, "eth_getBalance", coldAddr, "latest")
	cold(box, "eth_getStorageAt", box, common.Hash{31: 5}, "latest")
	cold(other, "eth_getCode", other, "latest")

	// Pre-confirmed within one flashblock: of the snapshots published after
	// the transaction was accepted, the first (the flashblock being built
	// when it arrived) or the second shows it.
	snaps, stop := fn.Pending.Subscribe(64)
	defer stop()
	addTx := send(t, url, devKey(t, 1), chain.DevChainID, append(selAdd, arg(5)...))
	cur := fn.Pending.Current()
	after := func(s *pending.Snapshot) bool {
		if c := s.Header.Number.Cmp(cur.Header.Number); c != 0 {
			return c > 0
		}
		return s.Index > cur.Index
	}
	seen := 0
	for visible := false; !visible; {
		select {
		case s := <-snaps:
			if !after(s) {
				continue
			}
			seen++
			v, _ := s.State.Storage(box, common.Hash{})
			visible = v.Big().Uint64() == 12
		case <-time.After(5 * time.Second):
			t.Fatal("add(5) never pre-confirmed")
		}
	}
	if seen > 2 {
		t.Fatalf("add(5) first visible in the %dth flashblock after it was accepted, want the next one", seen)
	}
	if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, "pending"); v != 12 {
		t.Fatalf("box value at pending: %d, want 12", v)
	}
	if v := word(t, url, "eth_call", boxCall(append(selCredit, common.LeftPadBytes(dev1[:], 32)...), "pending")...); v != 5 {
		t.Fatalf("credit at pending: %d, want 5", v)
	}
	sealed(t, url, addTx)
	if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, "latest"); v != 12 {
		t.Fatalf("box value sealed: %d, want 12", v)
	}
	if v := word(t, url, "eth_getStorageAt", box, creditSlot(dev1), "latest"); v != 5 {
		t.Fatalf("credit sealed: %d, want 5", v)
	}
	// The fork block's state stays readable at its number.
	if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, hexutil.Uint64(block)); v != 7 {
		t.Fatalf("box value at the fork block: %d, want 7", v)
	}

	// Restart: what was fetched is not fetched again, what was sealed is there.
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
	fn, err = forkNode(t, dir, p.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	url = fn.URL()
	before := p.sent()
	for _, tag := range []string{"latest", "pending"} {
		if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, tag); v != 12 {
			t.Fatalf("after restart, box value at %s: %d, want 12", tag, v)
		}
	}
	word(t, url, "eth_getStorageAt", box, common.Hash{31: 5}, "latest")
	word(t, url, "eth_getStorageAt", box, common.Hash{}, hexutil.Uint64(block))
	if err := call(url, nil, "eth_getBalance", coldAddr, "latest"); err != nil {
		t.Fatal(err)
	}
	if err := call(url, &code, "eth_getCode", box, "latest"); err != nil || string(code) != string(boxCode) {
		t.Fatalf("code after restart: %v", err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "latest")...); v != 12 {
		t.Fatalf("value() after restart: %d", v)
	}
	if d := p.about(before, box, coldAddr, dev1); d != 0 {
		t.Fatalf("after a restart, reading what was read before made %d upstream requests, want 0", d)
	}

	// The upstream is untouched.
	if v := word(t, up.URL(), "eth_getStorageAt", box, common.Hash{}, "latest"); v != 7 {
		t.Fatalf("upstream box value %d, want 7", v)
	}
	if v := word(t, up.URL(), "eth_getStorageAt", box, creditSlot(dev1), "latest"); v != 0 {
		t.Fatalf("upstream credit %d, want 0", v)
	}

	// The upstream dies: a read it would answer fails clearly, the rest is
	// served, and the sequencer goes on with what it holds.
	p.down.Store(true)
	err = call(url, nil, "eth_getBalance", common.HexToAddress("0x1234"), "latest")
	if err == nil || !strings.Contains(err.Error(), "upstream unavailable") {
		t.Fatalf("cold read with the upstream down: %v, want an 'upstream unavailable' error", err)
	}
	if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, "latest"); v != 12 {
		t.Fatalf("warm read with the upstream down: %d", v)
	}
	again := send(t, url, devKey(t, 1), chain.DevChainID, append(selAdd, arg(1)...))
	sealed(t, url, again)
	if v := word(t, url, "eth_getStorageAt", box, common.Hash{}, "latest"); v != 13 {
		t.Fatalf("sealed with the upstream down: %d, want 13", v)
	}
	// Blocks go on: the slots the next blocks' system calls write were
	// fetched ahead (prefetchAhead).
	var b1, b2 hexutil.Uint64
	call(url, &b1, "eth_blockNumber")
	for deadline := time.Now().Add(15 * time.Second); b2 < b1+3 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		call(url, &b2, "eth_blockNumber")
	}
	if b2 < b1+3 {
		t.Fatalf("with the upstream down the chain went from block %d to %d, want 3 blocks more", b1, b2)
	}
}

// A datadir keeps the fork it was created for.
func TestForkMismatch(t *testing.T) {
	up := upstreamNode(t)
	dir := t.TempDir()
	var head hexutil.Uint64
	call(up.URL(), &head, "eth_blockNumber")
	block := uint64(head)
	fn, err := forkNode(t, dir, up.URL(), &block)
	if err != nil {
		t.Fatal(err)
	}
	fn.Close()
	other := block + 1
	time.Sleep(300 * time.Millisecond) // the upstream has block+1
	if _, err := forkNode(t, dir, up.URL(), &other); !errors.Is(err, fork.ErrForkMismatch) || !strings.Contains(err.Error(), "--fork-block-number") {
		t.Fatalf("another fork block on the same datadir: %v", err)
	}
	// A local chain's datadir is not a fork's, and the other way round.
	local := t.TempDir()
	n, err := nodeLocal(local)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	if _, err := forkNode(t, local, up.URL(), nil); !errors.Is(err, fork.ErrForkMismatch) {
		t.Fatalf("fork on a local chain's datadir: %v", err)
	}
	if _, err := nodeLocal(dir); !errors.Is(err, fork.ErrForkMismatch) || !strings.Contains(err.Error(), "--fork-url") {
		t.Fatalf("local chain on a fork's datadir: %v", err)
	}
}

// A rate-limiting upstream (half its answers 429) slows a fork down but
// does not fail it: every read is retried until it is answered.
func TestForkRateLimited(t *testing.T) {
	up := upstreamNode(t)
	p := newProxy(t, up.URL())
	p.limit.Store(true)
	fn, err := forkNode(t, t.TempDir(), p.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	for i, a := range chain.DevAccounts() {
		var bal hexutil.Big
		if err := call(fn.URL(), &bal, "eth_getBalance", a, "latest"); err != nil || bal.ToInt().Sign() == 0 {
			t.Fatalf("account %d: %v %v", i, bal.ToInt(), err)
		}
	}
	if v := word(t, fn.URL(), "eth_getStorageAt", box, common.Hash{}, "latest"); v != 42 {
		t.Fatalf("box value %d", v)
	}
	if fn.Fork.Upstream().Retries.Load() == 0 {
		t.Fatal("no retries counted")
	}
}
