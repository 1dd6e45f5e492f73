package follower_test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/pending"
)

// presign signs n transfers per dev key (ten keys) to fresh addresses.
func presign(b *testing.B, chainID *big.Int, perKey int) [][][]byte {
	signer := types.LatestSignerForChainID(chainID)
	out := make([][][]byte, len(chain.DevKeys))
	for k, hex := range chain.DevKeys {
		key, err := crypto.HexToECDSA(hex)
		if err != nil {
			b.Fatal(err)
		}
		out[k] = signTransfers(key, signer, perKey, k)
	}
	return out
}

func signTransfers(key *ecdsa.PrivateKey, signer types.Signer, n, k int) [][]byte {
	raws := make([][]byte, n)
	for i := range n {
		to := common.Address{0xbe, byte(k), 18: byte(i >> 8), 19: byte(i)}
		tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
			ChainID: signer.ChainID(), Nonce: uint64(i), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9),
			Gas: 21000, To: &to, Value: big.NewInt(1),
		})
		raws[i], _ = tx.MarshalBinary()
	}
	return raws
}

// sendBatch submits raw transactions in one JSON-RPC batch.
func sendBatch(url string, raws [][]byte) error {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range raws {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","id":%d,"method":"eth_sendRawTransaction","params":["%s"]}`, i, hexutil.Encode(r))
	}
	buf.WriteByte(']')
	resp, err := http.Post(url, "application/json", &buf)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answers []struct {
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answers); err != nil {
		return err
	}
	for _, a := range answers {
		if a.Error != nil {
			return fmt.Errorf("send: %s", a.Error.Message)
		}
	}
	return nil
}

// BenchmarkFlashblockVisible measures, on a follower of a sequencing dev
// node (loopback, 200 ms flashblocks), the time from a flashblock frame's
// arrival to the snapshot showing it being published, for flashblocks of
// about 100 transfers to fresh addresses (every recipient is an upstream
// read). One op is one 100-transaction flashblock.
func BenchmarkFlashblockVisible(b *testing.B) {
	n, _ := sequencerNode(&testing.T{}, 2*time.Second, 200*time.Millisecond)
	defer n.Close()
	feedURL := "ws" + strings.TrimPrefix(n.URL(), "http") + "/flashblocks"
	var (
		mu     sync.Mutex
		big    []time.Duration
		all    []time.Duration
		txSeen int
	)
	src := new(pending.Source)
	var fl *follower.Follower
	f, err := follower.New(follower.Config{
		Upstream: n.URL(), Feed: feedURL, Chain: n.Chain.Config(), PollInterval: 20 * time.Millisecond,
		Observe: func(s *pending.Snapshot, d time.Duration) {
			mu.Lock()
			all = append(all, d)
			txSeen += s.NewTxs
			if s.NewTxs >= 90 {
				big = append(big, d)
				if len(big)%5 == 0 {
					st := fl.Status().Counters
					b.Logf("%d txs in %v: decode %dµs prefetch %dµs exec %dµs snapshot %dµs", s.NewTxs, d, st["last_decode_us"], st["last_prefetch_us"], st["last_exec_us"], st["last_snapshot_us"])
				}
			}
			mu.Unlock()
		},
	}, src)
	if err != nil {
		b.Fatal(err)
	}
	fl = f
	if err := f.CheckUpstream(b.Context()); err != nil {
		b.Fatal(err)
	}
	f.Start()
	defer f.Stop()
	time.Sleep(500 * time.Millisecond)

	const perFB = 100
	perKey := (b.N*perFB)/len(chain.DevKeys) + 1
	raws := presign(b, n.Chain.Config().ChainID, perKey)
	b.ResetTimer()
	for i := range b.N {
		batch := make([][]byte, 0, perFB)
		for k := range raws {
			for j := i * perFB / len(raws); j < (i+1)*perFB/len(raws) && j < perKey; j++ {
				batch = append(batch, raws[k][j])
			}
		}
		if err := sendBatch(n.URL(), batch); err != nil {
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // one flashblock interval
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := txSeen >= b.N*perFB
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(big)
	slices.Sort(all)
	if len(big) > 0 {
		b.ReportMetric(float64(big[len(big)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(big[(len(big)*99)/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(big[len(big)-1].Microseconds())/1000, "max-ms")
	}
	b.ReportMetric(float64(len(big)), "fb≥90tx")
	b.ReportMetric(float64(len(all)), "flashblocks")
	st := f.Status()
	b.Logf("follower: %d txs seen, %d flashblocks (%d with ≥90 txs); block hash matches %d mismatches %d; upstream calls %d",
		txSeen, len(all), len(big), st.Counters["block_hash_match"], st.Counters["block_hash_mismatch"], st.Counters["upstream_calls"])
}
