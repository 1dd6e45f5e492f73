package wallet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"github.com/preconf/preconf/rpc"
)

// ErrNoSuchApproval is returned for an unknown or already decided ID.
var ErrNoSuchApproval = errors.New("no pending approval with that id")

func newApprovalID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ask queues an approval and waits for a decision, the timeout, the caller
// going away or the wallet closing. ok=false means rejected (4001).
func (w *Wallet) ask(ctx context.Context, method string, next, old Chain, known bool) (ok bool, err error) {
	now := time.Now().UTC()
	a := &Approval{
		ID:      newApprovalID(),
		Method:  method,
		Chain:   next.clone(),
		Created: now,
		Expires: now.Add(w.cfg.ApprovalTimeout),
		decided: make(chan bool, 1),
	}
	if known {
		prev := old.clone()
		a.Previous = &prev
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false, nil
	}
	if len(w.order) >= maxPending {
		w.mu.Unlock()
		return false, &rpc.LimitExceededError{Msg: "too many wallet requests waiting for approval"}
	}
	w.pending[a.ID] = a
	w.order = append(w.order, a.ID)
	w.notifyLocked()
	w.mu.Unlock()
	w.log.Info("wallet approval requested", "id", a.ID, "method", method, "chainId", next.ChainID, "name", next.ChainName,
		"rpcUrls", next.RPCURLs, "decide", "on the node's page, or: preconf wallet approve|reject "+a.ID)

	timer := time.NewTimer(w.cfg.ApprovalTimeout)
	defer timer.Stop()
	select {
	case ok := <-a.decided:
		return ok, nil
	case <-timer.C:
		w.log.Info("wallet approval timed out", "id", a.ID)
	case <-ctx.Done():
		w.log.Info("wallet approval abandoned by the caller", "id", a.ID)
	}
	// Withdraw it; a decision that raced in wins.
	if w.remove(a.ID) == nil {
		return <-a.decided, nil
	}
	return false, nil
}

// remove takes an approval out of the queue; nil if it was no longer there.
func (w *Wallet) remove(id string) *Approval {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.pending[id]
	if a == nil {
		return nil
	}
	delete(w.pending, id)
	w.order = slices.DeleteFunc(w.order, func(s string) bool { return s == id })
	w.notifyLocked()
	return a
}

func (w *Wallet) decide(id string, ok bool) error {
	a := w.remove(id)
	if a == nil {
		return ErrNoSuchApproval
	}
	a.decided <- ok
	w.log.Info("wallet approval decided", "id", id, "approved", ok)
	return nil
}

// Approve approves a pending request: its JSON-RPC call goes on to store the
// chain and answers null.
func (w *Wallet) Approve(id string) error { return w.decide(id, true) }

// Reject rejects a pending request: its JSON-RPC call answers 4001.
func (w *Wallet) Reject(id string) error { return w.decide(id, false) }

// Pending lists the requests waiting for a person, oldest first.
func (w *Wallet) Pending() []Approval {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Approval, 0, len(w.order))
	for _, id := range w.order {
		a := *w.pending[id]
		a.Chain = a.Chain.clone()
		a.decided = nil
		out = append(out, a)
	}
	return out
}

// Changes returns the version of the wallet's state (registry, selection,
// pending approvals) and a channel closed at its next change, for long
// polls: a poller that saw version v waits only while Changes still says v.
func (w *Wallet) Changes() (version uint64, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.version, w.changed
}

func (w *Wallet) notifyLocked() {
	w.version++
	close(w.changed)
	w.changed = make(chan struct{})
}
