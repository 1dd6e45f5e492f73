package anvil_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/peers"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// devChains are the built-in dev chains: anvil's chain is a plain one, and
// the comparisons run on both.
var devChains = []struct {
	name    string
	genesis func() (*core.Genesis, error)
}{
	{"op-stack", chain.DevL2Genesis},
	{"l1", func() (*core.Genesis, error) { return chain.DevGenesis(), nil }},
}

// TestClockAsAnvil: the time and block-environment methods followed by a
// mine, as Hardhat's and Foundry's suites call them (evm_increaseTime then
// evm_mine then latest; evm_setNextBlockTimestamp then evm_mine; anvil_mine
// with an interval; ...), run on a real anvil and on the node, in each
// mining mode on both dev chains: the mined blocks must carry the same
// times, coinbase, gas limit and base fee as anvil's. Times that follow the
// wall clock are checked against it (within the seconds the script took),
// on both nodes alike, so anvil's answers validate the expectations.
func TestClockAsAnvil(t *testing.T) {
	bin := peers.AnvilForTest(t)
	modes := []struct {
		name  string
		anvil []string
		cfg   sequencer.Config
	}{
		{"automine", nil, sequencer.Config{Mining: sequencer.AutoMining, Interval: 200 * time.Millisecond}},
		{"manual", []string{"--no-mining"}, sequencer.Config{Mining: sequencer.ManualMining, Interval: 200 * time.Millisecond}},
		{"manual without flashblocks", []string{"--no-mining"}, sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks}},
	}
	for _, m := range modes {
		// A transaction sent before a clock change is pre-confirmed at
		// the open block's time where flashblocks run under manual mining
		// (TestClockWaitsForPreconfirmed): the script's last step is
		// anvil's only where nothing is pre-confirmed before the mine.
		preconfirms := m.cfg.Mining != sequencer.AutoMining && m.cfg.Interval > 0
		want := clockScript(t, startAnvil(t, bin, m.anvil...), preconfirms)
		for _, line := range want {
			if !strings.HasSuffix(line, ": ok") {
				t.Fatalf("anvil %v: %s (the script's expectation is not anvil's)", m.anvil, line)
			}
		}
		for _, c := range devChains {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				g, err := c.genesis()
				if err != nil {
					t.Fatal(err)
				}
				got := clockScript(t, startNode(t, node.Config{Genesis: g, Sequencer: &m.cfg}), preconfirms)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("got:\n%s\nanvil %v:\n%s", strings.Join(got, "\n"), m.anvil, strings.Join(want, "\n"))
				}
			})
		}
	}
}

