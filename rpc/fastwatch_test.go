package rpc

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A request that ends just as its watcher starts reading (the watcher
// released its lock, the request's unwatch stopped the read, then the
// watcher's read began) must still be answered: the watcher's read may not
// outlive unwatch, or the answer waits for bytes the client sends only
// after it — a hang on both sides.
func TestServeFastWatcherRace(t *testing.T) {
	s := testServer()
	started := make(chan struct{}, 1)
	s.Register("test_slow", func(ctx context.Context, _ Params) (any, error) {
		select { // returns once the watcher is between its lock and its read
		case <-started:
		case <-time.After(5 * time.Second):
		}
		return "done", nil
	})
	// Registered before startFast: cleared after the server stopped.
	t.Cleanup(func() { testHookWatchUnlocked = nil })
	testHookWatchUnlocked = func() {
		started <- struct{}{}
		time.Sleep(50 * time.Millisecond) // the request ends and unwatch runs meanwhile
	}
	addr, _ := startFast(t, s, HTTPOptions{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := range 3 {
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := conn.Write([]byte(post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_slow"}`, i)))); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: no answer: %v", i, err)
		}
		if b, want := readBody(t, resp), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"done"}`, i); b != want {
			t.Fatalf("request %d: %s, want %s", i, b, want)
		}
	}
}

// Many keep-alive connections whose requests end around the moment their
// watcher starts (watchAfter), with bodies of many sizes (across the read
// buffer's size) and some pipelined: every request is answered, in order,
// and none waits for the client's deadline.
func TestServeFastWatcherStress(t *testing.T) {
	s := testServer()
	s.Register("test_nap", func(_ context.Context, p Params) (any, error) {
		var us int
		var pad string
		if err := p.Required(0, &us); err != nil {
			return nil, err
		}
		if _, err := p.Optional(1, &pad); err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(us) * time.Microsecond)
		return len(pad), nil
	})
	addr, _ := startFast(t, s, HTTPOptions{})
	const conns, rounds = 16, 25
	var wg sync.WaitGroup
	var answered atomic.Int64
	errs := make(chan error, conns)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- watcherStressConn(addr, c, rounds, &answered)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d answers", answered.Load())
}

func watcherStressConn(addr string, c, rounds int, answered *atomic.Int64) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	rng := rand.New(rand.NewPCG(uint64(c), 1))
	id := 0
	for r := range rounds {
		// One request, or two written at once (the second arrives while
		// the first runs and may be read by its watcher).
		var batch strings.Builder
		n := 1 + rng.IntN(2)
		pads := make([]int, n)
		for i := range n {
			// Around watchAfter, ± 3 ms.
			us := int(watchAfter/time.Microsecond) - 3000 + rng.IntN(6000)
			pads[i] = rng.IntN(3 * fastBufSize)
			batch.WriteString(post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_nap","params":[%d,"%s"]}`,
				id+i, us, strings.Repeat("x", pads[i]))))
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(batch.String())); err != nil {
			return fmt.Errorf("conn %d round %d: write: %w", c, r, err)
		}
		for i := range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return fmt.Errorf("conn %d round %d: request %d not answered: %w", c, r, id, err)
			}
			b := new(strings.Builder)
			_, err = bufio.NewReader(resp.Body).WriteTo(b)
			resp.Body.Close()
			if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, id, pads[i]); err != nil || b.String() != want {
				return fmt.Errorf("conn %d round %d: %q (%v), want %s", c, r, b, err, want)
			}
			id++
			answered.Add(1)
		}
	}
	return nil
}
