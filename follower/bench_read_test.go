package follower_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preconf/preconf/chain"
)

// rawLoad drives closed-loop keep-alive HTTP/1.1 POSTs over conns raw
// connections for d (a cheap client, so the node is what is measured) and
// returns the answered requests per second.
func rawLoad(b *testing.B, target string, bodies [][]byte, conns int, d time.Duration) float64 {
	u, _ := url.Parse(target)
	reqs := make([][]byte, len(bodies))
	for i, body := range bodies {
		reqs[i] = []byte(fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(body), body))
	}
	var (
		done atomic.Int64
		wg   sync.WaitGroup
		end  = time.Now().Add(d)
	)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for i := w; time.Now().Before(end); i++ {
				if _, err := c.Write(reqs[i%len(reqs)]); err != nil {
					b.Error(err)
					return
				}
				n := -1
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						b.Error(err)
						return
					}
					if line == "\r\n" {
						break
					}
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
						n, _ = strconv.Atoi(strings.TrimSpace(v))
					}
				}
				body := make([]byte, n)
				if _, err := io.ReadFull(br, body); err != nil || !bytes.Contains(body, []byte(`"result"`)) {
					b.Errorf("answer %q %v", body, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

// BenchmarkPendingReads compares pending-read throughput (eth_getBalance
// and eth_getStorageAt at "pending", keep-alive HTTP on loopback, 16
// connections) of a sequencing dev node and of a follower of it, with a live
// pending block. The req/s metrics are the comparison; ns/op is meaningless.
func BenchmarkPendingReads(b *testing.B) {
	t := &testing.T{}
	seq, feedURL := sequencerNode(t, 2*time.Second, 200*time.Millisecond)
	defer seq.Close()
	fol := followNode(t, seq.URL(), feedURL, seq.Chain.Config())
	defer fol.Close()
	s := newSender(t, seq.URL(), seq.Chain.Config().ChainID, 4)
	for i := range 40 {
		if err := s.send(i%4, i%2 == 0, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for rawResult(fol.URL(), "eth_getTransactionReceipt", s.last) == "null" {
		if time.Now().After(deadline) {
			b.Fatal("follower never pre-confirmed the transactions")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var bodies [][]byte
	for i, a := range chain.DevAccounts() {
		bodies = append(bodies, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"eth_getBalance","params":["%s","pending"]}`, i, a)))
		bodies = append(bodies, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"eth_getStorageAt","params":["%s","0x%x","pending"]}`, i, store, i%8)))
	}
	const d = 3 * time.Second
	rates := map[string]float64{}
	for round := range 2 { // alternate, so neither always runs first
		for _, target := range []struct{ name, url string }{{"sequencer", seq.URL()}, {"follower", fol.URL()}} {
			r := rawLoad(b, target.url, bodies, 16, d)
			rates[target.name] += r / 2
			b.Logf("round %d %s: %.0f req/s", round, target.name, r)
		}
	}
	b.ReportMetric(rates["sequencer"], "seq-req/s")
	b.ReportMetric(rates["follower"], "follower-req/s")
	b.ReportMetric(rates["follower"]/rates["sequencer"], "ratio")
}
