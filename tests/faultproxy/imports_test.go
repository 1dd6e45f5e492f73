package faultproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The late-import view: a block the target has is hidden from
// eth_blockNumber, "latest" and reads by number or hash for the import
// delay, while other reads pass at once; then it is shown.
func TestImportDelay(t *testing.T) {
	var head atomic.Uint64
	head.Store(10)
	hash := func(n uint64) string { return fmt.Sprintf("0x%064x", 0xb0+n) }
	block := func(n uint64) string { return fmt.Sprintf(`{"hash":"%s","number":"0x%x"}`, hash(n), n) }
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var reqs []struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		batch := body[0] == '['
		if !batch {
			body = append(append([]byte{'['}, body...), ']')
		}
		json.Unmarshal(body, &reqs)
		var outs []string
		for _, q := range reqs {
			var res string
			switch q.Method {
			case "eth_blockNumber":
				res = fmt.Sprintf(`"0x%x"`, head.Load())
			case "eth_getBlockByNumber":
				var tag string
				json.Unmarshal(q.Params[0], &tag)
				n := head.Load()
				if tag != "latest" {
					n, _ = strconv.ParseUint(strings.TrimPrefix(tag, "0x"), 16, 64)
				}
				res = block(n)
			case "eth_getBlockByHash":
				var h string
				json.Unmarshal(q.Params[0], &h)
				res = "null"
				for n := uint64(0); n <= head.Load(); n++ {
					if hash(n) == h {
						res = block(n)
					}
				}
			default:
				res = `"relayed"`
			}
			outs = append(outs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, q.ID, res))
		}
		out := strings.Join(outs, ",")
		if batch {
			out = "[" + out + "]"
		}
		w.Write([]byte(out))
	}))
	defer up.Close()
	p, post := rpcProxy(t, up.URL)
	const delay = time.Second
	p.SetImportDelay(delay)
	if got := post(`{"id":1,"method":"eth_blockNumber"}`); !strings.Contains(got, `"0xa"`) {
		t.Fatalf("the head when the view was set: %s", got)
	}
	head.Store(11)
	for _, tc := range []struct{ name, req, want string }{
		{"block number", `{"id":1,"method":"eth_blockNumber"}`, `"result":"0xa"`},
		{"latest", `{"id":2,"method":"eth_getBlockByNumber","params":["latest",false]}`, `"number":"0xa"`},
		{"by number", `{"id":3,"method":"eth_getBlockByNumber","params":["0xb",false]}`, `"id":3,"result":null`},
		{"by hash", `{"id":4,"method":"eth_getBlockByHash","params":["` + hash(11) + `",false]}`, `"id":4,"result":null`},
		{"batch: state read relayed", `[{"id":5,"method":"eth_getProof","params":["0x01",[],{"blockHash":"` + hash(11) + `"}]},{"id":6,"method":"eth_getBlockByHash","params":["` + hash(11) + `",false]}]`,
			`[{"jsonrpc":"2.0","id":5,"result":"relayed"},{"jsonrpc":"2.0","id":6,"result":null}]`},
		{"an older block", `{"id":7,"method":"eth_getBlockByHash","params":["` + hash(10) + `",false]}`, `"number":"0xa"`},
	} {
		t.Run("hidden/"+tc.name, func(t *testing.T) {
			if got := post(tc.req); !strings.Contains(got, tc.want) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	time.Sleep(delay + 100*time.Millisecond)
	for _, tc := range []struct{ name, req, want string }{
		{"block number", `{"id":1,"method":"eth_blockNumber"}`, `"result":"0xb"`},
		{"by hash", `{"id":4,"method":"eth_getBlockByHash","params":["` + hash(11) + `",false]}`, `"number":"0xb"`},
	} {
		t.Run("shown/"+tc.name, func(t *testing.T) {
			if got := post(tc.req); !strings.Contains(got, tc.want) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	p.SetImportDelay(0)
	head.Store(12)
	if got := post(`{"id":1,"method":"eth_blockNumber"}`); !strings.Contains(got, `"0xc"`) {
		t.Fatalf("view off: %s", got)
	}
}
