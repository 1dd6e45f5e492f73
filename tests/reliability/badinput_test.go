package reliability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// loop is runtime code that jumps to itself forever: JUMPDEST PUSH0 JUMP.
const loop = "0x5b5f56"

const someAddr = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"

// badCase is one request and what must come back: a JSON-RPC error code
// (anyError: any code), or an HTTP status (for what HTTP answers itself).
type badCase struct {
	name   string
	body   string
	code   int // JSON-RPC error code; anyError: any
	status int // expected HTTP status when not 200
	msg    string
	header map[string]string
}

const anyError = 1

func rpcBody(method string, params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
}

func simulateBlocks(n int) string {
	blocks := strings.TrimSuffix(strings.Repeat(`{"calls":[]},`, n), ",")
	return rpcBody("eth_simulateV1", `[{"blockStateCalls":[`+blocks+`]},"latest"]`)
}

func batchOf(n int) string {
	one := rpcBody("eth_chainId", "[]")
	return "[" + strings.TrimSuffix(strings.Repeat(one+",", n), ",") + "]"
}

// badInput is the table: every case is sent over HTTP; those without an
// HTTP status over websocket too.
func badInput() []badCase {
	loopCall := `{"to":"` + someAddr + `"}`
	loopOverride := `{"` + someAddr + `":{"code":"` + loop + `"}}`
	return []badCase{
		{name: "malformed JSON", body: `{"jsonrpc":"2.0","id":1,`, code: -32700},
		{name: "not an object", body: `42`, code: -32600},
		{name: "empty batch", body: `[]`, code: -32600},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}`, code: -32600},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":1,"method":7}`, code: -32600},
		{name: "id an object", body: `{"jsonrpc":"2.0","id":{},"method":"eth_chainId"}`, code: -32600},
		{name: "params an object", body: `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":{}}`, code: -32602},
		{name: "unknown method", body: rpcBody("eth_nope", "[]"), code: -32601},
		{name: "number for an address", body: rpcBody("eth_getBalance", `[123,"latest"]`), code: -32602},
		{name: "invalid hex address", body: rpcBody("eth_getBalance", `["0xZZ","latest"]`), code: -32602},
		{name: "short address", body: rpcBody("eth_getBalance", `["0x12","latest"]`), code: -32602},
		{name: "invalid block number", body: rpcBody("eth_getBalance", `["`+someAddr+`","0xZZ"]`), code: -32602},
		{name: "invalid slot", body: rpcBody("eth_getStorageAt", `["`+someAddr+`","0xg","pending"]`), code: -32602},
		{name: "invalid code selector", body: rpcBody("eth_getCode", `["`+someAddr+`",{"blockHash":"0x1"}]`), code: -32602},
		{name: "invalid nonce selector", body: rpcBody("eth_getTransactionCount", `["`+someAddr+`",true]`), code: -32602},
		{name: "invalid tx hash", body: rpcBody("eth_getTransactionByHash", `["0x1"]`), code: -32602},
		{name: "invalid block hash", body: rpcBody("eth_getBlockByHash", `["0xzz",false]`), code: -32602},
		{name: "invalid raw tx hex", body: rpcBody("eth_sendRawTransaction", `["0xzz"]`), code: -32602},
		{name: "garbage raw tx", body: rpcBody("eth_sendRawTransaction", `["0x1234"]`), code: anyError},
		{name: "odd call data", body: rpcBody("eth_call", `[{"to":"`+someAddr+`","data":"0xabc"},"latest"]`), code: -32602},
		{name: "invalid log address", body: rpcBody("eth_getLogs", `[{"address":"0x1"}]`), code: -32602},
		{name: "invalid simulate input", body: rpcBody("eth_simulateV1", `[{"blockStateCalls":"x"},"latest"]`), code: -32602},
		{name: "deep nesting", body: strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), code: anyError},
		{name: "deep params", body: `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":` + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + `}`, code: anyError},
		{name: "10k batch", body: batchOf(10_000), code: -32600, msg: "batch too large"},
		{name: "257 simulated blocks", body: simulateBlocks(257), code: -38026},
		{name: "endless loop in eth_call", body: rpcBody("eth_call", `[`+loopCall+`,"latest",`+loopOverride+`]`), code: -32016},
		{name: "endless loop in debug_traceCall", body: rpcBody("debug_traceCall", `[`+loopCall+`,"latest",{"timeout":"1s","stateOverrides":`+loopOverride+`}]`), code: -32000, msg: "execution timeout"},
		{name: "request past its deadline", body: rpcBody("debug_traceCall", `[`+loopCall+`,"latest",{"timeout":"60s","stateOverrides":`+loopOverride+`}]`), code: -32002},
		{name: "huge log range", body: rpcBody("eth_getLogs", `[{"fromBlock":"0x0","toBlock":"latest"}]`), code: -32005, msg: "max block range"},
		{name: "huge body", body: `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["` + strings.Repeat("a", 6<<20) + `"]}`, status: http.StatusRequestEntityTooLarge},
		{name: "foreign Host", body: rpcBody("eth_accounts", "[]"), status: http.StatusForbidden, header: map[string]string{"Host": "rebind.example"}},
		{name: "wrong content type", body: rpcBody("eth_chainId", "[]"), status: http.StatusUnsupportedMediaType, header: map[string]string{"Content-Type": "text/plain"}},
	}
}

