package sequencer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
)

type crashNode struct {
	t      *testing.T
	bin    string
	dir    string
	args   func(start int) []string // mode flags of the start-th start
	starts int
	cmd    *exec.Cmd
	exited chan struct{}
	url    string
	http   *http.Client
	logs   *os.File
}

func (n *crashNode) start() {
	n.t.Helper()
	// A fresh free port for every start: a fixed one (inside the kernel's
	// ephemeral range) can be taken by any client socket of a test running
	// in parallel, and a port nobody listens on cannot be answered for by a
	// stray process.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.t.Fatalf("no free loopback port: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	n.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	args := append([]string{"--datadir", n.dir, "--http.port", fmt.Sprint(port), "--log.level", "info"}, n.args(n.starts)...)
	n.starts++
	n.cmd = exec.Command(n.bin, args...)
	n.cmd.Stdout, n.cmd.Stderr = n.logs, n.logs
	n.cmd.SysProcAttr = childAttr() // never outlive the test
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	exited := make(chan struct{})
	n.exited = exited
	go func(cmd *exec.Cmd) {
		cmd.Wait()
		close(exited)
	}(n.cmd)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			n.t.Fatalf("node exited at start; log in %s", n.logs.Name())
		default:
		}
		if _, err := n.call("eth_blockNumber"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node did not come up; log in %s", n.logs.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL: no shutdown code runs.
func (n *crashNode) kill() {
	n.cmd.Process.Kill()
	<-n.exited
}

func (n *crashNode) running() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcErr) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

