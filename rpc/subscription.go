package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// ErrNotificationsUnsupported is go-ethereum's answer to a subscription
// request over a transport without notifications (HTTP).
var ErrNotificationsUnsupported = &CodedError{Code: CodeMethodNotFound, Msg: "notifications not supported"}

// ErrSubscriptionNotFound answers an unsubscribe of an unknown id.
var ErrSubscriptionNotFound = &ServerError{Msg: "subscription not found"}

// maxHeld caps the notifications a subscription keeps before its id has been
// sent (they are delivered right after); past it the connection is dropped.
const maxHeld = 1024

// sharedResultSize is the result size from which a notification is queued
// as parts (prefix, the shared result, suffix) instead of one copied buffer.
const sharedResultSize = 32 << 10

var notificationSuffix = []byte("}}")

type notifierKey struct{}

// Notifier creates and ends subscriptions on the connection a call came in
// on. Handlers get it with NotifierFromContext; it exists only on transports
// that can push (websocket).
type Notifier struct {
	conn *wsConn

	mu      sync.Mutex
	created []*Subscription
	done    bool
	dropped bool // the call's answer was the deadline's (discard)
}

// NotifierFromContext returns the call's notifier, if its transport has one.
func NotifierFromContext(ctx context.Context) (*Notifier, bool) {
	n, ok := ctx.Value(notifierKey{}).(*Notifier)
	return n, ok
}

// Subscribe creates a subscription on the connection. Its notifications are
// held until the answer to the current call (which should carry ID()) has
// been queued, so a client always learns the id first. If the connection
// has already ended, the subscription is returned ended. A connection at its
// subscription limit gets a LimitExceededError.
func (n *Notifier) Subscribe() (*Subscription, error) {
	s := &Subscription{id: newSubscriptionID(), conn: n.conn, done: make(chan struct{})}
	s.prefix = []byte(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"` + s.id + `","result":`)
	if err := n.conn.add(s); err != nil {
		s.end()
		if errors.Is(err, errConnClosed) {
			return s, nil
		}
		return nil, err
	}
	n.mu.Lock()
	if n.dropped { // created after the deadline answered the call
		n.mu.Unlock()
		n.conn.remove(s.id)
		return s, nil
	}
	if n.done { // created after the answer went out (a handler's goroutine)
		n.mu.Unlock()
		s.activate()
		return s, nil
	}
	n.created = append(n.created, s)
	n.mu.Unlock()
	return s, nil
}

// Unsubscribe ends the connection's subscription with id; false if unknown.
func (n *Notifier) Unsubscribe(id string) bool { return n.conn.remove(id) }

// discard ends every subscription the call created, when its answer (with
// their ids) was replaced by the deadline's.
func (n *Notifier) discard() {
	n.mu.Lock()
	created := n.created
	n.created, n.done, n.dropped = nil, true, true
	n.mu.Unlock()
	for _, s := range created {
		n.conn.remove(s.id)
	}
}

// activate starts delivery for every subscription the call created.
func (n *Notifier) activate() {
	n.mu.Lock()
	created := n.created
	n.created, n.done = nil, true
	n.mu.Unlock()
	for _, s := range created {
		s.activate()
	}
}

// newSubscriptionID is a random 128-bit quantity, as go-ethereum makes them.
func newSubscriptionID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	id := strings.TrimLeft(hex.EncodeToString(b[:]), "0")
	if id == "" {
		id = "0"
	}
	return "0x" + id
}

// Subscription is one live subscription. Notify is safe for concurrent use
// and never blocks.
type Subscription struct {
	id     string
	prefix []byte // the notification up to the result
	conn   *wsConn
	done   chan struct{}

	mu      sync.Mutex
	active  bool
	ended   bool
	held    []outMsg
	onClose []func()
}

// ID is the subscription id returned to the client.
func (s *Subscription) ID() string { return s.id }

// Done is closed when the subscription ends (unsubscribed, connection gone,
// or the client dropped for being too slow).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// OnClose runs f once the subscription ends (at once if it already has).
func (s *Subscription) OnClose(f func()) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		f()
		return
	}
	s.onClose = append(s.onClose, f)
	s.mu.Unlock()
}

// Notify sends result (already encoded JSON) as a notification. It reports
// false when the subscription has ended; a client whose queue is full is
// dropped rather than waited for. A large result is shared, not copied: it
// must not be modified afterwards.
func (s *Subscription) Notify(result json.RawMessage) bool {
	msg := outMsg{typ: websocket.MessageText}
	if len(result) >= sharedResultSize {
		msg.parts = [][]byte{s.prefix, result, notificationSuffix}
	} else {
		msg.data = make([]byte, 0, len(s.prefix)+len(result)+2)
		msg.data = append(msg.data, s.prefix...)
		msg.data = append(msg.data, result...)
		msg.data = append(msg.data, notificationSuffix...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	if !s.active {
		if len(s.held) >= maxHeld {
			s.conn.st.Close(ErrSlowConsumer)
			return false
		}
		s.held = append(s.held, msg)
		return true
	}
	return s.conn.st.send(msg)
}

// NotifyValue encodes v with encoding/json and sends it.
func (s *Subscription) NotifyValue(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return s.Notify(b)
}

func (s *Subscription) activate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.active {
		return
	}
	s.active = true
	for _, m := range s.held {
		if !s.conn.st.send(m) {
			break
		}
	}
	s.held = nil
}

// end marks the subscription ended and runs its close hooks, once.
func (s *Subscription) end() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.held = nil
	hooks := s.onClose
	s.onClose = nil
	close(s.done)
	s.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}
