package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// testSubs registers test_subscribe (creates a subscription and notifies
// 0..count-1 from a goroutine) and test_unsubscribe.
func testSubs(srv *Server, count int) chan *Subscription {
	created := make(chan *Subscription, 16)
	srv.Register("test_echo", func(_ context.Context, p Params) (any, error) {
		var s string
		if err := p.Required(0, &s); err != nil {
			return nil, err
		}
		return s, nil
	})
	srv.Register("test_subscribe", func(ctx context.Context, p Params) (any, error) {
		n, ok := NotifierFromContext(ctx)
		if !ok {
			return nil, ErrNotificationsUnsupported
		}
		sub, err := n.Subscribe()
		if err != nil {
			return nil, err
		}
		created <- sub
		go func() {
			for i := range count {
				// Notify before the answer is out: held, then delivered in order.
				if !sub.Notify(json.RawMessage(strconv.Itoa(i))) {
					return
				}
			}
		}()
		return sub.ID(), nil
	})
	srv.Register("test_unsubscribe", func(ctx context.Context, p Params) (any, error) {
		n, ok := NotifierFromContext(ctx)
		if !ok {
			return nil, ErrNotificationsUnsupported
		}
		var id string
		if err := p.Required(0, &id); err != nil {
			return nil, err
		}
		if !n.Unsubscribe(id) {
			return nil, ErrSubscriptionNotFound
		}
		return true, nil
	})
	return created
}

func startWS(t *testing.T, srv *Server, opts WSOptions) (*WSHandler, string) {
	t.Helper()
	ws := srv.WSHandler(opts)
	hs := httptest.NewServer(srv.HTTPHandler(HTTPOptions{Other: ws}))
	t.Cleanup(func() { ws.Close(); hs.Close() })
	return ws, "ws" + strings.TrimPrefix(hs.URL, "http")
}

func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

type wsMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params struct {
		Subscription string          `json:"subscription"`
		Result       json.RawMessage `json:"result"`
	} `json:"params"`
}

func send(t *testing.T, c *websocket.Conn, req string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func recv(t *testing.T, c *websocket.Conn) wsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m wsMsg
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("bad message %s: %v", data, err)
	}
	return m
}

func TestWSRoundTrip(t *testing.T) {
	srv := NewServer(Options{})
	testSubs(srv, 0)
	_, url := startWS(t, srv, WSOptions{})
	c := dial(t, url)
	send(t, c, `{"jsonrpc":"2.0","id":7,"method":"test_echo","params":["hi"]}`)
	if m := recv(t, c); string(m.ID) != "7" || string(m.Result) != `"hi"` {
		t.Fatalf("echo answer: id %s result %s", m.ID, m.Result)
	}
	send(t, c, `[{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["a"]},{"jsonrpc":"2.0","id":2,"method":"nope"}]`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var batch []wsMsg
	if err := json.Unmarshal(data, &batch); err != nil || len(batch) != 2 {
		t.Fatalf("batch answer %s: %v", data, err)
	}
	if batch[1].Error == nil || batch[1].Error.Code != CodeMethodNotFound {
		t.Fatalf("unknown method in batch: %s", data)
	}
	send(t, c, `{not json`)
	if m := recv(t, c); m.Error == nil || m.Error.Code != CodeParseError {
		t.Fatalf("parse error expected, got %+v", m)
	}
}

func TestWSSubscribeUnsubscribe(t *testing.T) {
	const count = 50
	srv := NewServer(Options{})
	created := testSubs(srv, count)
	_, url := startWS(t, srv, WSOptions{})
	c := dial(t, url)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
	first := recv(t, c)
	var id string
	if err := json.Unmarshal(first.Result, &id); err != nil || !strings.HasPrefix(id, "0x") {
		t.Fatalf("first message must be the answer with the id, got %+v", first)
	}
	for i := range count {
		m := recv(t, c)
		if m.Method != "eth_subscription" || m.Params.Subscription != id || string(m.Params.Result) != strconv.Itoa(i) {
			t.Fatalf("notification %d: %+v", i, m)
		}
	}
	sub := <-created
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"test_unsubscribe","params":["`+id+`"]}`)
	if m := recv(t, c); string(m.Result) != "true" {
		t.Fatalf("unsubscribe: %+v", m)
	}
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("subscription not ended by unsubscribe")
	}
	if sub.Notify(json.RawMessage("1")) {
		t.Fatal("Notify after unsubscribe reported success")
	}
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"test_unsubscribe","params":["`+id+`"]}`)
	if m := recv(t, c); m.Error == nil || m.Error.Message != "subscription not found" {
		t.Fatalf("second unsubscribe: %+v", m)
	}
}

