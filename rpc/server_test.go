package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func testServer() *Server {
	s := NewServer(Options{BatchLimit: 3})
	s.Register("test_echo", func(_ context.Context, p Params) (any, error) {
		var v any
		if _, err := p.Optional(0, &v); err != nil {
			return nil, err
		}
		return v, nil
	})
	s.Register("test_add", func(_ context.Context, p Params) (any, error) {
		if err := p.Max(2); err != nil {
			return nil, err
		}
		var a, b int
		if err := p.Required(0, &a); err != nil {
			return nil, err
		}
		if err := p.Required(1, &b); err != nil {
			return nil, err
		}
		return a + b, nil
	})
	s.Register("test_panic", func(context.Context, Params) (any, error) { panic("boom") })
	s.Register("test_fail", func(context.Context, Params) (any, error) { return nil, errors.New("plain failure") })
	s.Register("test_revert", func(context.Context, Params) (any, error) {
		return nil, &CodedError{Code: 3, Msg: "execution reverted", Data: "0x01"}
	})
	s.Register("test_raw", func(context.Context, Params) (any, error) { return json.RawMessage(`"0x2a"`), nil })
	s.Register("test_appender", func(context.Context, Params) (any, error) { return testAppender(3), nil })
	s.Register("test_unencodable", func(context.Context, Params) (any, error) { return func() {}, nil })
	return s
}

// testAppender writes a list of n numbers itself (rpc.Appender).
type testAppender int

func (a testAppender) AppendJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range int(a) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return append(b, ']')
}

func (a testAppender) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil), nil }

