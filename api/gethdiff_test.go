package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/preconf/preconf/conformance"
	"github.com/preconf/preconf/internal/peers"
)

// TestDiffAgainstGeth replays a few thousand read requests (every block,
// transaction, receipt and raw encoding of the execution-apis chain, log
// filters, fee history, proofs, not-found and bad-input cases) against this
// node and a go-ethereum node on the same chain, and requires identical
// answers: the same bytes for results, the same code for errors.
//
// It needs a geth v1.17.5 binary (peers.GethForTest: $PRECONF_GETH, or the
// one the bench harness keeps in ~/.cache/preconf-bench/bin/geth, built
// there under CI=true).
func TestDiffAgainstGeth(t *testing.T) {
	dir := conformance.Fixtures(t)
	gethBin := peers.GethForTest(t)
	genesisFile, chainFile := filepath.Join(dir, "genesis.json"), filepath.Join(dir, "chain.rlp")
	gethURL := startGeth(t, gethBin, genesisFile, chainFile)

	n := startFixtureNode(t, genesisFile, chainFile)

	client := &http.Client{Timeout: 30 * time.Second}
	post := func(url string, body []byte) []byte { return bytes.TrimSpace(postBody(t, client, url, body)) }
	request := func(method string, params ...any) []byte {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	result := func(method string, params ...any) json.RawMessage {
		var resp struct{ Result json.RawMessage }
		if err := json.Unmarshal(post(gethURL, request(method, params...)), &resp); err != nil {
			t.Fatal(err)
		}
		return resp.Result
	}

	var reqs [][]byte
	add := func(method string, params ...any) { reqs = append(reqs, request(method, params...)) }
	var head hexNum
	json.Unmarshal(result("eth_blockNumber"), &head)
	var txs []string
	for i := uint64(0); i <= uint64(head)+1; i++ {
		num := fmt.Sprintf("0x%x", i)
		add("eth_getBlockByNumber", num, false)
		add("eth_getBlockByNumber", num, true)
		add("eth_getHeaderByNumber", num)
		add("eth_getBlockReceipts", num)
		add("eth_getBlockTransactionCountByNumber", num)
		add("eth_getUncleCountByBlockNumber", num)
		add("eth_getUncleByBlockNumberAndIndex", num, "0x0")
		add("eth_getTransactionByBlockNumberAndIndex", num, "0x0")
		add("eth_getTransactionByBlockNumberAndIndex", num, "0x40")
		add("eth_getRawTransactionByBlockNumberAndIndex", num, "0x1")
		add("debug_getRawHeader", num)
		add("debug_getRawBlock", num)
		add("debug_getRawReceipts", num)
		var b *struct {
			Hash         string   `json:"hash"`
			Transactions []string `json:"transactions"`
		}
		json.Unmarshal(result("eth_getBlockByNumber", num, false), &b)
		if b == nil {
			continue
		}
		add("eth_getBlockByHash", b.Hash, true)
		add("eth_getHeaderByHash", b.Hash)
		add("eth_getBlockTransactionCountByHash", b.Hash)
		add("eth_getUncleByBlockHashAndIndex", b.Hash, "0x0")
		add("eth_getTransactionByBlockHashAndIndex", b.Hash, "0x1")
		add("eth_getBlockReceipts", map[string]any{"blockHash": b.Hash, "requireCanonical": true})
		add("eth_getLogs", map[string]any{"blockHash": b.Hash})
		txs = append(txs, b.Transactions...)
	}
	for _, h := range txs {
		add("eth_getTransactionByHash", h)
		add("eth_getTransactionReceipt", h)
		add("eth_getRawTransactionByHash", h)
		add("debug_getRawTransaction", h)
	}
	unknown := "0x00000000000000000000000000000000000000000000000000000000000000ff"
	for _, m := range []string{"eth_getTransactionByHash", "eth_getTransactionReceipt", "debug_getRawTransaction", "eth_getHeaderByHash",
		"debug_getRawHeader", "debug_getRawBlock", "debug_getRawReceipts", "eth_getBlockReceipts", "eth_getBlockTransactionCountByHash"} {
		add(m, unknown)
	}
	contract := "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"
	emit := "0x00000000000000000000000000000000000000000000000000000000656d6974"
	for _, f := range []map[string]any{
		{}, {"fromBlock": "earliest", "toBlock": "latest"}, {"fromBlock": "0x1", "address": contract},
		{"fromBlock": "0x1", "address": []string{contract, "0x0000000000000000000000000000000000000001"}},
		{"fromBlock": "0x1", "topics": []any{emit}}, {"fromBlock": "0x1", "topics": []any{nil, nil, nil}},
		{"fromBlock": "0x1", "topics": []any{[]any{emit, nil}}}, {"fromBlock": "0x1", "topics": []any{[]any{}, []any{}}},
		{"fromBlock": "0x40"}, {"fromBlock": "0x1", "toBlock": "0x40"}, {"fromBlock": "0x5", "toBlock": "0x4"},
		{"topics": []any{nil, nil, nil, nil, nil}}, {"address": "0x12"}, {"address": []any{1}}, {"topics": []any{5}},
		{"blockHash": unknown}, {"fromBlock": "0x7fffffffffffffff"},
	} {
		add("eth_getLogs", f)
	}
	for _, p := range [][]any{
		{"0x5", "latest", []float64{10, 50, 90}}, {"0x40", "0x20", []float64{}}, {1, "latest"}, {"0x0", "latest", nil},
		{"0x2", "latest", []float64{50, 10}}, {"0x2", "latest", []float64{101}}, {"0x2", "0x40", nil}, {"10", "earliest", []float64{1}},
	} {
		add("eth_feeHistory", p...)
	}
	for _, m := range []string{"eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_baseFee", "eth_blobBaseFee", "eth_config"} {
		add(m)
	}
	for _, addr := range []string{contract, "0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f", "0x0000000000000000000000000000000000000099"} {
		for _, blk := range []any{"latest", "0x1", "0x2d", map[string]any{"blockNumber": "0x10"}} {
			add("eth_getProof", addr, []string{"0x0", "0x1", "0x0000000000000000000000000000000000000000000000000000000000000002", "3"}, blk)
		}
	}

	// Odd and bad input: tags and numbers in the wrong form, nulls for
	// required arguments, surplus arguments.
	for _, c := range [][2]string{
		{"eth_getBlockByNumber", `[{"blockNumber":"0x1"},false]`}, {"eth_getBlockByNumber", `["0x8000000000000000",false]`},
		{"eth_getBlockByNumber", `["0x1",null]`}, {"eth_getBlockByNumber", `["0x01",false]`}, {"eth_getBlockByNumber", `[]`},
		{"eth_getBlockByHash", `[null,false]`}, {"eth_getBlockByHash", `["0x1234",false]`},
		{"eth_getTransactionByBlockNumberAndIndex", `["0x1","0x10000000000000000"]`}, {"eth_getTransactionByHash", `["0x00","x"]`},
		{"eth_getProof", `["` + contract + `",null,"latest"]`}, {"eth_getProof", `["` + contract + `",["0x"],"latest"]`},
		{"eth_getLogs", `[null]`}, {"eth_getLogs", `[{"fromBlock":1}]`}, {"eth_getLogs", `["x"]`}, {"eth_getLogs", `[{"topics":[null,[null]]}]`},
		{"eth_feeHistory", `["abc","latest",[]]`}, {"eth_feeHistory", `["0x1","latest",[1,"x"]]`}, {"eth_feeHistory", `["0x1","latest",[],1]`},
		{"eth_getBlockReceipts", `[]`}, {"debug_getRawBlock", `["earliest"]`}, {"eth_gasPrice", `[1]`}, {"eth_config", `[1]`},
	} {
		reqs = append(reqs, []byte(`{"jsonrpc":"2.0","id":1,"method":"`+c[0]+`","params":`+c[1]+`}`))
	}

	same := diffAnswers(t, reqs, n.URL(), gethURL, "geth")
	t.Logf("%d of %d answers identical to geth's", same, len(reqs))
}

// diffAnswers posts every request to this node (ours) and a peer, reports
// each pair of answers that differ (results byte for byte, errors by code)
// and returns how many agree.
func diffAnswers(t *testing.T, reqs [][]byte, ours, peer, name string) int {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	same := 0
	for _, req := range reqs {
		a, b := bytes.TrimSpace(postBody(t, client, ours, req)), bytes.TrimSpace(postBody(t, client, peer, req))
		if bytes.Equal(a, b) || sameErrorCode(a, b) {
			same++
			continue
		}
		t.Errorf("request %s\n ours: %.1200s\n %s: %.1200s", req, a, name, b)
	}
	return same
}

type hexNum uint64

func (h *hexNum) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := strconv.ParseUint(s, 0, 64)
	*h = hexNum(v)
	return err
}

// sameErrorCode: both answers are errors with the same code (messages are
// not part of the contract, as in the execution-apis fixtures).
func sameErrorCode(a, b []byte) bool {
	var x, y struct {
		Error *struct{ Code int } `json:"error"`
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return x.Error != nil && y.Error != nil && x.Error.Code == y.Error.Code
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startGeth initialises, imports and serves the chain with geth (archive
// mode, loopback only) and returns its HTTP URL.
func startGeth(t *testing.T, bin, genesisFile, chainFile string) string {
	t.Helper()
	datadir := t.TempDir()
	run := func(args ...string) {
		out, err := exec.Command(bin, append([]string{"--datadir", datadir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("geth %v: %v\n%s", args, err, out)
		}
	}
	run("init", genesisFile)
	run("--gcmode", "archive", "import", chainFile)
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--datadir", datadir, "--gcmode", "archive", "--syncmode", "full",
		"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(port), "--http.api", "eth,debug",
		"--authrpc.addr", "127.0.0.1", "--authrpc.port", strconv.Itoa(freePort(t)),
		"--nodiscover", "--maxpeers", "0", "--port", "0", "--ipcdisable")
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`)))
		if err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("geth did not start serving")
	return ""
}