func (n *crashNode) call(method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := n.http.Post(n.url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Error != nil {
		return nil, out.Error
	}
	return out.Result, nil
}

type ackedTx struct {
	hash  common.Hash
	block uint64
	index uint64
	sync  bool // acknowledged as pre-confirmed (else: only admitted)
}

// TestCrashRecovery builds the real binary, streams transactions at it and
// kills it with SIGKILL at random moments, five times. Every transaction
// whose pre-confirmation was acknowledged (eth_sendRawTransactionSync
// returned a receipt) must afterwards be in the chain at exactly the block
// and index the receipt promised; every transaction only admitted
// (eth_sendRawTransaction returned its hash) must be in the chain, and so
// must every user deposit injected (eth_sendTransaction with a mint); and
// every block seen sealed must keep its hash.
func TestCrashRecovery(t *testing.T) {
	crashRecovery(t, func(int) []string { return []string{"--block-time", "1s", "--flashblock-interval", "100ms"} }, false, true)
}

// TestCrashRecoveryManual is TestCrashRecovery under manual mining: blocks
// are sealed only by evm_mine and anvil_mine calls made at random moments,
// and the node restarts alternately with flashblocks every 100 ms
// (transactions pre-confirmed, empty blocks re-opened at the first one's
// time) and without (transactions pooled until mined). A mined block whose
// call returned must keep its hash, as a scheduled one does.
func TestCrashRecoveryManual(t *testing.T) {
	crashRecovery(t, func(start int) []string {
		interval := "100ms"
		if start%2 == 1 {
			interval = "0"
		}
		return []string{"--block-time", "0", "--flashblock-interval", interval}
	}, true, true)
}

// TestCrashRecoveryAutomine is TestCrashRecoveryManual under automine: an
// eth_sendRawTransaction answers once its block is mined, with the one
// fsync of the block's final flashblock record (recFinalFlashblock) as its
// durable point, the next block opened and the disk work done after the
// answer (afterMine). Every transaction whose send returned must be in the
// chain, and every block seen sealed must keep its hash. No deposits are
// injected: under automine each one mines a block of its own, too few to
// judge on a loaded machine; TestCrashRecoveryManual's mines take the same
// path (mineOne) with deposits.
func TestCrashRecoveryAutomine(t *testing.T) {
	crashRecovery(t, func(int) []string { return []string{"--automine", "--flashblock-interval", "100ms"} }, true, false)
}

// TestCrashRecoveryFork is TestCrashRecovery on a fork of another node's
// chain (a second process, never killed): the forked chain's blocks, state
// roots and recovery must hold as the local chain's do.
func TestCrashRecoveryFork(t *testing.T) {
	tmp, bin, logs := crashBinary(t, "upstream.log")
	defer logs.Close()
	timed := []string{"--block-time", "1s", "--flashblock-interval", "100ms"}
	up := &crashNode{t: t, bin: bin, dir: filepath.Join(tmp, "upstream"), args: func(int) []string { return timed },
		http: &http.Client{Timeout: 15 * time.Second}, logs: logs}
	up.start()
	defer up.kill()
	// The upstream runs the OP-stack dev chain, which a fork knows by its
	// genesis; a fork's blocks take no injected deposits.
	crashRecovery(t, func(int) []string { return append(timed, "--fork-url", up.url) }, false, false)
}

// crashRecovery runs the crash test with the node flags args gives each
// start; manual mines blocks by evm_mine and anvil_mine calls; inject
// injects user deposits meanwhile (the OP-stack dev chain).
func crashRecovery(t *testing.T, args func(start int) []string, manual, inject bool) {
	tmp, bin, logs := crashBinary(t, "node.log")
	defer logs.Close()
	n := &crashNode{t: t, bin: bin, dir: filepath.Join(tmp, "data"), args: args,
		http: &http.Client{Timeout: 15 * time.Second}, logs: logs}
	n.start()
	defer func() {
		if n.running() {
			n.kill()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			if raw, err := os.ReadFile(logs.Name()); err == nil {
				if len(raw) > 6000 {
					raw = raw[len(raw)-6000:]
				}
				t.Logf("node log tail:\n%s", raw)
			}
		}
	})

	var keys []*ecdsa.PrivateKey
	for _, k := range chain.DevKeys[:5] {
		key, _ := crypto.HexToECDSA(k)
		keys = append(keys, key)
	}
	signer := types.LatestSignerForChainID(big.NewInt(chain.DevChainID))
	var (
		mu       sync.Mutex
		acked    []ackedTx
		deposits []common.Hash
		sealed   = map[uint64]common.Hash{}
	)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	const kills = 5
	for round := 0; round <= kills; round++ {
		// Resynchronise nonces: wait until re-admitted transactions have
		// executed, then take the pending nonce.
		waitPoolEmpty(t, n, manual)
		nonces := make([]uint64, len(keys))
		for i, k := range keys {
			res, err := n.call("eth_getTransactionCount", crypto.PubkeyToAddress(k.PublicKey), "pending")
			if err != nil {
				t.Fatal(err)
			}
			var q hexutil.Uint64
			json.Unmarshal(res, &q)
			nonces[i] = uint64(q)
		}
		if round == kills {
			break
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i, key := range keys {
			wg.Add(1)
			go func(i int, key *ecdsa.PrivateKey) {
				defer wg.Done()
				to := common.BigToAddress(big.NewInt(int64(0x1000 + i)))
				for ctx.Err() == nil {
					tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(chain.DevChainID), Nonce: nonces[i], Gas: 21000,
						GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &to, Value: big.NewInt(1)})
					raw, _ := tx.MarshalBinary()
					syncSend := i != 0 // account 0 only gets pool acknowledgements
					method := "eth_sendRawTransaction"
					if syncSend {
						method = "eth_sendRawTransactionSync"
					}
					res, err := n.call(method, hexutil.Bytes(raw))
					if err != nil {
						return // the node died mid-call: not acknowledged
					}
					a := ackedTx{hash: tx.Hash(), sync: syncSend}
					if syncSend {
						var rec struct {
							BlockNumber      hexutil.Uint64 `json:"blockNumber"`
							TransactionIndex hexutil.Uint64 `json:"transactionIndex"`
						}
						if json.Unmarshal(res, &rec) != nil {
							return
						}
						a.block, a.index = uint64(rec.BlockNumber), uint64(rec.TransactionIndex)
					} else {
						time.Sleep(5 * time.Millisecond)
					}
					nonces[i]++
					mu.Lock()
					acked = append(acked, a)
					mu.Unlock()
				}
			}(i, key)
		}
		if manual {
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				mineAtRandom(ctx, n, rand.New(rand.NewSource(seed)), func(num uint64, hash common.Hash) {
					mu.Lock()
					sealed[num] = hash
					mu.Unlock()
				})
			}(rng.Int63())
		}
		// User deposits injected meanwhile (the default dev chain is an
		// OP-stack one): each acknowledged one must survive too.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; inject && ctx.Err() == nil; k++ {
				from := common.Address{0xde, byte(round), byte(k >> 8), byte(k)}
				res, err := n.call("eth_sendTransaction", map[string]any{"from": from, "to": from, "mint": "0x64", "value": "0x1", "gas": "0x5208"})
				if err != nil {
					return // the node died mid-call: not acknowledged
				}
				var h common.Hash
				if json.Unmarshal(res, &h) != nil {
					return
				}
				mu.Lock()
				deposits = append(deposits, h)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}()
		// Note sealed blocks while streaming.
		stopAt := time.Now().Add(time.Duration(300+rng.Intn(1700)) * time.Millisecond)
		for time.Now().Before(stopAt) {
			if res, err := n.call("eth_getBlockByNumber", "latest", false); err == nil {
				var b struct {
					Number hexutil.Uint64 `json:"number"`
					Hash   common.Hash    `json:"hash"`
				}
				if json.Unmarshal(res, &b) == nil {
					mu.Lock()
					sealed[uint64(b.Number)] = b.Hash
					mu.Unlock()
				}
			}
			time.Sleep(time.Duration(20+rng.Intn(80)) * time.Millisecond)
		}
		if round%2 == 1 {
			// Aim at the sealing window: kill right after a new head shows
			// (under manual mining, one the miner asked for).
			first, _ := n.call("eth_blockNumber")
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
				if cur, err := n.call("eth_blockNumber"); err == nil && string(cur) != string(first) {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		n.kill()
		cancel()
		wg.Wait()
		t.Logf("round %d: killed; %d acknowledged so far", round, len(acked))
		n.start()
	}
	// Everything acknowledged is (or is about to be) sealed.
	syncCount := 0
	for _, a := range acked {
		var rec struct {
			BlockNumber      hexutil.Uint64 `json:"blockNumber"`
			TransactionIndex hexutil.Uint64 `json:"transactionIndex"`
		}
		res, err := n.call("eth_getTransactionReceipt", a.hash)
		if err != nil || string(res) == "null" || json.Unmarshal(res, &rec) != nil {
			t.Errorf("acknowledged tx %v lost after crashes (%v)", a.hash, err)
			continue
		}
		if a.sync {
			syncCount++
			if uint64(rec.BlockNumber) != a.block || uint64(rec.TransactionIndex) != a.index {
				t.Errorf("tx %v pre-confirmed at block %d index %d, now at block %d index %d", a.hash, a.block, a.index, rec.BlockNumber, rec.TransactionIndex)
			}
		}
	}
	// Acknowledged deposits: in the chain, once (the last ones queued for
	// the next block: under manual mining, the one a mine opens).
	for _, h := range deposits {
		deadline := time.Now().Add(20 * time.Second)
		for {
			res, err := n.call("eth_getTransactionReceipt", h)
			if err == nil && string(res) != "null" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("acknowledged deposit %v lost after crashes (%v)", h, err)
				break
			}
			if manual {
				n.call("evm_mine")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// ... and each in exactly one block.
	seen := map[common.Hash]int{}
	res, _ := n.call("eth_blockNumber")
	var head hexutil.Uint64
	json.Unmarshal(res, &head)
	for num := uint64(1); num <= uint64(head); num++ {
		res, err := n.call("eth_getBlockByNumber", hexutil.Uint64(num), false)
		var b struct {
			Transactions []common.Hash `json:"transactions"`
		}
		if err != nil || json.Unmarshal(res, &b) != nil {
			t.Fatalf("block %d: %v", num, err)
		}
		for _, h := range b.Transactions {
			seen[h]++
		}
	}
	for _, h := range deposits {
		if seen[h] > 1 {
			t.Errorf("deposit %v included %d times", h, seen[h])
		}
	}
	for num, hash := range sealed {
		res, err := n.call("eth_getBlockByNumber", hexutil.Uint64(num), false)
		var b struct {
			Hash common.Hash `json:"hash"`
		}
		if err != nil || json.Unmarshal(res, &b) != nil || b.Hash != hash {
			t.Errorf("sealed block %d was %v, now %v (%v)", num, hash, b.Hash, err)
		}
	}
	if syncCount < 10 || len(acked) == syncCount || (inject && len(deposits) < 10) {
		t.Fatalf("too little traffic to judge: %d acknowledged, %d pre-confirmations, %d deposits", len(acked), syncCount, len(deposits))
	}
	t.Logf("%d kills: %d pre-confirmations, %d pool admissions and %d deposits acknowledged, all present; %d sealed blocks kept their hashes", kills, syncCount, len(acked)-syncCount, len(deposits), len(sealed))
}

// mineAtRandom seals blocks by evm_mine and anvil_mine (one to three
// blocks) at random moments until ctx ends, and reports the head after each
// call that returned: those blocks are acknowledged.
func mineAtRandom(ctx context.Context, n *crashNode, rng *rand.Rand, mined func(uint64, common.Hash)) {
	for ctx.Err() == nil {
		time.Sleep(time.Duration(20+rng.Intn(200)) * time.Millisecond)
		var err error
		if rng.Intn(2) == 0 {
			_, err = n.call("evm_mine")
		} else {
			_, err = n.call("anvil_mine", hexutil.Uint64(1+rng.Intn(3)))
		}
		if err != nil {
			return // the node died mid-call: not acknowledged
		}
		res, err := n.call("eth_getBlockByNumber", "latest", false)
		var b struct {
			Number hexutil.Uint64 `json:"number"`
			Hash   common.Hash    `json:"hash"`
		}
		if err != nil || json.Unmarshal(res, &b) != nil {
			return
		}
		mined(uint64(b.Number), b.Hash)
	}
}

// waitPoolEmpty waits until the pool is empty; manual mines blocks for it.
func waitPoolEmpty(t *testing.T, n *crashNode, manual bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if manual {
			if _, err := n.call("evm_mine"); err != nil {
				t.Fatalf("evm_mine: %v", err)
			}
		}
		res, err := n.call("txpool_status")
		var st map[string]hexutil.Uint
		if err == nil && json.Unmarshal(res, &st) == nil && st["pending"] == 0 && st["queued"] == 0 {
			return
		}
		if time.Now().After(deadline) {
			content, _ := n.call("txpool_inspect")
			if len(content) > 3000 {
				content = content[:3000]
			}
			t.Fatalf("pool did not drain: %s %v\n%s", res, err, content)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crashBinary builds preconf into a test directory and opens a log file
// there for the nodes it starts; a crash test is skipped in -short mode.
func crashBinary(t *testing.T, logName string) (tmp, bin string, logs *os.File) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and kills a real node")
	}
	tmp = t.TempDir()
	bin = filepath.Join(tmp, "preconf")
	build := exec.Command("go", "build", "-o", bin, "./cmd/preconf")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	logs, err := os.Create(filepath.Join(tmp, logName))
	if err != nil {
		t.Fatal(err)
	}
	return tmp, bin, logs
}
