package sequencer_test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// Benchmarks of the whole path over HTTP on loopback, with the WAL on disk:
//
//	go test -run XXX -bench SendToPending -benchtime 200x ./sequencer/
//	go test -run XXX -bench Throughput -benchtime 20000x ./sequencer/

type benchNode struct {
	n    *node.Node
	url  string
	cl   *http.Client
	keys []*ecdsa.PrivateKey
}

// startBenchNode runs a node with the default 200 ms / 2 s timing on a dev
// genesis with a 300M gas limit (room for >2,000 transfers/s) and `senders`
// extra funded accounts: the plain-Ethereum dev chain, or with
// PRECONF_BENCH_CHAIN=op the OP-stack one (L1-attributes deposits, L1 fees).
func startBenchNode(b *testing.B, senders int) *benchNode {
	b.Helper()
	g := chain.DevGenesis()
	if os.Getenv("PRECONF_BENCH_CHAIN") == "op" {
		var err error
		if g, err = chain.DevL2Genesis(); err != nil {
			b.Fatal(err)
		}
	}
	g.GasLimit = 300_000_000
	bn := &benchNode{}
	for i := 0; i < senders; i++ {
		seed := crypto.Keccak256([]byte(fmt.Sprintf("preconf bench sender %d", i)))
		key, err := crypto.ToECDSA(seed)
		if err != nil {
			b.Fatal(err)
		}
		bn.keys = append(bn.keys, key)
		g.Alloc[crypto.PubkeyToAddress(key.PublicKey)] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))}
	}
	n, err := node.New(node.Config{
		DataDir: b.TempDir(), Genesis: g, HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: sequencer.DefaultBlockTime, Interval: sequencer.DefaultInterval},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Start(nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	bn.n, bn.url = n, n.URL()
	bn.cl = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	return bn
}

func (bn *benchNode) call(method string, params ...any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := bn.cl.Post(bn.url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Error != nil {
		return nil, fmt.Errorf("%s", out.Error.Message)
	}
	return out.Result, nil
}

func transfer(key *ecdsa.PrivateKey, nonce uint64) hexutil.Bytes {
	to := common.Address{0xaa}
	tx, _ := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(chain.DevChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(chain.DevChainID), Nonce: nonce, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei),
		GasTipCap: big.NewInt(1), To: &to, Value: big.NewInt(1),
	})
	raw, _ := tx.MarshalBinary()
	return raw
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func reportMs(b *testing.B, d []time.Duration, prefix string) {
	b.ReportMetric(float64(percentile(d, 0.5).Microseconds())/1000, prefix+"-p50-ms")
	b.ReportMetric(float64(percentile(d, 0.99).Microseconds())/1000, prefix+"-p99-ms")
}

func reportReadable(b *testing.B, st *sequencer.Stats) {
	if c := st.ReadableCount.Load(); c > 0 {
		b.ReportMetric(float64(st.ReadableSum.Load())/float64(c)/1e6, "built-readable-mean-ms")
		b.ReportMetric(float64(st.ReadableMax.Load())/1e6, "built-readable-max-ms")
		b.ReportMetric(float64(st.VisibleSum.Load())/float64(c)/1e6, "durable-readable-mean-ms")
		b.ReportMetric(float64(st.VisibleMax.Load())/1e6, "durable-readable-max-ms")
	}
	b.ReportMetric(float64(st.MaxSeal.Load())/1e6, "seal-max-ms")
}

// BenchmarkSendToPending: one transaction at a time, sent at a random phase
// of the flashblock interval; the time from sending until it is visible at
// pending (eth_sendRawTransactionSync returns when its flashblock is
// published; a second probe polls eth_getTransactionReceipt, which finds a
// pre-confirmed transaction's receipt: eth_getTransactionCount at pending
// counts a transaction from its admission, before it executes).
func BenchmarkSendToPending(b *testing.B) {
	bn := startBenchNode(b, 2)
	rng := rand.New(rand.NewSource(1))
	var syncLat, pollLat []time.Duration
	nonces := make([]uint64, 2)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Duration(rng.Int63n(int64(sequencer.DefaultInterval))))
		// Sync send (account 0).
		raw := transfer(bn.keys[0], nonces[0])
		start := time.Now()
		if _, err := bn.call("eth_sendRawTransactionSync", raw); err != nil {
			b.Fatal(err)
		}
		syncLat = append(syncLat, time.Since(start))
		nonces[0]++
		// Plain send then poll for the receipt (account 1).
		time.Sleep(time.Duration(rng.Int63n(int64(sequencer.DefaultInterval))))
		raw = transfer(bn.keys[1], nonces[1])
		start = time.Now()
		hash, err := bn.call("eth_sendRawTransaction", raw)
		if err != nil {
			b.Fatal(err)
		}
		nonces[1]++
		for {
			res, err := bn.call("eth_getTransactionReceipt", hash)
			if err != nil {
				b.Fatal(err)
			}
			if string(res) != "null" {
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		pollLat = append(pollLat, time.Since(start))
	}
	b.StopTimer()
	reportMs(b, syncLat, "sync")
	reportMs(b, pollLat, "poll")
	reportReadable(b, bn.n.Sequencer.Stats())
}

// BenchmarkThroughput: b.N transfers from 256 senders through 64 concurrent
// HTTP clients with eth_sendRawTransaction, while 4 readers call
// eth_getBalance at pending in a loop. Reports pre-confirmed transfers per
// second and the reads' latency.
func BenchmarkThroughput(b *testing.B) {
	const senders, clients, readers = 256, 64, 4
	bn := startBenchNode(b, senders)
	per := (b.N + senders - 1) / senders
	var work chan hexutil.Bytes = make(chan hexutil.Bytes, b.N)
	for n := 0; n < per; n++ { // nonce-major: every sender's next nonce in turn
		for s := 0; s < senders && len(work) < b.N; s++ {
			work <- transfer(bn.keys[s], uint64(n))
		}
	}
	close(work)
	st := bn.n.Sequencer.Stats()
	base := st.Txs.Load()
	var (
		stop    atomic.Bool
		readsMu sync.Mutex
		reads   []time.Duration
		wg, rwg sync.WaitGroup
		errs    atomic.Int64
	)
	for r := 0; r < readers; r++ {
		rwg.Add(1)
		go func(r int) {
			defer rwg.Done()
			addr := crypto.PubkeyToAddress(bn.keys[r].PublicKey)
			var local []time.Duration
			for !stop.Load() {
				t := time.Now()
				if _, err := bn.call("eth_getBalance", addr, "pending"); err != nil {
					errs.Add(1)
				}
				local = append(local, time.Since(t))
			}
			readsMu.Lock()
			reads = append(reads, local...)
			readsMu.Unlock()
		}(r)
	}
	// PRECONF_BENCH_RATE paces the sends (transfers per second); unset,
	// they go as fast as the clients manage.
	rate, _ := strconv.Atoi(os.Getenv("PRECONF_BENCH_RATE"))
	b.ResetTimer()
	start := time.Now()
	if rate > 0 {
		paced := make(chan hexutil.Bytes, clients)
		go func(src <-chan hexutil.Bytes) {
			defer close(paced)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			sent := 0
			for range tick.C {
				due := int(time.Since(start).Seconds() * float64(rate))
				for ; sent < due; sent++ {
					raw, ok := <-src
					if !ok {
						return
					}
					paced <- raw
				}
			}
		}(work)
		work = paced
	}
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for raw := range work {
				if _, err := bn.call("eth_sendRawTransaction", raw); err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for st.Txs.Load()-base < uint64(b.N) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop.Store(true)
	rwg.Wait()
	done := st.Txs.Load() - base
	b.ReportMetric(float64(done)/elapsed.Seconds(), "preconf-tx/s")
	reportMs(b, reads, "getBalance")
	b.ReportMetric(float64(errs.Load()), "errors")
	reportReadable(b, st)
	if done < uint64(b.N) {
		b.Errorf("only %d of %d transfers pre-confirmed", done, b.N)
	}
}