// TestClockOnSchedule: on a timed schedule (--block-time 2s, the default)
// a clock change with nothing pre-confirmed in the open block applies to
// that block: the next evm_mine, or the seal on schedule, carries the new
// time, as under anvil --block-time. Blocks sealed on schedule meanwhile
// are allowed for: every block sealed after the change carries it.
func TestClockOnSchedule(t *testing.T) {
	bin := peers.AnvilForTest(t)
	want := scheduleScript(t, startAnvil(t, bin, "--block-time", "2"))
	for _, c := range devChains {
		t.Run(c.name, func(t *testing.T) {
			g, err := c.genesis()
			if err != nil {
				t.Fatal(err)
			}
			url := startNode(t, node.Config{Genesis: g, Sequencer: &sequencer.Config{BlockTime: 2 * time.Second, Interval: 200 * time.Millisecond}})
			if got := scheduleScript(t, url); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nanvil --block-time 2:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestClockWaitsForPreconfirmed: with a transaction pre-confirmed in the
// open block, a clock change applies to the next block (the transaction
// executed with the open block's time, which is published): evm_mine seals
// the open block at its time and the block after it carries the new one.
// anvil, which executes nothing before the mine, has no such case.
func TestClockWaitsForPreconfirmed(t *testing.T) {
	for _, c := range devChains {
		t.Run(c.name, func(t *testing.T) {
			g, err := c.genesis()
			if err != nil {
				t.Fatal(err)
			}
			r := &rpcClient{t: t, url: startNode(t, node.Config{Genesis: g, Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: 50 * time.Millisecond}})}
			var from []string
			r.call(&from, "eth_accounts")
			var hash string
			r.call(&hash, "eth_sendTransaction", map[string]any{"from": from[0], "to": from[0], "value": "0x1"})
			r.waitPending(hash)
			open := r.block("pending")
			r.call(nil, "evm_increaseTime", 3600)
			if p := r.block("pending"); p.Time != open.Time || p.Number != open.Number {
				t.Fatalf("the pre-confirmed block changed: block %d at %d, was %d at %d", p.Number, p.Time, open.Number, open.Time)
			}
			r.call(nil, "evm_mine")
			if l := r.block("latest"); l.Number != open.Number || l.Time != open.Time {
				t.Fatalf("mined block %d at %d, the pre-confirmed one was %d at %d", l.Number, l.Time, open.Number, open.Time)
			}
			var rec struct{ BlockNumber hexutil.Uint64 }
			if r.call(&rec, "eth_getTransactionReceipt", hash); uint64(rec.BlockNumber) != open.Number {
				t.Fatalf("the transaction is in block %d, want %d", rec.BlockNumber, open.Number)
			}
			r.call(nil, "evm_mine")
			if l := r.block("latest"); l.Time < open.Time+3600 {
				t.Fatalf("the block after the pre-confirmed one is at %d, %d after it; want at least 3600", l.Time, l.Time-open.Time)
			}
		})
	}
}

// clockScript runs the mining-on-demand sequence on the node at url and
// says what each step gave, one line each ("...: ok" when it is anvil's);
// with preconfirms it leaves out a transaction sent before a clock change.
func clockScript(t *testing.T, url string, preconfirms bool) report {
	r := &rpcClient{t: t, url: url}
	var out report
	say := out.say
	// The wall clock's seconds since the clock was pinned bound the drift
	// of a time the clock (not the call) chooses.
	var pinned time.Time
	pin := func() uint64 {
		head := r.block("latest")
		t0 := uint64(time.Now().Unix()) + 100_000 + head.Number*1000
		pinned = time.Now()
		r.call(nil, "evm_setNextBlockTimestamp", t0)
		r.call(nil, "evm_mine")
		return t0
	}
	slack := func() uint64 { return uint64(math.Ceil(time.Since(pinned).Seconds())) + 1 }

	t0 := pin()
	l := r.block("latest")
	say("evm_setNextBlockTimestamp then evm_mine", l.Time == t0, "latest at %d, want %d", l.Time, t0)

	// Hardhat's time.increase as older suites write it.
	var total int64
	r.call(&total, "evm_increaseTime", 3600)
	r.call(nil, "evm_mine")
	l2 := r.block("latest")
	d := l2.Time - l.Time
	say("evm_increaseTime 3600 then evm_mine", l2.Number == l.Number+1 && d >= 3600 && d <= 3600+slack(), "block %d at +%d s (slack %d)", l2.Number-l.Number, d, slack())
	r.call(&total, "evm_increaseTime", "0x10")
	r.call(nil, "anvil_mine", "0x1", "0x0")
	l3 := r.block("latest")
	d = l3.Time - l.Time
	say("evm_increaseTime 0x10 then anvil_mine 1", l3.Number == l2.Number+1 && d >= 3616 && d <= 3616+slack(), "block %d at +%d s", l3.Number-l2.Number, d)

	// Hardhat network helpers' time.increase: latest + n as the next time.
	l = r.block("latest")
	r.call(nil, "evm_setNextBlockTimestamp", l.Time+100)
	r.call(nil, "evm_mine")
	l2 = r.block("latest")
	say("evm_setNextBlockTimestamp latest+100 then evm_mine", l2.Number == l.Number+1 && l2.Time == l.Time+100, "block %d at +%d", l2.Number-l.Number, l2.Time-l.Time)

	// anvil_mine with an interval: each block that many seconds on.
	l = r.block("latest")
	t0 = pin()
	r.call(nil, "anvil_mine", 3, 60)
	var got []string
	ok := true
	for i := uint64(1); i <= 3; i++ {
		b := r.block(hexutil.EncodeUint64(l.Number + 1 + i))
		d := b.Time - t0
		ok = ok && d >= 60*i && d <= 60*i+slack()
		got = append(got, fmt.Sprintf("+%d", d))
	}
	say("anvil_mine 3 blocks 60 s apart", ok && r.block("latest").Number == l.Number+4, "%v", got)

	// A timestamp interval: every block that many seconds after its parent.
	l = r.block("latest")
	r.call(nil, "anvil_setBlockTimestampInterval", 7)
	r.call(nil, "evm_mine")
	r.call(nil, "anvil_mine", 2)
	var steps []uint64
	for i := uint64(1); i <= 3; i++ {
		steps = append(steps, r.block(hexutil.EncodeUint64(l.Number+i)).Time-l.Time)
	}
	say("anvil_setBlockTimestampInterval 7 then 3 blocks", fmt.Sprint(steps) == "[7 14 21]", "%v", steps)
	var was bool
	r.call(&was, "anvil_removeBlockTimestampInterval")
	say("anvil_removeBlockTimestampInterval", was, "answered false")

	// anvil_setTime: the clock is that time now.
	l = r.block("latest")
	pinned = time.Now()
	r.call(nil, "anvil_setTime", l.Time+500)
	r.call(nil, "evm_mine")
	l2 = r.block("latest")
	d = l2.Time - l.Time
	say("anvil_setTime latest+500 then evm_mine", l2.Number == l.Number+1 && d >= 500 && d <= 500+slack(), "block %d at +%d", l2.Number-l.Number, d)

	// The other settings of the block environment.
	coinbase := "0x00000000000000000000000000000000000000c1"
	r.call(nil, "anvil_setCoinbase", coinbase)
	r.call(nil, "evm_mine")
	say("anvil_setCoinbase then evm_mine", r.block("latest").Miner == coinbase, "miner %s", r.block("latest").Miner)
	r.call(nil, "anvil_setBlockGasLimit", "0x1c9c381")
	r.call(nil, "evm_mine")
	say("anvil_setBlockGasLimit then evm_mine", r.block("latest").GasLimit == 0x1c9c381, "gas limit %d", r.block("latest").GasLimit)
	r.call(nil, "anvil_setNextBlockBaseFeePerGas", "0x3b9aca07")
	r.call(nil, "evm_mine")
	say("anvil_setNextBlockBaseFeePerGas then evm_mine", r.block("latest").BaseFee == 0x3b9aca07, "base fee %d", r.block("latest").BaseFee)

	// A transaction mined on its own (automine) or with the mine (manual
	// mining without pre-confirmation), then the clock: the mined block
	// after the change carries it.
	if preconfirms {
		return out
	}
	t0 = pin()
	var from []string
	r.call(&from, "eth_accounts")
	var hash string
	r.call(&hash, "eth_sendTransaction", map[string]any{"from": from[0], "to": from[0], "value": "0x1"})
	r.call(nil, "evm_increaseTime", 1000)
	r.call(nil, "evm_mine")
	l = r.block("latest")
	d = l.Time - t0
	say("a transaction, evm_increaseTime 1000, evm_mine", d >= 1000 && d <= 1000+slack(), "latest at +%d", d)
	return out
}

// scheduleScript runs the clock changes on a timed schedule and says what
// they gave, one line each.
func scheduleScript(t *testing.T, url string) report {
	r := &rpcClient{t: t, url: url}
	var out report
	say := out.say
	wall := func() uint64 { return uint64(time.Now().Unix()) }
	// evm_increaseTime: the block evm_mine seals (or one sealed on
	// schedule after it) is 3600 s ahead of the wall clock, within a
	// second either way (a node's clock and the test's read whole
	// seconds at different instants: anvil 1.7.1 answered wall +3599 in
	// one CI run).
	start := wall()
	r.call(nil, "evm_increaseTime", 3600)
	r.call(nil, "evm_mine")
	l := r.block("latest")
	say("evm_increaseTime 3600 then evm_mine", l.Time+1 >= start+3600 && l.Time <= wall()+3600+1, "latest at wall %+d", int64(l.Time)-int64(start))

	// evm_setNextBlockTimestamp: the first block sealed after the call
	// has that time.
	target := r.block("latest").Time + 10_000
	r.call(nil, "evm_setNextBlockTimestamp", target)
	after := r.block("latest")
	r.call(nil, "evm_mine")
	l = r.block("latest")
	var first uint64
	for n := after.Number; n <= l.Number; n++ {
		if b := r.block(hexutil.EncodeUint64(n)); b.Time >= target {
			first = b.Time
			break
		}
	}
	say("evm_setNextBlockTimestamp then evm_mine", first == target, "first block at or after %d is at %d", target, first)
	return out
}

// report is what a script's steps gave, one line each: "step: ok" when
// the step gave what anvil gives, otherwise what it gave.
type report []string

func (r *report) say(step string, ok bool, detail string, a ...any) {
	if ok {
		*r = append(*r, step+": ok")
	} else {
		*r = append(*r, step+": "+fmt.Sprintf(detail, a...))
	}
}

// rpcClient calls one node; any error fails the test.
type rpcClient struct {
	t   *testing.T
	url string
}

func (r *rpcClient) call(out any, method string, params ...any) {
	r.t.Helper()
	if params == nil {
		params = []any{}
	}
	raw, _ := json.Marshal(params)
	a := post(r.t, r.url, call{Method: method, Params: raw})
	if a.Error != nil {
		r.t.Fatalf("%s %s: %d %s", method, raw, a.Error.Code, a.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			r.t.Fatalf("%s: %v: %s", method, err, a.Result)
		}
	}
}

type blockInfo struct {
	Number, Time, GasLimit, BaseFee uint64
	Miner                           string
}

func (r *rpcClient) block(tag string) blockInfo {
	r.t.Helper()
	var b struct {
		Number        hexutil.Uint64 `json:"number"`
		Timestamp     hexutil.Uint64 `json:"timestamp"`
		GasLimit      hexutil.Uint64 `json:"gasLimit"`
		BaseFeePerGas hexutil.Uint64 `json:"baseFeePerGas"`
		Miner         string         `json:"miner"`
	}
	r.call(&b, "eth_getBlockByNumber", tag, false)
	return blockInfo{Number: uint64(b.Number), Time: uint64(b.Timestamp), GasLimit: uint64(b.GasLimit), BaseFee: uint64(b.BaseFeePerGas), Miner: b.Miner}
}

// waitPending waits until the transaction is pre-confirmed.
func (r *rpcClient) waitPending(hash string) {
	r.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var rec json.RawMessage
		r.call(&rec, "eth_getTransactionReceipt", hash)
		if string(rec) != "null" {
			return
		}
	}
	r.t.Fatalf("transaction %s not pre-confirmed after 20 s", hash)
}

// startNode starts an in-memory node with cfg until the test ends.
func startNode(t *testing.T, cfg node.Config) string {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	return n.URL()
}

// startAnvil runs the anvil at bin on a free loopback port until the test
// ends.
func startAnvil(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, append([]string{"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--silent"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`)); err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatal("anvil did not start")
		}
	}
}