func TestSubscribeOverHTTP(t *testing.T) {
	srv := NewServer(Options{})
	testSubs(srv, 0)
	resp := srv.Handle(WithTransport(context.Background(), "http"), []byte(`{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`))
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"notifications not supported"}}`
	if string(resp) != want {
		t.Fatalf("got %s\nwant %s", resp, want)
	}
}

func TestConnectionCloseEndsSubscriptions(t *testing.T) {
	srv := NewServer(Options{})
	created := testSubs(srv, 0)
	ws, url := startWS(t, srv, WSOptions{})
	c := dial(t, url)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
	recv(t, c)
	sub := <-created
	c.Close(websocket.StatusNormalClosure, "")
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("subscription outlived its connection")
	}
	deadline := time.Now().Add(10 * time.Second)
	for ws.Conns() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := ws.Conns(); n != 0 {
		t.Fatalf("%d connections still registered", n)
	}
}

// A client that never reads is dropped once its bounded queue fills, and the
// publisher's Notify never blocks meanwhile.
func TestSlowSubscriberDropped(t *testing.T) {
	srv := NewServer(Options{})
	created := testSubs(srv, 0)
	_, url := startWS(t, srv, WSOptions{StreamOptions: StreamOptions{QueueLen: 8, QueueBytes: 1 << 20}})
	c := dial(t, url)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
	recv(t, c) // the id; from now on the client reads nothing
	sub := <-created
	payload := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
	dropped := false
	// Socket buffers absorb some megabytes; the bounded queue then fills.
	for i := 0; i < 100000 && !dropped; i++ {
		dropped = !sub.Notify(payload)
	}
	if !dropped {
		t.Fatal("a client that never reads was not dropped")
	}
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("dropped client's subscription did not end")
	}
}

func TestIsWebSocketUpgrade(t *testing.T) {
	for _, tc := range []struct {
		conn, upgrade string
		want          bool
	}{
		{"Upgrade", "websocket", true},
		{"keep-alive, Upgrade", "WebSocket", true},
		{"keep-alive", "", false},
		{"Upgrade", "h2c", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", bytes.NewReader(nil))
		r.Header.Set("Connection", tc.conn)
		if tc.upgrade != "" {
			r.Header.Set("Upgrade", tc.upgrade)
		}
		if got := IsWebSocketUpgrade(r); got != tc.want {
			t.Errorf("Connection %q Upgrade %q: got %v", tc.conn, tc.upgrade, got)
		}
	}
}

func TestSubscriptionLimitPerConnection(t *testing.T) {
	srv := NewServer(Options{})
	testSubs(srv, 0)
	_, url := startWS(t, srv, WSOptions{MaxSubscriptions: 3})
	c := dial(t, url)
	var ids []string
	for range 3 {
		send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
		m := recv(t, c)
		var id string
		if err := json.Unmarshal(m.Result, &id); err != nil {
			t.Fatalf("subscribe: %+v", m)
		}
		ids = append(ids, id)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"test_subscribe"}`)
	if m := recv(t, c); m.Error == nil || m.Error.Code != CodeLimitExceeded {
		t.Fatalf("fourth subscription: %+v", m)
	}
	// Ending one makes room again.
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"test_unsubscribe","params":["`+ids[0]+`"]}`)
	if m := recv(t, c); string(m.Result) != "true" {
		t.Fatalf("unsubscribe: %+v", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":4,"method":"test_subscribe"}`)
	if m := recv(t, c); m.Error != nil {
		t.Fatalf("subscribe after unsubscribe: %+v", m)
	}
}

// A large result is sent as one (fragmented) message holding exactly the
// notification, and stays shared between subscriptions.
func TestLargeNotificationIntact(t *testing.T) {
	srv := NewServer(Options{})
	created := testSubs(srv, 0)
	_, url := startWS(t, srv, WSOptions{})
	c := dial(t, url)
	var subs []*Subscription
	for range 2 {
		send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
		recv(t, c)
		subs = append(subs, <-created)
	}
	big := json.RawMessage(`"` + strings.Repeat("ab", 100<<10) + `"`)
	for _, s := range subs {
		if !s.Notify(big) {
			t.Fatal("notify failed")
		}
	}
	// A subscription's notifications are ordered, two subscriptions' not: the
	// second may be activated (its answer written) before the first is.
	seen := map[string]bool{}
	for i := range subs {
		m := recv(t, c)
		if !bytes.Equal(m.Params.Result, big) {
			t.Fatalf("notification %d: subscription %s, %d result bytes", i, m.Params.Subscription, len(m.Params.Result))
		}
		seen[m.Params.Subscription] = true
	}
	for _, sub := range subs {
		if !seen[sub.ID()] {
			t.Fatalf("no notification for subscription %s (got %v)", sub.ID(), seen)
		}
	}
}
