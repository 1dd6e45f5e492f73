package node

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preconf/preconf/sequencer"
)

// TestCloseUnderLoad closes a sequencing node on disk while readers hammer
// it over HTTP, at several points of its first blocks (before its second
// block go-ethereum's snapshot generator still holds Pebble iterators):
// Close must succeed every time (CI once saw "leaked iterators: current").
func TestCloseUnderLoad(t *testing.T) {
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","pending"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",true]}`,
		`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["0x4200000000000000000000000000000000000015","0x1","latest"]}`,
	}
	for i := range 10 {
		n := startNode(t, Config{DataDir: t.TempDir(), Sequencer: &sequencer.Config{BlockTime: 100 * time.Millisecond, Interval: 20 * time.Millisecond}, ShutdownTimeout: 50 * time.Millisecond})
		if err := n.Start(nil); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 5 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := client.Post(n.URL(), "application/json", strings.NewReader(bodies[r]))
					if err != nil {
						continue // refused once the node stops listening
					}
					resp.Body.Close()
				}
			}()
		}
		time.Sleep(time.Duration(i%5) * 60 * time.Millisecond) // 0 to 240 ms: before and after the second block
		err := n.Close()
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("run %d: close under load: %v", i, err)
		}
	}
}