// response is a decoded single answer.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func TestHandleSingle(t *testing.T) {
	s := testServer()
	tests := []struct {
		name    string
		body    string
		id      string // expected id, verbatim
		result  string // expected result, verbatim ("" when an error is expected)
		code    int    // expected error code
		message string // substring of the error message
	}{
		{"ok number id", `{"jsonrpc":"2.0","id":7,"method":"test_add","params":[1,2]}`, `7`, `3`, 0, ""},
		{"ok string id", `{"jsonrpc":"2.0","id":"abc","method":"test_add","params":[1,2]}`, `"abc"`, `3`, 0, ""},
		{"ok null id", `{"jsonrpc":"2.0","id":null,"method":"test_add","params":[1,2]}`, `null`, `3`, 0, ""},
		{"big id verbatim", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"test_raw"}`, `123456789012345678901234567890`, `"0x2a"`, 0, ""},
		{"absent params", `{"jsonrpc":"2.0","id":1,"method":"test_echo"}`, `1`, `null`, 0, ""},
		{"null params", `{"jsonrpc":"2.0","id":1,"method":"test_echo","params":null}`, `1`, `null`, 0, ""},
		{"raw result", `{"jsonrpc":"2.0","id":1,"method":"test_raw","params":[]}`, `1`, `"0x2a"`, 0, ""},
		{"appended result", `{"jsonrpc":"2.0","id":1,"method":"test_appender","params":[]}`, `1`, `[0,1,2]`, 0, ""},
		{"parse error", `{"jsonrpc":"2.0","id":1,"method":`, `null`, "", CodeParseError, "parse error"},
		{"not an object", `42`, `null`, "", CodeInvalidRequest, "not an object"},
		{"jsonrpc missing", `{"id":1,"method":"test_add","params":[1,2]}`, `1`, "", CodeInvalidRequest, "jsonrpc"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"test_add","params":[1,2]}`, `1`, "", CodeInvalidRequest, "jsonrpc"},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"test_add","params":[1,2]}`, `1`, "", CodeInvalidRequest, "jsonrpc"},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":5}`, `1`, "", CodeInvalidRequest, "method"},
		{"method empty", `{"jsonrpc":"2.0","id":1,"method":""}`, `1`, "", CodeInvalidRequest, "method"},
		{"method missing", `{"jsonrpc":"2.0","id":1}`, `1`, "", CodeInvalidRequest, "method"},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"test_raw"}`, `null`, "", CodeInvalidRequest, "id"},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"test_raw"}`, `null`, "", CodeInvalidRequest, "id"},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope_nope"}`, `1`, "", CodeMethodNotFound, "nope_nope"},
		{"params object", `{"jsonrpc":"2.0","id":1,"method":"test_add","params":{"a":1}}`, `1`, "", CodeInvalidParams, "array"},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"test_add","params":"x"}`, `1`, "", CodeInvalidParams, "array"},
		{"missing param", `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1]}`, `1`, "", CodeInvalidParams, "argument 1"},
		{"bad param type", `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,"x"]}`, `1`, "", CodeInvalidParams, "argument 1"},
		{"too many params", `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2,3]}`, `1`, "", CodeInvalidParams, "too many arguments"},
		{"panic is internal", `{"jsonrpc":"2.0","id":1,"method":"test_panic"}`, `1`, "", CodeInternal, "internal"},
		{"plain error is internal", `{"jsonrpc":"2.0","id":1,"method":"test_fail"}`, `1`, "", CodeInternal, "plain failure"},
		{"unencodable result", `{"jsonrpc":"2.0","id":1,"method":"test_unencodable"}`, `1`, "", CodeInternal, "encode"},
		{"coded error with data", `{"jsonrpc":"2.0","id":1,"method":"test_revert"}`, `1`, "", 3, "reverted"},
		{"empty batch", `[]`, `null`, "", CodeInvalidRequest, "empty batch"},
		{"batch over limit", `[{},{},{},{}]`, `null`, "", CodeInvalidRequest, "batch too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := s.Handle(context.Background(), []byte(tt.body))
			var r response
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("answer is not one JSON object: %v: %s", err, out)
			}
			if r.JSONRPC != "2.0" {
				t.Errorf("jsonrpc = %q", r.JSONRPC)
			}
			if string(r.ID) != tt.id {
				t.Errorf("id = %s, want %s", r.ID, tt.id)
			}
			if tt.code == 0 {
				if r.Error != nil {
					t.Fatalf("unexpected error %d %s", r.Error.Code, r.Error.Message)
				}
				if string(r.Result) != tt.result {
					t.Fatalf("result = %s, want %s", r.Result, tt.result)
				}
				return
			}
			if r.Error == nil {
				t.Fatalf("want error %d, got result %s", tt.code, r.Result)
			}
			if r.Error.Code != tt.code {
				t.Errorf("code = %d, want %d (%s)", r.Error.Code, tt.code, r.Error.Message)
			}
			if !strings.Contains(r.Error.Message, tt.message) {
				t.Errorf("message %q does not mention %q", r.Error.Message, tt.message)
			}
			if r.Result != nil {
				t.Errorf("error answer carries a result: %s", r.Result)
			}
		})
	}
}

func TestHandleRevertData(t *testing.T) {
	out := testServer().Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"test_revert"}`))
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted","data":"0x01"}}`
	if string(out) != want {
		t.Fatalf("got %s\nwant %s", out, want)
	}
}

func TestHandleBatch(t *testing.T) {
	s := testServer()
	body := `[{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]},` +
		`{"jsonrpc":"2.0","method":"test_add","params":[5,5]},` + // notification: no answer
		`{"jsonrpc":"2.0","id":"x","method":"nope"}]`
	out := s.Handle(context.Background(), []byte(body))
	var rs []response
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatalf("batch answer: %v: %s", err, out)
	}
	if len(rs) != 2 {
		t.Fatalf("got %d answers, want 2: %s", len(rs), out)
	}
	if string(rs[0].ID) != "1" || string(rs[0].Result) != "3" {
		t.Errorf("first answer %s", out)
	}
	if string(rs[1].ID) != `"x"` || rs[1].Error == nil || rs[1].Error.Code != CodeMethodNotFound {
		t.Errorf("second answer %s", out)
	}
	// A batch of invalid members answers each with an error.
	out = s.Handle(context.Background(), []byte(`[1,"a"]`))
	if err := json.Unmarshal(out, &rs); err != nil || len(rs) != 2 || rs[0].Error.Code != CodeInvalidRequest {
		t.Errorf("invalid members: %s", out)
	}
	// Only notifications: nothing to send.
	if out := s.Handle(context.Background(), []byte(`[{"jsonrpc":"2.0","method":"test_raw"}]`)); out != nil {
		t.Errorf("notification-only batch answered %s", out)
	}
	if out := s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","method":"test_raw"}`)); out != nil {
		t.Errorf("notification answered %s", out)
	}
}