// reliabilityNode is a dev node with limits small enough for the table to
// run in seconds: a 3 s request deadline, 1 s execution limit, an
// unlimited gas cap (so loops run into the time limits), a 2-block log
// range, and blocks every 400 ms (so the chain is longer than that range).
func reliabilityNode(t *testing.T, extra ...string) *proc {
	args := append([]string{"--datadir", t.TempDir(), "--block-time", "400ms", "--rpc.timeout", "3s", "--rpc.evmtimeout", "1s",
		"--rpc.gascap", "0", "--rpc.getlogs-max-range", "2", "--log.level", "warn"}, extra...)
	p := startProc(t, nil, args...)
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n string
		if call(p, &n, "eth_blockNumber") == nil && len(n) > 2 && n != "0x0" && n != "0x1" && n != "0x2" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatal("the chain did not grow past 2 blocks")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkAnswer judges one HTTP exchange against its case.
func checkAnswer(c badCase, status int, body []byte) error {
	if c.status != 0 {
		if status != c.status {
			return fmt.Errorf("HTTP %d %.200s, want HTTP %d", status, body, c.status)
		}
		return nil
	}
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d %.200s", status, body)
	}
	var a answer
	if body = bytes.TrimSpace(body); len(body) > 0 && body[0] == '[' {
		var all []answer
		if err := json.Unmarshal(body, &all); err != nil || len(all) == 0 {
			return fmt.Errorf("batch answer %.200s", body)
		}
		a = all[0]
	} else if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("not JSON-RPC: %.200s", body)
	}
	if a.Error == nil {
		return fmt.Errorf("no error: %.200s", body)
	}
	if (c.code != anyError && a.Error.Code != c.code) || !strings.Contains(a.Error.Message, c.msg) || a.Error.Message == "" {
		return fmt.Errorf("error %d %q, want %d %q", a.Error.Code, a.Error.Message, c.code, c.msg)
	}
	return nil
}

func TestBadInputHTTP(t *testing.T) {
	p := reliabilityNode(t)
	cases := badInput()
	for _, c := range cases {
		req, _ := http.NewRequest("POST", p.url(), strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range c.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			alive(t, p, c.name)
			continue
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err := checkAnswer(c, resp.StatusCode, buf.Bytes()); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		t.Logf("%-34s %5d ms  %.120s", c.name, time.Since(start).Milliseconds(), strings.TrimSpace(buf.String()))
		alive(t, p, c.name)
	}
	t.Logf("FIGURE bad-input HTTP: %d cases, each a clear error, node serving after each", len(cases))
}

func TestBadInputWebSocket(t *testing.T) {
	p := reliabilityNode(t, "--http.maxbody", "1048576")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadLimit(64 << 20)
		return c
	}
	c := dial()
	defer c.CloseNow()
	n := 0
	for _, bc := range badInput() {
		if bc.status != 0 || len(bc.body) > 1<<20 {
			continue
		}
		n++
		if err := c.Write(ctx, websocket.MessageText, []byte(bc.body)); err != nil {
			t.Fatalf("%s: write: %v", bc.name, err)
		}
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("%s: read: %v", bc.name, err)
		}
		if err := checkAnswer(bc, http.StatusOK, msg); err != nil {
			t.Errorf("%s over websocket: %v", bc.name, err)
		}
	}
	// A message over the limit closes that connection (1009); others and
	// new ones are served.
	other := dial()
	defer other.CloseNow()
	big := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["` + strings.Repeat("a", 2<<20) + `"]}`)
	c.Write(ctx, websocket.MessageText, big)
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversized message: %v, want close 1009", err)
	}
	n++
	for _, conn := range []*websocket.Conn{other, dial()} {
		conn.Write(ctx, websocket.MessageText, []byte(rpcBody("eth_chainId", "[]")))
		if _, msg, err := conn.Read(ctx); err != nil || !bytes.Contains(msg, []byte(`"result"`)) {
			t.Fatalf("websocket after the oversized message: %s %v", msg, err)
		}
	}
	alive(t, p, "websocket cases")
	t.Logf("FIGURE bad-input websocket: %d cases, each a clear error or a closed connection, node serving after each", n)
}