func TestHTTPTransport(t *testing.T) {
	s := testServer()
	srv := httptest.NewServer(s.HTTPHandler(HTTPOptions{MaxBody: 1024, CORSOrigins: []string{"https://ok.example"}}))
	defer srv.Close()
	valid := `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}`
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		origin      string
		status      int
		bodyHas     string
		allowOrigin string
	}{
		{"post ok", "POST", "/", "application/json", valid, "", 200, `"result":3`, ""},
		{"charset ok", "POST", "/", "application/json; charset=utf-8", valid, "", 200, `"result":3`, ""},
		{"json-rpc type ok", "POST", "/", "application/json-rpc", valid, "", 200, `"result":3`, ""},
		{"parse error is 200", "POST", "/", "application/json", `{`, "", 200, `-32700`, ""},
		{"wrong content type", "POST", "/", "text/plain", valid, "", 415, "", ""},
		{"missing content type", "POST", "/", "", valid, "", 415, "", ""},
		{"get is 405", "GET", "/", "", "", "", 405, "", ""},
		{"put is 405", "PUT", "/", "application/json", valid, "", 405, "", ""},
		{"body too large", "POST", "/", "application/json", `{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["` + strings.Repeat("a", 2048) + `"]}`, "", 413, "", ""},
		{"health", "GET", "/health", "", "", "", 200, `"ok"`, ""},
		{"unknown path", "POST", "/nope", "application/json", valid, "", 404, "", ""},
		{"cors allowed origin", "POST", "/", "application/json", valid, "https://ok.example", 200, `"result":3`, "https://ok.example"},
		{"cors other origin", "POST", "/", "application/json", valid, "https://evil.example", 200, `"result":3`, ""},
		{"cors preflight", "OPTIONS", "/", "", "", "https://ok.example", 204, "", "https://ok.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tt.status, b)
			}
			if !strings.Contains(string(b), tt.bodyHas) {
				t.Errorf("body %s lacks %s", b, tt.bodyHas)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.allowOrigin)
			}
		})
	}
}

// TestConcurrentLoad checks that the server answers many concurrent clients
// correctly (run with -race); it asserts answers, never timing.
func TestConcurrentLoad(t *testing.T) {
	s := testServer()
	srv := httptest.NewServer(s.HTTPHandler(HTTPOptions{}))
	defer srv.Close()
	const workers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_add","params":[%d,%d]}`, i, w, i)
				resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				var r response
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if err != nil || string(r.Result) != fmt.Sprint(w+i) || string(r.ID) != fmt.Sprint(i) {
					errs <- fmt.Errorf("worker %d call %d: %v %s %s", w, i, err, r.ID, r.Result)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzHandle: no input may panic the server or produce invalid JSON.
func FuzzHandle(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[{}]}]`,
		`{"jsonrpc":"2.0","id":1,"method":"test_panic"}`, `[]`, `{`, `null`, `"x"`, `[1,[2]]`,
	} {
		f.Add([]byte(seed))
	}
	s := testServer()
	f.Fuzz(func(t *testing.T, body []byte) {
		out := s.Handle(context.Background(), body)
		if out != nil && !json.Valid(out) {
			t.Fatalf("invalid JSON answer %q for %q", out, body)
		}
	})
}
